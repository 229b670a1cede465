"""The unseen-games benchmark: its games are unseen, and its table is what it played (tiny runs)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments import unseen_games
from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES, GAMES_FOLDER
from oppmodel.modeling.games.acpc.compiler import bundled_name
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.acpc.solved import solved_profile
from oppmodel.modeling.play.diluted import fixed_profile
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
    argv = ["--quick", "--games", "unseen2p", "--hands", "6", "--styles", "maniac"]
    assert unseen_games.main([*argv, "--workers", "1", "--out", str(out)]) == 0
    table = capsys.readouterr().out
    report = json.loads(out.read_text())
    (entry,) = report["games"]
    assert entry["unit"] == "milli-big-blinds per hand" and "milli-big-blinds" in table
    (row,) = entry["rows"]
    assert (entry["game"], row["opponents"], row["duplicates"]) == ("unseen2p", "maniac", 2)
    assert "| maniac | 2 |" in table
    # the cfr column: the game's solved strategy in MBBR's seat on the same cards, in the game's
    # unit (milli-big-blinds: play_duplicate's)
    game = unseen_games.unseen_game("unseen2p")
    factories = [
        fixed_strategy_factory("cfr", solved_profile(game)),
        fixed_strategy_factory("maniac", fixed_profile(game, "maniac")),
    ]
    cfr = [play_duplicate(game, factories, hands=6, seed=29, duplicate=d)[0] for d in (0, 1)]
    np.testing.assert_allclose(row["per_duplicate_cfr"], cfr)
    difference = np.subtract(row["per_duplicate_mbbr"], row["per_duplicate_cfr"])
    assert row["difference"]["mean"] == pytest.approx(difference.mean())
    assert row["gap"] == pytest.approx(row["ceiling"] - row["cfr_exact"]) and row["gap"] > 0
    assert row["share"] == pytest.approx(difference.mean() / row["gap"])
    assert entry["mean_share"] == pytest.approx(row["share"])
