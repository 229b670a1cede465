"""Typed Python client of the oppmodel gRPC service.

``OpponentModelClient`` wraps the generated stub: it takes and returns domain types
(``MBBRConfig``, ``HandObservation``, numpy tables), sends the bearer token if given, and raises
only the exceptions of ``modeling/errors.py``, never a ``grpc.RpcError``: the server sends the exact
class and field in trailing metadata, and without them ``ERROR_BY_CODE`` decides (UNAVAILABLE ->
UnavailableError, whose message says what likely went wrong: nothing listening, TLS on one side
only, an untrusted certificate; DEADLINE_EXCEEDED -> DeadlineExceededError; UNAUTHENTICATED ->
UnauthenticatedError; any code the server does not send on purpose -> ServiceError).

``observe`` streams observations with sequence numbers and, if the connection drops (the server
restarts, say), reconnects and resends every observation not yet acknowledged; the server's
sequence numbers make that safe (a resend is acknowledged, not applied twice).

    with OpponentModelClient("127.0.0.1:50051") as client:
        session = client.create_session(config=MBBRConfig(seed=7))  # the Dirichlet posterior
        client.observe(session.session_id, [obs1, obs2], first_sequence=1)
        move = client.action(session.session_id, position=0, card=2, history="")
"""

from __future__ import annotations

import codecs
import contextlib
import queue
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from oppmodel.modeling import errors
from oppmodel.modeling.mbbr.model import MBBRConfig
from oppmodel.modeling.observation import HandObservation
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc

_KIND = {None: pb.RESPONSE_KIND_UNSPECIFIED, "mean": pb.RESPONSE_KIND_MEAN}
_KIND["bayes"] = pb.RESPONSE_KIND_BAYES
_KIND_NAME = {pb.RESPONSE_KIND_MEAN: "mean", pb.RESPONSE_KIND_BAYES: "bayes"}
_PRIOR = {"informed": pb.PRIOR_INFORMED, "uninformed": pb.PRIOR_UNINFORMED, "typed": pb.PRIOR_TYPED}
_PRIOR_NAME = {value: name for name, value in _PRIOR.items()}
# What each status code becomes when the server names no class (any other code: ServiceError).
ERROR_BY_CODE: dict[grpc.StatusCode, type[errors.OppModelError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: errors.InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: errors.NotFoundError,
    grpc.StatusCode.FAILED_PRECONDITION: errors.FailedPreconditionError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: errors.ResourceExhaustedError,
    grpc.StatusCode.PERMISSION_DENIED: errors.PermissionDeniedError,
    grpc.StatusCode.UNAUTHENTICATED: errors.UnauthenticatedError,
    grpc.StatusCode.UNAVAILABLE: errors.UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: errors.DeadlineExceededError,
}
_RETRYABLE = (grpc.StatusCode.UNAVAILABLE,)


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


@dataclass(frozen=True)
class BestResponse:
    """Our best response in one position and its expected value (chips per hand)."""

    strategy: StrategyTable
    expected_value: float
    kind: str
    hands_observed: int


@dataclass(frozen=True)
class ActionDecision:
    """The action to take (0 = pass, 1 = bet), its ACPC letter, and the policy's probabilities."""

    action: int
    acpc_action: str
    probabilities: tuple[float, ...]
    infostate: str
    default_policy: bool
    hands_observed: int


def domain_error(
    error: grpc.RpcError, *, target: str = "", tls: bool = False
) -> errors.OppModelError:
    """The modeling/errors.py exception for a failed call to ``target`` (over TLS or not)."""
    code = error.code()
    details = error.details() or ""
    metadata = dict(error.trailing_metadata() or ())
    cls = getattr(errors, str(metadata.get("oppmodel-error", "")), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.OppModelError)):
        cls = ERROR_BY_CODE.get(code, errors.ServiceError)
    if issubclass(cls, errors.InvalidArgumentError):
        escaped = metadata.get("oppmodel-field")  # printable ASCII: see server/errors.py
        field = (
            codecs.decode(str(escaped), "unicode_escape")
            if escaped
            else details.partition(":")[0] or "request"
        )
        prefix = f"{field}: "
        return cls(field, details[len(prefix) :] if details.startswith(prefix) else details)
    if issubclass(cls, errors.ServiceError):
        return cls(f"{code.name}: {details}", code=code.name)
    if cls is errors.UnavailableError:
        hint = _connection_hint(details, tls=tls)
        return cls(f"{target or 'the server'} is unavailable: {details}{hint}")
    if cls is errors.DeadlineExceededError:
        return cls(f"{target or 'the server'}: {details}")
    return cls(details)


