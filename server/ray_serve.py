"""``oppmodel serve --ray``: the services from Ray Serve replicas that share a PostgreSQL store.

Each replica wraps the single-process server's managers and servicers (``server/app.py``); only
the transport differs. Ray Serve's gRPC proxy (one per node) takes the calls and hands each to a
replica. A call carrying the metadata ``session_id`` (both Python clients and the ACPC agent send
it) is routed by a consistent hash of it (Serve's ConsistentHashRouter), so a session stays on one
replica, loaded from the store on first use and kept in that replica's session cache (least
recently used sessions leave it); other calls spread over the replicas.
Affinity only saves reloads: a replica that dies, joins or is busy moves sessions, and the store's
version check makes whichever replica serves a call catch up with the session's stored state first
and commit each hand exactly once.

A replica (``server/ray_replica.py``) answers as the single-process server does: the same errors
with their trailers, its own metrics pushed to this process's ``/metrics``.

The proxy decodes each request before handing it on; it registers our services through
``server/ray_proxy.py``, whose deserializers never raise, so bytes that do not parse reach the
replica as an ``Undecodable`` and are refused as the single-process server refuses them; health
checks and reflection are the replicas' too. The proxy binds every interface: Serve offers no host
for it.

A local Ray instance (no ``--address``) keeps Ray's own ports on loopback (:func:`init_local_ray`);
two of Serve's stay on every interface, the gRPC proxy's and each replica's inter-deployment gRPC
port (``ray.serve._private.replica``: ``[::]:0``), as Ray 2.60 hard-codes both.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from oppmodel.modeling.errors import FailedPreconditionError, InvalidArgumentError
from oppmodel.server.app import ServerConfig, free_ports, open_storage
from oppmodel.server.ray_metrics import ReplicaMetricsEndpoint
from oppmodel.server.ray_replica import OppModelDeployment
from oppmodel.server.storage import is_postgres, redacted

log = logging.getLogger("oppmodel.server")

APP_NAME = "oppmodel"
ROUTE_PREFIX = "/oppmodel"  # gRPC ignores it, but Serve needs one to publish the route table
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
HASH_ROUTER = "ray.serve.experimental.consistent_hash_router.ConsistentHashRouter"
DRAIN_CHECK_SECONDS = 0.05  # how often a stopping replica looks whether its calls are done
# how long a start waits for a slow part of Ray on a loaded machine: a proxy Serve replaced, a
# local instance's node (tried again while this lasts), and Serve's ready check of a new proxy
START_SECONDS = 120
# Ray's waits (s) that two busy cores outlasted, read from the environment by the processes of a
# local instance: its GCS server's port (Ray's default 30 s; this long for each try of the node's
# start, so that a GCS server that never publishes it is given up for another within
# START_SECONDS), and Serve's controller's ready check of a new proxy (5 s, each successor 5 s
# more; it kills a proxy that misses it: at load 30-48 a proxy and its successors kept missing
# it, STARTING after 120 s)
LOADED_WAITS = {
    "RAY_gcs_server_port_wait_time_s": START_SECONDS // 2,
    "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": START_SECONDS,
}
# A local instance's settings (``ray.init``'s ``_system_config``, in every process of it). Serve's
# stop fails its own call: the controller kills itself under the driver's pending
# ``graceful_shutdown`` (Serve waits for that failure), and as the controller retries its calls
# without end, the driver printed "(raylet) Task ServeController.graceful_shutdown failed. There
# are infinite retries remaining ..." on stdout after the interrupted line. A call that is retried
# is not a failure to report; one that fails for good still raises in its caller.
QUIET_RETRIES = {"enable_output_error_log_if_still_retry": False}


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

    Serve's controller gives a new proxy 5 s to report ready (in a local instance of
    :func:`init_local_ray`, START_SECONDS), then kills it and starts another; ``serve.start``
    waits on the first one and raises ActorDiedError when it is killed, though Serve goes on
    with its successor. A loaded machine starts a proxy slower than that, so the start then
    waits for Serve's proxies to be healthy instead (up to START_SECONDS)."""
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
        _wait_for_proxies(START_SECONDS)
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


