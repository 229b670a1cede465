"""Building and running the oppmodel gRPC server (grpc.aio).

``build_server(config) -> (server, port)`` wires everything and binds the port (port 0 picks a free
one, which is what tests use) without starting; ``serve(config)`` runs it until SIGTERM or SIGINT,
then flips health to NOT_SERVING, stops accepting calls and lets in-flight ones finish within the
grace period, and closes the store. The server registers the standard health-checking and
reflection services, so ``grpcurl -plaintext 127.0.0.1:PORT list`` works.

What a server listens with is checked first (``server/listening.py``); logs are JSON lines on
stderr (``server/logs.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import socket
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.server.decoding import add_service
from oppmodel.server.listening import ensure_bindable, start_metrics_endpoint, tls_credentials
from oppmodel.server.metrics import Metrics
from oppmodel.server.perfect_info_manager import PerfectInfoManager
from oppmodel.server.perfect_info_service import PerfectInfoServicer
from oppmodel.server.perfect_info_spec import PerfectInfoLimits
from oppmodel.server.perfect_info_weights import warm_up_perfect_info
from oppmodel.server.servicer import OpponentModelServicer
from oppmodel.server.session_models import warm_up_models
from oppmodel.server.session_spec import Limits
from oppmodel.server.sessions import SessionManager
from oppmodel.server.storage import error_reason, is_postgres, redacted
from oppmodel.server.storage_sql import SqlStore
from oppmodel.server.storage_sqlite import SQLiteStore, Synchronous
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc
from oppmodel.v1 import perfect_info_pb2 as pi_pb
from oppmodel.v1 import perfect_info_pb2_grpc as pi_pb_grpc

log = logging.getLogger("oppmodel.server")
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["OpponentModelService"].full_name
PERFECT_INFO_SERVICE_NAME = pi_pb.DESCRIPTOR.services_by_name["PerfectInfoService"].full_name
# what a health check may name and be told SERVING: the server as a whole and each service
HEALTH_NAMES = ("", SERVICE_NAME, PERFECT_INFO_SERVICE_NAME)
STORE_PROBE_SECONDS = 1.0  # how often health asks the store whether it answers
MAX_PORT = 65535
# gRPC cancels calls (CANCELLED, details "CANCELLED") that arrive while many others wait for the
# server to take them (by default some from 1,000 waiting, all from 3,000), before any limit of
# ours can refuse them by name: a burst of 3,000 idle streams lost 5% that way. The server takes
# calls one at a time, then refuses those beyond its limits at once, so its queue holds this many
# calls per --max-rpcs; gRPC cancels only a burst beyond that.
WAITING_CALLS_PER_RPC = 4


@dataclass(frozen=True)
class ServerConfig:
    """How to run a server; defaults are safe (loopback, no TLS, no auth)."""

    db_path: str  # the store: a SQLite file's path, or a PostgreSQL URL or connection string
    host: str = "127.0.0.1"
    port: int = 50051
    tls_cert: str | None = None
    tls_key: str | None = None
    auth_tokens: frozenset[str] | None = None
    metrics_port: int | None = None
    limits: Limits = field(default_factory=Limits)
    perfect_info_limits: PerfectInfoLimits = field(default_factory=PerfectInfoLimits)
    max_message_bytes: int = 256 * 1024
    max_rpcs: int = 1024  # calls in progress at once (streams included); more: RESOURCE_EXHAUSTED
    workers: int = 2
    # child processes that hold the sessions' models, so that their arithmetic leaves the event
    # loop to gRPC (0: the server's own process holds them)
    model_workers: int = 1
    grace_seconds: float = 5.0
    synchronous: Synchronous | str = Synchronous.FULL  # SQLite's (or its name, any case)

    def __post_init__(self) -> None:
        for name in ("port", "metrics_port"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= MAX_PORT:
                raise InvalidArgumentError(name, f"must be from 0 to {MAX_PORT}, got {value}")


def open_storage(location: str, *, synchronous: Synchronous | str) -> SqlStore:
    """The store at ``location``: a PostgreSQL database for a ``postgresql://`` URL or a libpq
    keyword/value string, else the SQLite file at that path; InvalidArgumentError naming the
    store (never its password) if it cannot be used."""
    if is_postgres(location):
        return _open_postgres(location)
    folder = Path(location).expanduser().parent
    if not folder.is_dir():
        raise InvalidArgumentError("store", f"cannot create {location}: no folder {folder}")
    try:
        return SQLiteStore(location, synchronous=synchronous)
    except sqlite3.Error as exc:
        raise InvalidArgumentError("store", f"cannot use {location}: {exc}") from exc


def _open_postgres(location: str) -> SqlStore:
    try:
        import psycopg

        from oppmodel.server.storage_postgres import PostgresStore
    except ImportError as exc:
        raise InvalidArgumentError(
            "store", "a PostgreSQL store needs psycopg: pip install 'oppmodel[postgres]'"
        ) from exc
    try:
        return PostgresStore(location)
    except psycopg.Error as exc:
        reason = error_reason(exc, location)
        raise InvalidArgumentError("store", f"cannot use {redacted(location)}: {reason}") from exc


async def store_reachable(storage: SqlStore) -> bool:
    """Whether the store answers a round trip now (what health reports: while it does not,
    every call about a session answers UNAVAILABLE)."""
    try:
        await asyncio.wrap_future(storage.ping_async())
    except Exception:  # unreachable (UnavailableError), or failing for any other reason
        return False
    return True


class Server:
    """A built server: the grpc.aio server bound to its port, plus what it owns (store, worker
    pool, health, metrics endpoint).

    Everything that can fail on the configuration (TLS files, the ports, the database) is tried
    before the database is opened or created, so a refused configuration leaves no file behind.
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        credentials = tls_credentials(config.tls_cert, config.tls_key)
        waiting = WAITING_CALLS_PER_RPC * config.max_rpcs
        options = [
            ("grpc.max_receive_message_length", config.max_message_bytes),
            ("grpc.max_send_message_length", 16 * config.max_message_bytes),
            ("grpc.http2.bdp_probe", 0),
            ("grpc.so_reuseport", 0),  # a second server on a busy port must fail, not share it
            ("grpc.server.max_pending_requests", waiting),
            ("grpc.server.max_pending_requests_hard_limit", waiting),
        ]
        self.grpc = grpc.aio.server(options=options, maximum_concurrent_rpcs=config.max_rpcs)
        self.port = self._bind(credentials)
        self.metrics = Metrics()
        self.metrics_port: int | None = None
        if config.metrics_port is not None:
            self.metrics_port = start_metrics_endpoint(
                self.metrics.serve, config.host, config.metrics_port
            )
        try:
            self.storage = open_storage(config.db_path, synchronous=config.synchronous)
        except BaseException:
            self.metrics.close()
            raise
        self.executor = ThreadPoolExecutor(config.workers, thread_name_prefix="oppmodel-cpu")
        self.manager = SessionManager(
            self.storage,
            executor=self.executor,
            metrics=self.metrics,
            limits=config.limits,
            model_workers=config.model_workers,
        )
        servicer = OpponentModelServicer(
            self.manager,
            metrics=self.metrics,
            tokens=config.auth_tokens,
            max_label_length=config.limits.max_label_length,
        )
        add_service(
            pb_grpc.add_OpponentModelServiceServicer_to_server,
            servicer,
            self.grpc,
            metrics=self.metrics,
        )
        self.perfect_info = PerfectInfoManager(
            self.storage,
            executor=self.executor,
            metrics=self.metrics,
            limits=config.perfect_info_limits,
        )
        add_service(
            pi_pb_grpc.add_PerfectInfoServiceServicer_to_server,
            PerfectInfoServicer(self.perfect_info, metrics=self.metrics, owner=servicer.owner),
            self.grpc,
            metrics=self.metrics,
        )
        self.health = HealthServicer()
        self._store_watch: asyncio.Task[None] | None = None
        names = (
            SERVICE_NAME,
            PERFECT_INFO_SERVICE_NAME,
            health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
            reflection.SERVICE_NAME,
        )
        # health, and what reflection.enable_server_reflection registers, guarded like ours
        for add_to_server, standard in (
            (health_pb2_grpc.add_HealthServicer_to_server, self.health),
            (
                reflection_pb2_grpc.add_ServerReflectionServicer_to_server,
                reflection.aio.ReflectionServicer(names),
            ),
        ):
            add_service(add_to_server, standard, self.grpc, metrics=self.metrics)

    def _bind(self, credentials: grpc.ServerCredentials | None) -> int:
        """Bind the configured address (TLS with ``credentials``); returns the port."""
        ensure_bindable(self.config.host, self.config.port)
        address = f"{self.config.host}:{self.config.port}"
        try:
            if credentials is not None:
                port = self.grpc.add_secure_port(address, credentials)
            else:
                port = self.grpc.add_insecure_port(address)
        except RuntimeError as exc:  # gRPC's "Failed to bind", e.g. lost a race for the port
            raise OSError(f"cannot bind {address}") from exc
        if port == 0:
            raise OSError(f"cannot bind {address}")
        return port

    async def start(self) -> None:
        """Start serving; health answers SERVING for the service and overall, NOT_SERVING while
        the store cannot be reached (``_follow_store``)."""
        await self.manager.start()
        await self.grpc.start()
        await self._set_health(health_pb2.HealthCheckResponse.SERVING)
        self._store_watch = asyncio.create_task(self._follow_store())

    async def _set_health(self, status: health_pb2.HealthCheckResponse.ServingStatus) -> None:
        for name in HEALTH_NAMES:
            await self.health.set(name, status)

    async def _follow_store(self) -> None:
        """Health follows the store: every ``STORE_PROBE_SECONDS`` one round trip to it; NOT_SERVING
        while it fails (every call about a session would answer UNAVAILABLE), SERVING again
        once it answers, so a load balancer sends calls elsewhere meanwhile."""
        serving = True
        while True:
            await asyncio.sleep(STORE_PROBE_SECONDS)
            if await store_reachable(self.storage) != serving:
                serving = not serving
                if serving:
                    log.info("health: SERVING again, the store answers")
                    await self._set_health(health_pb2.HealthCheckResponse.SERVING)
                else:
                    log.warning("health: NOT_SERVING while the store cannot be reached")
                    await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)

    async def stop(self, grace: float | None = None) -> None:
        """Health NOT_SERVING, drain in-flight calls within ``grace`` seconds, close the store."""
        if self._store_watch is not None:
            self._store_watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._store_watch
        await self.health.enter_graceful_shutdown()
        await self.grpc.stop(self.config.grace_seconds if grace is None else grace)
        await self.manager.drain()  # state changes of cancelled calls run to their end
        await self.manager.close()
        await self.perfect_info.drain()
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def close(self) -> None:
        """Release what the server owns (call after stopping, or instead of starting)."""
        self.metrics.close()
        self.executor.shutdown(wait=True)
        self.storage.close()


