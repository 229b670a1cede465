"""``oppmodel serve --ray``: the services from Ray Serve replicas that share a PostgreSQL store.

Each replica wraps the very SessionManager and OpponentModelServicer, PerfectInfoManager and
PerfectInfoServicer of the single-process server (``server/app.py``); only the transport differs.
Ray Serve's gRPC proxy (one per node) takes the calls and hands each to a replica. A call
carrying the metadata ``session_id`` (both Python clients and the ACPC agent send it) is routed
by a consistent hash of it (Serve's ConsistentHashRouter), so a session stays on one replica,
loaded from the store on first use and kept in that replica's session cache (least recently used
sessions leave it); other calls spread over the replicas.
Affinity only saves reloads: a replica that dies, joins or is busy moves sessions, and the store's
version check makes whichever replica serves a call catch up with the session's stored state first
and commit each hand exactly once.

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

The proxy decodes each request before handing it on; it registers our services through
``server/ray_proxy.py``, whose deserializers never raise, so bytes that do not parse reach the
replica as an ``Undecodable`` and are refused as the single-process server refuses them. Health
checks and reflection are answered here too (Serve's own reflection, run in the proxy, would answer
such bytes UNKNOWN). The proxy binds every interface: Serve offers no host for it.

A local Ray instance (no ``--address``) keeps Ray's own ports on loopback (:func:`init_local_ray`);
two of Serve's stay on every interface, the gRPC proxy's and each replica's inter-deployment gRPC
port (``ray.serve._private.replica``: ``[::]:0``), as Ray 2.60 hard-codes both.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection

from oppmodel.modeling.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    ResourceExhaustedError,
)
from oppmodel.server.app import (
    HEALTH_NAMES,
    PERFECT_INFO_SERVICE_NAME,
    SERVICE_NAME,
    ServerConfig,
    free_ports,
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
from oppmodel.server.ray_metrics import MetricsPusher, ReplicaMetricsEndpoint
from oppmodel.server.servicer import OpponentModelServicer
from oppmodel.server.sessions import SessionManager
from oppmodel.server.storage import is_postgres, redacted
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import perfect_info_pb2 as pi_pb

log = logging.getLogger("oppmodel.server")

APP_NAME = "oppmodel"
ROUTE_PREFIX = "/oppmodel"  # gRPC ignores it, but Serve needs one to publish the route table
REPLICA_KEY = "oppmodel-replica"  # trailing metadata on every served reply: the replica's id
LOOPBACK = "127.0.0.1"  # a local Ray instance's node address, and Serve's HTTP proxy's host
# What Ray's gRPC proxy must register (imported by the proxy process): our services, and the
# standard health check and reflection, answered by the replicas (so a health probe proves a
# replica serves); all with deserializers that never raise (server/ray_proxy.py).
SERVICER_FUNCTIONS = (
    "oppmodel.server.ray_proxy.add_opponent_model_service",
    "oppmodel.server.ray_proxy.add_perfect_info_service",
    "oppmodel.server.ray_proxy.add_health_service",
    "oppmodel.server.ray_proxy.add_reflection_service",
)
HEALTH_SERVICE_NAME = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
HASH_ROUTER = "ray.serve.experimental.consistent_hash_router.ConsistentHashRouter"
DRAIN_CHECK_SECONDS = 0.05  # how often a stopping replica looks whether its calls are done
# how long a start waits for a proxy Serve replaced (its successor gets 10 s, the next 15 s, ...)
PROXY_START_SECONDS = 120.0


@dataclass(frozen=True)
class RayServeConfig:
    """How to run the deployment: the replicas' server settings and Ray's."""

    server: ServerConfig  # the store, tokens, limits and message size each replica applies
    replicas: int = 2
    address: str | None = None  # a running Ray cluster ("auto", "HOST:PORT"); None: start one
    max_ongoing_requests: int = 64  # per replica; beyond it the router tries the next replica
    warm_up: bool = True  # compile the kernels before a replica takes calls (tests skip it)

    def __post_init__(self) -> None:
        if not is_postgres(self.server.db_path):
            raise InvalidArgumentError(
                "store",
                f"{redacted(self.server.db_path)} is not a PostgreSQL database; Ray replicas must "
                "share one store, and a SQLite file serves one process",
            )
        if self.replicas < 1:
            raise InvalidArgumentError("replicas", f"must be at least 1, got {self.replicas}")
        if self.server.tls_cert or self.server.tls_key:
            raise InvalidArgumentError("tls", "Ray Serve's gRPC proxy serves plaintext only")


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
    name: str, empty: type[Resp], *, servicer: str = "servicer"
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

    method.__name__ = method.__qualname__ = name
    return method


class OppModelDeployment:
    """One replica: a SessionManager and a PerfectInfoManager on the shared store behind the
    single-process server's servicers.

    Ray Serve calls the methods named like the RPCs (it dispatches by method name) with the
    request and its ``grpc_context``."""

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

    CreateSession = _unary("CreateSession", pb.CreateSessionResponse)
    GetSession = _unary("GetSession", pb.GetSessionResponse)
    ListSessions = _unary("ListSessions", pb.ListSessionsResponse)
    DeleteSession = _unary("DeleteSession", pb.DeleteSessionResponse)
    ObserveBatch = _unary("ObserveBatch", pb.ObserveBatchResponse)
    GetModel = _unary("GetModel", pb.GetModelResponse)
    GetResponse = _unary("GetResponse", pb.GetResponseResponse)
    GetAction = _unary("GetAction", pb.GetActionResponse)
    # PerfectInfoService (its method names differ from OpponentModelService's: Serve dispatches
    # by method name alone)
    CreatePerfectInfoSession = _unary(
        "CreatePerfectInfoSession",
        pi_pb.CreatePerfectInfoSessionResponse,
        servicer="perfect_info_servicer",
    )
    GetPerfectInfoSession = _unary(
        "GetPerfectInfoSession",
        pi_pb.GetPerfectInfoSessionResponse,
        servicer="perfect_info_servicer",
    )
    DeletePerfectInfoSession = _unary(
        "DeletePerfectInfoSession",
        pi_pb.DeletePerfectInfoSessionResponse,
        servicer="perfect_info_servicer",
    )
    GetModelWeights = _unary(
        "GetModelWeights", pi_pb.GetModelWeightsResponse, servicer="perfect_info_servicer"
    )
    GetProbMaxnMove = _unary(
        "GetProbMaxnMove", pi_pb.GetProbMaxnMoveResponse, servicer="perfect_info_servicer"
    )

    async def Observe(
        self, request_stream: AsyncIterator[pb.ObserveRequest], grpc_context: Any
    ) -> AsyncIterator[pb.ObserveResponse]:
        """The bidirectional stream, as the single-process server serves it; a refusal ends it
        with its code and details (raising is the only way a status survives streamed replies
        in Serve, which then drops the trailers)."""
        async for reply in self.servicer.Observe(request_stream, _RayContext(grpc_context)):
            yield reply

    async def ObserveChoices(
        self, request_stream: AsyncIterator[pi_pb.ObserveChoicesRequest], grpc_context: Any
    ) -> AsyncIterator[pi_pb.ObserveChoicesResponse]:
        """The perfect-information choices stream, as the single-process server serves it (a
        message that did not parse ends it with INVALID_ARGUMENT naming the field); a refusal ends
        it with its code and details, as ``Observe``."""
        async for reply in self.perfect_info_servicer.ObserveChoices(
            checked(request_stream), _RayContext(grpc_context)
        ):
            yield reply

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


def _replica_id() -> str:
    """Serve's id of this replica (unique across restarts), or the pid outside Serve."""
    from ray import serve

    try:
        return str(serve.get_replica_context().replica_id.unique_id)
    except Exception:  # not inside a Serve replica (a unit test building the class directly)
        return f"pid{os.getpid()}"


