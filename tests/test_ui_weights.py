"""The web UI's perfect-information page (issue 33, item 3): a session's model weights as the
service's GetModelWeights gives them, another owner's token seeing nothing; a real service and a
real UI on 127.0.0.1, read over HTTP."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from service_support import LOADED_DEADLINE
from ui_support import TOKENS, get, service_and_ui

from oppmodel.clients.perfect_info_client import ChoiceEvidence, Opponent, PerfectInfoClient


def test_perfect_info_page_shows_the_model_weights(tmp_path: Path) -> None:
    with (
        service_and_ui(tmp_path) as (port, ui),
        PerfectInfoClient(f"127.0.0.1:{port}", token=TOKENS[0], timeout=LOADED_DEADLINE) as alice,
    ):
        opponents = [Opponent("west"), Opponent("east")]
        sid = alice.create_session(opponents=opponents, seed=7).session_id
        path = f"/perfect-info/{sid}"
        choices = [ChoiceEvidence.from_likelihoods("west", [0.9, 0.1])] * 6
        east = ChoiceEvidence.from_utilities("east", [[31, 29], [30, 30]], chosen=1, epsilon=0.1)
        choices += [east] * 4
        alice.observe_choices(sid, choices, first_sequence=1)
        status, _, page = get(ui, path, TOKENS[0])
        assert status == 200
        assert f'data-choices="{len(choices)}"' in page
        for label, weights in alice.model_weights(sid).items():
            section = page.split(f'data-label="{label}"', 1)[1].split("</section>", 1)[0]
            shown = dict(re.findall(r'data-model="([^"]+)">([0-9.]+)<', section))
            assert shown, label
            for name, mean in zip(weights.models, weights.mean, strict=True):
                assert float(shown[name]) == pytest.approx(mean, abs=5e-4), (label, name)
        status, _, page = get(ui, path, TOKENS[1])  # another owner: as if it did not exist
        assert status == 404
        assert "west" not in page and "east" not in page
