"""Typed Python client of PerfectInfoService (perfect-information sessions, prob-max^n moves).

``PerfectInfoClient`` takes and returns domain types (``Opponent``, ``ChoiceEvidence``,
``oppmodel.modeling.games.spades.state.SpadesState``, numpy arrays) and turns status codes back
into the exceptions of ``modeling/errors.py`` exactly as
``oppmodel.clients.client.OpponentModelClient`` does: both build on
``oppmodel.clients.grpc_base.GrpcClient`` (channel, TLS root certificates, token, ``close``,
the error mapping).

    with PerfectInfoClient("127.0.0.1:50051") as client:
        session = client.create_session(
            opponents=[Opponent("west", ("MT", "mOT")), Opponent("east", ("MT", "mOT"))], seed=7
        )
        acks = client.observe_choices(
            session.session_id, [ChoiceEvidence.from_likelihoods("west", [0.9, 0.1])],
            first_sequence=1,
        )
        print(acks[-1].weights["west"].mean)
        move = client.probmaxn_move(position, searcher=0, session_id=session.session_id)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from oppmodel.clients.grpc_base import GrpcClient
from oppmodel.modeling import errors
from oppmodel.modeling.games.spades.cards import NO_CARD, card_str, hand_str, parse_card
from oppmodel.modeling.games.spades.scoring import MODEL_LABELS
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.v1 import perfect_info_pb2 as pb
from oppmodel.v1 import perfect_info_pb2_grpc as pb_grpc
from oppmodel.v1_codec import set_field


@dataclass(frozen=True)
class Opponent:
    """An opponent of a session: label, model names, Dirichlet prior (empty = all 1)."""

    label: str
    models: tuple[str, ...] = MODEL_LABELS
    alpha: tuple[float, ...] = ()


@dataclass(frozen=True)
class GibbsSettings:
    """Sampler settings; None takes the server's default."""

    sweeps: int | None = None
    burn_in: int | None = None
    chains: int | None = None
    level: float | None = None


@dataclass(frozen=True)
class PerfectInfoSessionDescription:
    """A session as the server stores it (defaults filled in)."""

    session_id: str
    game: str
    opponents: tuple[Opponent, ...]
    gibbs: GibbsSettings
    seed: int
    choices_observed: int
    created_unix_ms: int


@dataclass(frozen=True)
class ChoiceEvidence:
    """One observed choice of an opponent: its likelihood vector, or utilities + chosen + eps."""

    opponent: str
    likelihoods: tuple[float, ...] | None = None
    child_utilities: tuple[tuple[float, ...], ...] | None = None
    chosen: int | None = None
    epsilon: float | None = None

    @classmethod
    def from_likelihoods(cls, opponent: str, likelihoods: Sequence[float]) -> ChoiceEvidence:
        """``L[j] = P(choice | model j)``, in the opponent's model order."""
        return cls(opponent, likelihoods=tuple(float(x) for x in likelihoods))

    @classmethod
    def from_utilities(
        cls,
        opponent: str,
        child_utilities: Sequence[Sequence[float]] | np.ndarray,
        *,
        chosen: int,
        epsilon: float,
    ) -> ChoiceEvidence:
        """``child_utilities[c][j]``: model j's utility of child c; the server computes L."""
        rows = tuple(tuple(float(x) for x in row) for row in np.asarray(child_utilities))
        return cls(opponent, child_utilities=rows, chosen=int(chosen), epsilon=float(epsilon))

    def to_proto(self, sequence: int) -> pb.ChoiceObservation:
        """The ChoiceObservation message numbered ``sequence``."""
        message = pb.ChoiceObservation(sequence=sequence, opponent=self.opponent)
        if self.likelihoods is not None:
            message.likelihoods.values.extend(self.likelihoods)
        elif self.child_utilities is not None:
            message.utilities.CopyFrom(
                pb.ChoiceUtilities(
                    children=[pb.ModelValues(values=list(r)) for r in self.child_utilities],
                    chosen=self.chosen or 0,
                    epsilon=self.epsilon or 0.0,
                )
            )
        return message


@dataclass(frozen=True, eq=False)
class Weights:
    """The posterior of one opponent's model weights (arrays indexed by model)."""

    opponent: str
    models: tuple[str, ...]
    mean: np.ndarray
    std_error: np.ndarray
    interval: np.ndarray  # (models, 2): central credible interval at ``level``
    level: float
    rhat: np.ndarray
    ess: np.ndarray
    choices: int


@dataclass(frozen=True)
class ChoicesAck:
    """The answer to one stream message: its acks and the posteriors of the opponents named."""

    sequences: tuple[int, ...]
    duplicates: tuple[bool, ...]
    choices_observed: int
    weights: dict[str, Weights] = field(hash=False)