def deployment(config: RayServeConfig) -> Any:
    """The Serve application: ``config.replicas`` replicas, routed by session id."""
    from ray import serve
    from ray.serve.config import RequestRouterConfig

    router: dict[str, Any] = {  # (RequestRouterConfig's pydantic signature confuses mypy)
        "request_router_class": HASH_ROUTER,
        # one fallback: a call whose replica died goes to the next on the ring at once (without
        # one it waited ~7 s for the controller to notice, in the spike)
        "request_router_kwargs": {"num_fallback_replicas": 1},
    }
    replica = serve.deployment(
        name="OppModel",
        num_replicas=config.replicas,
        max_ongoing_requests=config.max_ongoing_requests,
        # replicas reserve no CPU: on one machine they share the cores with the proxy
        ray_actor_options={"num_cpus": 0},
        # at a stop each replica drains its calls in flight for up to the server's grace, as the
        # single-process server does, looking every DRAIN_CHECK_SECONDS (Serve's default slept
        # 2 s first, so an idle stop, Ctrl-C, took 2 s longer)
        graceful_shutdown_timeout_s=config.server.grace_seconds,
        graceful_shutdown_wait_loop_s=DRAIN_CHECK_SECONDS,
        request_router_config=RequestRouterConfig(**router),
    )(OppModelDeployment)
    return replica.bind(config.server, warm=config.warm_up)


