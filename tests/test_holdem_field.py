"""experiments/holdem_field.py on the ACPC 3-player game, on a few hands: its baseline line is
the match engine's duplicate (the same cards, seeds and seatings, played in blocks); before its
first H hands MBBR plays the blueprint, so the pairing on the same cards nets exactly zero; a
journal's seatings are read back instead of played, and a row's seatings can be played by separate
runs."""

from __future__ import annotations

import json

import pytest

from experiments import holdem_field
from oppmodel.modeling.games.acpc.bundled import game_path
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.holdem.match import HoldemGame
from oppmodel.modeling.holdem.styles import policy_factory
from oppmodel.modeling.play.match import play_duplicate

PAIR = "maniac+calling-station"


def _field(journal, hands_default: int, hands: int = 6) -> list[str]:
    return [
        "--game",
        "holdem3p",
        "--opponents",
        PAIR,
        "--hands",
        str(hands),
        "--block",
        "3",
        "--duplicates",
        "1",
        "--seed",
        "5",
        "--hands-default",
        str(hands_default),
        "--journal",
        str(journal),
        "--json",
    ]


def test_the_blueprint_line_is_the_engines_duplicate_and_mbbr_before_h_is_the_blueprint(
    tmp_path,
) -> None:
    (row,) = holdem_field.main(_field(tmp_path / "journal.jsonl", hands_default=100))
    gamedef = read_game_def(str(game_path("holdem3p")))
    game = HoldemGame("holdem3p", gamedef)
    factories = [policy_factory(name, gamedef) for name in ["cfr", *PAIR.split("+")]]
    engine = play_duplicate(game, factories, hands=6, seed=5, duplicate=0)
    assert row["blueprint"] == pytest.approx(engine[0], abs=1e-9)
    assert row["hands"] == 36 and len(row["curve"]) == 2
    # before H hands MBBR plays the blueprint's rows with the blueprint's seed: the same play
    assert row["mbb_per_hand"] == pytest.approx(row["blueprint"], abs=1e-9)
    assert row["paired"] == 0.0 and row["curve"] == [0.0, 0.0]
    assert row["deviations"] == 0


def test_mbbr_responds_after_h_and_a_journal_resumes_the_run(tmp_path, monkeypatch) -> None:
    journal = tmp_path / "journal.jsonl"
    (row,) = holdem_field.main(_field(journal, hands_default=2, hands=3))
    assert len(journal.read_text().splitlines()) == 6  # a line a seating
    assert row["paired"] == pytest.approx(row["mbb_per_hand"] - row["blueprint"], abs=1e-9)
    assert row["deviations"] > 0  # the response played (the pair is ruled out: no refusals)

    def unplayed(*args, **kwargs):
        raise AssertionError("a journaled seating was played again")

    monkeypatch.setattr(holdem_field, "play_seating", unplayed)
    (again,) = holdem_field.main(_field(journal, hands_default=2, hands=3))
    assert json.dumps(again) == json.dumps(row)
    monkeypatch.undo()

    # a row's seatings split over runs (--seatings), their journals together: the same row
    split = tmp_path / "split.jsonl"
    split.write_text("".join(journal.read_text().splitlines(keepends=True)[:4]))
    (part,) = holdem_field.main([*_field(split, hands_default=2, hands=3), "--seatings", "5"])
    assert part == {
        "opponent": PAIR,
        "partial": True,
        "seatings": [(0, j) for j in (0, 1, 2, 3, 5)],
    }
    (whole,) = holdem_field.main([*_field(split, hands_default=2, hands=3), "--seatings", "4"])
    timing = ("cpu_s", "cycle_cpu_ms_per_hand")
    assert json.dumps({**whole, **{k: row[k] for k in timing}}) == json.dumps(row)
