"""One Ray Serve replica of the services: the single-process server's servicers behind Serve.

Each replica wraps the very SessionManager and OpponentModelServicer, PerfectInfoManager and
PerfectInfoServicer of the single-process server (``server/app.py``) on the shared PostgreSQL
store; only the transport differs. How replicas are deployed, routed and started:
``server/ray_serve.py``.

Errors reach the client as from the single-process server. Ray's gRPC context has no ``abort``,
and an exception escaping a deployment method loses the trailing metadata (or, unmapped, becomes
INTERNAL with Ray's traceback in the details); so the servicer runs against :class:`_RayContext`,
whose ``abort`` records the code and details, and the deployment method then *returns* the RPC's
empty reply: code, details and the ``oppmodel-error``/``oppmodel-field`` trailers arrive intact.
A streamed ``Observe`` (or ``ObserveChoices``) works through Ray too, but a refusal that ends it
arrives with its code and details only (Serve drops trailers after streamed replies):
``ObserveBatch`` is the call for Ray.

Each replica counts into a ``Metrics`` of its own, as the single-process server does; with a
metrics port (``ServerConfig.metrics_port``) it pushes those counts every second to the serve
process, whose ``/metrics`` serves every live replica's series labelled ``replica`` with its id
(``server/ray_metrics.py``).

Bytes that did not parse in the proxy reach the replica as an ``Undecodable`` and are refused as
the single-process server refuses them. Health checks and reflection are answered here too
(Serve's own reflection, run in the proxy, would answer such bytes UNKNOWN).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection

from oppmodel.modeling.errors import InvalidArgumentError, ResourceExhaustedError
from oppmodel.server.app import (
    HEALTH_NAMES,
    PERFECT_INFO_SERVICE_NAME,
    SERVICE_NAME,
    ServerConfig,
    open_storage,
    store_reachable,
    warm_up,
)
from oppmodel.server.decoding import Undecodable, checked
from oppmodel.server.errors import error_details
from oppmodel.server.logs import configure_logging
from oppmodel.server.metrics import Metrics
from oppmodel.server.perfect_info_manager import PerfectInfoManager
from oppmodel.server.perfect_info_service import PerfectInfoServicer
from oppmodel.server.ray_metrics import MetricsPusher
from oppmodel.server.servicer import OpponentModelServicer
from oppmodel.server.sessions import SessionManager
from oppmodel.server.storage import redacted
from oppmodel.v1_services import REPLICA_KEY, Rpc, rpcs

log = logging.getLogger("oppmodel.server")

# the attribute of the replica's servicer of each of the API's services (oppmodel.v1_services)
SERVICERS = {
    SERVICE_NAME: "servicer",
    PERFECT_INFO_SERVICE_NAME: "perfect_info_servicer",
}
HEALTH_SERVICE_NAME = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name


class _Aborted(Exception):
    """Raised by :meth:`_RayContext.abort` once the status is recorded on Ray's context."""


class _RayContext:
    """What the servicer uses of a ``grpc.aio.ServicerContext``, over Ray Serve's context."""

    def __init__(self, context: Any) -> None:
        self._context = context

    def invocation_metadata(self) -> list[tuple[str, str]]:
        """The caller's metadata (bearer token, session id), as the proxy received it."""
        return list(self._context.invocation_metadata())

    def set_trailing_metadata(self, metadata: Any) -> None:
        """Trailers for the reply (the error class and field on a refusal)."""
        self._context.set_trailing_metadata(list(metadata))

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        """Record the status; the deployment method then returns (or, streaming, ends)."""
        self._context.set_code(code)
        self._context.set_details(details)
        raise _Aborted(details)


def _set_refusal(grpc_context: Any, error: Exception) -> None:
    """Put ``error``'s status code, details and error trailers on Ray's gRPC context (the
    deployment method then returns an empty reply, which keeps them)."""
    code, message, metadata = error_details(error)
    grpc_context.set_trailing_metadata(list(metadata))
    grpc_context.set_code(code)
    grpc_context.set_details(message)


Resp = TypeVar("Resp", bound=Message)