def start_serve(config: RayServeConfig, *, port: int, http_port: int) -> None:
    """Start Serve's proxies (gRPC on ``port``, every interface; HTTP on loopback
    ``http_port``) on the connected Ray cluster and run the application until it serves.

    Serve's controller gives a new proxy 5 s to report ready, then kills it and starts another;
    ``serve.start`` waits on the first one and raises ActorDiedError when it is killed, though
    Serve goes on with its successor. A loaded machine starts a proxy slower than that, so the
    start then waits for Serve's proxies to be healthy instead (up to PROXY_START_SECONDS)."""
    from ray import serve
    from ray.exceptions import ActorDiedError
    from ray.serve.config import HTTPOptions, gRPCOptions

    try:
        serve.start(
            http_options=HTTPOptions(host=LOOPBACK, port=http_port),
            grpc_options=gRPCOptions(
                port=port,
                grpc_servicer_functions=list(SERVICER_FUNCTIONS),
                enable_reflection=False,  # the replicas answer it (SERVICER_FUNCTIONS)
            ),
        )
    except ActorDiedError:
        log.info("Serve replaced its proxy, slow to start: waiting for the next one")
        _wait_for_proxies(PROXY_START_SECONDS)
    serve.run(deployment(config), name=APP_NAME, route_prefix=ROUTE_PREFIX)


def _wait_for_proxies(seconds: float) -> None:
    """Wait until Serve runs a healthy proxy and none that is starting or unhealthy (one being
    replaced); TimeoutError after ``seconds``."""
    from ray import serve
    from ray.serve.schema import ProxyStatus

    deadline = time.monotonic() + seconds
    while True:
        proxies = serve.status().proxies
        statuses = set(proxies.values())
        if ProxyStatus.HEALTHY in statuses and not statuses & {
            ProxyStatus.STARTING,
            ProxyStatus.UNHEALTHY,
        }:
            return
        if time.monotonic() > deadline:
            states = ", ".join(sorted(str(status) for status in proxies.values())) or "none"
            raise TimeoutError(f"Ray Serve's proxies did not start within {seconds:g} s ({states})")
        time.sleep(0.25)


def refuse_a_second_application(address: str) -> None:
    """FailedPreconditionError if the cluster at ``address`` already runs this application: Serve
    keeps one application per name, so a second ``serve --ray`` would silently take over the
    first one's calls with replicas of its own (another store, other tokens), and stopping
    either would remove both."""
    from ray import serve

    if APP_NAME in serve.status().applications:
        raise FailedPreconditionError(
            f"address: the Ray cluster at {address} already runs application {APP_NAME!r} (another"
            " `oppmodel serve --ray`); stop that one first"
        )


