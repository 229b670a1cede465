"""The exact preflop E[HS^2] table of the hold'em card abstraction: the board classes it sums
over, each board's strengths against the direct count, the known orderings, and its agreement
with a sampled estimate."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from oppmodel.modeling.games.acpc import _abstraction_kernels as kernels
from oppmodel.modeling.games.acpc._hand_rank_kernels import CARD_BITS
from oppmodel.modeling.games.acpc.abstraction import preflop_cell, preflop_table, strength
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS
from oppmodel.modeling.games.acpc.hand_rank import card_index


def _name(cell: tuple[int, int]) -> str:
    high, low = max(cell), min(cell)
    kind = "" if high == low else "s" if cell[0] > cell[1] else "o"
    return RANK_CHARS[high] + RANK_CHARS[low] + kind


@pytest.mark.parametrize(("size", "classes"), [(3, 1_755), (5, 134_459)])
def test_boards_up_to_suit_names_are_the_known_classes_and_weigh_every_board(
    size: int, classes: int
) -> None:
    boards, weights = kernels.canonical_boards(size)
    assert len(boards) == classes  # 1,755 strategically distinct flops; 134,459 5-card sets
    assert weights.sum() == math.comb(52, size)
    assert set(weights.tolist()) <= {24, 12, 6, 4}


def test_every_hands_strength_on_a_board_equals_the_count_against_each_opponent() -> None:
    rng = np.random.default_rng(5)
    for board_cards in ([48, 44, 40, 36, 0], *(rng.permutation(52)[:5] for _ in range(3))):
        board = int(np.bitwise_or.reduce(CARD_BITS[list(board_cards)]))
        free = [c for c in range(52) if c not in board_cards]
        pairs = list(itertools.combinations(free, 2))
        hs = np.empty(len(pairs))
        first, second = (np.array(x, dtype=np.int64) for x in zip(*pairs, strict=True))
        kernels.board_strengths(board, first, second, 990, hs)
        direct = [kernels.river_strength(CARD_BITS[a] | CARD_BITS[b], board) for a, b in pairs]
        assert hs.tolist() == pytest.approx(direct, abs=1e-15)


def test_the_radix_sort_of_a_boards_hands_is_a_stable_sort_by_value() -> None:
    # values over the evaluator's whole range (a straight flush's category is the top bits),
    # many ties and digits that are the same in every key (a pass that moves nothing)
    rng = np.random.default_rng(11)
    top = 1 << kernels.VALUE_BITS
    for values in (
        rng.integers(0, top, 1081),
        rng.integers(0, 16, 1081) << 26,
        rng.integers(top - 5, top, 900),
        np.zeros(3, dtype=np.int64),
    ):
        keys = (values << kernels.INDEX_BITS) | np.arange(values.size)
        got = kernels._sorted_by_value(keys.astype(np.int64))
        assert (got & kernels.INDEX_MASK).tolist() == np.argsort(values, kind="stable").tolist()


def test_the_table_orders_the_classes_as_known_pairs_first_and_seven_deuce_near_last() -> None:
    table = preflop_table()
    order = sorted(np.ndindex(13, 13), key=lambda cell: -table[cell])
    names = [_name(cell) for cell in order]
    assert names[:6] == ["AA", "KK", "QQ", "JJ", "TT", "99"]
    assert names.index("AKs") < names.index("AKo") < names.index("22") + 20
    assert names.index("72o") >= 160 and names[-1] == "32o"
    assert all(table[a, a] > table[a, a - 1] for a in range(1, 13))  # a pair beats its suited
    assert np.all((table > 0.15) & (table < 0.75))


def test_preflop_strength_is_the_tables_whatever_the_rollouts_and_seed() -> None:
    table = preflop_table()
    for hole in (["Ah", "As"], ["7c", "2d"], ["9s", "8s"], ["Kd", "Qc"]):
        cell = preflop_cell(card_index(hole[0]), card_index(hole[1]))
        values = {strength(hole, [], rollouts=r, seed=s) for r in (0, 100) for s in (1, 2)}
        assert values == {table[cell]}


def test_the_table_agrees_with_a_sampled_estimate_over_random_boards() -> None:
    table = preflop_table()
    rng = np.random.default_rng(17)
    boards = np.array(
        [np.bitwise_or.reduce(CARD_BITS[rng.permutation(52)[:5]]) for _ in range(4000)]
    )
    sums, counts = np.zeros((52, 52)), np.zeros((52, 52))
    kernels.board_sums(boards, np.ones(boards.size), sums, counts)
    for hole in (["Ah", "As"], ["7c", "2d"], ["9s", "8s"]):
        a, b = sorted(card_index(c) for c in hole)
        estimate = sums[a, b] / counts[a, b]  # HS^2 over the boards that miss the hole
        # HS^2 spreads by at most 0.5 around its mean: 5 standard errors of ~3,700 boards
        assert abs(estimate - table[preflop_cell(a, b)]) < 5 * 0.5 / math.sqrt(counts[a, b])