def _quiet_ray() -> None:
    """Show nothing more of what Ray and Serve say (a stop is the command's last word, as the
    single-process server's: after Ctrl-C the interrupted line alone): the driver stops
    printing its workers' output (Serve's controller reports each replica it removes, at INFO),
    and drops the lines it held back to count repeats."""
    from ray._private import ray_logging

    ray_logging.global_worker_stdstream_dispatcher.remove_handler("ray_print_logs")  # ray.init's
    ray_logging.stdout_deduplicator.flush()
    ray_logging.stderr_deduplicator.flush()


def _serve_warnings_only() -> None:
    """Serve's logger in this process keeps warnings only, as ``ray.init(logging_level=
    logging.WARNING)`` keeps Ray's: at INFO they print each step of a start or a stop on the
    console ("Started a local Ray instance", "Application 'oppmodel' is ready at ...", after
    the serving line); our own log lines say when the command serves and stops. Importing
    ``ray.serve`` sets its logger to INFO."""
    from ray import serve  # noqa: F401  # (configures its logger)

    logging.getLogger("ray.serve").setLevel(logging.WARNING)


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
    """Remove the application; stop Serve and Ray too if this process started them, silently
    (:func:`_quiet_ray`)."""
    import ray
    from ray import serve

    _quiet_ray()
    if owns_cluster:
        serve.shutdown()  # type: ignore[no-untyped-call]  # (ray leaves it unannotated)
        ray.shutdown()
    else:  # a shared cluster may run other applications: leave Serve up
        serve.delete(APP_NAME)


def init_local_ray(**options: Any) -> None:
    """Start a new Ray instance on this machine (``ray.init(address="local", **options)``)
    whose own servers listen on loopback only: GCS, raylet, object manager, the agents, the
    monitor and every worker's gRPC port; and that starts on a loaded machine.

    Ray's servers bind 127.0.0.1 when the node's address is 127.0.0.1, every interface for any
    other; but ``ray.init`` rewrites a loopback ``_node_ip_address`` to the machine's address
    (``services.resolve_ip_for_localhost``) unless its cluster mode is off
    (``ray_constants.ENABLE_RAY_CLUSTER``, env ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER``; off by
    default on macOS and Windows, where Ray keeps a single machine on loopback). The env var is
    read when ray is imported, so the constant is turned off for this call only; the node
    keeps 127.0.0.1 after it, and other nodes cannot join this instance.

    Ray waits 30 s for its GCS server to publish its port, and a loaded machine (two busy
    cores) took longer: the node failed to start. It, and each of LOADED_WAITS, gets its wait
    there (unless set; the Ray processes started keep them). The raylet's own wait for its
    agents' ports is removed (:func:`_agent_ports_chosen`). A start that fails all the same
    after it started processes is shut down, what it started killed
    (:func:`_started_processes`), and tried again while START_SECONDS since the first try last:
    a loaded run of the suite saw "Timed out waiting for file .../gcs_server_port_..." with a
    120 s wait (cause not found; a GCS server that died or hung before it published its port
    does it, and Ray's wait does not look whether the server still runs)."""
    import ray
    from ray._private import ray_constants

    cluster_mode = ray_constants.ENABLE_RAY_CLUSTER
    ours = [name for name in LOADED_WAITS if name not in os.environ]
    os.environ.update({name: str(LOADED_WAITS[name]) for name in ours})
    ray_constants.ENABLE_RAY_CLUSTER = False
    deadline = time.monotonic() + START_SECONDS
    try:
        while True:
            with _started_processes() as started, _agent_ports_chosen():
                try:
                    ray.init(address="local", _node_ip_address=LOOPBACK, **options)
                    return
                except Exception as error:
                    if not started or time.monotonic() > deadline:
                        raise  # nothing started (a bad option), or no time left
                    said = (str(error).strip().splitlines() or [""])[0]
                    log.warning("Ray's node did not start (%r); starting it again", said)
                    ray.shutdown()
                    _kill(started)
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = cluster_mode
        for name in ours:
            os.environ.pop(name, None)


