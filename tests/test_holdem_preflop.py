"""The exact preflop E[HS^2] table of the hold'em card abstraction: the board classes it sums
over, each board's strengths against the direct count, the known orderings, and its agreement
with a sampled estimate."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from oppmodel.modeling.games.acpc import _abstraction_kernels as kernels
from oppmodel.modeling.games.acpc._hand_rank_kernels import CARD_BITS, rank_hands
from oppmodel.modeling.games.acpc.abstraction import (
    canonical_board,
    preflop_cell,
    preflop_table,
    strength,
)
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
    boards = [
        [48, 44, 40, 36, 0],  # a flush on the board
        [1, 5, 9, 13, 30],  # four of a suit: a flush with one card of it
        [0, 4, 8, 13, 22],  # three of a suit: a flush with two
        [0, 1, 2, 20, 41],  # trips on the board
        *(rng.permutation(52)[:5] for _ in range(3)),
    ]
    for board_cards in boards:
        board = int(np.bitwise_or.reduce(CARD_BITS[list(board_cards)]))
        free = [c for c in range(52) if c not in board_cards]
        pairs = list(itertools.combinations(free, 2))
        hs = np.full((52, 52), np.nan)
        kernels.board_strengths(board, hs)
        direct = [kernels.river_strength(CARD_BITS[a] | CARD_BITS[b], board) for a, b in pairs]
        assert [hs[a, b] for a, b in pairs] == pytest.approx(direct, abs=1e-15)
        assert np.isnan(hs[np.tril_indices(52)]).all()  # only the hands' cells are written


def test_the_sort_key_orders_every_class_of_hand_as_its_value() -> None:
    # every class of five-card hand once (7,462): the multisets of ranks, suits spread so that
    # none makes a flush, and the five distinct ranks of each flush
    hands = [
        [4 * rank + j % 4 for j, rank in enumerate(ranks)]
        for ranks in itertools.combinations_with_replacement(range(13), 5)
        if max(ranks.count(r) for r in ranks) <= 4
    ]
    hands += [[4 * rank for rank in ranks] for ranks in itertools.combinations(range(13), 5)]
    values = np.empty(len(hands), dtype=np.int64)
    rank_hands(np.array(hands, dtype=np.int64), values)
    assert len(set(values.tolist())) == len(hands) == 7_462
    keys = [kernels.rank_key(v) for v in np.sort(values).tolist()]
    assert all(a < b for a, b in itertools.pairwise(keys))
    assert keys[0] >= 0 and keys[-1] < 1 << kernels.KEY_BITS


def test_a_boards_canonical_form_is_its_least_relabelling_and_the_least_permutation() -> None:
    rng = np.random.default_rng(13)
    boards = [(), (0, 1, 2), (0, 4, 8), (48, 49, 50, 51)]
    boards += [tuple(rng.permutation(52)[: 3 + k % 3].tolist()) for k in range(600)]
    for board in boards:
        least = min(  # every relabelling of the suits, as (sorted board, permutation)
            (tuple(sorted(c - c % 4 + p[c % 4] for c in board)), p)
            for p in itertools.permutations(range(4))
        )
        relabel, canonical = canonical_board(board)
        assert canonical == least[0]
        assert relabel.tolist() == [c - c % 4 + least[1][c % 4] for c in range(52)]


def test_the_radix_sort_of_a_boards_hands_is_a_stable_sort_by_key() -> None:
    # keys over the whole range (a straight flush's are the top ones), many ties, and digits
    # that are the same in every key
    rng = np.random.default_rng(11)
    top = 1 << kernels.KEY_BITS
    for values in (
        rng.integers(0, top, 1081),
        rng.integers(0, 16, 1081) << 7,
        rng.integers(top - 5, top, 900),
        np.zeros(3, dtype=np.int64),
    ):
        keys = (values << kernels.PAIR_BITS) | np.arange(values.size)
        got = kernels._sorted_by_key(keys.astype(np.int64))
        hands = (got & ((1 << kernels.PAIR_BITS) - 1)).tolist()
        assert hands == np.argsort(values, kind="stable").tolist()


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
