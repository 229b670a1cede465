"""What a watching page costs (issue 33): a session's live fragment is drawn once per read of its
models and named by an entity tag, so a page that holds it gets 304 and no body until the session
has new hands read; another owner's token still gets nothing. A real service and a real UI on
127.0.0.1, read over HTTP."""

from __future__ import annotations

import http.client
import re
from pathlib import Path

from service_support import LOADED_DEADLINE, random_observations

from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.ui.app import BackgroundUi, UiConfig
from oppmodel.server.app import BackgroundServer, ServerConfig

TOKENS = ("alice-token", "bob-token")


def _get(port: int, path: str, token: str, tag: str | None = None) -> tuple[int, str, str]:
    """(status, ETag, body) of a GET with the bearer ``token`` and ``If-None-Match: tag``."""
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


def _hands(body: str) -> int:
    found = re.search(r'id="hands" data-hands="(\d+)"', body)
    assert found, "the fragment shows no hand count"
    return int(found.group(1))


def test_a_page_holding_the_current_fragment_gets_304(tmp_path: Path) -> None:
    config = ServerConfig(db_path=str(tmp_path / "s.sqlite"), port=0, auth_tokens=frozenset(TOKENS))
    with (
        BackgroundServer(config, grace=0.5) as port,
        BackgroundUi(UiConfig(service=f"127.0.0.1:{port}", port=0, model_seconds=0.0)) as ui,
        OpponentModelClient(f"127.0.0.1:{port}", token=TOKENS[0], timeout=LOADED_DEADLINE) as alice,
    ):
        session_id = alice.create_session(opponent_labels=("bob", "carol")).session_id
        live = f"/session/{session_id}/live"
        status, tag, body = _get(ui, live, TOKENS[0])
        assert status == 200 and tag and _hands(body) == 0
        # the whole page carries the same tag, so its first poll is answered without a body
        page = _get(ui, f"/session/{session_id}", TOKENS[0])[2]
        assert f'data-tag="{tag.replace(chr(34), "&quot;")}"' in page

        # no new hands: the page holds the current fragment
        assert _get(ui, live, TOKENS[0], tag) == (304, tag, "")
        # another owner's token learns nothing from a tag
        assert _get(ui, live, TOKENS[1], tag)[0] == 404

        alice.observe_batch(session_id, random_observations(30, seed=5), first_sequence=1)
        status, newer, body = _get(ui, live, TOKENS[0], tag)
        assert status == 200 and newer != tag and _hands(body) == 30
        assert _get(ui, live, TOKENS[0], newer) == (304, newer, "")
        # a page without the tag (a fresh one) gets the same fragment, drawn once
        assert _get(ui, live, TOKENS[0]) == (200, newer, body)