def build_server(config: ServerConfig) -> tuple[Server, int]:
    """Build the server and bind its port (0 = any free port); call from the event loop."""
    server = Server(config)
    return server, server.port


def free_ports(n: int = 1) -> list[int]:
    """``n`` distinct loopback ports that were free a moment ago, for a process that must be told
    its port in advance (a metrics endpoint, the ACPC dealer); prefer port 0 where it is taken."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel a request can reach, then freeze the heap.

    The first update or response otherwise pays the JIT load (~1 s). Afterwards every object alive
    (modules, numba's and gRPC's machinery: ~10^5 objects) moves out of the collector's sight with
    ``gc.freeze``: a full collection over them takes ~70 ms here, which showed up as the p99 of
    queries.
    """
    warm_up_models()
    warm_up_perfect_info()
    gc.collect()
    gc.freeze()


async def serve(
    config: ServerConfig, *, on_serving: Callable[[Server], None] | None = None
) -> signal.Signals:
    """Run a server until SIGTERM/SIGINT, then shut it down gracefully; ``on_serving`` is called
    with the started server (its ``port`` and ``metrics_port`` are the bound ones). Returns the
    signal that stopped it (Ctrl-C's SIGINT ends the command as interrupted, SIGTERM as done)."""
    server, port = build_server(config)  # before the warm-up: a bad configuration fails at once
    try:
        warm_up()
        await server.start()
    except BaseException:
        server.close()
        raise
    loop = asyncio.get_running_loop()
    stopped_by: asyncio.Future[signal.Signals] = loop.create_future()

    def stop(sig: signal.Signals) -> None:
        if not stopped_by.done():
            stopped_by.set_result(sig)

    for sig in (signal.SIGTERM, signal.SIGINT):  # before "serving": a signal sent on it is ours
        loop.add_signal_handler(sig, stop, sig)
    try:
        log.info(
            "serving",
            extra={
                "host": config.host,
                "port": port,
                "metrics_port": server.metrics_port,
                "db": redacted(config.db_path),
            },
        )
        if on_serving is not None:
            on_serving(server)
        await stopped_by
        log.info("shutting down", extra={"grace_seconds": config.grace_seconds})
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await server.stop()
        log.info("stopped")
    return stopped_by.result()


class BackgroundServer:
    """A server running on its own event loop in a daemon thread (for the demo and tests).

    ``with BackgroundServer(config) as port: ...`` starts it, yields the bound port and on exit
    stops it gracefully (health NOT_SERVING, drain, close the store).
    """

    def __init__(self, config: ServerConfig, *, grace: float = 1.0) -> None:
        self.config = config
        self.grace = grace
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: Server | None = None

    def __enter__(self) -> int:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> int:
        """Build and start the server; returns its port."""
        self._thread.start()

        async def start() -> tuple[Server, int]:
            server, port = build_server(self.config)
            await server.start()
            return server, port

        try:
            self._server, self.port = asyncio.run_coroutine_threadsafe(start(), self._loop).result()
        except BaseException:
            self.stop()  # a refused configuration leaves no loop thread behind
            raise
        return self.port

    def stop(self) -> None:
        """Stop the server and its loop (idempotent)."""
        if self._server is not None:
            server, self._server = self._server, None
            asyncio.run_coroutine_threadsafe(server.stop(self.grace), self._loop).result()
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
