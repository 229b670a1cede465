"""``oppmodel ui``: a live web page per session, beside a running service (docs/ui.md)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from oppmodel.clients.commands._types import float_in, port
from oppmodel.clients.interrupt import Interrupted
from oppmodel.server.listening import ensure_bindable

_EPILOG = """\
A web page per session of the service at --service, read through the service's own RPCs
(ListSessions, GetSession, GetModel, GetResponse, GetWinnings) with the browser user's bearer
token: an owner sees only its sessions, and the UI holds no token of its own. The page updates
itself every --refresh-seconds (a session seeing new hands: its models at most every
--model-seconds); it fetches nothing from the internet. It listens on loopback unless --host
says otherwise. The same command serves a service started with --ray (give its proxy's address).

examples:
  oppmodel ui --service 127.0.0.1:50051              # then open http://127.0.0.1:8080/
  oppmodel ui --service 127.0.0.1:50051 --port 0     # a free port, printed
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``oppmodel ui``."""
    parser = subparsers.add_parser(
        "ui",
        help="a live web page per session of a running service",
        description="Serve a live web page per session of a running oppmodel service.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--service", metavar="ADDR", required=True, help="the service's HOST:PORT (gRPC)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default %(default)s, loopback only)"
    )
    parser.add_argument(
        "--port", type=port, default=8080, help="port (default %(default)s); 0 picks a free one"
    )
    parser.add_argument(
        "--refresh-seconds",
        type=float_in(0.1, 3600.0),
        default=1.0,
        metavar="SEC",
        help="how often an open page reads the service again (default %(default)s)",
    )
    parser.add_argument(
        "--model-seconds",
        type=float_in(0.0, 3600.0),
        default=5.0,
        metavar="SEC",
        help="a session that sees new hands has its models read again at most this often "
        "(default %(default)s): what a page costs a busy service",
    )
    parser.add_argument(
        "--root-certificates",
        type=Path,
        metavar="PEM",
        help="trust these certificates and reach the service over TLS",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C."""
    from oppmodel.clients.ui.app import UiConfig, serve_forever

    certificates = args.root_certificates.read_bytes() if args.root_certificates else None
    ensure_bindable(args.host, args.port)  # a busy port: the service's own one-line message
    config = UiConfig(
        service=args.service,
        host=args.host,
        port=args.port,
        refresh_seconds=args.refresh_seconds,
        model_seconds=args.model_seconds,
        root_certificates=certificates,
    )

    def ready(bound: int) -> None:
        print(f"ui: http://{args.host}:{bound}/ (the service at {args.service})", flush=True)

    try:
        asyncio.run(serve_forever(config, ready))
    except KeyboardInterrupt:
        raise Interrupted(kept="nothing: the sessions stay in the service") from None
    return 0