def _connection_hint(details: str, *, tls: bool) -> str:
    """What most likely made a connection fail, read from gRPC's details ('' if nothing)."""
    if "Connection refused" in details:
        return " (nothing listens there: is the server running, on that address?)"
    if tls and "WRONG_VERSION_NUMBER" in details:
        return " (the server does not seem to use TLS: connect without root_certificates)"
    if tls and "CERTIFICATE_VERIFY_FAILED" in details:
        return " (root_certificates do not verify the server's certificate)"
    if not tls and "failed to connect" in details and "Socket closed" in details:
        return (
            " (the server closed the connection while it was being set up; this client is "
            "plaintext: if the server uses TLS, give root_certificates)"
        )
    return ""


def _table(infosets: Sequence[pb.InfosetPolicy]) -> StrategyTable:
    return StrategyTable(
        infostates=tuple(i.infostate for i in infosets),
        probabilities=np.array([list(i.probabilities) for i in infosets], dtype=np.float64),
    )


def _describe(session: pb.Session) -> SessionDescription:
    cfg = session.config
    m = cfg.mbbr
    return SessionDescription(
        session_id=session.session_id,
        game=cfg.game,
        our_label=cfg.our_label,
        opponent_labels=tuple(cfg.opponent_labels),
        config=MBBRConfig(
            epsilon=m.epsilon,
            k=m.k,
            hands_default=m.hands_default,
            eta=m.eta,
            prior=_PRIOR_NAME.get(m.prior, "informed"),
            response=_KIND_NAME.get(m.response, "mean"),
            # servers fill it in; one from before posteriors were a setting leaves it unset: samples
            posterior="dirichlet" if m.posterior == pb.POSTERIOR_DIRICHLET else "samples",
            seed=cfg.seed,
        ),
        hands_observed=session.hands_observed,
        created_unix_ms=session.created_unix_ms,
    )


def observation_message(sequence: int, obs: HandObservation) -> pb.Observation:
    """The Observation message of a HandObservation (betting in OpenSpiel letters)."""
    return pb.Observation(
        sequence=sequence,
        position=obs.position,
        our_card=obs.cards[obs.position],
        history=obs.history,
        revealed=[
            pb.RevealedCard(position=p, card=c)
            for p, c in enumerate(obs.cards)
            if c is not None and p != obs.position
        ],
    )


