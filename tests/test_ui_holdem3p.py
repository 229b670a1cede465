"""The web page of a 3-player hold'em session (issue 35): GetModels answers its models alone (the
game has no response table: the response is made at each decision), and the page shows every
opponent's model in every position, at the values GetModel answers, with a note in place of the
response. A real service and a real UI on 127.0.0.1, read over HTTP."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
from holdem_support import recording_style
from service_support import LOADED_DEADLINE
from ui_support import TOKENS, get, service_and_ui

from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.holdem.match import HoldemGame, play_holdem_match
from oppmodel.modeling.mbbr.config import MBBRConfig

LABELS = ("left", "right")
CELL = re.compile(r'class="num p" data-infostate="([^"]*)" data-action="(\d)">([0-9.]+)<')


def test_a_3p_holdem_page_shows_the_models_and_no_response_table(tmp_path: Path) -> None:
    game = HoldemGame("holdem", read_game_def("holdem3p"))
    seats = [
        recording_style(name, 5 + k) for k, name in enumerate(["cfr", "maniac", "tight-passive"])
    ]
    play_holdem_match(game, seats, game.deal_sequence(4, 9))
    config = MBBRConfig(seed=3, prior="informed", change_hazard=0)
    with (
        service_and_ui(tmp_path) as (port, ui),
        OpponentModelClient(f"127.0.0.1:{port}", token=TOKENS[0], timeout=LOADED_DEADLINE) as alice,
    ):
        sid = alice.create_session(game="holdem3p", opponent_labels=LABELS, config=config)
        sid = sid.session_id
        alice.observe_batch(sid, seats[0].seen, first_sequence=1)
        status, _, body = get(ui, f"/session/{sid}/live", TOKENS[0])
        assert status == 200, body
        assert 'id="no-response-table"' in body
        sections = body.split('<section class="card opponent"')[1:]
        assert len(sections) == len(LABELS) * 3
        for label, position, section in zip(
            [label for label in LABELS for _ in range(3)], [0, 1, 2] * 2, sections, strict=True
        ):
            assert f'data-label="{label}" data-position="{position}"' in section
            model = alice.model(sid, label, position).strategy.as_dict()
            shown = CELL.findall(section)
            assert shown, (label, position)
            for state, action, value in shown:
                assert float(value) == pytest.approx(model[unescape(state)][int(action)], abs=5e-4)