@dataclass(frozen=True, eq=False)
class ProbMaxnMove:
    """Prob-max^n at a Spades position (see GetProbMaxnMoveResponse)."""

    mover: int
    move: int | None
    weights: np.ndarray  # (3, 2): probModel by seat, (MT, mOT)
    bids: tuple[int, ...]
    utility: np.ndarray  # (3, 2): root utility matrix
    u_true: float
    moves: tuple[int, ...]
    multiplicities: tuple[int, ...]
    prob_choice: np.ndarray
    child_u_true: np.ndarray
    n_cards: int
    nodes: int
    child_mover_utility: np.ndarray  # (moves, 2): the mover's (MT, mOT) utility of each move
    epsilon: float

    def choice_evidence(
        self, opponent: str, card: int, models: Sequence[str] = MODEL_LABELS
    ) -> ChoiceEvidence:
        """The evidence of the mover playing ``card`` here, for an opponent whose session models
        are ``models`` (in that order): one child per legal card (a merged move repeated per card
        it stands for), as
        ``oppmodel.modeling.perfect_info.spades_search.ProbMaxnResult.choice_likelihood`` counts
        them."""
        starts = np.asarray(self.moves)
        group = int(np.searchsorted(starts, card, side="right")) - 1
        if group < 0 or starts[group] // 13 != card // 13:
            raise errors.InvalidArgumentError("card", f"{card} is not among the legal moves")
        columns = [MODEL_LABELS.index(m) for m in models]
        per_card = np.repeat(self.child_mover_utility[:, columns], self.multiplicities, axis=0)
        chosen = sum(self.multiplicities[:group])
        return ChoiceEvidence.from_utilities(
            opponent, per_card, chosen=chosen, epsilon=self.epsilon
        )


def _weights(m: pb.ModelWeights) -> Weights:
    return Weights(
        opponent=m.opponent,
        models=tuple(m.models),
        mean=np.array(m.mean),
        std_error=np.array(m.std_error),
        interval=np.stack([np.array(m.lower), np.array(m.upper)], axis=1),
        level=m.level,
        rhat=np.array(m.rhat),
        ess=np.array(m.ess),
        choices=m.choices,
    )


def _describe(s: pb.PerfectInfoSession) -> PerfectInfoSessionDescription:
    c = s.config
    return PerfectInfoSessionDescription(
        session_id=s.session_id,
        game=c.game,
        opponents=tuple(Opponent(o.label, tuple(o.models), tuple(o.alpha)) for o in c.opponents),
        gibbs=GibbsSettings(c.gibbs.sweeps, c.gibbs.burn_in, c.gibbs.chains, c.gibbs.level),
        seed=c.seed,
        choices_observed=s.choices_observed,
        created_unix_ms=s.created_unix_ms,
    )


def position_message(position: SpadesState, bids: Sequence[int] | None) -> pb.SpadesPosition:
    """The SpadesPosition message of a SpadesState (bids None: the server's fixed rule)."""
    return pb.SpadesPosition(
        hands=[hand_str(h) for h in position.hands],
        trick=[card_str(c) if c != NO_CARD else "" for c in position.trick],
        leader=position.leader,
        turn=position.turn,
        tricks=list(position.tricks),
        bids=list(bids or ()),
    )


