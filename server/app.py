"""Building and running the oppmodel gRPC server (grpc.aio).

``build_server(config) -> (server, port)`` wires everything and binds the port (port 0 picks a free
one, which is what tests use) without starting; ``serve(config)`` runs it until SIGTERM or SIGINT,
then flips health to NOT_SERVING, stops accepting calls and lets in-flight ones finish within the
grace period, and closes the store. The server registers the standard health-checking and
reflection services, so ``grpcurl -plaintext 127.0.0.1:PORT list`` works.

Logs are JSON lines on stderr (one object per event, extra fields included).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import signal
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from modeling.kuhn import kuhn_game
from modeling.mbbr import MBBRConfig, MBBRModel
from modeling.observation import HandObservation
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc
from oppmodel.v1 import perfect_info_pb2 as pi_pb
from oppmodel.v1 import perfect_info_pb2_grpc as pi_pb_grpc
from server.decoding import add_service
from server.metrics import Metrics
from server.perfect_info import PerfectInfoLimits, PerfectInfoManager, warm_up_perfect_info
from server.perfect_info_service import PerfectInfoServicer
from server.servicer import OpponentModelServicer
from server.sessions import Limits, SessionManager
from server.storage import Storage

log = logging.getLogger("oppmodel.server")
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["OpponentModelService"].full_name
PERFECT_INFO_SERVICE_NAME = pi_pb.DESCRIPTOR.services_by_name["PerfectInfoService"].full_name


@dataclass(frozen=True)
class ServerConfig:
    """How to run a server; defaults are safe (loopback, no TLS, no auth)."""

    db_path: str
    host: str = "127.0.0.1"
    port: int = 50051
    tls_cert: str | None = None
    tls_key: str | None = None
    auth_tokens: frozenset[str] | None = None
    metrics_port: int | None = None
    limits: Limits = field(default_factory=Limits)
    perfect_info_limits: PerfectInfoLimits = field(default_factory=PerfectInfoLimits)
    max_message_bytes: int = 256 * 1024
    workers: int = 2
    grace_seconds: float = 5.0
    synchronous: str = "FULL"


def read_tokens(path: str | Path) -> frozenset[str]:
    """Bearer tokens from a file: one per line; blank lines and '#' comments are skipped."""
    lines = Path(path).read_text().splitlines()
    tokens = frozenset(s.strip() for s in lines if s.strip() and not s.strip().startswith("#"))
    if not tokens:
        raise ValueError(f"{path}: no tokens")
    return tokens


class Server:
    """A built server: the grpc.aio server plus what it owns (store, worker pool, health)."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.storage = Storage(config.db_path, synchronous=config.synchronous)
        self.executor = ThreadPoolExecutor(config.workers, thread_name_prefix="oppmodel-cpu")
        self.manager = SessionManager(
            self.storage, executor=self.executor, metrics=self.metrics, limits=config.limits
        )
        options = [
            ("grpc.max_receive_message_length", config.max_message_bytes),
            ("grpc.max_send_message_length", 16 * config.max_message_bytes),
            ("grpc.http2.bdp_probe", 0),
        ]
        self.grpc = grpc.aio.server(options=options)
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
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.grpc)
        reflection.enable_server_reflection(
            (
                SERVICE_NAME,
                PERFECT_INFO_SERVICE_NAME,
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                reflection.SERVICE_NAME,
            ),
            self.grpc,
        )

    def bind(self) -> int:
        """Bind the configured address (TLS if cert and key are given); returns the port."""
        address = f"{self.config.host}:{self.config.port}"
        if self.config.tls_cert or self.config.tls_key:
            if not (self.config.tls_cert and self.config.tls_key):
                raise ValueError("TLS needs both --tls-cert and --tls-key")
            credentials = grpc.ssl_server_credentials(
                [(Path(self.config.tls_key).read_bytes(), Path(self.config.tls_cert).read_bytes())]
            )
            return self.grpc.add_secure_port(address, credentials)
        return self.grpc.add_insecure_port(address)

    async def start(self) -> None:
        """Start serving; health answers SERVING for the service and overall."""
        await self.grpc.start()
        for name in ("", SERVICE_NAME, PERFECT_INFO_SERVICE_NAME):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        if self.config.metrics_port is not None:
            self.metrics.serve(self.config.metrics_port, self.config.host)

    async def stop(self, grace: float | None = None) -> None:
        """Health NOT_SERVING, drain in-flight calls within ``grace`` seconds, close the store."""
        await self.health.enter_graceful_shutdown()
        await self.grpc.stop(self.config.grace_seconds if grace is None else grace)
        await self.manager.drain()  # state changes of cancelled calls run to their end
        await self.perfect_info.drain()
        self.executor.shutdown(wait=True)
        await asyncio.get_running_loop().run_in_executor(None, self.storage.close)


def build_server(config: ServerConfig) -> tuple[Server, int]:
    """Build the server and bind its port (0 = any free port); call from the event loop."""
    server = Server(config)
    try:
        port = server.bind()
    except BaseException:
        server.executor.shutdown()
        server.storage.close()
        raise
    if port == 0:
        server.executor.shutdown()
        server.storage.close()
        raise OSError(f"could not bind {config.host}:{config.port}")
    return server, port


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


class JsonFormatter(logging.Formatter):
    """One JSON object per log record, with the record's extra fields."""

    _STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as a JSON line."""
        data = {
            "ts": round(record.created, 6),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        data.update({k: v for k, v in vars(record).items() if k not in self._STANDARD})
        if record.exc_info:
            data["traceback"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def configure_logging(level: int = logging.INFO) -> None:
    """JSON logs on stderr for the ``oppmodel`` loggers."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("oppmodel")
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel a request can reach, then freeze the heap.

    The first update or response otherwise pays the JIT load (~1 s). Afterwards every object alive
    (modules, numba's and gRPC's machinery: ~10^5 objects) moves out of the collector's sight with
    ``gc.freeze``: a full collection over them takes ~70 ms here, which showed up as the p99 of
    queries.
    """
    for players in (3, 2, 4):
        game = kuhn_game(players)
        model = MBBRModel(game, MBBRConfig(k=2, hands_default=0))
        model.observe(HandObservation(0, "p" * players, tuple(range(players))))
        for kind in ("mean", "bayes"):
            model.response(0, kind)
        model.opponent_model(0, 1)
    warm_up_perfect_info()
    gc.collect()
    gc.freeze()


async def serve(config: ServerConfig, *, ready: asyncio.Future[int] | None = None) -> None:
    """Run a server until SIGTERM/SIGINT, then shut it down gracefully."""
    warm_up()
    server, port = build_server(config)
    await server.start()
    log.info("serving", extra={"host": config.host, "port": port, "db": config.db_path})
    if ready is not None:
        ready.set_result(port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
        log.info("shutting down", extra={"grace_seconds": config.grace_seconds})
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await server.stop()
        log.info("stopped")


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

        self._server, self.port = asyncio.run_coroutine_threadsafe(start(), self._loop).result()
        return self.port

    def stop(self) -> None:
        """Stop the server and its loop (idempotent)."""
        if self._server is not None:
            server, self._server = self._server, None
            asyncio.run_coroutine_threadsafe(server.stop(self.grace), self._loop).result()
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()