def _unary(
    name: str, empty: type[Resp], servicer: str
) -> Callable[[Any, Any, Any], Awaitable[Resp]]:
    """A deployment method that runs ``name`` of the replica's servicer in attribute ``servicer``
    and, on a refusal, returns an empty ``empty`` reply with the status set (returning keeps the
    trailers; raising would not)."""

    async def method(self: OppModelDeployment, request: Any, grpc_context: Any) -> Resp:
        # (an Undecodable request, whose bytes did not parse, the servicer refuses itself)
        size = 0 if isinstance(request, Undecodable) else request.ByteSize()
        limit = self.config.max_message_bytes
        if size > limit:  # the proxy itself takes messages up to 2 GiB
            error = ResourceExhaustedError(
                f"request: {size} bytes; this server takes messages of at most {limit}"
            )
            _set_refusal(grpc_context, error)
            return empty()
        try:
            served = getattr(getattr(self, servicer), name)
            reply = await served(request, _RayContext(grpc_context))
        except _Aborted:  # the status and trailers are set: returning keeps them
            return empty()
        grpc_context.set_trailing_metadata([(REPLICA_KEY, self.replica_id)])
        return reply

    return method


def _streamed(name: str, servicer: str) -> Callable[[Any, Any, Any], AsyncIterator[Any]]:
    """A deployment method that runs the bidirectional stream ``name`` of the replica's servicer
    in attribute ``servicer``, as the single-process server serves it: a request that did not
    parse ends it with INVALID_ARGUMENT naming the field (``decoding.checked``, unless the
    servicer refuses such requests itself: ``takes_undecodable``); a refusal ends it with its
    code and details (raising is the only way a status survives streamed replies in Serve,
    which then drops the trailers)."""

    async def method(
        self: OppModelDeployment, request_stream: AsyncIterator[Any], grpc_context: Any
    ) -> AsyncIterator[Any]:
        served = getattr(getattr(self, servicer), name)
        if not getattr(served, "takes_undecodable", False):
            request_stream = checked(request_stream)
        async for reply in served(request_stream, _RayContext(grpc_context)):
            yield reply

    return method


def _served(rpc: Rpc) -> Callable[..., Any]:
    """The deployment method of ``rpc``, run by the servicer of its service (``SERVICERS``)."""
    servicer = SERVICERS[rpc.service]
    method: Callable[..., Any] = (
        _streamed(rpc.name, servicer) if rpc.streaming else _unary(rpc.name, rpc.reply, servicer)
    )
    method.__name__ = method.__qualname__ = rpc.name
    method.__doc__ = f"{rpc.service}/{rpc.name}, served by the replica's {servicer}."
    return method


