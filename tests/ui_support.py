"""What the web UI's tests share: a real service with two owners' tokens and a real UI in front
of it, both on 127.0.0.1, and a GET of the UI with a bearer token."""

from __future__ import annotations

import contextlib
import http.client
from collections.abc import Iterator
from pathlib import Path

from service_support import LOADED_DEADLINE

from oppmodel.clients.ui.app import BackgroundUi, UiConfig
from oppmodel.server.app import BackgroundServer, ServerConfig

TOKENS = ("alice-token", "bob-token")


@contextlib.contextmanager
def service_and_ui(
    folder: Path, *, refresh_seconds: float = 1.0, model_seconds: float = 0.0, **server: object
) -> Iterator[tuple[int, int]]:
    """(the service's port, the UI's port): a service on a SQLite file in ``folder`` requiring
    one of TOKENS (and ``server``'s other settings), and the UI reading it (models read again
    as soon as hands moved: the tests wait on what the page shows)."""
    config = ServerConfig(
        db_path=str(folder / "s.sqlite"), port=0, auth_tokens=frozenset(TOKENS), **server
    )
    with (
        BackgroundServer(config, grace=0.5) as port,
        BackgroundUi(
            UiConfig(
                service=f"127.0.0.1:{port}",
                port=0,
                refresh_seconds=refresh_seconds,
                model_seconds=model_seconds,
            )
        ) as ui_port,
    ):
        yield port, ui_port


def get(port: int, path: str, token: str, tag: str | None = None) -> tuple[int, str, str]:
    """(status, ETag, body) of a GET of the UI with the bearer ``token`` (and ``If-None-Match:
    tag``)."""
    headers = {"Authorization": f"Bearer {token}"}
    if tag is not None:
        headers["If-None-Match"] = tag
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=LOADED_DEADLINE)
    try:
        connection.request("GET", path, headers=headers)
        reply = connection.getresponse()
        return reply.status, reply.getheader("ETag") or "", reply.read().decode()
    finally:
        connection.close()