class GrpcClient:
    """What both service clients share: the channel (TLS when ``root_certificates`` are given),
    the bearer-token metadata, closing as a context manager, the server's health check, and
    ``_call`` and ``_stream``, which raise a failed call as its domain exception. A subclass names
    its generated stub class. ``channel_options`` are gRPC channel arguments (the reconnection
    backoff, say)."""

    stub_class: Callable[[grpc.Channel], Any]

    def __init__(
        self,
        target: str,
        *,
        token: str | None = None,
        root_certificates: bytes | None = None,
        timeout: float = 30.0,
        channel_options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        self.target = target
        self.tls = root_certificates is not None
        if root_certificates is None:
            self._channel = grpc.insecure_channel(target, options=list(channel_options))
        else:
            credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.secure_channel(target, credentials, options=list(channel_options))
        self._stub = self.stub_class(self._channel)
        self._metadata = () if token is None else (("authorization", f"Bearer {token}"),)
        self.timeout = timeout

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()

    def check_health(self, *, wait_for_ready: bool = False) -> None:
        """Return once the server answers its health check with SERVING (within the client's
        timeout); raise its failure otherwise. ``wait_for_ready``: wait for the connection
        instead of failing at once while the server is unreachable, so the call returns as soon
        as the server answers again."""
        reply = self._call_stub(
            health_pb2_grpc.HealthStub(self._channel).Check,
            health_pb2.HealthCheckRequest(),
            wait_for_ready=wait_for_ready,
        )
        if reply.status != health_pb2.HealthCheckResponse.SERVING:
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            raise errors.FailedPreconditionError(f"health: the server is {status}")

    def _error(self, error: grpc.RpcError) -> errors.OppModelError:
        """The domain exception for a failed call on this client's channel."""
        return domain_error(error, target=self.target, tls=self.tls)

    def _call(self, method: str, request: object) -> Any:
        return self._call_stub(getattr(self._stub, method), request)

    def _call_stub(self, method: Callable[..., Any], request: object, **options: Any) -> Any:
        try:
            return method(request, timeout=self.timeout, metadata=self._metadata, **options)
        except grpc.RpcError as exc:
            raise self._error(exc) from None

    def _stream(self, method: str, requests: Iterator[Any], **options: Any) -> Iterator[Any]:
        """The responses of a streaming call, failures raised as domain exceptions."""
        try:
            yield from getattr(self._stub, method)(requests, metadata=self._metadata, **options)
        except grpc.RpcError as exc:
            raise self._error(exc) from None


class OpponentModelClient(GrpcClient):
    """Blocking client of OpponentModelService; use as a context manager to close the channel."""

    stub_class = pb_grpc.OpponentModelServiceStub

    def __init__(
        self,
        target: str,
        *,
        token: str | None = None,
        root_certificates: bytes | None = None,
        timeout: float = 30.0,
        reconnect_seconds: float = 30.0,
        channel_options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        super().__init__(
            target,
            token=token,
            root_certificates=root_certificates,
            timeout=timeout,
            channel_options=channel_options,
        )
        self.reconnect_seconds = reconnect_seconds

    # -- sessions --------------------------------------------------------------------------------
    def create_session(
        self,
        *,
        game: str = "kuhn_poker(players=3)",
        our_label: str = "us",
        opponent_labels: Sequence[str] = ("opp_A", "opp_B"),
        config: MBBRConfig | None = None,
        prior_mean: Mapping[int, Mapping[str, Sequence[float]]] | None = None,
    ) -> SessionDescription:
        """Create a session; ``prior_mean`` maps position -> infostate -> probabilities.

        ``opponent_labels`` are in seat order after ours: ``opponent_labels[i]`` sits ``i + 1``
        seats after us, so in a hand where we play position ``p`` it plays ``(p + i + 1) % n``.
        """
        config = config or MBBRConfig()
        if config.prior not in _PRIOR:
            raise errors.InvalidArgumentError(
                "config.mbbr.prior", f"must be one of {tuple(_PRIOR)}, got {config.prior!r}"
            )
        params = pb.MbbrParams(
            epsilon=config.epsilon,
            k=config.k,
            hands_default=config.hands_default,
            eta=config.eta,
            prior=_PRIOR[config.prior],
            response=_KIND.get(config.response, pb.RESPONSE_KIND_UNSPECIFIED),
            posterior=(
                pb.POSTERIOR_DIRICHLET if config.posterior == "dirichlet" else pb.POSTERIOR_SAMPLES
            ),
        )
        for position, table in (prior_mean or {}).items():
            params.prior_mean.append(
                pb.PositionStrategy(
                    position=position,
                    infosets=[
                        pb.InfosetPolicy(infostate=s, probabilities=list(p))
                        for s, p in table.items()
                    ],
                )
            )
        request = pb.CreateSessionRequest(
            config=pb.SessionConfig(
                game=game,
                our_label=our_label,
                opponent_labels=list(opponent_labels),
                method=pb.METHOD_MBBR,
                mbbr=params,
                seed=config.seed,
            )
        )
        return _describe(self._call("CreateSession", request).session)

    def get_session(self, session_id: str) -> SessionDescription:
        """One session."""
        return _describe(
            self._call("GetSession", pb.GetSessionRequest(session_id=session_id)).session
        )

    def list_sessions(self) -> list[SessionDescription]:
        """The caller's sessions, oldest first."""
        reply = self._call("ListSessions", pb.ListSessionsRequest())
        return [_describe(s) for s in reply.sessions]

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its stored observations."""
        self._call("DeleteSession", pb.DeleteSessionRequest(session_id=session_id))

    # -- observations ----------------------------------------------------------------------------
    def observe(
        self,
        session_id: str,
        observations: Sequence[HandObservation],
        *,
        first_sequence: int,
    ) -> int:
        """Stream observations numbered first_sequence, first_sequence + 1, ...; wait for acks.

        Returns the session's hands_observed after the last ack. If the connection fails
        (UNAVAILABLE), reconnects for up to ``reconnect_seconds`` and resends what was not
        acknowledged; other failures raise the matching domain error.
        """
        pending = [
            pb.ObserveRequest(session_id=session_id, observation=observation_message(s, o))
            for s, o in enumerate(observations, start=first_sequence)
        ]
        hands = 0
        deadline = time.monotonic() + self.reconnect_seconds
        while pending:
            try:
                for ack in self._stub.Observe(
                    iter(list(pending)),
                    metadata=self._metadata,
                    timeout=self.timeout + 0.01 * len(pending),
                ):
                    while pending and pending[0].observation.sequence <= ack.sequence:
                        pending.pop(0)
                    hands = ack.hands_observed
            except grpc.RpcError as exc:
                if exc.code() not in _RETRYABLE or time.monotonic() > deadline:
                    raise self._error(exc) from None
                time.sleep(0.05)
        return hands

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
        reply = self._call(
            "GetModel",
            pb.GetModelRequest(
                session_id=session_id,
                opponent_label=opponent_label,
                opponent_position=opponent_position,
            ),
        )
        return OpponentModel(
            strategy=_table(reply.infosets),
            effective_sample_size=reply.effective_sample_size,
            our_position=reply.our_position,
            hands_observed=reply.hands_observed,
        )

    def response(self, session_id: str, our_position: int, kind: str | None = None) -> BestResponse:
        """Our best response in ``our_position`` ('mean', 'bayes', or the session's default)."""
        if kind not in _KIND:
            raise errors.InvalidArgumentError("kind", f"{kind!r} is not 'mean' or 'bayes'")
        reply = self._call(
            "GetResponse",
            pb.GetResponseRequest(
                session_id=session_id, our_position=our_position, kind=_KIND[kind]
            ),
        )
        return BestResponse(
            strategy=_table(reply.infosets),
            expected_value=reply.expected_value,
            kind=_KIND_NAME[reply.kind],
            hands_observed=reply.hands_observed,
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
        request = pb.GetActionRequest(session_id=session_id, draw=draw)
        if matchstate is not None:
            request.matchstate = matchstate
        else:
            if position is None or card is None:
                raise errors.InvalidArgumentError("info_state", "give position and card")
            request.info_state.CopyFrom(pb.InfoState(position=position, card=card, history=history))
        reply = self._call_stub(self._stub.GetAction, request, wait_for_ready=wait_for_ready)
        return ActionDecision(
            action=reply.action,
            acpc_action=reply.acpc_action,
            probabilities=tuple(reply.probabilities),
            infostate=reply.infostate,
            default_policy=reply.default_policy,
            hands_observed=reply.hands_observed,
        )


class ObservationStream:
    """One Observe stream kept open across hands: ``send`` returns once the hand is acknowledged.

    Saves opening a stream per hand. If the stream breaks (UNAVAILABLE: the server went away), the
    next ``send`` reopens it and resends every observation not yet acknowledged, for up to the
    client's ``reconnect_seconds``; the server's sequence numbers make the resend safe. A stream
    the server closed for carrying nothing too long (``IdleStreamError``) is reopened the same
    way.
    """

    def __init__(self, client: OpponentModelClient, session_id: str, first_sequence: int) -> None:
        self._client = client
        self.session_id = session_id
        self.next_sequence = first_sequence
        self._unacked: list[pb.ObserveRequest] = []
        self._requests: queue.SimpleQueue | None = None
        self._responses: Iterator[pb.ObserveResponse] | None = None

    def __enter__(self) -> ObservationStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _open(self) -> None:
        self._abandon()
        requests: queue.SimpleQueue = queue.SimpleQueue()
        for request in self._unacked:
            requests.put(request)
        self._requests = requests
        self._responses = self._client._stub.Observe(
            iter(requests.get, None), metadata=self._client._metadata
        )

    def _abandon(self) -> None:
        if self._requests is not None:
            self._requests.put(None)  # ends the request iterator of the old stream
        self._requests = self._responses = None

    def send(self, obs: HandObservation) -> int:
        """Send the next hand and wait for its acknowledgement; returns hands_observed."""
        request = pb.ObserveRequest(
            session_id=self.session_id, observation=observation_message(self.next_sequence, obs)
        )
        self.next_sequence += 1
        self._unacked.append(request)
        if self._responses is None:
            self._open()
        else:
            self._requests.put(request)
        deadline = time.monotonic() + self._client.reconnect_seconds
        hands = 0
        reopened_idle = False
        while self._unacked:
            try:
                ack = next(self._responses)
            except grpc.RpcError as exc:
                error = self._client._error(exc)
                if isinstance(error, errors.IdleStreamError) and not reopened_idle:
                    reopened_idle = True  # closed while we had nothing to send: go on anew
                    self._open()
                    continue
                if exc.code() not in _RETRYABLE or time.monotonic() > deadline:
                    self._abandon()
                    raise error from None
                time.sleep(0.05)
                self._open()
                continue
            except StopIteration:  # the server closed the stream without an error
                if time.monotonic() > deadline:
                    self._abandon()
                    raise errors.FailedPreconditionError(
                        "observation: the server keeps ending the stream without an ack"
                    ) from None
                self._open()
                continue
            while self._unacked and self._unacked[0].observation.sequence <= ack.sequence:
                self._unacked.pop(0)
            hands = ack.hands_observed
        return hands

    def close(self) -> None:
        """Finish the stream (every sent hand has been acknowledged)."""
        if self._requests is not None:
            self._requests.put(None)
            with contextlib.suppress(grpc.RpcError):  # nothing unacknowledged is lost
                for _ in self._responses:
                    pass
        self._requests = self._responses = None
