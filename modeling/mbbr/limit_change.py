"""Opponents who change, in limit games (Leduc, ...): ``change.py``'s BOCPD over a bank of limit
models.

The bank is Kuhn's (``change.RunBank``: a fresh run every ``GRID`` hands with prior mass
h = 1 - (1 - H)^GRID, runs below ``PRUNE`` of the mass dropped, at most ``MAX_RUNS``), each run a
plain limit model of the configured posterior (no change detection, no safety budget of its own)
holding only the hands since its start; the runs share one cache of the observations' evidence.
The one game-specific part is a hand's score under a run: the probability the run's posterior-mean
models gave the opponents' moves, summed over the cards we did not see
(``limit_evidence.hand_likelihood``, the probability the safety bankroll weighs hypotheses
with). For the Dirichlet posterior that is its predictive: a hand meets each information set at
most once.

Everything else is ``LimitModel``'s, on the most probable run's models: the default for the first
H hands, then the response, solved hole by hole, within this model's own safety bankroll, which
books what is played whichever run it came from (so the budget's guarantee holds as without
change detection) and weighs its hypotheses against the models MBBR played against. With
opponents who never change the first run keeps the mass, and the policy is the plain model's.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr.change import RunBank
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Response
from oppmodel.modeling.mbbr.limit_evidence import hand_likelihood
from oppmodel.modeling.mbbr.limit_model import MODEL_CLASSES, LimitModel
from oppmodel.modeling.observation import LimitObservation

_SERIAL = 1 << 32  # a run's serial in the versions of the responses: above any run's own version


class LimitChangeModel(LimitModel):
    """A limit-game MBBR model that follows opponents who change strategy (module docstring).
    Build one with ``limit_model.build_limit_model`` and a ``config.change_hazard`` > 0."""

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
            self.game, plain, default_strategy=default, prior_mean=prior_mean, evidence=evidence
        )
        self._bank: RunBank[LimitModel] = RunBank(self.config.change_hazard, first._fresh_run)

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
        bank = self._bank
        if bank.weighing:
            evidence = self._evidence_of(obs)  # validates
            profiles = [run._models_profile(p) for run in bank.runs]
            likelihoods = [hand_likelihood(evidence, p, profile) for profile in profiles]
            with np.errstate(divide="ignore"):  # a run that calls the hand impossible: -inf
                bank.weigh(np.log(np.array(likelihoods)))
        for run in bank.runs:
            run.observe(obs)
        bank.advance(self.hands_observed + 1)

    # --- the most probable run's posterior --------------------------------------------------------

    def _version(self, p: int) -> int:
        active = self._bank.active()
        return self._bank.serials[active] * _SERIAL + self._bank.runs[active]._version(p)

    def _models_profile(self, p: int) -> np.ndarray:
        return self._bank.model._models_profile(p)

    def _opponent_model(self, p: int, d: int) -> tuple[np.ndarray, float]:
        return self._bank.model._opponent_model(p, d)

    def _solve_hole(self, p: int, kind: Response, h: int, choice: np.ndarray) -> float:
        return self._bank.model._solve_hole(p, kind, h, choice)

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
