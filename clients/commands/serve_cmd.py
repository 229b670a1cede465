"""``oppmodel serve``: run the opponent-modeling gRPC service."""

from __future__ import annotations

import argparse
import asyncio

from server.app import ServerConfig, configure_logging, read_tokens, serve
from server.sessions import Limits

_EPILOG = """\
Sessions live in the SQLite file given by --db (WAL mode): every observation is acknowledged only
once it is committed, and after a crash or restart each session resumes with exactly the posterior
it had. The server listens on loopback unless --host says otherwise.

examples:
  oppmodel serve --db ~/oppmodel.sqlite
  oppmodel serve --db s.sqlite --port 0 --metrics-port 9100
  oppmodel serve --db s.sqlite --host 0.0.0.0 --tls-cert cert.pem --tls-key key.pem \\
      --auth-tokens tokens.txt       # tokens.txt: one bearer token per line

then:  grpcurl -plaintext 127.0.0.1:50051 list
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
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    parser.add_argument("--port", type=int, default=50051, help="port; 0 picks a free one")
    parser.add_argument("--db", required=True, help="SQLite file holding the sessions")
    parser.add_argument("--tls-cert", help="PEM certificate chain (with --tls-key: serve TLS)")
    parser.add_argument("--tls-key", help="PEM private key")
    parser.add_argument(
        "--auth-tokens",
        metavar="FILE",
        help="require 'authorization: Bearer TOKEN'; FILE has one token per line; "
        "a session is visible only to the token that created it",
    )
    parser.add_argument("--metrics-port", type=int, help="serve Prometheus /metrics on this port")
    parser.add_argument("--max-sessions", type=int, default=Limits.max_sessions)
    parser.add_argument("--max-k", type=int, default=Limits.max_k)
    parser.add_argument("--grace", type=float, default=5.0, help="seconds to drain on shutdown")
    parser.add_argument(
        "--synchronous",
        choices=("FULL", "NORMAL"),
        default="FULL",
        help="SQLite durability: FULL survives power loss, NORMAL only a crash of the process",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    configure_logging()
    config = ServerConfig(
        db_path=args.db,
        host=args.host,
        port=args.port,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        auth_tokens=read_tokens(args.auth_tokens) if args.auth_tokens else None,
        metrics_port=args.metrics_port,
        limits=Limits(max_sessions=args.max_sessions, max_k=args.max_k),
        grace_seconds=args.grace,
        synchronous=args.synchronous,
    )
    asyncio.run(serve(config))
    return 0