class OppModelDeployment:
    """One replica: a SessionManager and a PerfectInfoManager on the shared store behind the
    single-process server's servicers.

    Ray Serve calls the methods named like the RPCs (it dispatches by method name) with the
    request and its ``grpc_context``: one per RPC of the API's services, made from their
    descriptors (``oppmodel.v1_services.rpcs``, set on the class below it), and the standard
    health and reflection services' written here."""

    def __init__(self, config: ServerConfig, *, warm: bool = True) -> None:
        configure_logging()
        if warm:
            warm_up()
        self.config = config
        self.replica_id = _replica_id()
        self.metrics = Metrics()
        self.pusher = (  # the serve process serves /metrics on that port: push to it
            None
            if config.metrics_port is None
            else MetricsPusher(self.metrics.registry, self.replica_id)
        )
        self.storage = open_storage(config.db_path, synchronous=config.synchronous)
        self.executor = ThreadPoolExecutor(config.workers, thread_name_prefix="oppmodel-cpu")
        self.manager = SessionManager(
            self.storage, executor=self.executor, metrics=self.metrics, limits=config.limits
        )
        self.servicer = OpponentModelServicer(
            self.manager,
            metrics=self.metrics,
            tokens=config.auth_tokens,
            max_label_length=config.limits.max_label_length,
        )
        self.perfect_info = PerfectInfoManager(
            self.storage,
            executor=self.executor,
            metrics=self.metrics,
            limits=config.perfect_info_limits,
        )
        self.perfect_info_servicer = PerfectInfoServicer(
            self.perfect_info, metrics=self.metrics, owner=self.servicer.owner
        )
        self.reflection = reflection.aio.ReflectionServicer(
            (SERVICE_NAME, PERFECT_INFO_SERVICE_NAME, HEALTH_SERVICE_NAME, reflection.SERVICE_NAME)
        )
        log.info(
            "replica serving",
            extra={"replica": self.replica_id, "db": redacted(config.db_path)},
        )

    async def Check(
        self, request: health_pb2.HealthCheckRequest, grpc_context: Any
    ) -> health_pb2.HealthCheckResponse:
        """grpc.health.v1: SERVING for the server as a whole, OpponentModelService and
        PerfectInfoService, NOT_SERVING while this replica's store cannot be reached (one round
        trip to it per check); a request that did not parse: INVALID_ARGUMENT naming the field,
        as from the single-process server."""
        if isinstance(request, Undecodable):
            _set_refusal(grpc_context, request.error)
            return health_pb2.HealthCheckResponse()
        if request.service in HEALTH_NAMES:
            serving = await store_reachable(self.storage)
            return health_pb2.HealthCheckResponse(
                status=health_pb2.HealthCheckResponse.SERVING
                if serving
                else health_pb2.HealthCheckResponse.NOT_SERVING
            )
        grpc_context.set_code(grpc.StatusCode.NOT_FOUND)
        grpc_context.set_details(f"service: {request.service!r} is not served here")
        return health_pb2.HealthCheckResponse()

    async def Watch(
        self, request: health_pb2.HealthCheckRequest, grpc_context: Any
    ) -> AsyncIterator[health_pb2.HealthCheckResponse]:
        """Not served through Ray (a watch would hold a replica's call open for as long as the
        client likes): UNIMPLEMENTED, saying to poll Check; INVALID_ARGUMENT for bytes that do
        not parse, as everywhere."""
        if isinstance(request, Undecodable):
            _set_refusal(grpc_context, request.error)
        else:
            grpc_context.set_code(grpc.StatusCode.UNIMPLEMENTED)
            grpc_context.set_details(
                f"{HEALTH_SERVICE_NAME}/Watch: not served through Ray; poll Check"
            )
        raise _Aborted("Watch")  # a streamed call's status survives Serve only raised
        yield  # (an async generator, as Serve dispatches a server-streaming method)

    async def List(
        self, request: health_pb2.HealthListRequest, grpc_context: Any
    ) -> health_pb2.HealthListResponse:
        """UNIMPLEMENTED, as from the single-process server (grpcio-health-checking does not
        implement it): poll Check; INVALID_ARGUMENT for bytes that do not parse, as everywhere.
        Without this method Serve answered a List with its own error."""
        if isinstance(request, Undecodable):
            _set_refusal(grpc_context, request.error)
        else:
            grpc_context.set_code(grpc.StatusCode.UNIMPLEMENTED)
            grpc_context.set_details(f"{HEALTH_SERVICE_NAME}/List: not served; poll Check")
        return health_pb2.HealthListResponse()

    async def ServerReflectionInfo(
        self, request_stream: AsyncIterator[Any], grpc_context: Any
    ) -> AsyncIterator[Any]:
        """grpc.reflection.v1alpha (``grpcurl list``) over the services served through Ray; a
        request that did not parse ends the stream with INVALID_ARGUMENT naming the field."""
        try:
            async for reply in self.reflection.ServerReflectionInfo(
                checked(request_stream), grpc_context
            ):
                yield reply
        except InvalidArgumentError as exc:
            _set_refusal(grpc_context, exc)
            raise _Aborted(str(exc)) from None

    def __del__(self) -> None:
        """Serve calls this when it stops the replica: stop pushing metrics, release the pool
        and the store."""
        pusher = getattr(self, "pusher", None)
        if pusher is not None:
            pusher.close()
        executor = getattr(self, "executor", None)
        if executor is not None:
            executor.shutdown(wait=False)
        storage = getattr(self, "storage", None)
        if storage is not None:
            storage.close()


for _rpc in rpcs():  # every RPC of the API's services, served by its service's servicer
    setattr(OppModelDeployment, _rpc.name, _served(_rpc))


def _replica_id() -> str:
    """Serve's id of this replica (unique across restarts), or the pid outside Serve."""
    from ray import serve

    try:
        return str(serve.get_replica_context().replica_id.unique_id)
    except Exception:  # not inside a Serve replica (a unit test building the class directly)
        return f"pid{os.getpid()}"