class PerfectInfoClient(GrpcClient):
    """Blocking client of PerfectInfoService; use as a context manager to close the channel.

    Takes ``target`` and, keyword-only, ``token``, ``root_certificates`` and ``timeout``."""

    stub_class = pb_grpc.PerfectInfoServiceStub

    # -- sessions --------------------------------------------------------------------------------
    def create_session(
        self,
        *,
        opponents: Sequence[Opponent],
        game: str = "spades3p",
        gibbs: GibbsSettings | None = None,
        seed: int = 0,
    ) -> PerfectInfoSessionDescription:
        """Create a session; opponents in seat order after the searcher."""
        g = gibbs or GibbsSettings()
        settings = pb.GibbsSettings()
        for name in ("sweeps", "burn_in", "chains", "level"):
            if getattr(g, name) is not None:
                set_field(settings, name, getattr(g, name), f"config.gibbs.{name}")
        config = pb.PerfectInfoSessionConfig(
            game=game,
            opponents=[
                pb.OpponentModels(label=o.label, models=list(o.models), alpha=list(o.alpha))
                for o in opponents
            ],
            gibbs=settings,
        )
        set_field(config, "seed", seed, "config.seed")
        reply = self._call(
            "CreatePerfectInfoSession", pb.CreatePerfectInfoSessionRequest(config=config)
        )
        return _describe(reply.session)

    def get_session(self, session_id: str) -> PerfectInfoSessionDescription:
        """One session."""
        request = pb.GetPerfectInfoSessionRequest(session_id=session_id)
        reply = self._call("GetPerfectInfoSession", request, session_id=session_id)
        return _describe(reply.session)

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its stored choices."""
        request = pb.DeletePerfectInfoSessionRequest(session_id=session_id)
        self._call("DeletePerfectInfoSession", request, session_id=session_id)

    # -- choices ---------------------------------------------------------------------------------
    def observe_choices(
        self,
        session_id: str,
        choices: Sequence[ChoiceEvidence],
        *,
        first_sequence: int,
        per_message: int = 1,
    ) -> list[ChoicesAck]:
        """Stream choices numbered first_sequence, +1, ..., ``per_message`` per stream message;
        returns one ChoicesAck per message (each once its choices are stored)."""
        if per_message < 1:
            raise errors.InvalidArgumentError("per_message", "must be >= 1")
        messages = [c.to_proto(first_sequence + i) for i, c in enumerate(choices)]
        requests = [
            pb.ObserveChoicesRequest(
                session_id=session_id, observations=messages[i : i + per_message]
            )
            for i in range(0, len(messages), per_message)
        ]
        replies = self.observe_stream(iter(requests), session_id=session_id)
        return [self._ack(r) for r in replies]

    def observe_stream(
        self, requests: Iterator[pb.ObserveChoicesRequest], *, session_id: str | None = None
    ) -> Iterator[pb.ObserveChoicesResponse]:
        """The raw bidirectional stream, for callers that build their own messages; give the
        session's id (``session_id``) to route it to the Ray Serve replica holding the session."""
        return self._stream("ObserveChoices", requests, session_id=session_id, timeout=self.timeout)

    @staticmethod
    def _ack(reply: pb.ObserveChoicesResponse) -> ChoicesAck:
        return ChoicesAck(
            sequences=tuple(a.sequence for a in reply.acks),
            duplicates=tuple(a.duplicate for a in reply.acks),
            choices_observed=reply.choices_observed,
            weights={w.opponent: _weights(w) for w in reply.weights},
        )

    # -- queries ---------------------------------------------------------------------------------
    def model_weights(self, session_id: str, opponent: str = "") -> dict[str, Weights]:
        """The posterior weights of one opponent (or of all: ``opponent=""``), by label."""
        reply = self._call(
            "GetModelWeights",
            pb.GetModelWeightsRequest(session_id=session_id, opponent=opponent),
            session_id=session_id,
        )
        return {w.opponent: _weights(w) for w in reply.weights}

    def probmaxn_move(
        self,
        position: SpadesState,
        *,
        searcher: int,
        bids: Sequence[int] | None = None,
        true_model: str = "MT",
        epsilon: float | None = None,
        session_id: str | None = None,
        weights: np.ndarray | Sequence[Sequence[float]] | None = None,
        searcher_weights: Sequence[float] | None = None,
    ) -> ProbMaxnMove:
        """Prob-max^n at ``position``: under ``weights`` (3 rows by seat) or a session's learned
        weights (``session_id``; ``searcher_weights`` is the opponents' belief about us)."""
        if (session_id is None) == (weights is None):
            raise errors.InvalidArgumentError("weights", "give exactly one of session_id, weights")
        request = pb.GetProbMaxnMoveRequest(
            position=position_message(position, bids), searcher=searcher, true_model=true_model
        )
        if epsilon is not None:
            request.epsilon = epsilon
        if session_id is not None:
            request.session_id = session_id
            if searcher_weights is not None:
                request.searcher_weights.values.extend(float(x) for x in searcher_weights)
        else:
            for row in np.asarray(weights, dtype=np.float64):
                request.given.seats.add(values=row.tolist())
        r = self._call("GetProbMaxnMove", request, session_id=session_id)
        return ProbMaxnMove(
            mover=r.mover,
            move=parse_card(r.move) if r.HasField("move") else None,
            weights=np.array([list(row.values) for row in r.weights]),
            bids=tuple(r.bids),
            utility=np.array([list(row.values) for row in r.utility]),
            u_true=r.u_true,
            moves=tuple(parse_card(c) for c in r.moves),
            multiplicities=tuple(r.multiplicities),
            prob_choice=np.array(r.prob_choice),
            child_u_true=np.array(r.child_u_true),
            n_cards=r.n_cards,
            nodes=r.nodes,
            child_mover_utility=np.array([list(row.values) for row in r.child_mover_utility]),
            epsilon=r.epsilon,
        )
