"""What a server listens with, checked before it binds: TLS files, bearer tokens, free ports.

Each check fails with a message naming the file or the address and the reason (gRPC's own
failures say only "Failed to bind", with their reasons logged to stderr), so that a refused
configuration is refused in one line before anything is opened or created.
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import grpc

from oppmodel.modeling.errors import InvalidArgumentError

T = TypeVar("T")


def read_tokens(path: str | Path) -> frozenset[str]:
    """Bearer tokens from a file: one per line; blank lines and '#' comments are skipped."""
    text = _read_file("auth_tokens", path).decode("utf-8", errors="replace")
    lines = (line.strip() for line in text.splitlines())
    tokens = frozenset(line for line in lines if line and not line.startswith("#"))
    if not tokens:
        raise InvalidArgumentError("auth_tokens", f"{path}: no tokens")
    return tokens


def _read_file(field: str, path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InvalidArgumentError(field, f"cannot read {path}: {exc.strerror}") from exc


def tls_credentials(cert: str | None, key: str | None) -> grpc.ServerCredentials | None:
    """Server credentials from a PEM certificate chain and its key (None without either);
    InvalidArgumentError naming the files if they are missing, unreadable or do not match."""
    if not (cert or key):
        return None
    if not (cert and key):
        raise InvalidArgumentError("tls", "TLS needs both a certificate and a key")
    key_pem, cert_pem = _read_file("tls_key", key), _read_file("tls_cert", cert)

    def encrypted(*_: object) -> str:
        raise InvalidArgumentError("tls_key", f"{key} is encrypted; gRPC needs a plain key")

    try:  # gRPC's own check only logs its reason and then fails to bind
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key, password=encrypted)
    except ssl.SSLError as exc:
        raise InvalidArgumentError(
            "tls",
            f"{cert} and {key} are not a PEM certificate chain and its private key"
            + (f" ({exc.reason})" if exc.reason else ""),
        ) from exc
    return grpc.ssl_server_credentials([(key_pem, cert_pem)])


def ensure_bindable(host: str, port: int) -> None:
    """Raise OSError naming ``host:port`` unless a listener could bind it now.

    gRPC's own failure says only "Failed to bind" (with its reasons logged to stderr); this check
    names the reason first (the port is in use, the address is not this machine's). A port some
    address of ``host`` has in use is refused even if another address of it is free, so a second
    server never shares a name with the first.
    """
    try:
        addresses = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise OSError(f"cannot bind {host}:{port}: {exc.strerror}") from exc
    failures = []
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC's listener
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise OSError(f"{host}:{port} is already in use") from exc
                failures.append(exc)
    if len(failures) == len(addresses):
        raise OSError(f"cannot bind {host}:{port}: {failures[0].strerror}")


def start_metrics_endpoint(start: Callable[[int, str], T], host: str, port: int) -> T:
    """``start(port, host)`` (a /metrics server) once ``host:port`` could be bound; an OSError,
    the port being in use say, names the metrics endpoint."""
    try:
        ensure_bindable(host, port)
        return start(port, host)
    except OSError as exc:
        raise OSError(f"metrics endpoint: {exc}") from exc
