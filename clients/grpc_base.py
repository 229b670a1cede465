"""What both service clients share (:class:`oppmodel.clients.client.OpponentModelClient` and
:class:`oppmodel.clients.perfect_info_client.PerfectInfoClient`): the channel (TLS when root
certificates are given), the bearer token, the health check, and the one table that turns a failed
call back into the domain exception the server raised.

The server sends the exact class and field in trailing metadata (``server/errors.py``); without
them ``ERROR_BY_CODE`` decides (UNAVAILABLE -> UnavailableError, whose message says what likely
went wrong: nothing listening, TLS on one side only, an untrusted certificate; DEADLINE_EXCEEDED ->
DeadlineExceededError; UNAUTHENTICATED -> UnauthenticatedError; any code the server does not send
on purpose -> ServiceError). A caller never sees a ``grpc.RpcError``.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, Self, TypedDict, cast

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from oppmodel.modeling import errors

ROUTING_KEY = "session_id"  # the metadata Ray Serve's ConsistentHashRouter routes by

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


def domain_error(
    error: grpc.RpcError, *, target: str = "", tls: bool = False
) -> errors.OppModelError:
    """The modeling/errors.py exception for a failed call to ``target`` (over TLS or not)."""
    code = error.code()
    details = error.details() or ""
    # types-grpcio declares RpcError.trailing_metadata() as _Metadatum objects; grpc returns the
    # (key, value) pairs of grpc.Call.trailing_metadata().
    pairs = cast("Sequence[tuple[str, str | bytes]]", error.trailing_metadata() or ())
    metadata = dict(pairs)
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


class ChannelSettings(TypedDict, total=False):
    """:class:`GrpcClient`'s keyword arguments, which a subclass's constructor passes on whole
    (``**channel``) rather than listing them again."""

    token: str | None
    root_certificates: bytes | None
    timeout: float
    channel_options: Sequence[tuple[str, Any]]


class GrpcClient:
    """What both service clients share: the channel (TLS when ``root_certificates`` are given),
    the bearer-token metadata, closing as a context manager, the server's health check, and
    ``_call`` and ``_stream``, which raise a failed call as its domain exception (``_replied``
    sees the trailers of every unary reply). A subclass names its generated stub class.
    ``channel_options`` are gRPC channel arguments (the reconnection backoff, say)."""

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

    def error_of(self, error: grpc.RpcError) -> errors.OppModelError:
        """The domain exception for a failed call on this client's channel."""
        return domain_error(error, target=self.target, tls=self.tls)

    def open_stream(
        self,
        method: str,
        requests: Iterator[Any],
        *,
        session_id: str | None = None,
        **options: Any,
    ) -> Any:
        """The call of a bidirectional stream kept open by its caller (routed by
        ``session_id``): an iterator of the responses that can be cancelled, whose failures
        raise ``grpc.RpcError`` (``error_of`` names them), so the caller decides which end the
        stream and which are retried."""
        return getattr(self._stub, method)(requests, metadata=self._routed(session_id), **options)

    def _call(self, method: str, request: object, *, session_id: str | None = None) -> Any:
        return self._call_stub(getattr(self._stub, method), request, session_id=session_id)

    def _call_stub(
        self,
        method: grpc.UnaryUnaryMultiCallable,
        request: object,
        *,
        session_id: str | None = None,
        **options: Any,
    ) -> Any:
        try:
            reply, call = method.with_call(
                request, timeout=self.timeout, metadata=self._routed(session_id), **options
            )
        except grpc.RpcError as exc:
            raise self.error_of(exc) from None
        self._replied(call.trailing_metadata() or ())
        return reply

    def _replied(self, trailers: Sequence[tuple[str, str | bytes]]) -> None:
        """Sees the trailing metadata of every unary call answered without error (a subclass
        learns from it what serves it); nothing here."""

    def _routed(self, session_id: str | None) -> tuple[tuple[str, str], ...]:
        """The call's metadata: the bearer token, and the session the call is about (Ray Serve's
        proxy routes by metadata ``session_id``, so a session's calls reach the replica that
        holds it; the single-process server ignores it)."""
        if session_id is None:
            return self._metadata
        return (*self._metadata, (ROUTING_KEY, session_id))

    def _stream(
        self,
        method: str,
        requests: Iterator[Any],
        *,
        session_id: str | None = None,
        **options: Any,
    ) -> Iterator[Any]:
        """The responses of a streaming call (routed by ``session_id``, as ``_call``), failures
        raised as domain exceptions."""
        try:
            yield from getattr(self._stub, method)(
                requests, metadata=self._routed(session_id), **options
            )
        except grpc.RpcError as exc:
            raise self.error_of(exc) from None
