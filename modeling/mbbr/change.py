"""Opponents who change: Bayesian online change-point detection over a bank of MBBR posteriors.

MBBR's posterior assumes the opponents play one fixed strategy for the whole match, so after a
change of style it averages the old play with the new and answers late (after 1,500 hands of a
maniac, a model of a tight-passive player takes about as long again to be believed). This wrapper
drops that assumption, keeping every posterior as it is: it runs BOCPD (Adams & MacKay 2007) with a
bank of ordinary MBBR models, one per candidate run, each holding only the hands since its start.

- The model of change: before every hand the opponents change strategy with probability
  ``config.change_hazard`` (H), to one drawn afresh from the prior. Change points are searched on a
  grid of ``GRID`` hands: every ``GRID`` hands a fresh model (the prior, no hands) joins the bank
  with prior mass h = 1 - (1 - H)^GRID, the others keeping 1 - h (the exact BOCPD recursion on
  that grid).
- After every hand each run's mass is multiplied by the probability its model gave the hand
  before seeing it (the opponents' moves under the model's posterior-mean strategies, summed over
  the cards we did not see: ``predictive_log_likelihood``; for the Dirichlet posterior this is its
  exact predictive, since a hand visits an information set at most once), and then every model
  observes the hand. Runs whose mass falls below ``PRUNE`` of the total are dropped, and at most
  ``MAX_RUNS`` are kept (the newest always: it is the one that finds the next change).
- MBBR plays the default strategy for the first ``hands_default`` hands of the match, then the
  configured response of the most probable run's model; with a finite ``config.safety_budget``
  that is mixed with the default as far as the wrapper's own safety bankroll (``safety.py``)
  allows. The bankroll books what is played, whichever run it came from, so the safety guarantee
  holds as it does without change detection; the runs themselves have none.

With H = 0 no run is ever added and the wrapper is the plain model, exactly. Each hand costs at most
``MAX_RUNS`` posterior updates, whatever the match length: nothing is refitted from the whole
history. A change is detected once the fresh run's hands have been likelier under it by the odds
(1 - h) / h; for a maniac turning tight-passive that is within ``GRID`` + 15 hands
(``tests/test_change.py``). Against opponents who never change, a fresh run outweighs the
established one only by chance, with probability at most h per run by Ville's inequality when the
established model's predictions are the truth's.

The wrapper knows the posteriors only through the ``MBBRModel`` protocol, so it carries to any
posterior, and to any game whose observations ``predictive_log_likelihood`` can score.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import numpy as np

from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr import _change_kernels as kernels
from oppmodel.modeling.mbbr import snapshot as snapshot_format
from oppmodel.modeling.mbbr.base import model_snapshot_parts, snapshot_identity
from oppmodel.modeling.mbbr.config import MBBRConfig, Response
from oppmodel.modeling.mbbr.evidence import (
    EvidenceCache,
    hidden_assignments,
    move_table,
    opponent_moves,
)
from oppmodel.modeling.mbbr.safety import SafelyPlayed, SafetyBankroll, is_off
from oppmodel.modeling.observation import HandObservation, validate_observation

if TYPE_CHECKING:
    from oppmodel.modeling.mbbr.model import MBBRModel

GRID = 10  # hands between candidate change points
MAX_RUNS = 4  # models kept in the bank
PRUNE = 1e-9  # a run with less than this share of the mass is dropped
_LOG_PRUNE = math.log(PRUNE)


def predictive_log_likelihood(
    game: KuhnGame, models: list[np.ndarray], obs: HandObservation
) -> float:
    """log P(the opponents' moves in ``obs`` | their cards as far as seen), the opponent at offset
    d playing ``models[d - 1]`` (num_infosets, 2); up to a constant that is the same whatever the
    models (the chance of the unseen cards)."""
    validate_observation(game, obs)
    moves = opponent_moves(game, obs.position, obs.history)
    table = move_table(game, hidden_assignments(game, obs), moves)
    return float(_log_predictives(np.stack(models)[None], table)[0])


def _log_predictives(models: np.ndarray, table: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """(R,) ``predictive_log_likelihood`` of one hand under each of R runs' models
    ``models`` (R, n - 1, num_infosets, 2); ``table``: the hand's ``move_table``."""
    out = np.empty(len(models))
    kernels.log_predictives(models, *table, out)
    return out


class Run(Protocol):
    """What the bank needs of a run's model: any MBBR model, of any game, has it."""

    hands_observed: int

    def snapshot_parts(self) -> tuple[dict, dict[str, np.ndarray]]: ...

    def restore(self, blob: bytes) -> None: ...


RunT = TypeVar("RunT", bound=Run)


class RunBank(Generic[RunT]):
    """BOCPD's bookkeeping over a bank of runs, whatever the game and the posterior: each run's
    model, the hand it began at and its normalised log mass; the game's wrapper scores each
    hand under every run (:meth:`weigh`), lets the runs observe it, then calls :meth:`advance`
    (see the module docstring)."""

    def __init__(self, hazard: float, build_run: Callable[[], RunT]) -> None:
        self.hazard = hazard
        self._build_run = build_run
        self.runs: list[RunT] = [build_run()]
        self.starts: list[int] = [0]  # the hand each run began at
        self.log_mass = np.zeros(1)  # normalised: logsumexp = 0
        self.serials: list[int] = [0]  # a number per run, never reused: which run plays
        # log h and log (1 - h), h the prior mass of a new run (h = 0: no run is ever opened)
        h = -math.expm1(GRID * math.log1p(-hazard))
        self._open_log_mass = math.log(h) if h > 0.0 else -math.inf
        self._stay_log_mass = math.log1p(-h)

    @property
    def weighing(self) -> bool:
        """Whether a hand's scores can move the masses (more than one run, or runs to come)."""
        return len(self.runs) > 1 or self.hazard > 0.0

    def active(self) -> int:
        """The index of the most probable run: the first (oldest) of equals."""
        return int(np.argmax(self.log_mass))

    @property
    def model(self) -> RunT:
        """The most probable run's model: the one MBBR plays."""
        return self.runs[self.active()]

    def masses(self) -> dict[int, float]:
        """The posterior probability of each run, keyed by the hand it began at."""
        return {s: float(math.exp(w)) for s, w in zip(self.starts, self.log_mass, strict=True)}

    def weigh(self, scores: np.ndarray) -> None:
        """Multiply each run's mass by the probability its model gave the hand (``scores``: the
        logs, per run); a hand no run explains leaves the masses as they were."""
        if np.isfinite(scores).any():
            self._set_mass(self.log_mass + scores)

    def advance(self, hands_observed: int) -> None:
        """After a hand: every ``GRID`` hands open a new run, then drop the runs of negligible
        mass (at most ``MAX_RUNS`` kept, the newest always)."""
        if self.hazard > 0.0 and hands_observed % GRID == 0:
            self.runs.append(self._build_run())
            self.starts.append(hands_observed)
            self.serials.append(self.serials[-1] + 1)
            self.log_mass = np.append(self.log_mass + self._stay_log_mass, self._open_log_mass)
        newest = len(self.runs) - 1
        if newest < MAX_RUNS and (self.log_mass[:newest] >= _LOG_PRUNE).all():
            return  # every run stays (most hands)
        keep = [i for i, w in enumerate(self.log_mass) if w >= _LOG_PRUNE or i == newest]
        if len(keep) > MAX_RUNS:
            older = sorted(keep[:-1], key=lambda i: -self.log_mass[i])[: MAX_RUNS - 1]
            keep = [*sorted(older), newest]
        if len(keep) < len(self.runs):
            self.runs = [self.runs[i] for i in keep]
            self.starts = [self.starts[i] for i in keep]
            self.serials = [self.serials[i] for i in keep]
            self._set_mass(self.log_mass[keep])

    def _set_mass(self, log_mass: np.ndarray) -> None:
        self.log_mass = log_mass - np.logaddexp.reduce(log_mass)

    def state(self) -> dict[str, np.ndarray]:
        """The bank's arrays (``snapshot.py``): ``run_starts``, ``run_log_mass``, ``run_hands``,
        and each run's snapshot arrays prefixed ``run<i>.``."""
        arrays: dict[str, np.ndarray] = {
            "run_starts": np.array(self.starts, dtype=np.int64),
            "run_log_mass": self.log_mass.copy(),
            "run_hands": np.array([run.hands_observed for run in self.runs], dtype=np.int64),
        }
        for i, run in enumerate(self.runs):
            _, run_arrays = run.snapshot_parts()
            arrays.update({f"run{i}.{name}": a for name, a in run_arrays.items()})
        return arrays

    def restore(
        self, arrays: dict[str, np.ndarray], hands: int, identity: Callable[[RunT], dict]
    ) -> None:
        """Set the state of :meth:`state`'s ``arrays`` after ``hands`` hands, each run restored
        from its arrays under its snapshot ``identity``; SnapshotError, with nothing changed,
        if they are not consistent."""
        starts = snapshot_format.take(arrays, "run_starts", "i8", (None,))
        log_mass = snapshot_format.take(arrays, "run_log_mass", "f8", (len(starts),))
        run_hands = snapshot_format.take(arrays, "run_hands", "i8", (len(starts),))
        if (
            not 1 <= len(starts) <= MAX_RUNS
            or np.any(starts < 0)
            or np.any(starts + run_hands != hands)
            or not np.isclose(np.logaddexp.reduce(log_mass), 0.0)
        ):
            raise snapshot_format.SnapshotError("snapshot runs are not consistent")
        runs = []
        for i, run_hands_i in enumerate(run_hands):
            run = self._build_run()
            prefix = f"run{i}."
            run_arrays = {
                name.removeprefix(prefix): a
                for name, a in arrays.items()
                if name.startswith(prefix)
            }
            run_meta = {**identity(run), "hands_observed": int(run_hands_i)}
            run.restore(snapshot_format.encode(run_meta, run_arrays))
            runs.append(run)
        self.runs, self.starts, self.log_mass = runs, [int(s) for s in starts], log_mass
        self.serials = [self.serials[-1] + 1 + i for i in range(len(runs))]


class ChangeDetectingModel(SafelyPlayed):
    """An MBBR model (the ``MBBRModel`` protocol) that follows opponents who change strategy:
    BOCPD over a bank of ``build_run()`` models (see the module docstring)."""

    def __init__(
        self,
        game: KuhnGame,
        config: MBBRConfig,
        build_run: Callable[[EvidenceCache], MBBRModel],
    ) -> None:
        """``build_run(evidence)`` gives a fresh plain model of the same game, prior and
        posterior, with no change detection or safety budget of its own, that reads hands
        through ``evidence`` (the bank's runs share one)."""
        config.validate()
        self.game = game
        self.config = config
        self._evidence = EvidenceCache(game)
        self._bank = RunBank(config.change_hazard, lambda: build_run(self._evidence))
        first = self._bank.runs[0]
        self.default_strategy = first.default_strategy
        self.prior_mean = first.prior_mean
        self.hands_observed = 0
        self._safety = (
            None
            if is_off(config.safety_budget)
            else SafetyBankroll(game, self.default_strategy, config.safety_budget)
        )

    @property
    def run_start(self) -> int:
        """The hand at which the run of the model played began: 0 until a change is detected,
        then the candidate change point found (a multiple of ``GRID``)."""
        return self._bank.starts[self._bank.active()]

    def run_masses(self) -> dict[int, float]:
        """The posterior probability of each run in the bank, keyed by the hand it began at."""
        return self._bank.masses()

    @property
    def _model(self) -> MBBRModel:
        return self._bank.model

    # --- observing -------------------------------------------------------------------------------

    def observe(self, obs: HandObservation) -> None:
        """Weigh every run by its prediction of the hand, let every run observe it, and every
        ``GRID`` hands open a new run (see the module docstring)."""
        self._evidence.validate(obs)
        p = obs.position
        table = self._evidence.move_table(obs)
        if self._safety is not None:  # book the hand as played, before the runs move
            self._safety.record(obs, self._candidate(p), table)
        bank = self._bank
        if bank.weighing:
            models = np.stack([run.opponent_means(p) for run in bank.runs])
            bank.weigh(_log_predictives(models, table))
        for run in bank.runs:
            run.observe(obs)
        self.hands_observed += 1
        bank.advance(self.hands_observed)

    # --- models and responses: the most probable run's ------------------------------------------

    def opponent_model(self, our_position: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """The most probable run's model of the opponent (see ``MBBRModel.opponent_model``)."""
        return self._model.opponent_model(our_position, opponent_position)

    def opponent_means(self, our_position: int) -> np.ndarray:
        """The most probable run's models of every opponent (``MBBRModel.opponent_means``)."""
        return self._model.opponent_means(our_position)

    def models_profile(self, our_position: int) -> np.ndarray:
        """The most probable run's models, our row the default strategy."""
        return self._model.models_profile(our_position)

    def response(
        self, our_position: int, kind: Response | str | None = None
    ) -> tuple[np.ndarray, float]:
        """The most probable run's response (see ``MBBRModel.response``)."""
        return self._model.response(our_position, kind)

    # --- snapshots and memory --------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """The bank as a snapshot (``snapshot.py``): where each run began (``run_starts``), its
        log mass (``run_log_mass``), its hands (``run_hands``), and each run's own arrays
        prefixed ``run<i>.``."""
        return snapshot_format.encode(*self.snapshot_parts())

    def snapshot_parts(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The header and named arrays that ``snapshot()`` encodes."""
        safety = None if self._safety is None else self._safety.state()
        return model_snapshot_parts(
            self._identity(), self.hands_observed, self._bank.state(), safety
        )

    def restore(self, blob: bytes) -> None:
        """Replace the state with a ``snapshot()`` of a model with this game, configuration and
        prior mean; SnapshotError, with nothing changed, for any other."""
        meta, arrays = snapshot_format.decode(blob)
        identity = self._identity()
        if {key: meta.get(key) for key in identity} != identity:
            raise snapshot_format.SnapshotError("snapshot of a model with other settings")
        hands = meta.get("hands_observed")
        if not isinstance(hands, int) or hands < 0:
            raise snapshot_format.SnapshotError(f"snapshot hands_observed {hands!r}")
        safety = None
        if self._safety is not None:
            size = (len(self._safety),)
            safety = (
                snapshot_format.take(arrays, "safety.bank", "f8", size),
                snapshot_format.take(arrays, "safety.alive", "i8", size),
            )
        self._bank.restore(
            arrays, hands, lambda run: snapshot_identity(self.game, run.config, run.prior_mean)
        )
        if self._safety is not None and safety is not None:
            self._safety.restore(*safety)
        self.hands_observed = hands

    def _identity(self) -> dict:
        return {**snapshot_identity(self.game, self.config, self.prior_mean), "runs": "bocpd"}

    def nbytes(self) -> int:
        """Approximate bytes held: every run's model."""
        safety = 0 if self._safety is None else self._safety.nbytes()
        runs = sum(run.nbytes() for run in self._bank.runs)
        return runs + self._evidence.nbytes() + self._bank.log_mass.nbytes + safety
