"""``oppmodel serve``: run the opponent-modeling gRPC service."""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import signal
import subprocess
import sys
from pathlib import Path

from oppmodel.clients.commands._types import (
    MAX_MESSAGE_KB,
    MAX_PROCESSES,
    float_in,
    int_in,
    non_negative_float,
    port,
    positive_int,
    processes,
)
from oppmodel.clients.interrupt import Interrupted
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.server import ray_serve
from oppmodel.server.app import Server, ServerConfig, serve
from oppmodel.server.listening import read_tokens
from oppmodel.server.logs import configure_logging
from oppmodel.server.ray_serve import RayServeConfig
from oppmodel.server.session_spec import Limits
from oppmodel.server.storage import redacted
from oppmodel.server.storage_sqlite import Synchronous

_EPILOG = """\
Sessions live in the store given by --store: a SQLite file (WAL mode; the default kind, nothing to
install) or a PostgreSQL database (a postgresql:// URL or a libpq string 'host=... dbname=...';
pip install 'oppmodel[postgres]'), which several servers can share: each hand is then applied
exactly once whichever server receives it. Its password is never printed or logged, and clients
learn nothing about the store: while it is unreachable calls answer UNAVAILABLE and health
NOT_SERVING.
Every observation is acknowledged only once it is committed, and after a crash or restart each
session resumes with exactly the posterior it had. The server listens on loopback unless --host
says otherwise, and refuses a port that is already in use. Once it serves, it prints its address
(and the metrics URL) on stdout; logs are JSON lines on stderr.

examples:
  oppmodel serve --store ~/oppmodel.sqlite
  oppmodel serve --store postgresql://oppmodel:PASSWORD@db.example:5432/oppmodel
  oppmodel serve --store s.sqlite --port 0 --metrics-port 9100
  oppmodel serve --store s.sqlite --host 0.0.0.0 --tls-cert cert.pem --tls-key key.pem \\
      --auth-tokens tokens.txt       # tokens.txt: one bearer token per line

then:  grpcurl -plaintext 127.0.0.1:50051 list

With --ray both services (opponent model, perfect information) run as a Ray Serve application:
--replicas processes (on one machine or a cluster) share the PostgreSQL store, behind Ray Serve's
gRPC proxy on --port of every node (the proxy listens on every interface, which Ray offers no way
to change, so --host is refused; it serves plaintext: keep the port behind a firewall). A local
Ray instance (no --address) keeps Ray's own ports on 127.0.0.1, except each replica's
inter-deployment port, which Serve also binds to every interface. Calls
about a session are routed by its id (metadata session_id, which oppmodel's clients send), so a
session stays loaded on one replica; a replica that dies hands its sessions to another, which
loads them from the store. Observe hands with ObserveBatch there (the clients do): through the
proxy one call costs ~4 ms of CPU, a streamed hand ~3 ms. With --metrics-port, each replica
pushes its counts every second to this process, whose /metrics (on 127.0.0.1) serves the same
metrics as the single-process server, each series labelled replica="<id>" (sum them by the
other labels for the service's totals); a replica unheard of for 5 s is dropped.
pip install 'oppmodel[ray]'.

  oppmodel serve --ray --replicas 2 --store postgresql://...            # a local Ray instance
  oppmodel serve --ray --store postgresql://... --port 0 --metrics-port 0  # free ports, printed
  ray start --head && oppmodel serve --ray --address auto --replicas 4 --store postgresql://...
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``serve`` subcommand."""
    parser = subparsers.add_parser(
        "serve",
        help="run the gRPC opponent-modeling service",
        description="Run the gRPC opponent-modeling service until SIGTERM or Ctrl-C.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_address_and_store(parser)
    _add_ray(parser)
    _add_access(parser)
    _add_limits(parser)
    _add_durability_and_processes(parser)
    parser.set_defaults(func=run)


def _add_address_and_store(parser: argparse.ArgumentParser) -> None:
    """Where the server listens and where it keeps the sessions."""
    parser.add_argument(
        "--host",
        help=f"address to bind (default {ServerConfig.host}, loopback only); not with --ray, "
        "whose proxy binds every interface",
    )
    parser.add_argument(
        "--port", type=port, default=50051, help="port (default %(default)s); 0 picks a free one"
    )
    parser.add_argument(
        "--store",
        "--db",
        dest="db",
        required=True,
        metavar="PATH|URL",
        help="where the sessions are stored: a SQLite file, or a postgresql:// URL or libpq "
        "connection string ('host=... dbname=...')",
    )


def _add_ray(parser: argparse.ArgumentParser) -> None:
    """Serving from Ray Serve replicas instead of this process."""
    ray = parser.add_argument_group("Ray Serve (see below)")
    ray.add_argument(
        "--ray",
        action="store_true",
        help="serve from Ray Serve replicas sharing the store (a postgresql:// URL)",
    )
    ray.add_argument(
        "--address",
        metavar="ADDR",
        help="the Ray cluster to run on ('auto': the one `ray start` runs here, or HOST:PORT); "
        "default: start a Ray instance of this process's own",
    )
    ray.add_argument(
        "--replicas",
        type=processes,
        default=RayServeConfig.replicas,
        help="replicas with --ray (default %(default)s)",
    )


def _add_access(parser: argparse.ArgumentParser) -> None:
    """Who may call (TLS, bearer tokens) and where the metrics are read."""
    parser.add_argument("--tls-cert", help="PEM certificate chain (with --tls-key: serve TLS)")
    parser.add_argument("--tls-key", help="PEM private key")
    parser.add_argument(
        "--auth-tokens",
        metavar="FILE",
        help="require 'authorization: Bearer TOKEN'; FILE has one token per line; "
        "a session is visible only to the token that created it",
    )
    parser.add_argument(
        "--metrics-port",
        type=port,
        help="serve Prometheus /metrics on this port (0 picks a free one and prints it); with "
        "--ray, on 127.0.0.1 from this process, every replica's series labelled 'replica'",
    )


def _add_limits(parser: argparse.ArgumentParser) -> None:
    """What the server holds at most (sessions, samples, memory, streams, message size, calls)."""
    limits = parser.add_argument_group(
        "limits",
        "What the server holds at most; going beyond one is refused with RESOURCE_EXHAUSTED "
        "naming it. Memory stays below about 250 MiB + ~300 MiB for the model workers' fork "
        "server and first worker (~100 MiB per further one) + --memory-mb + 1 MiB per "
        "--max-streams + --max-message-kb per --max-rpcs (docs/service.md has the arithmetic).",
    )
    limits.add_argument(
        "--max-sessions",
        type=positive_int,
        default=Limits.max_sessions,
        help="sessions stored at most (default %(default)s)",
    )
    limits.add_argument(
        "--max-k",
        type=positive_int,
        default=Limits.max_k,
        help="largest number of MBBR samples a session may ask for (default %(default)s)",
    )
    limits.add_argument(
        "--memory-mb",
        type=positive_int,
        default=Limits.memory_bytes >> 20,
        help="estimated memory of the sessions kept loaded; the least recently used leave "
        "memory beyond it and reload on their next use, one that alone needs more is refused "
        "(default %(default)s)",
    )
    limits.add_argument(
        "--max-streams",
        type=positive_int,
        default=Limits.max_streams,
        help="streams (Observe, GetActions) open at once (default %(default)s)",
    )
    limits.add_argument(
        "--stream-idle-seconds",
        type=float_in(0.0, low_open=True),
        default=Limits.stream_idle_seconds,
        help="a stream (Observe, GetActions) that carries nothing this long is closed; clients "
        "reopen it "
        "(default %(default)s)",
    )
    message = limits.add_mutually_exclusive_group()
    message.add_argument(
        "--max-message-kb",
        type=int_in(1, MAX_MESSAGE_KB),
        default=ServerConfig.max_message_bytes >> 10,
        help="largest request the server reads, in KiB (default %(default)s)",
    )
    message.add_argument(
        "--max-message-mb",
        type=positive_int,
        metavar="MAX_MESSAGE_MB",
        help="the same in MiB: a 3-player Leduc strategy sent as JSON (CreateSession's "
        "prior_mean_json or default_strategy_json, ~1.8 MB) needs 2",
    )
    limits.add_argument(
        "--max-rpcs",
        type=positive_int,
        default=ServerConfig.max_rpcs,
        help="calls in progress at once, streams included (default %(default)s)",
    )


def _add_durability_and_processes(parser: argparse.ArgumentParser) -> None:
    """How often a session is snapshotted, how durably stored, and which processes compute."""
    parser.add_argument(
        "--snapshot-hands",
        type=positive_int,
        default=Limits.snapshot_hands,
        help="store a snapshot of a session's model at least every this many hands (and once "
        f"the hands since the last took {Limits.snapshot_seconds:g} s to apply and "
        f"{Limits.snapshot_cost_factor:g} times what the last snapshot cost), so a reload "
        "replays at most that many; fewer: faster reloads, more writes (default %(default)s)",
    )
    parser.add_argument(
        "--model-workers",
        type=int_in(0, MAX_PROCESSES),
        default=ServerConfig.model_workers,
        help="child processes that hold the sessions' models and compute their updates and "
        "responses, so that the server's event loop serves calls meanwhile; 0: the server's "
        "own process computes them (default %(default)s)",
    )
    parser.add_argument(
        "--grace",
        type=non_negative_float,
        default=5.0,
        help="seconds to drain on shutdown (default %(default)s)",
    )
    parser.add_argument(
        "--synchronous",
        choices=Synchronous.names(),
        default=Synchronous.FULL,
        help="SQLite durability: FULL survives power loss, NORMAL only a crash of the process "
        "(a PostgreSQL store follows its server's settings)",
    )


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM (status 0) or Ctrl-C (the interrupted line, status 130)."""
    configure_logging()
    config = ServerConfig(
        db_path=args.db,
        host=ServerConfig.host if args.host is None else args.host,
        port=args.port,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        auth_tokens=read_tokens(args.auth_tokens) if args.auth_tokens else None,
        metrics_port=args.metrics_port,
        limits=Limits(
            max_sessions=args.max_sessions,
            max_k=args.max_k,
            memory_bytes=args.memory_mb << 20,
            max_streams=args.max_streams,
            stream_idle_seconds=args.stream_idle_seconds,
            snapshot_hands=args.snapshot_hands,
        ),
        max_message_bytes=(
            args.max_message_mb << 20 if args.max_message_mb else args.max_message_kb << 10
        ),
        max_rpcs=args.max_rpcs,
        grace_seconds=args.grace,
        synchronous=args.synchronous,
        model_workers=args.model_workers,
    )
    if args.ray:
        ray_config = RayServeConfig(config, replicas=args.replicas, address=args.address)
        if args.host is not None:  # Serve binds [::]:PORT; its gRPCOptions take no host
            raise InvalidArgumentError(
                "host",
                "not with --ray: Ray Serve's gRPC proxy listens on every interface of every "
                "node, whatever --host says; keep --port behind a firewall",
            )
        stopped_by = ray_serve.run(
            ray_config, on_serving=functools.partial(announce_ray, ray_config)
        )
        # Ray is stopped; what it, Serve and the kernels left on the heap needs no finalizing:
        # spared the interpreter's last collections, the exit takes 0.4 s, not 2-4 s, when busy
        gc.freeze()
        if stopped_by == signal.SIGINT:  # Ctrl-C, once the application is removed
            raise Interrupted(kept=f"the sessions are kept in {redacted(config.db_path)}")
        return 0
    if args.address is not None:
        raise InvalidArgumentError("address", "--address needs --ray")
    if asyncio.run(serve(config, on_serving=announce)) == signal.SIGINT:  # Ctrl-C, once drained
        raise Interrupted(kept=f"the sessions are kept in {redacted(config.db_path)}")
    return 0


def announce_ray(config: RayServeConfig, port: int, metrics_port: int | None) -> None:
    """Print where Ray Serve's gRPC proxy takes calls (and the metrics URL, as ``announce``)."""
    where = config.address or "a local Ray instance"
    line = (
        f"serving on port {port} of every Ray node ({config.replicas} replicas on {where}; "
        f"store {redacted(config.server.db_path)})"
    )
    if metrics_port is not None:
        line += f"; metrics on http://{ray_serve.LOOPBACK}:{metrics_port}/metrics"
    print(line, flush=True)


def announce(server: Server) -> None:
    """Print where the started server listens (the chosen ports when 0 was asked for), and
    whether it takes TLS (a plaintext client of a TLS port only sees its calls fail)."""
    host = server.config.host
    tls = " TLS" if server.config.tls_cert else ""
    line = f"serving{tls} on {host}:{server.port} (store {redacted(server.config.db_path)})"
    if server.metrics_port is not None:
        line += f"; metrics on http://{host}:{server.metrics_port}/metrics"
    print(line, flush=True)


_CHILD = (
    "import argparse, sys\n"
    "from oppmodel.clients.commands import serve_cmd\n"
    "parser = argparse.ArgumentParser()\n"
    "serve_cmd.register(parser.add_subparsers())\n"
    "args = parser.parse_args(sys.argv[1:])\n"
    "sys.exit(args.func(args))\n"
)


def spawn(db: str | Path, *options: str) -> tuple[subprocess.Popen, int]:
    """``oppmodel serve --db DB --port 0 OPTIONS`` in a child process; returns (process, port)
    once it logs "serving". The child's stderr (JSON log lines) stays a text pipe to read."""
    process = subprocess.Popen(
        [sys.executable, "-c", _CHILD, "serve", "--db", str(db), "--port", "0", *options],
        stdout=subprocess.DEVNULL,  # "serving on ...": for people; the caller's stdout is its own
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None  # stderr=PIPE
    for line in process.stderr:
        if not line.startswith("{"):
            continue  # not one of our JSON log lines (a library warning, say)
        event = json.loads(line)
        if event["msg"] == "serving":
            return process, int(event["port"])
    raise RuntimeError(f"server exited with {process.wait()}")
