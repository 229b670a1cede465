"""Typed Python client of the oppmodel gRPC service.

``OpponentModelClient`` wraps the generated stub: it takes and returns domain types
(``MBBRConfig``, ``HandObservation``, numpy tables), sends the bearer token if given, and raises
only the exceptions of ``modeling/errors.py``, never a ``grpc.RpcError``
(:mod:`oppmodel.clients.grpc_base` turns a failed call back into the server's exception). Enum
fields go through the API's one table of them (:mod:`oppmodel.v1_enums`), the MBBR configuration
through its one codec (:mod:`oppmodel.v1_codec`).

``observe`` streams observations with sequence numbers and, if the connection drops (the server
restarts, say), reconnects and resends every observation not yet acknowledged; the server's
sequence numbers make that safe (a resend is acknowledged, not applied twice).

    with OpponentModelClient("127.0.0.1:50051") as client:
        session = client.create_session(config=MBBRConfig(seed=7))  # the Dirichlet posterior
        client.observe(session.session_id, [obs1, obs2], first_sequence=1)
        move = client.action(session.session_id, position=0, card=2, history="")

Any ACPC limit game (``game="leduc3p"`` or a game definition's text) is observed with
``LimitObservation`` records or the MATCHSTATE lines of finished hands, and asked for actions with
the MATCHSTATE line of the decision (``action(sid, matchstate=line)``); its tables are keyed by the
``<cards>:<betting>`` information states, actions [fold, call, raise]. ``observe_batch`` sends
hands in unary calls (all or nothing each, resent safely), for callers that cannot stream.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Unpack

import grpc
import numpy as np

from oppmodel.clients.grpc_base import ChannelSettings, GrpcClient
from oppmodel.clients.outbox import Hand, ObservationStream, Outbox, Retry, observation_message
from oppmodel.modeling import errors
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc
from oppmodel.v1_codec import UNSET_BY_OLDER_SERVERS, read_config, set_field, write_config
from oppmodel.v1_enums import POPULATION_KIND, RESPONSE_KIND
from oppmodel.v1_services import MAX_BATCH, REPLICA_KEY

SOLVE_POLL_SECONDS = 1.0  # between CreateSession calls while the server solves the game


@dataclass(frozen=True)
class SessionDescription:
    """A session as the server stores it (defaults filled in)."""

    session_id: str
    game: str
    our_label: str
    opponent_labels: tuple[str, ...]
    config: MBBRConfig
    hands_observed: int
    created_unix_ms: int
    population_version: int = 0  # the population prior's version it started from (0: none)


@dataclass(frozen=True, eq=False)
class StrategyTable:
    """Action probabilities per information state (OpenSpiel strings), row i for infostates[i]."""

    infostates: tuple[str, ...]
    probabilities: np.ndarray  # (len(infostates), num_actions)

    def as_dict(self) -> dict[str, tuple[float, ...]]:
        """{infostate: probabilities}."""
        return {
            s: tuple(row)
            for s, row in zip(self.infostates, self.probabilities.tolist(), strict=True)
        }


@dataclass(frozen=True)
class OpponentModel:
    """The model of one opponent in one position."""

    strategy: StrategyTable
    effective_sample_size: float
    our_position: int
    hands_observed: int
    prior: StrategyTable  # the prior mean, rows as ``strategy``'s
    concentration: tuple[float, ...]  # alpha_0 per row (Dirichlet posterior; else empty)
    run_start: int  # change detection: the hand the models' run began at
    safety_bankroll: float | None  # chips learning may still lose (None: no safety budget)


@dataclass(frozen=True)
class BestResponse:
    """Our best response in one position and its expected value (chips per hand), and, when
    asked for (None otherwise), what the agent plays now there (the policy GetAction draws from)
    with its expected value against the posterior-mean models."""

    strategy: StrategyTable
    expected_value: float
    kind: str
    hands_observed: int
    played: StrategyTable | None = None
    played_expected_value: float | None = None


@dataclass(frozen=True)
class SessionModels:
    """Every model and response of a session at one posterior (GetModels): ``models[i][p]``
    is opponent ``i``'s (in the order of the session's opponent labels) in position ``p``, as
    ``model(sid, labels[i], p)`` answers it; ``responses[p]`` ours in position ``p``, as
    ``response(sid, p, kind, played=...)`` answers it (none where the game has no response
    table: 3-player hold'em responds at each decision)."""

    models: tuple[tuple[OpponentModel, ...], ...]
    responses: tuple[BestResponse, ...]
    hands_observed: int


@dataclass(frozen=True)
class Winnings:
    """Our chips in each observed hand after ``after_hand`` (GetWinnings), and the game's unit of
    win rates: a rate is 1000 x chips per hand / ``unit_chips``, in ``unit_label``."""

    after_hand: int
    chips: tuple[float, ...]
    hands_observed: int
    unit_chips: int
    unit_label: str


@dataclass(frozen=True)
class ActionDecision:
    """The action to take (0 = pass, 1 = bet), its ACPC letter, and the policy's probabilities."""

    action: int
    acpc_action: str
    probabilities: tuple[float, ...]
    infostate: str
    default_policy: bool
    hands_observed: int

    @classmethod
    def from_proto(cls, reply: pb.GetActionResponse) -> ActionDecision:
        """GetAction's answer (on its own call or a GetActions stream)."""
        fields = (reply.infostate, reply.default_policy, reply.hands_observed)
        return cls(reply.action, reply.acpc_action, tuple(reply.probabilities), *fields)


def _table(infosets: Sequence[pb.InfosetPolicy]) -> StrategyTable:
    return StrategyTable(
        infostates=tuple(i.infostate for i in infosets),
        probabilities=np.array([list(i.probabilities) for i in infosets], dtype=np.float64),
    )


def model_of(reply: pb.GetModelResponse) -> OpponentModel:
    """A GetModel reply as an OpponentModel (this client's and the web UI's reading)."""
    return OpponentModel(
        strategy=_table(reply.infosets),
        effective_sample_size=reply.effective_sample_size,
        our_position=reply.our_position,
        hands_observed=reply.hands_observed,
        prior=_table(reply.prior),
        concentration=tuple(reply.concentration),
        run_start=reply.run_start,
        safety_bankroll=reply.safety_bankroll if reply.HasField("safety_bankroll") else None,
    )


def _best_response(reply: pb.GetResponseResponse) -> BestResponse:
    answered = reply.HasField("played_expected_value")
    return BestResponse(
        strategy=_table(reply.infosets),
        expected_value=reply.expected_value,
        kind=RESPONSE_KIND.name(reply.kind, f"unknown ({reply.kind})"),
        hands_observed=reply.hands_observed,
        played=_table(reply.played) if answered else None,
        played_expected_value=reply.played_expected_value if answered else None,
    )


def _response_kind(kind: str | None) -> pb.ResponseKind:
    if kind is not None and kind not in RESPONSE_KIND.values:
        raise errors.InvalidArgumentError("kind", f"{kind!r} is not 'mean' or 'bayes'")
    return pb.RESPONSE_KIND_UNSPECIFIED if kind is None else RESPONSE_KIND.values[kind]


def _describe(session: pb.Session) -> SessionDescription:
    cfg = session.config
    return SessionDescription(
        session_id=session.session_id,
        game=cfg.game,
        our_label=cfg.our_label,
        opponent_labels=tuple(cfg.opponent_labels),
        config=read_config(cfg, unset=UNSET_BY_OLDER_SERVERS),
        hands_observed=session.hands_observed,
        created_unix_ms=session.created_unix_ms,
        population_version=session.population_version,
    )


class OpponentModelClient(GrpcClient):
    """Blocking client of OpponentModelService; use as a context manager to close the channel."""

    stub_class = pb_grpc.OpponentModelServiceStub

    def __init__(
        self,
        target: str,
        *,
        reconnect_seconds: float = 30.0,
        observe_batches: bool = False,
        **channel: Unpack[ChannelSettings],
    ) -> None:
        """``channel``: the channel's settings (:class:`GrpcClient`'s token, root_certificates,
        timeout, channel_options). ``observe_batches``: ``observe`` sends ObserveBatch calls
        instead of a stream (set on its own once any reply comes from a Ray Serve replica, see
        ``_replied``)."""
        super().__init__(target, **channel)
        self.reconnect_seconds = reconnect_seconds
        self.observe_batches = observe_batches

    # -- sessions --------------------------------------------------------------------------------
    def create_session(
        self,
        *,
        game: str = "kuhn_poker(players=3)",
        our_label: str = "us",
        opponent_labels: Sequence[str] = ("opp_A", "opp_B"),
        config: MBBRConfig | None = None,
        prior_mean: Mapping[int, Mapping[str, Sequence[float]]] | str | None = None,
        default_strategy: Mapping[int, Mapping[str, Sequence[float]]] | str | None = None,
        send_defaults: bool = False,
        wait_for_solve: bool = True,
    ) -> SessionDescription:
        """Create a session of ``game``: "kuhn_poker(players=n)", a bundled ACPC game's short name
        ("leduc3p") or an ACPC limit game definition's text. ``prior_mean`` and
        ``default_strategy`` map position -> infostate -> probabilities, or are the text of a
        strategy file (in any game; Kuhn's also keyed by OpenSpiel's strings); None: the server's
        default.

        ``opponent_labels`` are in seat order after ours: ``opponent_labels[i]`` sits ``i + 1``
        seats after us, so in a hand where we play position ``p`` it plays ``(p + i + 1) % n``.
        The parameters added later (the safety budget, the change hazard, the mixture's eta:
        ``FIELDS_ADDED_LATER``) are sent only when they differ from MBBRConfig's defaults (unset,
        the server applies MBBRConfig's; a limit session detects changes only when sent a
        hazard), or always with ``send_defaults``: the session then runs ``config`` itself in
        every game (what an offline replay compares with the library's model); the one codec of
        the configuration: :mod:`oppmodel.v1_codec`.

        A game no bundle holds is solved by the server on first use; meanwhile it answers
        GameSolvingError (UNAVAILABLE), and with ``wait_for_solve`` the call is repeated every
        ``SOLVE_POLL_SECONDS`` until the session is created.
        """
        session = pb.SessionConfig(
            game=game,
            our_label=our_label,
            opponent_labels=list(opponent_labels),
            method=pb.METHOD_MBBR,
        )
        write_config(config or MBBRConfig(), session, every_field=send_defaults)
        params = session.mbbr
        for name, given in (("prior_mean", prior_mean), ("default_strategy", default_strategy)):
            if isinstance(given, str):
                setattr(params, f"{name}_json", given)
                continue
            for position, table in (given or {}).items():
                strategy = getattr(params, name).add()
                set_field(strategy, "position", position, f"{name}[{position!r}]")
                for infostate, probabilities in table.items():
                    try:
                        strategy.infosets.add(infostate=infostate, probabilities=probabilities)
                    except (TypeError, ValueError):
                        raise errors.InvalidArgumentError(
                            f"{name}[{position!r}][{infostate!r}]",
                            f"must be numbers keyed by an information-state string, got "
                            f"{probabilities!r}",
                        ) from None
        request = pb.CreateSessionRequest(config=session)
        while True:
            try:
                return _describe(self._call("CreateSession", request).session)
            except errors.GameSolvingError:
                if not wait_for_solve:
                    raise
            time.sleep(SOLVE_POLL_SECONDS)  # the server solves the game meanwhile

    def _replied(self, trailers: Sequence[tuple[str, str | bytes]]) -> None:
        """A Ray Serve deployment names its replica in every unary reply (server/ray_serve.py);
        through its proxy a unary call costs ~4 ms of CPU and a streamed message ~3 ms, so from
        the first such reply on, whichever call it answered, hands go in batches."""
        if any(key == REPLICA_KEY for key, _ in trailers):
            self.observe_batches = True

    def get_session(self, session_id: str) -> SessionDescription:
        """One session."""
        return _describe(
            self._call(
                "GetSession", pb.GetSessionRequest(session_id=session_id), session_id=session_id
            ).session
        )

    def list_sessions(self) -> list[SessionDescription]:
        """The caller's sessions, oldest first."""
        reply = self._call("ListSessions", pb.ListSessionsRequest())
        return [_describe(s) for s in reply.sessions]

    def fit_population(self, game: str, kind: str | None = None) -> pb.FitPopulationResponse:
        """Fit and store the next version of the caller's population prior of ``game`` (named
        as ``create_session`` names it) from its sessions, as ``kind`` ("types" or "dirichlet";
        None: the server's default, types): its version, opponents, sessions, fitted
        information sets, types and kind."""
        request = pb.FitPopulationRequest(game=game)
        if kind is not None:
            if kind not in POPULATION_KIND.values:
                raise errors.InvalidArgumentError("kind", f"unknown population kind {kind!r}")
            request.kind = POPULATION_KIND.values[kind]
        return self._call("FitPopulation", request)

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its stored observations."""
        self._call(
            "DeleteSession", pb.DeleteSessionRequest(session_id=session_id), session_id=session_id
        )

    # -- observations ----------------------------------------------------------------------------
    def observe(
        self,
        session_id: str,
        observations: Sequence[Hand],
        *,
        first_sequence: int,
    ) -> int:
        """Stream observations numbered first_sequence, first_sequence + 1, ...; wait for acks.

        Returns the session's hands_observed after the last ack. If the connection fails
        (UNAVAILABLE), reconnects for up to ``reconnect_seconds`` and resends what was not
        acknowledged; other failures raise the matching domain error. With ``observe_batches``
        the observations go in ObserveBatch calls of up to MAX_BATCH each instead.
        """
        if self.observe_batches:
            hands = 0
            for start in range(0, len(observations), MAX_BATCH):
                hands = self.observe_batch(
                    session_id,
                    observations[start : start + MAX_BATCH],
                    first_sequence=first_sequence + start,
                )
            return hands
        outbox = Outbox(first_sequence)
        for obs in observations:
            outbox.add(obs)
        hands = 0
        retry = Retry(self, self.reconnect_seconds)
        while outbox:
            pending = [
                pb.ObserveRequest(session_id=session_id, observation=o) for o in outbox.messages()
            ]
            try:
                for ack in self._stub.Observe(
                    iter(pending),
                    metadata=self._routed(session_id),
                    timeout=self.timeout + 0.01 * len(pending),
                ):
                    outbox.acknowledge(ack.sequence)
                    hands = ack.hands_observed
            except grpc.RpcError as exc:
                retry.after(exc)
        return hands

    def observe_batch(
        self, session_id: str, observations: Sequence[Hand], *, first_sequence: int
    ) -> int:
        """Send observations numbered first_sequence, ... in one ObserveBatch call (all or
        nothing); returns the session's hands_observed. If the server is unreachable
        (UNAVAILABLE) the same batch is resent for up to ``reconnect_seconds``: what was applied
        comes back acknowledged as duplicates."""
        request = pb.ObserveBatchRequest(
            session_id=session_id,
            observations=[
                observation_message(s, o) for s, o in enumerate(observations, start=first_sequence)
            ],
        )
        retry = Retry(self, self.reconnect_seconds)
        while True:
            try:
                reply, call = self._stub.ObserveBatch.with_call(
                    request, metadata=self._routed(session_id), timeout=self.timeout
                )
            except grpc.RpcError as exc:
                retry.after(exc)
                continue
            self._replied(call.trailing_metadata() or ())
            return int(reply.hands_observed)

    def observation_stream(self, session_id: str, *, first_sequence: int) -> ObservationStream:
        """A long-lived Observe stream for one hand at a time (see ObservationStream)."""
        return ObservationStream(self, session_id, first_sequence)

    def observe_stream(self, requests: Iterator[pb.ObserveRequest]) -> Iterator[pb.ObserveResponse]:
        """The raw bidirectional stream (no resend), for callers that pipeline themselves."""
        return self._stream("Observe", requests)

    # -- queries ---------------------------------------------------------------------------------
    def model(self, session_id: str, opponent_label: str, opponent_position: int) -> OpponentModel:
        """The model of opponent ``opponent_label`` when it sits in ``opponent_position`` (we then
        sit ``i + 1`` positions before it, ``i`` its index in the session's opponent labels)."""
        request = pb.GetModelRequest(session_id=session_id, opponent_label=opponent_label)
        set_field(request, "opponent_position", opponent_position, "opponent_position")
        return model_of(self._call("GetModel", request, session_id=session_id))

    def response(
        self, session_id: str, our_position: int, kind: str | None = None, *, played: bool = False
    ) -> BestResponse:
        """Our best response in ``our_position`` ('mean', 'bayes', or the session's default);
        with ``played``, also what the agent plays there now (the service computes it apart)."""
        request = pb.GetResponseRequest(
            session_id=session_id, kind=_response_kind(kind), include_played=played
        )
        set_field(request, "our_position", our_position, "our_position")
        return _best_response(self._call("GetResponse", request, session_id=session_id))

    def models(
        self, session_id: str, kind: str | None = None, *, played: bool = False
    ) -> SessionModels:
        """Every opponent's model in every position and our response in every position, read
        at one posterior in one call (``kind`` and ``played`` as ``response``'s; no response
        where the game has no response table: 3-player hold'em)."""
        request = pb.GetModelsRequest(
            session_id=session_id, kind=_response_kind(kind), include_played=played
        )
        reply = self._call("GetModels", request, session_id=session_id)
        players = reply.players or len(reply.responses)  # a server before the field: responses
        models = [model_of(m) for m in reply.models]
        return SessionModels(
            models=tuple(
                tuple(models[start : start + players]) for start in range(0, len(models), players)
            ),
            responses=tuple(_best_response(r) for r in reply.responses),
            hands_observed=reply.hands_observed,
        )

    def winnings(self, session_id: str, *, after_hand: int = 0) -> Winnings:
        """Our chips in every hand the session had observed after ``after_hand`` when asked,
        in as many calls as the server's limit per answer needs."""
        chips: list[float] = []
        while True:
            request = pb.GetWinningsRequest(session_id=session_id)
            set_field(request, "after_hand", after_hand + len(chips), "after_hand")
            reply = self._call("GetWinnings", request, session_id=session_id)
            chips += reply.chips
            if not reply.chips or after_hand + len(chips) >= reply.hands_observed:
                break
        return Winnings(
            after_hand, tuple(chips), reply.hands_observed, reply.unit_chips, reply.unit_label
        )

    def action(
        self,
        session_id: str,
        *,
        position: int | None = None,
        card: int | None = None,
        history: str = "",
        matchstate: str | None = None,
        draw: int = 0,
        wait_for_ready: bool = False,
    ) -> ActionDecision:
        """The action to take at (position, card, history) or at an ACPC MATCHSTATE line.

        The action is drawn from the policy by a generator seeded with the session's seed, the
        hands observed, the information state and ``draw``: the same call gives the same action,
        so pass a different ``draw`` (the hand number, say) to vary it. ``wait_for_ready``: while
        the server is unreachable, wait for it (within the client's timeout) instead of failing at
        once.
        """
        request = pb.GetActionRequest(session_id=session_id)
        set_field(request, "draw", draw, "draw")
        if matchstate is not None:
            request.matchstate = matchstate
        else:
            if position is None or card is None:
                raise errors.InvalidArgumentError("info_state", "give position and card")
            request.info_state.SetInParent()
            request.info_state.history = history
            set_field(request.info_state, "position", position, "info_state.position")
            set_field(request.info_state, "card", card, "info_state.card")
        reply = self._call_stub(
            self._stub.GetAction, request, session_id=session_id, wait_for_ready=wait_for_ready
        )
        return ActionDecision.from_proto(reply)