def stop_serve(*, owns_cluster: bool) -> None:
    """Remove the application; stop Serve and Ray too if this process started them."""
    import ray
    from ray import serve

    if owns_cluster:
        serve.shutdown()  # type: ignore[no-untyped-call]  # (ray leaves it unannotated)
        ray.shutdown()
    else:  # a shared cluster may run other applications: leave Serve up
        serve.delete(APP_NAME)


def init_local_ray(**options: Any) -> None:
    """Start a new Ray instance on this machine (``ray.init(address="local", **options)``)
    whose own servers listen on loopback only: GCS, raylet, object manager, the agents, the
    monitor and every worker's gRPC port.

    Ray's servers bind 127.0.0.1 when the node's address is 127.0.0.1, every interface for any
    other; but ``ray.init`` rewrites a loopback ``_node_ip_address`` to the machine's address
    (``services.resolve_ip_for_localhost``) unless its cluster mode is off
    (``ray_constants.ENABLE_RAY_CLUSTER``, env ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER``; off by
    default on macOS and Windows, where Ray keeps a single machine on loopback). The env var is
    read when ray is imported, so the constant is turned off for this call only; the node
    keeps 127.0.0.1 after it, and other nodes cannot join this instance."""
    import ray
    from ray._private import ray_constants

    cluster_mode = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(address="local", _node_ip_address=LOOPBACK, **options)
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = cluster_mode


def run(
    config: RayServeConfig, *, on_serving: Callable[[int, int | None], None] | None = None
) -> signal.Signals:
    """Serve until SIGTERM or SIGINT: bind the metrics endpoint (with
    ``config.server.metrics_port``, on loopback), try the store, connect to the cluster at
    ``config.address`` (or start a local one), run the application, call ``on_serving`` with the
    gRPC port and the metrics port (None without one), then remove it. Returns the signal that
    stopped it (Ctrl-C's SIGINT ends the command as interrupted, SIGTERM as done), as
    :func:`oppmodel.server.app.serve` does."""
    metrics_port = config.server.metrics_port
    # bound first: a busy port is refused before Ray starts
    endpoint = None if metrics_port is None else ReplicaMetricsEndpoint(metrics_port, LOOPBACK)
    try:
        # then the store, as the single-process server tries it: one that cannot be used is
        # refused in one line before Ray starts (else every replica failed to start, at length)
        open_storage(config.server.db_path, synchronous=config.server.synchronous).close()
        return _run(config, endpoint=endpoint, on_serving=on_serving)
    finally:
        if endpoint is not None:
            endpoint.close()


def _run(
    config: RayServeConfig,
    *,
    endpoint: ReplicaMetricsEndpoint | None,
    on_serving: Callable[[int, int | None], None] | None,
) -> signal.Signals:
    import ray

    owns_cluster = config.address is None
    if config.address is None:  # "local": a new cluster even if `ray start` runs one here
        init_local_ray(include_dashboard=False)
    else:
        ray.init(address=config.address)
        refuse_a_second_application(config.address)
    try:
        if endpoint is not None:
            endpoint.start_board()
        port = config.server.port or free_ports(1)[0]  # the proxy must be told its port
        start_serve(config, port=port, http_port=free_ports(1)[0])
        metrics_port = None if endpoint is None else endpoint.port
        log.info(
            "serving",
            extra={
                "port": port,
                "metrics_port": metrics_port,
                "replicas": config.replicas,
                "db": redacted(config.server.db_path),
            },
        )
        stopped_by: list[signal.Signals] = []
        stop = threading.Event()

        def on_signal(sig: int, _frame: object) -> None:
            stopped_by.append(signal.Signals(sig))
            stop.set()

        for sig in (signal.SIGTERM, signal.SIGINT):  # before "serving": a signal sent on it is ours
            signal.signal(sig, on_signal)
        if on_serving is not None:
            on_serving(port, metrics_port)
        stop.wait()
        log.info("shutting down")
        return stopped_by[0]
    finally:
        stop_serve(owns_cluster=owns_cluster)
