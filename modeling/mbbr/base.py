"""What every MBBR model shares, whatever its posterior (Ganzfried, Wang & Chiswick 2024, Alg 2).

The agent plays the default strategy for the first H hands, then the configured response to its
opponent models. Everything here is posterior-independent: validating the inputs (once per distinct
observation), reading each opponent's moves off a hand, the responses (best response to the
posterior-mean models, computed once per table update), the default phase, the snapshot header and
the memory estimate of these caches. A posterior class fills in what depends on it: how a hand
updates the table of a position, the model of one opponent, the leaf weights a response is computed
from, and the arrays a snapshot holds. Every model is deterministic in ``config.seed``: the same
configuration and observations give bit-identical posteriors, which the service relies on to
rebuild sessions by replay.
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
from typing import ClassVar

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.kuhn import best_response_to_weights, leaf_weights
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr import snapshot as snapshot_format
from oppmodel.modeling.mbbr.config import FIELDS_ADDED_LATER, MBBRConfig, Posterior, Response
from oppmodel.modeling.mbbr.evidence import EvidenceCache, Moves
from oppmodel.modeling.mbbr.memory import ARRAY_OBJECT_BYTES, ENTRY_BYTES, array_bytes
from oppmodel.modeling.mbbr.priors import default_strategy_of, prior_mean_of
from oppmodel.modeling.mbbr.safety import SafelyPlayed, SafetyBankroll, is_off
from oppmodel.modeling.mbbr.snapshot import take
from oppmodel.modeling.observation import HandObservation


class ModelBase(SafelyPlayed, abc.ABC):
    """The posterior-independent part of an MBBR model (see the module docstring); a subclass
    implements one posterior and is built by ``oppmodel.modeling.mbbr.model.build_model``."""

    POSTERIOR: ClassVar[Posterior]  # the config.posterior this class implements

    def __init__(
        self,
        game: KuhnGame,
        config: MBBRConfig,
        *,
        default_strategy: np.ndarray | None = None,
        prior_mean: np.ndarray | None = None,
        evidence: EvidenceCache | None = None,
    ) -> None:
        """``evidence``: a cache shared with other models of ``game`` (default: the model's own,
        counted in its ``nbytes``)."""
        check_posterior(config, self.POSTERIOR, type(self).__name__)
        self._refuse_oversized(game, config)
        self.default_strategy = default_strategy_of(game, default_strategy)
        self.prior_mean = prior_mean_of(game, prior_mean)
        self._fixed_nbytes = array_bytes([self.default_strategy, self.prior_mean])
        self.game = game
        self.config = config
        self.hands_observed = 0
        self._responses: dict[tuple[int, Response], tuple[np.ndarray, float]] = {}
        self._owns_evidence = evidence is None
        self._evidence = EvidenceCache(game) if evidence is None else evidence
        # The bankroll that bounds what learning costs against equilibrium players (safety.py)
        self._safety = (
            None
            if is_off(config.safety_budget)
            else SafetyBankroll(game, self.default_strategy, config.safety_budget)
        )
        self._build_posterior()

    @property
    def run_start(self) -> int:
        """0: one run from the first hand (change detection is ``change.py``'s)."""
        return 0

    # --- what a posterior implements -------------------------------------------------------------

    @abc.abstractmethod
    def _build_posterior(self) -> None:
        """Set every attribute of the posterior, at the prior (called once, by ``__init__``)."""

    @classmethod
    @abc.abstractmethod
    def _refuse_oversized(cls, game: KuhnGame, config: MBBRConfig) -> None:
        """ResourceExhaustedError if this posterior's tables for ``game`` and a valid ``config``
        would exceed its limit (checked before anything is built)."""

    @abc.abstractmethod
    def _update(self, p: int, moves: Moves, obs: HandObservation) -> None:
        """Bayes-update the table of position ``p`` with a validated hand; a hand the posterior
        cannot condition on leaves it as it was."""

    @abc.abstractmethod
    def _opponent_model(self, p: int, d: int) -> tuple[np.ndarray, float]:
        """(posterior-mean strategy, spread) of the opponent at offset ``d`` of position ``p``."""

    @abc.abstractmethod
    def _leaf_weights(self, p: int, kind: Response) -> np.ndarray:
        """The leaf weights (``evaluation.kuhn.leaf_weights``) that the ``kind`` response of
        position ``p`` best-responds to."""

    @abc.abstractmethod
    def _state(self) -> dict[str, np.ndarray]:
        """The arrays the observations changed (``snapshot.py`` names them)."""

    @abc.abstractmethod
    def _restore_state(self, arrays: dict[str, np.ndarray]) -> None:
        """Set the state of ``_state()``'s arrays: SnapshotError, with nothing changed, if they
        do not fit this model."""

    @abc.abstractmethod
    def _posterior_nbytes(self) -> int:
        """Approximate bytes of the posterior's own tables and caches."""

    # --- observing -------------------------------------------------------------------------------

    def observe(self, obs: HandObservation) -> None:
        """Bayes-update the table of our position in ``obs`` with what was seen of the hand."""
        self._evidence.validate(obs)
        p = obs.position
        moves = self._evidence.moves(p, obs.history)
        if self._safety is not None:  # book the hand as played, before the posterior moves
            self._safety.record(obs, self._candidate(p), self._evidence.move_table(obs))
        self._update(p, moves, obs)
        self.hands_observed += 1
        for kind in Response:
            self._responses.pop((p, kind), None)

    # --- models and responses --------------------------------------------------------------------

    def opponent_model(self, our_position: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """Posterior-mean strategy (num_infosets, 2) of an opponent, and the number of samples the
        model rests on (the posterior's spread: see the posterior's ``_opponent_model``)."""
        return self._opponent_model(our_position, self._offset(our_position, opponent_position))

    def opponent_means(self, our_position: int) -> np.ndarray:
        """(n - 1, num_infosets, 2): the posterior-mean model of the opponent at each seat offset
        d (row d - 1) of a checked ``our_position``, as change detection scores hands with."""
        n = self.game.num_players
        return np.stack([self._opponent_model(our_position, d)[0] for d in range(1, n)])

    def models_profile(self, our_position: int) -> np.ndarray:
        """A profile with every opponent replaced by its model (our row: the default strategy)."""
        self.game.check_position(our_position, "our_position")
        profile = self.default_strategy.copy()
        n = self.game.num_players
        for d, model in enumerate(self.opponent_means(our_position), start=1):
            profile[(our_position + d) % n] = model
        return profile

    def response(
        self, our_position: int, kind: Response | str | None = None
    ) -> tuple[np.ndarray, float]:
        """Best-response strategy (num_infosets, 2) for our position and its expected value."""
        self.game.check_position(our_position, "our_position")
        kind = response_kind(kind, self.config)
        key = (our_position, kind)
        if key not in self._responses:
            weights = self._leaf_weights(our_position, kind)
            self._responses[key] = best_response_to_weights(self.game, weights, our_position)
        strategy, value = self._responses[key]
        return strategy.copy(), value

    def _mean_leaf_weights(self, p: int) -> np.ndarray:
        """Leaf weights of the opponents' posterior-mean models: the paper's ``mean`` response."""
        return leaf_weights(self.game, self.models_profile(p), p)

    def _offset(self, our_position: int, opponent_position: int) -> int:
        return seat_offset(self.game, our_position, opponent_position)

    # --- snapshots (``snapshot.py``) and memory --------------------------------------------------

    def snapshot(self) -> bytes:
        """The model's state after the hands observed so far, as self-describing bytes.

        ``restore`` into a fresh model of the same game, configuration and prior mean, then
        observing the later hands, gives exactly the posterior of observing them all.
        """
        return snapshot_format.encode(*self.snapshot_parts())

    def snapshot_parts(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The header and named arrays that ``snapshot()`` encodes: a bank of models (``change.py``)
        puts its runs' arrays into its own snapshot without encoding each run's first."""
        safety = None if self._safety is None else self._safety.state()
        return model_snapshot_parts(
            self._snapshot_identity(), self.hands_observed, self._state(), safety
        )

    def restore(self, blob: bytes) -> None:
        """Replace the state with a ``snapshot()``'s; SnapshotError (and nothing changed) if it
        is not a snapshot of a model with this game, configuration and prior mean."""
        hands, arrays = decode_snapshot(blob, self._snapshot_identity())
        safety = None
        if self._safety is not None:
            size = (len(self._safety),)
            safety = (
                take(arrays, "safety.bank", "f8", size),
                take(arrays, "safety.alive", "i8", size),
            )
        self._restore_state(arrays)
        if self._safety is not None and safety is not None:
            self._safety.restore(*safety)
        self.hands_observed = hands
        self._responses.clear()

    def _snapshot_identity(self) -> dict:
        return snapshot_identity(self.game, self.config, self.prior_mean)

    def nbytes(self) -> int:
        """Approximate bytes the model holds: its arrays exactly, its caches of small Python
        objects at ``ENTRY_BYTES`` per entry. Bounded whatever the number of hands: every table
        and cache is sized by the game and the configuration, not by the hands seen."""
        # (asked after every hand: each cached response is a fresh (num_infosets, 2) array)
        response = self.game.num_infosets * 2 * 8 + ARRAY_OBJECT_BYTES + ENTRY_BYTES
        evidence = self._evidence.nbytes() if self._owns_evidence else 0
        safety = 0 if self._safety is None else self._safety.nbytes()
        return (
            self._fixed_nbytes
            + len(self._responses) * response
            + evidence
            + self._posterior_nbytes()
            + safety
        )


# --- what the Kuhn models and the limit-game models (``limit_model.py``) share -------------------


def check_posterior(config: MBBRConfig, posterior: Posterior, model_name: str) -> None:
    """Validate ``config`` (InvalidArgumentError naming the field) and check that it asks for
    ``posterior``, the one the class ``model_name`` implements."""
    config.validate()
    if config.posterior != posterior:
        raise InvalidArgumentError(
            "posterior", f"{model_name} is the {posterior.value!r} posterior"
        )


def response_kind(kind: Response | str | None, config: MBBRConfig) -> Response:
    """The response asked for (None: the configured one); InvalidArgumentError names ``kind``."""
    kind = kind or config.response
    try:
        return Response(kind)
    except ValueError:
        raise InvalidArgumentError(
            "kind", f"must be one of {Response.names()}, got {kind!r}"
        ) from None


def seat_offset(game: KuhnGame | LimitGame, our_position: int, opponent_position: int) -> int:
    """The seat offset d (1..n-1) of an opponent's position from ours, both checked."""
    game.check_position(our_position, "our_position")
    game.check_position(opponent_position, "opponent_position")
    d = (opponent_position - our_position) % game.num_players
    if d == 0:
        raise InvalidArgumentError("opponent_position", "is our own position")
    return d


def model_snapshot_parts(
    identity: dict,
    hands: int,
    arrays: dict[str, np.ndarray],
    safety: dict[str, np.ndarray] | None,
) -> tuple[dict, dict[str, np.ndarray]]:
    """A model's snapshot header (its ``identity`` and ``hands`` observed) and named arrays (its
    own, and its safety bankroll's as ``safety.<name>``): what ``snapshot_parts`` gives and
    :func:`decode_snapshot` reads back."""
    if safety is not None:
        arrays = {**arrays, **{f"safety.{name}": a for name, a in safety.items()}}
    return {**identity, "hands_observed": hands}, arrays


def decode_snapshot(blob: bytes, identity: dict) -> tuple[int, dict[str, np.ndarray]]:
    """(hands observed, arrays) of a snapshot whose header agrees with ``identity`` (what
    :func:`snapshot_identity` gives for the model it is restored into); SnapshotError if not."""
    meta, arrays = snapshot_format.decode(blob)
    differ = [key for key in identity if meta.get(key) != identity[key]]
    if differ:
        raise snapshot_format.SnapshotError(
            f"snapshot of a model with other settings ({', '.join(differ)})"
        )
    hands = meta.get("hands_observed")
    if not isinstance(hands, int) or hands < 0:
        raise snapshot_format.SnapshotError(f"snapshot hands_observed {hands!r}")
    return hands, arrays


def snapshot_identity(
    game: KuhnGame | LimitGame, config: MBBRConfig, prior_mean: np.ndarray
) -> dict:
    """What a snapshot must agree on with the model it is restored into: the posterior, the
    player count, the configuration (a field added later left out at the value its absence
    means, so snapshots written before it existed still match) and the prior mean's hash."""
    fields = {
        name: value
        for name, value in dataclasses.asdict(config).items()
        if name not in FIELDS_ADDED_LATER or value != FIELDS_ADDED_LATER[name]
    }
    return {
        "posterior": config.posterior,
        "num_players": game.num_players,
        "config": fields,
        "prior_mean_sha256": hashlib.sha256(
            np.ascontiguousarray(prior_mean, dtype=np.float64).tobytes()
        ).hexdigest(),
    }
