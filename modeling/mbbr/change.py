"""Opponents who change: Bayesian online change-point detection (BOCPD; Adams & MacKay 2007) over a
bank of MBBR models of the configured posterior (no change detection or safety budget of their
own), one per candidate run, each holding the hands since its start; they share one evidence cache.

Before every hand the opponents change strategy with probability H = ``config.change_hazard`` to
one drawn afresh from the prior. Every ``GRID`` hands a fresh run joins with prior mass
h = 1 - (1 - H)^GRID, the others keeping 1 - h (the exact recursion on that grid); runs below
``PRUNE`` of the mass are dropped, at most ``MAX_RUNS`` kept (the newest always). After every
hand each run's mass is multiplied by the probability its posterior-mean models gave the
opponents' moves, summed over the unseen cards (``evidence.hand_likelihood``: for the Dirichlet
posterior its exact predictive), then every run observes the hand.

Everything else is ``MBBRModel``'s, on the most probable run's models, within this model's own
safety bankroll (which books what is played whichever run it came from, so its guarantee holds).
With opponents who never change, a fresh run outweighs the first only by chance, with
probability at most h per run by Ville's inequality. A hand costs at most ``MAX_RUNS`` updates.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr import snapshot as snapshot_format
from oppmodel.modeling.mbbr.base import MBBRModel
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Response
from oppmodel.modeling.mbbr.evidence import hand_likelihood
from oppmodel.modeling.mbbr.model import MODEL_CLASSES
from oppmodel.modeling.observation import LimitObservation

GRID = 10  # hands between candidate change points
MAX_RUNS = 4  # models kept in the bank
PRUNE = 1e-9  # a run with less than this share of the mass is dropped
_LOG_PRUNE = math.log(PRUNE)
_SERIAL = 1 << 32  # a run's serial in the versions of the responses: above any run's own version


class RunBank:
    """BOCPD's bookkeeping over a bank of runs: each run's model, the hand it began at and its
    normalised log mass; the model scores each hand under every run (:meth:`weigh`), lets the
    runs observe it, then calls :meth:`advance` (see the module docstring)."""

    def __init__(self, hazard: float, build_run: Callable[[], MBBRModel]) -> None:
        self.hazard = hazard
        self._build_run = build_run
        self.runs: list[MBBRModel] = [build_run()]
        self.starts: list[int] = [0]  # the hand each run began at
        self.log_mass = np.zeros(1)
        self.serials: list[int] = [0]  # a number per run, never reused: which run plays
        # log h and log (1 - h), h the prior mass of a new run (h = 0: no run is ever opened)
        h = -math.expm1(GRID * math.log1p(-hazard))
        self._open_log_mass = math.log(h) if h > 0.0 else -math.inf
        self._stay_log_mass = math.log1p(-h)

    @property
    def log_mass(self) -> np.ndarray:
        """Each run's log posterior mass, normalised (logsumexp = 0)."""
        return self._log_mass

    @log_mass.setter
    def log_mass(self, log_mass: np.ndarray) -> None:
        self._log_mass = log_mass
        self._active = int(np.argmax(log_mass))

    def active(self) -> int:
        """The index of the most probable run: the first (oldest) of equals."""
        return self._active

    @property
    def model(self) -> MBBRModel:
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
        self, arrays: dict[str, np.ndarray], hands: int, identity: Callable[[MBBRModel], dict]
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


class ChangeDetectingModel(MBBRModel):
    """An MBBR model that follows opponents who change strategy (module docstring). Build one
    with ``model.build_model`` and a ``config.change_hazard`` > 0."""

    @classmethod
    def _check_config(cls, config: MBBRConfig) -> None:
        config.validate()

    @classmethod
    def _refuse_oversized(cls, game: LimitGame, config: MBBRConfig) -> None:
        MODEL_CLASSES[Posterior(config.posterior)]._refuse_oversized(game, config)

    def _build_posterior(self) -> None:
        plain = dataclasses.replace(self.config, change_hazard=0.0, safety_budget=math.inf)
        run_class = MODEL_CLASSES[Posterior(self.config.posterior)]
        default, prior_mean, evidence = self.default_strategy, self.prior_mean, self._evidence

        first = run_class(
            self.game, plain, default_strategy=default, prior_mean=prior_mean, evidence=evidence,
            population=self.population,
        )  # fmt: skip
        self._bank = RunBank(self.config.change_hazard, first._fresh_run)

    # --- the bank ---------------------------------------------------------------------------------

    @property
    def run_start(self) -> int:
        """The hand at which the run of the model played began: 0 until a change is detected,
        then the candidate change point found (a multiple of ``change.GRID``)."""
        return self._bank.starts[self._bank.active()]

    def run_masses(self) -> dict[int, float]:
        """The posterior probability of each run in the bank, keyed by the hand it began at."""
        return self._bank.masses()

    def _update(self, p: int, obs: LimitObservation) -> None:
        """Weigh every run by its prediction of the hand, let every run observe it, and every
        ``GRID`` hands open a new run."""
        bank, rows = self._bank, self._evidence_of(obs).rows  # validates
        likelihoods = [hand_likelihood(rows, p, run._models_profile(p)) for run in bank.runs]
        with np.errstate(divide="ignore"):  # a run that calls the hand impossible: -inf
            bank.weigh(np.log(np.array(likelihoods)))
        for run in bank.runs:  # validated above: each run's own update
            run._update(p, obs)
            run.hands_observed += 1
        bank.advance(self.hands_observed + 1)

    # --- the most probable run's posterior --------------------------------------------------------

    def _version(self, p: int) -> int:
        active = self._bank.active()
        return self._bank.serials[active] * _SERIAL + self._bank.runs[active]._version(p)

    def _models_profile(self, p: int) -> np.ndarray:
        return self._bank.model._models_profile(p)

    def _opponent_model(self, p: int, d: int) -> tuple[np.ndarray, float]:
        return self._bank.model._opponent_model(p, d)

    def opponent_counts(self) -> np.ndarray:
        return self._bank.model.opponent_counts()

    def _concentration(self, p: int, d: int) -> np.ndarray:
        return self._bank.model._concentration(p, d)

    def _solve_hole(self, p: int, kind: Response, h: int, strategy: np.ndarray) -> float:
        return self._bank.model._solve_hole(p, kind, h, strategy)

    # --- snapshots and memory ---------------------------------------------------------------------

    def _state(self) -> dict[str, np.ndarray]:
        """The bank's arrays (``RunBank.state``: ``run_starts``, ``run_log_mass``, ``run_hands``
        and each run's prefixed ``run<i>.``)."""
        return self._bank.state()

    def _restore_state(self, arrays: dict[str, np.ndarray], hands: int) -> None:
        self._bank.restore(arrays, hands, lambda run: run._snapshot_identity())

    def _snapshot_identity(self) -> dict:
        return {**super()._snapshot_identity(), "runs": "bocpd"}

    def _posterior_nbytes(self) -> int:
        runs = sum(run._posterior_nbytes() for run in self._bank.runs)
        return runs + self._bank.log_mass.nbytes
