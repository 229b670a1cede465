"""Match jobs for tournaments and parameter sweeps: agent specs, seeding, and aggregation.

A *job* is one duplicate of one group of agents (Ganzfried et al. 2024's unit of evaluation): the n!
seatings of the group, ``hands`` hands each, on one shared deal sequence
(``oppmodel.modeling.play.match.run_duplicate`` with one duplicate). Its result is each agent's
win rate averaged over the seatings, in milli-antes per hand (``KuhnGame.rate_unit``).

Jobs are pure functions of ``(job, base_seed)``: the match seed is derived from the base seed and
the job's ``stream`` number with ``numpy.random.SeedSequence``, so a job gives the same numbers on
any worker, in any order, on any backend. Jobs that should share their cards share a stream (the
same group and repetition across the tables or the points of a sweep: common random numbers, so the
differences between them are measured with much less noise than either value alone).

Exact references. Against two fixed strategies A and B, the duplicate protocol puts the opponents
in both relative orders and rotates every position equally often, so the most any agent can win per
hand is the mean over the n orders x positions of the exact best-response value
(:func:`response_ceiling`): a ceiling for MBBR's winrate in that group. Against two copies of an
equilibrium it is the equilibrium's mean seat value, 0: no agent beats an equilibrium pair of one
kind in expectation.

Aggregation. Repetitions of a group are independent, so a group's mean has the standard error
s / sqrt(R) (s: sample standard deviation over R repetitions); a mean over independent groups
sum_g x_g / G has the standard error sqrt(sum_g se_g^2) / G.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.limit import best_response, expected_values
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play.adaptive import adaptive_factory, is_adaptive
from oppmodel.modeling.play.agents import mbbr_factory
from oppmodel.modeling.play.diluted import diluted_factory, fixed_profile, is_diluted
from oppmodel.modeling.play.match import AgentFactory, fixed_strategy_factory, run_duplicate


@dataclass(frozen=True)
class AgentSpec:
    """An agent by name (panel, adaptive, or ``mbbr`` with its config) and the label it reports."""

    name: str
    mbbr: MBBRConfig | None = None
    label: str | None = None

    @property
    def display(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class MatchJob:
    """One duplicate (every seating, one deal sequence) of one group of agents."""

    job_id: int  # position in the job list: results come back in this order
    stream: int  # seed stream: jobs sharing it share the cards and the agents' seeds
    agents: tuple[AgentSpec, ...]
    hands: int
    num_players: int = 3


@dataclass(frozen=True)
class JobResult:
    """The win rate of each agent of a job, averaged over the seatings (milli-antes per hand)."""

    job_id: int
    rate: tuple[float, ...]


def job_seed(base_seed: int, stream: int) -> int:
    """The match seed of every job on ``stream`` under ``base_seed``."""
    state = np.random.SeedSequence([base_seed, stream]).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))


def agent_factory(spec: AgentSpec) -> AgentFactory:
    """A factory ``(game, seed) -> agent`` for a spec; NotFoundError for an unknown name."""
    name = spec.name.lower()
    if name == "mbbr":
        return mbbr_factory(spec.mbbr or MBBRConfig(), name=spec.display)
    if is_adaptive(name):
        return adaptive_factory(spec.name)
    if is_diluted(name):
        return diluted_factory(spec.name)

    def build(game, seed):
        return fixed_strategy_factory(spec.display, fixed_profile(game, spec.name))(game, seed)

    return build


def run_job(job: MatchJob, base_seed: int) -> JobResult:
    """Play one job; deterministic in ``(job, base_seed)``."""
    if len(job.agents) != job.num_players:
        raise InvalidArgumentError(
            "agents", f"{job.num_players} players need {job.num_players} agents"
        )
    game = limit_game(f"kuhn{job.num_players}p")
    result = run_duplicate(
        game,
        [a.display for a in job.agents],
        [agent_factory(a) for a in job.agents],
        hands=job.hands,
        duplicates=1,
        seed=job_seed(base_seed, job.stream),
    )
    return JobResult(job.job_id, tuple(a.rate for a in result.agents))


@dataclass(frozen=True)
class Estimate:
    """A mean win rate and its standard error (None when it cannot be estimated)."""

    mean: float
    se: float | None
    samples: int


def mean_estimate(values: Sequence[float]) -> Estimate:
    """Mean of independent repetitions and its standard error s / sqrt(R)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise InvalidArgumentError("values", "needs at least one value")
    se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else None
    return Estimate(float(x.mean()), se, int(x.size))


def average_estimates(estimates: Sequence[Estimate]) -> Estimate:
    """Mean of independent estimates, with standard error sqrt(sum se^2) / G."""
    if not estimates:
        raise InvalidArgumentError("estimates", "needs at least one estimate")
    g = len(estimates)
    mean = sum(e.mean for e in estimates) / g
    errors = [e.se for e in estimates if e.se is not None]
    if len(errors) < g:
        return Estimate(mean, None, sum(e.samples for e in estimates))
    se = math.sqrt(sum(s**2 for s in errors)) / g
    return Estimate(mean, se, sum(e.samples for e in estimates))


def seated_profile(
    game: LimitGame, p: int, us: np.ndarray | None, others: Sequence[np.ndarray]
) -> np.ndarray:
    """``us`` (or ``others[0]``) with the opponent at offset d from position p playing
    ``others[d - 1]``."""
    n = game.num_players
    profile = np.array(us if us is not None else others[0], copy=True)
    for d, other in enumerate(others, start=1):
        profile[(p + d) % n] = other[(p + d) % n]
    return profile


def response_ceiling(game: LimitGame, *others: np.ndarray) -> float:
    """Best possible win rate (``game.rate_unit``) against fixed profiles ``others`` (one per
    opponent) under the duplicate protocol.

    The mean, over every relative seat order of the opponents and every position of ours, of the
    exact best-response value.
    """
    values = [
        best_response(game, seated_profile(game, p, None, order), p)[1]
        for order in _seat_orders(game, others)
        for p in range(game.num_players)
    ]
    return game.rate_unit.rate(float(np.mean(values)))


def fixed_value(game: LimitGame, us: np.ndarray, *others: np.ndarray) -> float:
    """Expected win rate (``game.rate_unit``) of fixed profile ``us`` against ``others`` (one per
    opponent; duplicate protocol)."""
    values = [
        expected_values(game, seated_profile(game, p, us, order))[p]
        for order in _seat_orders(game, others)
        for p in range(game.num_players)
    ]
    return game.rate_unit.rate(float(np.mean(values)))


def _seat_orders(game: LimitGame, others: Sequence[np.ndarray]) -> list[tuple[np.ndarray, ...]]:
    """Every relative seat order of the opponents (3 players: (a, b) and (b, a))."""
    if len(others) != game.num_players - 1:
        raise InvalidArgumentError(
            "others", f"{game.num_players} players need {game.num_players - 1} opponent profiles"
        )
    return list(itertools.permutations(others))
