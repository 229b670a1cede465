"""The hand evaluator (``hand_rank``): every seven-card and five-card hand against the known tables,
a brute-force oracle (all five-card subsets, a plain ranking) on random hands of 1-9 cards, and the
reference dealer's payoffs on every hand of its two limit hold'em logs."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.hand_eval import SEVEN_CARD_COUNTS  # the known table, kept once
from oppmodel.clients.acpc.log import hand_payoffs, read_log
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS, read_game_def
from oppmodel.modeling.games.acpc.hand_rank import (
    NUM_CATEGORIES,
    card_index,
    category_counts,
    hand_category,
    hand_strength,
    rank_hands,
)

DATA = Path(__file__).resolve().parent / "data" / "acpc"
GAME_FILES = {"holdem2p": "holdem.limit.2p.reverse_blinds.game", "holdem3p": "holdem.limit.3p.game"}
# Five-card hands per category, high card .. straight flush: the known table.
FIVE_CARD_COUNTS = [1_302_540, 1_098_240, 123_552, 54_912, 10_200, 5_108, 3_744, 624, 40]
# Distinct five-card hands (ties are equal) per category: 7,462 in all.
FIVE_CARD_CLASSES = [1277, 2860, 858, 858, 10, 1277, 156, 156, 10]


def plain_rank(cards: tuple[int, ...]) -> tuple[int, ...]:
    """(category, deciding ranks...) of at most five cards (4 * rank + suit), by the rules as
    written: groups by size then rank, flushes and straights only with five cards."""
    ranks = sorted((c // 4 for c in cards), reverse=True)
    counts = Counter(ranks)
    groups = sorted(counts, key=lambda r: (counts[r], r), reverse=True)
    shape = [*sorted(counts.values(), reverse=True), 0]
    five = len(cards) == 5  # five distinct ranks cannot pair, so these come first
    flush = five and len({c % 4 for c in cards}) == 1
    top = None
    if five and len(counts) == 5 and ranks[0] - ranks[4] == 4:
        top = ranks[0]
    elif five and ranks == [12, 3, 2, 1, 0]:  # the wheel: the ace plays low
        top = 3
    if top is not None:
        return (8 if flush else 4, top)
    if flush:
        return (5, *ranks)
    if shape[0] == 4:
        return (7, *groups)
    if shape[:2] == [3, 2]:
        return (6, *groups)
    if shape[0] == 3:
        return (3, *groups)
    if shape[:2] == [2, 2]:
        return (2, *groups)
    return (1 if shape[0] == 2 else 0, *groups)


def oracle(cards: tuple[int, ...]) -> tuple[int, ...]:
    """The best plain rank over every five-card subset (all the cards when fewer)."""
    return max(plain_rank(sub) for sub in itertools.combinations(cards, min(5, len(cards))))


def test_every_seven_card_hand_is_evaluated_with_the_known_category_counts() -> None:
    counts = category_counts(7)
    assert counts.sum() == 133_784_560
    assert counts.tolist() == SEVEN_CARD_COUNTS


def test_every_five_card_hand_has_the_known_category_and_tie_classes() -> None:
    assert category_counts(5).tolist() == FIVE_CARD_COUNTS
    hands = np.fromiter(
        itertools.combinations(range(52), 5), dtype=np.dtype((np.int64, 5)), count=2_598_960
    )
    values = rank_hands(hands)
    assert np.bincount(hand_category(values), minlength=NUM_CATEGORIES).tolist() == FIVE_CARD_COUNTS
    distinct = np.unique(values)
    assert len(distinct) == 7462
    assert np.bincount(hand_category(distinct)).tolist() == FIVE_CARD_CLASSES


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


@settings(max_examples=400)
@given(st.permutations(range(52)), st.integers(1, 9))
def test_two_hands_compare_as_the_brute_force_oracle_compares_them(
    deck: list[int], size: int
) -> None:
    a, b = tuple(deck[:size]), tuple(deck[size : 2 * size])
    ours = rank_hands(np.array([a, b]))
    truth = oracle(a), oracle(b)
    assert [hand_category(int(v)) for v in ours] == [t[0] for t in truth]
    assert _sign(int(ours[0] - ours[1])) == _sign((truth[0] > truth[1]) - (truth[0] < truth[1]))


@settings(max_examples=300)
@given(st.permutations(range(52)), st.integers(2, 4))
def test_a_hold_em_showdown_orders_and_splits_as_the_oracle(deck: list[int], players: int) -> None:
    board = tuple(deck[2 * players : 2 * players + 5])
    hands = [(*deck[2 * p : 2 * p + 2], *board) for p in range(players)]
    ours = rank_hands(np.array(hands))
    truth = [oracle(h) for h in hands]
    assert [p for p in range(players) if ours[p] == ours.max()] == [
        p for p in range(players) if truth[p] == max(truth)
    ]


def test_a_thousand_seeded_hands_sort_as_the_oracle_sorts_them_ties_included() -> None:
    rng = np.random.default_rng(34)
    hands = np.argsort(rng.random((1000, 52)), axis=1)[:, :7]
    ours = rank_hands(hands)
    truth = [oracle(tuple(h)) for h in hands.tolist()]
    order = sorted(range(len(hands)), key=truth.__getitem__)
    for i, j in itertools.pairwise(order):
        assert (ours[i] < ours[j]) if truth[i] < truth[j] else (ours[i] == ours[j])


def test_card_text_and_indices_are_the_same_hand() -> None:
    names = [r + s for r in RANK_CHARS for s in SUIT_CHARS]
    assert [card_index(n) for n in names] == list(range(52))
    rng = np.random.default_rng(7)
    hands = np.argsort(rng.random((200, 52)), axis=1)[:, :7]
    assert [hand_strength([names[c] for c in h]) for h in hands] == rank_hands(hands).tolist()


@pytest.mark.parametrize(
    ("hands", "message"),
    [
        ([[0, 1, 1]], r"row 0 \[0, 1, 1\] needs distinct cards in 0..51"),
        ([[0, 1], [51, 52]], r"row 1 \[51, 52\] needs distinct cards"),
        ([[-1, 3]], "row 0"),
        ([0, 1, 2], r"need an \(n, k >= 1\) integer array"),
        ([[0.0, 1.0]], "integer array"),
    ],
)
def test_bad_hands_are_refused_naming_the_row(hands: list, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        rank_hands(np.array(hands))
    assert caught.value.field == "hands"


@pytest.mark.parametrize("log", ["holdem2p", "holdem3p"])
def test_showdown_payoffs_equal_every_payoff_of_the_reference_dealers_hold_em_log(log: str) -> None:
    game = read_game_def(DATA / GAME_FILES[log])
    hands = read_log(DATA / f"{log}-seed42-example-players.log").hands
    assert len(hands) == 3000
    showdowns, splits = 0, 0
    for hand in hands:
        assert hand_payoffs(game, hand) == hand.payoffs, f"hand {hand.hand}"
        if HandState.from_betting(game, hand.betting).showdown():
            showdowns += 1
            splits += hand.payoffs.count(max(hand.payoffs)) > 1
    assert showdowns > 500 and splits > 10  # the logs exercise showdowns and split pots
