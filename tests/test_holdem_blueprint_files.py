"""A blueprint's files: the binary cache derived from its JSON gives the same strategy as the
JSON, and the board tables read beside it (flops, turns) give the buckets the card abstraction
computes."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from oppmodel.modeling.errors import InvalidStrategyError
from oppmodel.modeling.games.acpc import flop_table
from oppmodel.modeling.games.acpc.abstraction import (
    AbstractionConfig,
    CardAbstraction,
    canonical_board,
)
from oppmodel.modeling.games.acpc.bundled import GAMES_FOLDER, HOLDEM_BLUEPRINTS
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.solved import CACHE_ENV
from oppmodel.modeling.holdem import blueprint as blueprint_module
from oppmodel.modeling.holdem.blueprint import Blueprint
from oppmodel.modeling.holdem.policy import Spot, live_holes
from oppmodel.modeling.holdem.styles import bundled_blueprint

BUNDLED_2P = GAMES_FOLDER / HOLDEM_BLUEPRINTS["holdem2p"]


def test_the_binary_cache_gives_the_files_strategy_row_for_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    file = tmp_path / "bp.cfr.json.gz"
    shutil.copy(BUNDLED_2P, file)  # no flop table beside the copy: every board is bucketed
    parsed = Blueprint.from_file(file)
    (cached,) = (tmp_path / "cache" / "blueprints").glob("*.npz")
    read = Blueprint.from_file(file)
    expected = json.loads(gzip.decompress(file.read_bytes()))["positions"]
    assert parsed.positions == expected and read.positions == expected
    assert (read.unvisited, read.config) == (parsed.unvisited, parsed.config)
    assert all(
        np.array_equal(a, b) for a, b in zip(read.cards.cuts, parsed.cards.cuts, strict=True)
    )
    assert read.flops == ()
    spot = Spot.of(read_game_def("holdem2p"), ["As", "9c", "4d"], "cc/")
    holes = live_holes(spot.board)
    assert np.array_equal(read.probabilities(spot, holes), parsed.probabilities(spot, holes))

    cached.write_bytes(b"not an npz")  # unreadable: the JSON is read again, the cache rewritten
    assert Blueprint.from_file(file).positions == expected
    assert Blueprint.from_file(file).positions == expected
    assert np.load(cached).files  # a readable cache again


@pytest.mark.parametrize("short", sorted(HOLDEM_BLUEPRINTS))
def test_the_bundled_flop_tables_answer_what_the_abstraction_computes(short: str) -> None:
    blueprint = bundled_blueprint(short)
    flops = blueprint.flops[0]  # read beside the bundled file
    assert (flops.round, len(flops.boards)) == (1, 1_755)  # every flop up to suit relabelling
    assert np.array_equal(flops.boards, flop_table.canonical_boards(flop_table.FLOP))
    rng = np.random.default_rng(7)
    boards = [(48, 49, 50), (0, 4, 8), (51, 47, 43)]  # trips, a monotone and a rainbow flop
    boards += [tuple(int(c) for c in rng.choice(52, 3, replace=False)) for _ in range(5)]
    for board in boards:
        read = flops.range_buckets(board)
        assert read is not None
        assert np.array_equal(read, blueprint.cards.range_buckets(board)), board


def test_the_bundled_3_player_turn_table_answers_what_the_abstraction_computes() -> None:
    blueprint = bundled_blueprint("holdem3p")  # its decisions bucket a dozen turns each
    turns = blueprint.flops[1]
    assert (turns.round, len(turns.boards)) == (2, 16_432)  # every turn up to relabelling
    assert turns.range_buckets((48, 49, 50)) is None  # a flop: not the table's round
    rng = np.random.default_rng(8)
    boards = [(48, 49, 50, 51), (0, 4, 8, 12), (51, 47, 43, 2)]  # quads, monotone, rainbow
    boards += [tuple(int(c) for c in rng.choice(52, 4, replace=False)) for _ in range(5)]
    for board in boards:
        read = turns.range_buckets(board)
        assert read is not None
        assert np.array_equal(read, blueprint.cards.range_buckets(board)), board
    assert len(bundled_blueprint("holdem2p").flops) == 1  # no turn table shipped


def test_the_kept_range_buckets_are_each_abstractions_own_and_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(blueprint_module, "BUCKET_CACHE", 3)
    monkeypatch.setattr(blueprint_module, "_BUCKETS", OrderedDict())  # not the other tests' boards
    cards = bundled_blueprint("holdem2p").cards
    other = CardAbstraction(cards.config, tuple(cut + 0.05 for cut in cards.cuts))
    rng = np.random.default_rng(3)
    boards = [tuple(int(c) for c in rng.choice(52, 4, replace=False)) for _ in range(4)]
    differ = 0
    for _ in range(2):  # again: some kept, some dropped (3 kept of the 8 asked for)
        for board in boards:
            mine = blueprint_module._buckets(cards, (), board)
            theirs = blueprint_module._buckets(other, (), board)
            assert np.array_equal(mine, cards.range_buckets(board))
            assert np.array_equal(theirs, other.range_buckets(board))
            assert not mine.flags.writeable and not theirs.flags.writeable
            assert np.array_equal(blueprint_module._buckets(cards, (), board), mine)
            differ += not np.array_equal(mine, theirs)
            assert len(blueprint_module._BUCKETS) <= 3
    assert differ  # the same boards, other cuts: not one abstraction's buckets for the other


@pytest.mark.parametrize("round_", [flop_table.FLOP, flop_table.TURN])
def test_a_board_table_of_another_abstraction_is_refused(tmp_path: Path, round_: int) -> None:
    config = AbstractionConfig(buckets=(3, 3, 3, 3), samples=50, rollouts=4, seed=1)
    cards = CardAbstraction(config, tuple(np.array([0.2, 0.5]) for _ in range(4)))
    rng = np.random.default_rng(round_)
    drawn = [tuple(rng.choice(52, round_ + 2, replace=False).tolist()) for _ in range(7)]
    *held, absent = sorted({canonical_board(board)[1] for board in drawn})
    boards = np.array(held, dtype=np.int64)
    table = flop_table.build(cards, boards, show_progress=False)
    assert table.round == round_
    assert [table.range_buckets(tuple(f)).tolist() for f in boards.tolist()] == [
        cards.range_buckets(tuple(f)).tolist() for f in boards.tolist()
    ]
    assert table.range_buckets(absent) is None  # a board the table does not hold
    strategy = tmp_path / "bp.cfr.json.gz"
    path = flop_table.path_beside(strategy, round_)
    table.save(path)
    (read,) = flop_table.tables_beside(strategy, cards)
    assert (read.key, read.round) == (table.key, round_)
    cuts = list(cards.cuts)
    cuts[round_] = cuts[round_] + 0.01  # other buckets in the table's round
    with pytest.raises(InvalidStrategyError, match="another card abstraction"):
        flop_table.BoardTable.load(path, CardAbstraction(cards.config, tuple(cuts)))
    cuts = list(cards.cuts)
    cuts[3 - round_] = cuts[3 - round_] + 0.01  # the other round's: the table still reads
    assert flop_table.BoardTable.load(path, CardAbstraction(cards.config, tuple(cuts))).key