@contextlib.contextmanager
def _started_processes() -> Iterator[list[Any]]:
    """The processes Ray starts in this block (its ``services.start_ray_process``'s
    ``ProcessInfo``: the reaper, GCS server, raylet, log monitor, ...), in a list: a node that
    failed to start is not Ray's to shut down (``ray.init`` drops it), so these are all that is
    left of it."""
    from ray._private import services

    started: list[Any] = []
    start_ray_process = services.start_ray_process

    def recorded(*args: Any, **kwargs: Any) -> Any:
        info = start_ray_process(*args, **kwargs)
        started.append(info)
        return info

    services.start_ray_process = recorded
    try:
        yield started
    finally:
        services.start_ray_process = start_ray_process


def _kill(started: list[Any]) -> None:
    """Kill (SIGKILL: a stopped process too) and reap each of ``started`` (``ProcessInfo``)."""
    for info in started:
        info.process.kill()
    for info in started:
        info.process.wait()


# the raylet's arguments naming its agents' ports (``services.start_raylet``), 0 when unknown
AGENT_PORTS = (
    "metrics_agent_port",
    "metrics_export_port",
    "dashboard_agent_listen_port",
    "runtime_env_agent_port",
)


@contextlib.contextmanager
def _agent_ports_chosen() -> Iterator[None]:
    """While a node starts in this block: its agents' ports are chosen here and given to the
    raylet, which then does not wait for the agents to publish them.

    A raylet told port 0 waits for its dashboard agent and its runtime environment agent to
    write their ports to files, 15 s each at most (fixed in Ray 2.60: no setting changes it),
    and aborts after ("Timed out waiting for file .../metrics_agent_port_..."). On two busy
    cores the dashboard agent's imports took 17-25 s: the node failed to start. Told the ports,
    the raylet starts at once and the agents serve them when they are up. Ray's
    ``start_raylet`` passes them to the agents and the workers, but the dashboard agent's listen
    port not to the raylet (its flag ``--dashboard_agent_listen_port``), so that flag is added
    to the raylet's command. The ports are loopback ports free a moment before (``free_ports``),
    as the proxy's are."""
    from ray._private import ray_constants, services

    start_raylet = services.start_raylet
    start_ray_process = services.start_ray_process

    def raylet_told_its_agents_ports(*args: Any, **kwargs: Any) -> Any:
        chosen = dict(zip(AGENT_PORTS, free_ports(len(AGENT_PORTS)), strict=True))
        for name, port in chosen.items():
            kwargs[name] = kwargs.get(name) or port
        listen = f"--dashboard_agent_listen_port={kwargs['dashboard_agent_listen_port']}"

        def start_process(command: list[str], process_type: str, **options: Any) -> Any:
            if process_type == ray_constants.PROCESS_TYPE_RAYLET:
                command = [*command, listen]
            return start_ray_process(command, process_type, **options)

        services.start_ray_process = start_process  # type: ignore[assignment]  # (**options)
        try:
            return start_raylet(*args, **kwargs)
        finally:
            services.start_ray_process = start_ray_process

    services.start_raylet = raylet_told_its_agents_ports
    try:
        yield
    finally:
        services.start_raylet = start_raylet


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
    _serve_warnings_only()
    if config.address is None:  # "local": a new cluster even if `ray start` runs one here
        init_local_ray(
            include_dashboard=False, logging_level=logging.WARNING, _system_config=QUIET_RETRIES
        )
    else:
        ray.init(address=config.address, logging_level=logging.WARNING)
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
