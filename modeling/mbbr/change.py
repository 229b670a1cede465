"""Opponents who change: Bayesian online change-point detection (BOCPD; Adams & MacKay 2007) over a
bank of plain MBBR models of the configured posterior, one per candidate run of hands
(docs/modeling.md, "Change detection"). Every ``GRID`` hands a fresh run joins with prior mass
h = 1 - (1 - H)^GRID, H = ``config.change_hazard``, the others keeping 1 - h (the exact recursion
on that grid); runs below ``PRUNE`` of the mass are dropped, at most ``MAX_RUNS`` kept (the newest
always). After a hand each run's mass is multiplied by the probability its posterior-mean models
gave the opponents' moves, then every run observes it. MBBR plays the most probable run within
this model's own safety bankroll (which books what is played, whichever run it came from). With
opponents who never change, a fresh run outweighs the first only by chance, with probability at
most h per run (Ville's inequality).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from oppmodel.modeling.mbbr import snapshot as snapshot_format
from oppmodel.modeling.mbbr.base import MBBRModel
from oppmodel.modeling.mbbr.config import Response
from oppmodel.modeling.mbbr.evidence import Evidence, hand_likelihood
from oppmodel.modeling.mbbr.model import model_class
from oppmodel.modeling.observation import LimitObservation

GRID = 10  # hands between candidate change points
MAX_RUNS = 4  # models kept in the bank
PRUNE = 1e-9  # a run with less than this share of the mass is dropped
_LOG_PRUNE = math.log(PRUNE)
_LOG2 = math.log(2.0)
_SERIAL = 1 << 32  # a run's serial in the versions of the responses: above any run's own version


class ChangeDetectingModel(MBBRModel):
    """An MBBR model that follows opponents who change strategy (module docstring): its bank of
    runs, each run's model (``runs``), the hand it began at (``starts``) and its normalised log
    mass (``log_mass``, Python floats: at most ``MAX_RUNS`` of them, where numpy's calls cost
    more than the arithmetic). Build one with ``model.build_model`` and a ``change_hazard`` > 0."""

    POSTERIOR = None  # its runs', any

    def _build_posterior(self) -> None:
        plain = dataclasses.replace(self.config, change_hazard=0.0, safety_budget=math.inf)
        first = model_class(plain)(
            self.game, plain, default_strategy=self.default_strategy,
            prior_mean=self.prior_mean, evidence=self._evidence, population=self.population,
        )  # fmt: skip
        self._new_run = first._fresh_run
        self.runs: list[MBBRModel] = [first]
        self.starts: list[int] = [0]
        self.serials: list[int] = [0]  # a number per run, never reused: which run plays
        self._set_mass([0.0])
        # log h and log (1 - h), h the prior mass of a new run (h = 0: no run is ever opened)
        h = -math.expm1(GRID * math.log1p(-self.config.change_hazard))
        self._open_log_mass = math.log(h) if h > 0.0 else -math.inf
        self._stay_log_mass = math.log1p(-h)

    @property
    def run_start(self) -> int:
        """The hand at which the run of the model played began: 0 until a change is detected,
        then the candidate change point found (a multiple of ``change.GRID``)."""
        return self.starts[self._active]

    def run_masses(self) -> dict[int, float]:
        """The posterior probability of each run in the bank, keyed by the hand it began at."""
        return {s: math.exp(w) for s, w in zip(self.starts, self.log_mass, strict=True)}

    @property
    def _playing(self) -> MBBRModel:
        """The most probable run's model: the one MBBR plays."""
        return self.runs[self._active]

    def _update(self, p: int, obs: LimitObservation, evidence: Evidence) -> None:
        """Multiply each run's mass by the probability its models gave the hand (a hand no run
        explains leaves the masses as they were), let every run observe it, then
        :meth:`_advance`."""
        rows, weights, masses, explained = evidence.rows, evidence.weights, [], False
        guarded = self._safety is not None and self._safety.live  # the runs': this bankroll's
        for run, w in zip(self.runs, self.log_mass, strict=True):
            likelihood = hand_likelihood(rows, weights, p, run._models_profile(p))
            explained = explained or likelihood > 0.0
            masses.append(w + math.log(likelihood) if likelihood > 0.0 else -math.inf)
            run.guarded = guarded
            run._update(p, obs, evidence)
            run.hands_observed += 1
        if explained:
            self._set_mass(masses)
        self._advance(self.hands_observed + 1)

    def _advance(self, hands_observed: int) -> None:
        """After a hand: every ``GRID`` hands open a new run, then drop the runs of negligible
        mass (at most ``MAX_RUNS`` kept, the newest always)."""
        if self.config.change_hazard > 0.0 and hands_observed % GRID == 0:
            self.runs.append(self._new_run())
            self.starts.append(hands_observed)
            self.serials.append(self.serials[-1] + 1)
            stay = [w + self._stay_log_mass for w in self.log_mass]
            self._set_mass([*stay, self._open_log_mass], normalised=True)
        newest = len(self.runs) - 1
        mass = self.log_mass
        if newest < MAX_RUNS and (newest == 0 or min(mass[:newest]) >= _LOG_PRUNE):
            return  # every run stays (most hands)
        keep = [i for i, w in enumerate(mass) if w >= _LOG_PRUNE or i == newest]
        if len(keep) > MAX_RUNS:
            older = sorted(keep[:-1], key=lambda i: -mass[i])[: MAX_RUNS - 1]
            keep = [*sorted(older), newest]
        if len(keep) < len(self.runs):
            self.runs = [self.runs[i] for i in keep]
            self.starts = [self.starts[i] for i in keep]
            self.serials = [self.serials[i] for i in keep]
            self._set_mass([mass[i] for i in keep])

    def _set_mass(self, log_mass: list[float], normalised: bool = False) -> None:
        """Set the log masses, normalised unless they are (``np.logaddexp.reduce``'s fold), and
        the most probable run (the first, oldest, of equals)."""
        if not normalised:
            total = functools.reduce(_logaddexp, log_mass)
            log_mass = [w - total for w in log_mass]
        self.log_mass = log_mass
        self._active = max(range(len(log_mass)), key=log_mass.__getitem__)

    def _version(self, p: int) -> int:
        return self.serials[self._active] * _SERIAL + self._playing._version(p)

    def _models_profile(self, p: int) -> np.ndarray:
        return self._playing._models_profile(p)

    def _opponent_model(self, p: int, d: int) -> tuple[np.ndarray, float]:
        return self._playing._opponent_model(p, d)

    def opponent_counts(self) -> np.ndarray:
        return self._playing.opponent_counts()

    def _concentration(self, p: int, d: int) -> np.ndarray:
        return self._playing._concentration(p, d)

    def _solve_hole(self, p: int, kind: Response, h: int, strategy: np.ndarray) -> float:
        return self._playing._solve_hole(p, kind, h, strategy)

    def _state(self) -> dict[str, np.ndarray]:
        """The bank's arrays (``snapshot.py``): ``run_starts``, ``run_log_mass``, ``run_hands``,
        and each run's snapshot arrays prefixed ``run<i>.``."""
        arrays: dict[str, np.ndarray] = {
            "run_starts": np.array(self.starts, dtype=np.int64),
            "run_log_mass": np.array(self.log_mass),
            "run_hands": np.array([run.hands_observed for run in self.runs], dtype=np.int64),
        }
        for i, run in enumerate(self.runs):  # a run has no bankroll: its arrays are its state
            arrays.update({f"run{i}.{name}": a for name, a in run._state().items()})
        return arrays

    def _restore_state(self, arrays: dict[str, np.ndarray], hands: int) -> None:
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
            run = self._new_run()
            run._restore_state(snapshot_format.section(arrays, f"run{i}."), int(run_hands_i))
            run.hands_observed = int(run_hands_i)
            runs.append(run)
        self.runs, self.starts = runs, [int(s) for s in starts]
        self._set_mass([float(w) for w in log_mass], normalised=True)
        self.serials = [self.serials[-1] + 1 + i for i in range(len(runs))]

    def _snapshot_identity(self) -> dict:
        return {**super()._snapshot_identity(), "runs": "bocpd"}

    def _posterior_nbytes(self) -> int:
        return sum(run._posterior_nbytes() for run in self.runs) + 8 * len(self.log_mass)


def _logaddexp(x: float, y: float) -> float:
    """``np.logaddexp`` on two floats, step for step (the same bits, without numpy's call)."""
    if x == y:
        return x + _LOG2
    tmp = x - y
    return x + math.log1p(math.exp(-tmp)) if tmp > 0 else y + math.log1p(math.exp(tmp))
