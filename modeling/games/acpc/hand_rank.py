"""Poker hand strength as the ACPC reference dealer scores a showdown: the one evaluator of every
ACPC game's hands (Kuhn, Leduc, hold'em, any game file's deck and card counts).

A player's hand is its hole cards plus every board card dealt, and its strength is the best poker
hand that can be made from those cards (at most five of them count): straight flush, four of a
kind, full house, flush, straight, three of a kind, two pair, one pair, high card; within a
category the ranks that make the hand and then the highest remaining cards (kickers) decide, up
to five cards in all. Suits never order hands. Flushes and straights need five cards (the ace
also plays low in 5-4-3-2-A), so a game whose players hold four cards or fewer only ever sees
quads, trips, two pairs, pairs and high cards (Leduc: a pair with the board, else the higher
card). Players whose strengths are equal split the pot.

Cards are written as in ACPC files: rank ``23456789TJQKA`` then suit ``cdhs``; as integers they
are the reference's ``4 * rank + suit`` (2c = 0, As = 51). A strength is an int: greater is
better, equal is a split, and :func:`hand_category` gives its category. The values come from
bitmask kernels (``_hand_rank_kernels.py``), which evaluate any number of cards with three small
tables and no precomputed hand table, so one evaluator serves every game. Reference: the dealer's
``rankCardset`` in project_acpc_server 1.0.42.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc import _hand_rank_kernels as kernels
from oppmodel.modeling.games.acpc._hand_rank_kernels import (
    CARD_BITS,
    CATEGORY_SHIFT,
    FLUSH,
    FULL_HOUSE,
    HIGH_CARD,
    NUM_CATEGORIES,
    NUM_SUITS,
    PAIR,
    QUADS,
    STRAIGHT,
    STRAIGHT_FLUSH,
    TRIPS,
    TWO_PAIR,
)
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS

__all__ = [
    "FLUSH",
    "FULL_HOUSE",
    "HIGH_CARD",
    "NUM_CATEGORIES",
    "PAIR",
    "QUADS",
    "STRAIGHT",
    "STRAIGHT_FLUSH",
    "TRIPS",
    "TWO_PAIR",
    "card_index",
    "card_rank_suit",
    "category_counts",
    "hand_category",
    "hand_strength",
    "rank_hands",
]
# card text -> its bit in a cardset (the kernels' layout)
_CARD_BIT = {
    rank + suit: int(CARD_BITS[NUM_SUITS * r + s])
    for r, rank in enumerate(RANK_CHARS)
    for s, suit in enumerate(SUIT_CHARS)
}


def card_rank_suit(card: str) -> tuple[int, int]:
    """(rank 0..12 for 2..A, suit 0..3 for c d h s) of a two-character card."""
    if (
        not isinstance(card, str)
        or len(card) != 2
        or card[0] not in RANK_CHARS
        or card[1] not in SUIT_CHARS
    ):
        raise _bad_card(card)
    return RANK_CHARS.index(card[0]), SUIT_CHARS.index(card[1])


def _bad_card(card: object) -> InvalidArgumentError:
    return InvalidArgumentError("card", f"bad card {card!r} (rank {RANK_CHARS}, suit cdhs)")


def card_index(card: str) -> int:
    """The card's integer, ``4 * rank + suit`` (2c = 0, 2d = 1, ..., As = 51)."""
    rank, suit = card_rank_suit(card)
    return NUM_SUITS * rank + suit


def hand_strength(cards: Sequence[str]) -> int:
    """Strength of the best hand in ``cards`` (distinct cards, any number from 1 on)."""
    held = 0
    for card in cards:
        bit = _CARD_BIT.get(card) if isinstance(card, str) else None
        if bit is None:
            raise _bad_card(card)
        if held & bit:
            held = 0
            break
        held |= bit
    if not held:
        raise InvalidArgumentError("cards", f"need distinct cards, got {list(cards)}")
    return int(kernels.rank_cardset(held))


def hand_category(strength: int) -> int:
    """The category of a strength (``HIGH_CARD`` 0 .. ``STRAIGHT_FLUSH`` 8)."""
    return strength >> CATEGORY_SHIFT


def rank_hands(hands: np.ndarray) -> np.ndarray:
    """Strengths (int64) of the rows of ``hands``, an (n, k) integer array of card indices; one
    call evaluates them all in a kernel. InvalidArgumentError names the first bad row."""
    hands = np.asarray(hands)
    if hands.ndim != 2 or hands.shape[1] == 0 or not np.issubdtype(hands.dtype, np.integer):
        raise InvalidArgumentError("hands", f"need an (n, k >= 1) integer array, got {hands.shape}")
    out = np.empty(len(hands), dtype=np.int64)
    kernels.rank_hands(np.ascontiguousarray(hands, dtype=np.int64), out)
    bad = np.flatnonzero(out < 0)
    if bad.size:
        raise InvalidArgumentError(
            "hands", f"row {bad[0]} {hands[bad[0]].tolist()} needs distinct cards in 0..51"
        )
    return out


def category_counts(size: int) -> np.ndarray:
    """How many ``size``-card hands of the 52-card deck fall in each category (index = category):
    every hand evaluated, in one kernel call (all 133,784,560 for seven cards)."""
    if not 2 <= size <= 7:
        raise InvalidArgumentError("size", f"must be in 2..7, got {size}")
    counts = np.zeros(NUM_CATEGORIES, dtype=np.int64)
    kernels.count_categories(CARD_BITS, size, counts)
    return counts
