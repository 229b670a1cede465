"""A session's model: built from its spec, restored from a snapshot, brought up to date by replay.

These functions run wherever the model lives (``server/model_hosting.py``): on this process's
worker pool, or in a model worker. A stored session is rebuilt by building its model from its
spec, restoring its latest snapshot and replaying the stored hands after it in order (the core
guarantees that this is bit-identical to replaying them all); a snapshot that cannot be used
(another format version, another model) means a replay of every stored hand, said in the log.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Sequence

import numpy as np

from oppmodel.modeling.errors import FailedPreconditionError, ResourceExhaustedError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.interface import Hand, HandKey, compiled
from oppmodel.modeling.games.kuhn_openspiel import kuhn_openspiel
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Prior, Response
from oppmodel.modeling.mbbr.snapshot import SnapshotError
from oppmodel.modeling.observation import HandObservation, LimitObservation
from oppmodel.server.session_spec import (
    Game,
    Model,
    Observation,
    SessionSpec,
    StrategyTable,
    game_of,
)
from oppmodel.server.storage import ObservationRow, SnapshotRow

log = logging.getLogger("oppmodel.server")


class UnloadableSessionError(FailedPreconditionError):
    """A stored session cannot be rebuilt into a model (its spec or observations are no longer
    accepted by this version); it can still be listed and deleted."""

    def __init__(self, owner: str, message: str) -> None:
        super().__init__(message)
        self.owner = owner


class SessionTooLargeError(ResourceExhaustedError):
    """A stored session needs more memory than the whole budget for live sessions."""

    def __init__(self, owner: str, message: str) -> None:
        super().__init__(message)
        self.owner = owner


def build_model(spec: SessionSpec, solved: np.ndarray | None = None) -> Model:
    """A fresh model for a session spec (deterministic in the spec's seed); ``solved``: its
    game's solved strategy where the spec gives no default strategy or prior mean (a game no
    bundle holds, ``SessionManager.solved_for``)."""
    return game_of(spec).build_model(
        spec.config,
        default_strategy=_array(spec.default_strategy),
        prior_mean=_array(spec.prior_mean),
        solved=solved,
        population=spec.population,
    )


def _array(table: StrategyTable | None) -> np.ndarray | None:
    return None if table is None else np.array(table, dtype=np.float64)


def key_of_row(row: ObservationRow) -> HandKey:
    """A stored hand as the key the game gives it (``ServedGame.hand_key``): Kuhn's betting in
    OpenSpiel letters and a card number per position (None where hidden); a limit game's ACPC
    betting and ``observation.limit_observation_cards``."""
    return (row.position, row.history, tuple(row.cards))


def observe_all(model: Model, observations: Sequence[Observation]) -> None:
    """Apply hands to a model, in order."""
    for obs in observations:
        model.observe(obs)


def restored(
    spec: SessionSpec, snapshot: SnapshotRow | None, solved: np.ndarray | None
) -> tuple[Model, str | None]:
    """A model built from the spec with ``snapshot`` restored if it can be used, and why not if it
    cannot (None if it was used or there is none). A snapshot of another format version or of
    another model (the Kuhn kernels' models, before Kuhn sessions ran on the compiled game) is
    not used: the caller rebuilds the model from all the stored hands."""
    model = build_model(spec, solved)
    if snapshot is not None:
        try:
            model.restore(snapshot.state)
        except SnapshotError as exc:
            return model, str(exc)
        if model.hands_observed != snapshot.hands:
            raise RuntimeError(
                f"snapshot of {model.hands_observed} hands stored as {snapshot.hands}"
            )
    return model, None


def log_unused_snapshot(session_id: str, reason: str | None) -> None:
    """One line saying that a stored session is rebuilt from its hands, and why."""
    if reason is not None:
        log.warning(
            f"session {session_id}: stored snapshot not used ({reason}); rebuilding its model "
            "from every stored hand",
            extra={"session_id": session_id, "reason": reason},
        )


def replay(game: Game, model: Model, rows: Sequence[ObservationRow]) -> float:
    """Apply stored hands that follow the model's state; returns the seconds it took."""
    start = time.perf_counter()
    for i, row in enumerate(rows, start=model.hands_observed + 1):
        if row.sequence != i:  # never written so: the database was edited under the server
            raise RuntimeError(f"stored hand {row.sequence} where {i} was due")
        model.observe(game.hand_of_key(row.position, row.history, row.cards))
    return time.perf_counter() - start


def warm_up_models() -> None:
    """Compile (or load from numba's cache) every model kernel a request can reach: the first
    update or response otherwise pays the JIT load (~1 s). Each config names its prior: the
    default is the posterior's, and the fork server of the model workers, which runs this, dies
    on any error (every worker's start then fails)."""
    configs = [
        MBBRConfig(k=2, hands_default=0, posterior=Posterior.SAMPLES, prior=Prior.ETA_MIXTURE),
        MBBRConfig(hands_default=0, posterior=Posterior.DIRICHLET, prior=Prior.TILTED),
        MBBRConfig(hands_default=0, posterior=Posterior.DIRICHLET, prior=Prior.TYPED),
    ]
    kuhn = kuhn_openspiel(3)  # every game shares the limit-game kernels
    leduc = compiled(limit_game("leduc2p"))
    hands: tuple[tuple[Game, Hand], ...] = (
        (kuhn, HandObservation(0, "ppp", (0, 1, 2))),
        (leduc, LimitObservation(0, "rf", ("Ks", None), ("",))),
    )
    for (game, hand), config in itertools.product(hands, configs):
        model = game.build_model(config)
        model.observe(hand)
        for kind in Response:
            model.response(0, kind)
        model.opponent_model(0, 1)
        model.action_probabilities(1, 0)
        game.build_model(config).restore(model.snapshot())
