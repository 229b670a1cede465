"""Multiplayer Bayesian best response (MBBR; Ganzfried, Wang & Chiswick 2024): the model every
caller uses, and the one factory that builds it.

An MBBR model keeps a posterior over the strategies of each opponent of each position from what
one seat saw of finished hands, models each opponent by its posterior mean, and plays the default
strategy for the first H hands, then the configured response to the models, mixed with the default
as far as the safety budget allows (``safety.py``). ``MBBRModel`` is what
the agents, the match engine, the service and the snapshots rely on; ``build_model`` picks the
class that implements the configured posterior:

- ``Posterior.DIRICHLET`` (the default): ``dirichlet.DirichletModel``, one Dirichlet per opponent
  information set fitted by variational Bayes; it keeps learning, and with ``Prior.TYPED`` weighs
  each opponent as an equilibrium-support or an error-prone player (``typed_prior.py``);
- ``Posterior.SAMPLES``: ``samples.SampleModel``, the paper's k importance-weighted samples, which
  collapse onto one and stop learning (the method as published).

With ``config.change_hazard`` > 0 the model is ``change.ChangeDetectingModel``, which follows
opponents who change strategy with a bank of models of the configured posterior.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Protocol

import numpy as np

from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr.base import ModelBase
from oppmodel.modeling.mbbr.change import ChangeDetectingModel
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Response
from oppmodel.modeling.mbbr.dirichlet import DirichletModel
from oppmodel.modeling.mbbr.evidence import EvidenceCache
from oppmodel.modeling.mbbr.samples import SampleModel
from oppmodel.modeling.observation import HandObservation


class MBBRModel(Protocol):
    """An MBBR model of the opponents of one agent over a repeated match.

    Positions are seats in the hand (0 acts first). Everything is deterministic in
    ``config.seed``: the same configuration and observations give bit-identical answers, which the
    service relies on to rebuild a session by replaying its hands. Bad arguments raise
    InvalidArgumentError naming the argument and change nothing.
    """

    game: KuhnGame
    config: MBBRConfig  # validated
    default_strategy: np.ndarray  # (n, num_infosets, 2): played for the first H hands
    prior_mean: np.ndarray  # (n, num_infosets, 2): the opponents' prior mean per position
    hands_observed: int  # observe() calls so far (a hand no posterior can explain counts too)

    @property
    def run_start(self) -> int:
        """The hand at which the run of hands the models rest on began: 0, unless change
        detection (``config.change_hazard``, ``change.py``) found the opponents changed strategy
        then."""
        ...

    def observe(self, obs: HandObservation) -> None:
        """Update the posterior of our position in ``obs`` with what that seat saw of a hand."""
        ...

    def opponent_model(self, our_position: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """(num_infosets, 2) posterior-mean strategy of the opponent at ``opponent_position``
        while we sit at ``our_position``, and how many samples the model rests on: the
        effective sample size of its marginal (samples) or the least concentration over its
        information sets (Dirichlet)."""
        ...

    def models_profile(self, our_position: int) -> np.ndarray:
        """The profile with every opponent replaced by its model (our row: the default)."""
        ...

    def opponent_means(self, our_position: int) -> np.ndarray:
        """(n - 1, num_infosets, 2): the posterior-mean model of the opponent at each seat
        offset d (row d - 1) while we sit at ``our_position`` (a checked position)."""
        ...

    def response(
        self, our_position: int, kind: Response | str | None = None
    ) -> tuple[np.ndarray, float]:
        """Our best response (num_infosets, 2) of ``kind`` (default: the configured one) to the
        posterior, and its expected value under the models."""
        ...

    def policy(self, our_position: int) -> np.ndarray:
        """What the agent plays in ``our_position`` now: the default strategy for the first
        ``config.hands_default`` hands, then the configured response, mixed with the default as
        far as the safety budget allows (it can change after any hand)."""
        ...

    def safety_share(self, our_position: int) -> float:
        """The share of the response in :meth:`policy` (1 without a safety budget)."""
        ...

    def snapshot(self) -> bytes:
        """The state after the hands observed so far, in the ``snapshot.py`` format."""
        ...

    def snapshot_parts(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The header and named arrays that ``snapshot()`` encodes."""
        ...

    def restore(self, blob: bytes) -> None:
        """Replace the state with a ``snapshot()`` of a model of the same game, configuration and
        prior mean; SnapshotError, with nothing changed, for any other."""
        ...

    def nbytes(self) -> int:
        """Approximate bytes held, for the service's memory budget (bounded by the game and the
        configuration, whatever the number of hands)."""
        ...


MODEL_CLASSES: dict[Posterior, type[ModelBase]] = {
    Posterior.DIRICHLET: DirichletModel,
    Posterior.SAMPLES: SampleModel,
}


def build_model(
    game: KuhnGame,
    config: MBBRConfig | None = None,
    *,
    default_strategy: np.ndarray | None = None,
    prior_mean: np.ndarray | None = None,
    evidence: EvidenceCache | None = None,
) -> MBBRModel:
    """A fresh model of ``config`` (default: ``MBBRConfig()``) for ``game``, of the class of its
    posterior. ``default_strategy`` and ``prior_mean`` are profiles (n, num_infosets, 2); None
    gives N1 and N3 in 3-player Kuhn and uniform play otherwise; ``evidence`` a cache shared with
    other models of ``game``. InvalidArgumentError names a bad field; ResourceExhaustedError
    refuses tables beyond the posterior's limit."""
    config = config or MBBRConfig()
    config.validate()
    if config.change_hazard > 0.0:
        plain = dataclasses.replace(config, change_hazard=0.0, safety_budget=math.inf)
        return ChangeDetectingModel(
            game,
            config,
            lambda shared: build_model(
                game,
                plain,
                default_strategy=default_strategy,
                prior_mean=prior_mean,
                evidence=shared,
            ),
        )
    return MODEL_CLASSES[config.posterior](
        game, config, default_strategy=default_strategy, prior_mean=prior_mean, evidence=evidence
    )
