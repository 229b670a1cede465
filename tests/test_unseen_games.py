"""The unseen-games benchmark: its games are unseen, and its table is what it played (tiny runs)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import unseen_games
from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES, GAMES_FOLDER
from oppmodel.modeling.games.acpc.compiler import bundled_name
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.play.match import fixed_strategy_factory, play_duplicate


@pytest.mark.parametrize("name", list(unseen_games.GAMES))
def test_each_game_differs_from_every_bundled_game_in_blinds_raise_sizes_and_deck(name) -> None:
    game = parse_game_def(unseen_games.GAMES[name])
    assert bundled_name(game) is None
    assert len(set(game.blind)) > 1  # blinds, not antes
    for file in BUNDLED_GAMES.values():
        bundled = parse_game_def((GAMES_FOLDER / file).read_text())
        assert game.blind != bundled.blind
        assert game.raise_size != bundled.raise_size
        assert game.deck != bundled.deck


def test_the_table_is_the_paired_matches_and_the_exact_references(tmp_path, capsys) -> None:
    out = tmp_path / "unseen.json"
    argv = ["--quick", "--hands", "6", "--styles", "maniac", "--workers", "1"]
    assert unseen_games.main([*argv, "--out", str(out)]) == 0
    table = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert "milli-big-blinds" in report["unit"] and "milli-big-blinds" in table
    assert [g["game"] for g in report["games"]] == list(unseen_games.GAMES)
    for entry in report["games"]:
        row = entry["rows"][0]
        assert row["opponents"] == ("maniac" if entry["players"] == 2 else "cfr+maniac")
        assert f"| {row['opponents']} | 2 |" in table
        # the cfr column: the solved strategy in MBBR's seat on the same cards
        game = unseen_games.unseen_game(entry["game"])
        solved, info = unseen_games.solve(game, unseen_games.QUICK_ITERATIONS)
        assert info == {**report["solves"][entry["game"]], "seconds": info["seconds"]}
        opponents = unseen_games.group_agents(game, "maniac")[1:]
        factories = [
            fixed_strategy_factory(name, unseen_games.opponent_profile(game, name, solved))
            for name in ["cfr", *opponents]
        ]
        cfr = [
            play_duplicate(game, factories, hands=6, seed=29, duplicate=d)[0] / 2 for d in (0, 1)
        ]
        np.testing.assert_allclose(row["per_duplicate_cfr"], cfr)
        difference = np.subtract(row["per_duplicate_mbbr"], row["per_duplicate_cfr"])
        assert row["difference"]["mean"] == pytest.approx(difference.mean())
        assert row["gap"] == pytest.approx(row["ceiling"] - row["cfr_exact"]) and row["gap"] > 0
        assert row["share"] == pytest.approx(difference.mean() / row["gap"])
        assert entry["mean_share"] == pytest.approx(row["share"])
