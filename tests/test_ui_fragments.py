"""What a watching page costs (issue 33): a session's live fragment is drawn once per read of its
models and named by an entity tag, so a page that holds it gets 304 and no body until the session
has new hands read; another owner's token still gets nothing. A real service and a real UI on
127.0.0.1, read over HTTP."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

from service_support import LOADED_DEADLINE, random_observations
from ui_support import TOKENS, get, service_and_ui

from oppmodel.clients.client import OpponentModelClient
from oppmodel.server.app import free_ports

# what a UI could ask of a session
READS = ("GetSession", "GetModel", "GetResponse", "GetModels", "GetWinnings")


def _hands(body: str) -> int:
    found = re.search(r'id="hands" data-hands="(\d+)"', body)
    assert found, "the fragment shows no hand count"
    return int(found.group(1))


def _reads(metrics_port: int) -> dict[str, float]:
    """The service's count of each of READS answered (its Prometheus endpoint)."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    text = urllib.request.urlopen(url, timeout=LOADED_DEADLINE).read().decode()
    found = re.findall(r'oppmodel_requests_total\{code="OK",method="(\w+)"\} (\S+)', text)
    return {method: float(count) for method, count in found if method in READS}


def test_a_recent_read_is_answered_without_calling_the_service(tmp_path: Path) -> None:
    # for --model-seconds after a read the view is answered as it is: no call at all, not even
    # the GetSession that would only find the session moved on (and be answered with the view)
    (metrics_port,) = free_ports()
    with (
        service_and_ui(tmp_path, model_seconds=3600.0, metrics_port=metrics_port) as (port, ui),
        OpponentModelClient(f"127.0.0.1:{port}", token=TOKENS[0], timeout=LOADED_DEADLINE) as alice,
    ):
        session_id = alice.create_session(opponent_labels=("bob", "carol")).session_id
        live = f"/session/{session_id}/live"
        status, tag, body = get(ui, live, TOKENS[0])
        assert status == 200 and _hands(body) == 0
        read = _reads(metrics_port)
        # every model and response in one call (no winnings yet: no hands)
        assert read == {"GetSession": 1, "GetModels": 1}
        alice.observe_batch(session_id, random_observations(30, seed=5), first_sequence=1)
        assert get(ui, live, TOKENS[0], tag) == (304, tag, "")
        assert get(ui, live, TOKENS[0]) == (200, tag, body)
        assert _reads(metrics_port) == read
        # another owner's token is not answered from that view: the service refuses it
        assert get(ui, live, TOKENS[1], tag)[0] == 404
        assert _reads(metrics_port) == read  # refused: no OK answer counted


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


def _chips(body: str) -> tuple[float, int]:
    found = re.search(r'id="winnings" data-chips="([^"]+)" data-hands="(\d+)"', body)
    assert found, "the fragment shows no winnings"
    return float(found.group(1)), int(found.group(2))


def test_a_read_after_the_first_checks_the_session_with_its_winnings(tmp_path: Path) -> None:
    # after a token's first read of a session, the check whether it saw hands is the
    # GetWinnings of the hands since (which the service answers only to the owner, with the
    # session's hands now), not a GetSession beside it: a busy session's page costs 2 calls
    (metrics_port,) = free_ports()
    with (
        service_and_ui(tmp_path, model_seconds=0.0, metrics_port=metrics_port) as (port, ui),
        OpponentModelClient(f"127.0.0.1:{port}", token=TOKENS[0], timeout=LOADED_DEADLINE) as alice,
    ):
        session_id = alice.create_session(opponent_labels=("bob", "carol")).session_id
        live = f"/session/{session_id}/live"
        hands = random_observations(50, seed=7)
        alice.observe_batch(session_id, hands[:20], first_sequence=1)
        status, tag, body = get(ui, live, TOKENS[0])
        assert status == 200 and _hands(body) == 20
        assert _reads(metrics_port) == {"GetSession": 1, "GetModels": 1, "GetWinnings": 1}
        alice.observe_batch(session_id, hands[20:], first_sequence=21)
        status, newer, body = get(ui, live, TOKENS[0], tag)
        assert status == 200 and newer != tag and _hands(body) == 50
        assert _reads(metrics_port) == {"GetSession": 1, "GetModels": 2, "GetWinnings": 2}
        # the chips of the hands since, added to the first read's: the service's, hand by hand
        assert _chips(body) == (sum(alice.winnings(session_id).chips), 50)
        # no hand since: the check alone, and the page holds the current fragment
        assert get(ui, live, TOKENS[0], newer) == (304, newer, "")
        assert _reads(metrics_port) == {"GetSession": 1, "GetModels": 2, "GetWinnings": 4}
        # the check refuses as GetSession does: another owner, a deleted session
        assert get(ui, live, TOKENS[1], newer)[0] == 404
        alice.delete_session(session_id)
        assert get(ui, live, TOKENS[0], newer)[0] == 404
