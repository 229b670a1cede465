"""The web UI in a real browser: Debian's headless chromium (through Playwright) against a real
service and a real UI server, both on 127.0.0.1. It opens the session list, opens a session while
hands stream in and waits for the page's numbers to become the service's GetModel and GetResponse
values (the best response and what is played), checks that another owner's token sees nothing of
it, and saves screenshots (1280x800 and a phone's width) that it checks are not blank."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from service_support import LOADED_DEADLINE, random_observations
from ui_support import TOKENS, service_and_ui

from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.ui.app import COOKIE

CHROMIUM = shutil.which("chromium")  # Debian's package (.ci/run installs it)
# Debian's chromium on a closed network: no first-run, sync, component or background fetches
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
HANDS = 240  # sent in batches while the page is open
BATCH = 60
WAIT_MS = 120_000  # a bound on a hang at load, not a speed check

if CHROMIUM is None and not os.environ.get("CI"):  # CI fails rather than skips
    pytest.skip(
        "chromium is absent (apt-get install chromium; .ci/run installs it)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api")


@contextlib.contextmanager
def _browser() -> Iterator[object]:
    """Headless chromium (a fresh temporary profile: Playwright's launch makes one per browser,
    and each context of it is a fresh one again)."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_FLAGS)
        )
        try:
            yield browser
        finally:
            browser.close()


def _not_blank(path: Path) -> None:
    """A screenshot with content: many grey levels, spread widely."""
    from PIL import Image

    pixels = np.asarray(Image.open(path).convert("L"), dtype=np.float64)
    assert pixels.std() > 10.0, f"{path} looks blank (grey-level spread {pixels.std():.1f})"
    assert len(np.unique(pixels)) > 20, f"{path} has almost no distinct grey levels"


def _page_numbers(page: object, label: str, position: int) -> dict[tuple[str, int], float]:
    cells = page.locator(  # type: ignore[attr-defined]
        f'section.opponent[data-label="{label}"][data-position="{position}"] td.p'
    )
    return {
        (cell.get_attribute("data-infostate"), int(cell.get_attribute("data-action"))): float(
            cell.text_content()
        )
        for cell in cells.all()
    }


def test_live_session_page_in_chromium(tmp_path: Path) -> None:
    shots = tmp_path / "shots"
    shots.mkdir()
    with (
        service_and_ui(tmp_path, refresh_seconds=0.3, model_seconds=0.3) as (port, ui),
        OpponentModelClient(f"127.0.0.1:{port}", token=TOKENS[0], timeout=LOADED_DEADLINE) as alice,
        _browser() as browser,
    ):
        session_id = alice.create_session(opponent_labels=("bob", "carol")).session_id
        base = f"http://127.0.0.1:{ui}"
        page = browser.new_page(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
        page.set_default_timeout(WAIT_MS)

        # without a token the service refuses: the page asks for one
        page.goto(base + "/")
        assert page.url.startswith(base + "/login")
        page.fill("input[name=token]", TOKENS[0])
        page.click("button[type=submit]")
        page.wait_for_selector(f'tr[data-session="{session_id}"]')
        page.screenshot(path=str(shots / "sessions.png"), full_page=True)

        page.click(f'tr[data-session="{session_id}"] a')
        page.wait_for_selector("#hands")
        before = _page_numbers(page, "bob", 1)
        assert before, "the page shows no modeled probabilities"
        # hands arrive in batches while the page is open: it shows each count without a reload
        hands = random_observations(HANDS, seed=11, profile="maniac")
        seen = [before]
        for start in range(0, HANDS, BATCH):
            alice.observe_batch(session_id, hands[start : start + BATCH], first_sequence=start + 1)
            page.wait_for_function(
                "n => Number(document.getElementById('hands').dataset.hands) === n",
                arg=start + BATCH,
            )
            seen.append(_page_numbers(page, "bob", 1))
        assert all(a != b for a, b in itertools.pairwise(seen)), "a batch left the numbers"
        for label in ("bob", "carol"):
            for position in range(3):
                model = alice.model(session_id, label, position).strategy.as_dict()
                shown = _page_numbers(page, label, position)
                assert shown, (label, position)
                for (state, action), value in shown.items():
                    assert value == pytest.approx(model[state][action], abs=5e-4), (state, action)
        for ours in range(3):  # the best response and what is played, as GetResponse answers
            reply = alice.response(session_id, ours, "mean", played=True)
            for cell, value in (
                ("ev", reply.expected_value),
                ("played", reply.played_expected_value),
            ):
                shown = page.locator(f'td.{cell}[data-position="{ours}"]').text_content()
                assert float(shown) == pytest.approx(value, abs=5e-5), (cell, ours)
        page.locator("section.opponent details").first.evaluate("d => d.open = true")
        page.screenshot(path=str(shots / "session-1280.png"), full_page=False)
        page.set_viewport_size({"width": 390, "height": 844})
        page.screenshot(path=str(shots / "session-phone.png"), full_page=False)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the phone-width page scrolls sideways ({width} px)"

        # another owner's token sees no session and cannot open this one
        other = browser.new_page()  # type: ignore[attr-defined]  # a context of its own
        other.context.add_cookies([{"name": COOKIE, "value": TOKENS[1], "url": base}])
        other.goto(base + "/")
        other.wait_for_selector("#no-sessions")
        assert session_id not in other.content()
        reply = other.goto(f"{base}/session/{session_id}")
        assert reply.status == 404
        assert "bob" not in other.inner_text("main") and "carol" not in other.inner_text("main")
        assert other.request.get(f"{base}/session/{session_id}/live").status == 404

    for name in ("sessions.png", "session-1280.png", "session-phone.png"):
        _not_blank(shots / name)
    keep = os.environ.get("OPPMODEL_UI_SHOTS")  # docs/ui.md's screenshot is one of these
    if keep:
        shutil.copytree(shots, keep, dirs_exist_ok=True)
