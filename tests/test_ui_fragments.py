"""What a watching page costs (issue 33): a session's live fragment is drawn once per read of its
models and named by an entity tag, so a page that holds it gets 304 and no body until the session
has new hands read; another owner's token still gets nothing. A real service and a real UI on
127.0.0.1, read over HTTP."""

from __future__ import annotations

import re
from pathlib import Path

from service_support import LOADED_DEADLINE, random_observations
from ui_support import TOKENS, get, service_and_ui

from oppmodel.clients.client import OpponentModelClient


def _hands(body: str) -> int:
    found = re.search(r'id="hands" data-hands="(\d+)"', body)
    assert found, "the fragment shows no hand count"
    return int(found.group(1))


def test_a_page_holding_the_current_fragment_gets_304(tmp_path: Path) -> None:
    with (
        service_and_ui(tmp_path) as (port, ui),
        OpponentModelClient(f"127.0.0.1:{port}", token=TOKENS[0], timeout=LOADED_DEADLINE) as alice,
    ):
        session_id = alice.create_session(opponent_labels=("bob", "carol")).session_id
        live = f"/session/{session_id}/live"
        status, tag, body = get(ui, live, TOKENS[0])
        assert status == 200 and tag and _hands(body) == 0
        # the whole page carries the same tag, so its first poll is answered without a body
        page = get(ui, f"/session/{session_id}", TOKENS[0])[2]
        assert f'data-tag="{tag.replace(chr(34), "&quot;")}"' in page

        # no new hands: the page holds the current fragment
        assert get(ui, live, TOKENS[0], tag) == (304, tag, "")
        # another owner's token learns nothing from a tag
        assert get(ui, live, TOKENS[1], tag)[0] == 404

        alice.observe_batch(session_id, random_observations(30, seed=5), first_sequence=1)
        status, newer, body = get(ui, live, TOKENS[0], tag)
        assert status == 200 and newer != tag and _hands(body) == 30
        assert get(ui, live, TOKENS[0], newer) == (304, newer, "")
        # a page without the tag (a fresh one) gets the same fragment, drawn once
        assert get(ui, live, TOKENS[0]) == (200, newer, body)
