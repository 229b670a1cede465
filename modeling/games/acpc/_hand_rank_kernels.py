"""Numba kernels of the poker hand evaluator (``hand_rank.py``): a bitmask evaluator.

A set of cards is one int64 with 16 bits per suit (``c d h s`` from the low end) and bit ``rank``
(0..12 for 2..A) set in its suit's field, so a hand is the OR of its cards' bits and enumerations
extend a hand by one OR. Each suit's 13-bit field gives the flushes; their OR, AND and pairwise
ANDs give the ranks held at least once, twice, three and four times, from which the category and
the ranks that decide inside it are read through three 8,192-entry tables (bit count, highest bit,
top of the best straight), 24 KiB that stay in the L1 cache. The value is one int64:
``category << 26 | primary << 13 | kickers``, where ``primary`` is the rank of the quads, trips or
pair (the two pairs' ranks as a mask) and ``kickers`` the mask of the kept kickers' ranks; two
masks of equally many ranks compare as integers exactly as their ranks compare from the top, so
comparing values compares hands. Only the best five cards count, so a hand's value is that of its
best five alone. The same code serves any number of cards (Kuhn's one to hold'em's seven and
beyond) with nothing to build but the tables (numpy, milliseconds at import).
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.kernel_cache import njit

NUM_RANKS = 13
NUM_SUITS = 4
SUIT_BITS = 16
CATEGORY_SHIFT = 26
PRIMARY_SHIFT = 13
NUM_CATEGORIES = 9
HIGH_CARD, PAIR, TWO_PAIR, TRIPS, STRAIGHT, FLUSH, FULL_HOUSE, QUADS, STRAIGHT_FLUSH = range(9)
_RANK_FIELD = (1 << NUM_RANKS) - 1
_WHEEL = (1 << (NUM_RANKS - 1)) | 0b1111  # A 5 4 3 2: a straight whose top is the 5 (rank 3)


def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bit count, highest set bit (-1 for none) and best straight's top rank (-1 for none) of
    every 13-bit rank mask."""
    masks = np.arange(1 << NUM_RANKS)
    bits = (masks[:, None] >> np.arange(NUM_RANKS)) & 1
    popcount = bits.sum(axis=1).astype(np.int8)
    highest = np.where(masks > 0, np.floor(np.log2(np.maximum(masks, 1))), -1).astype(np.int8)
    straight = np.full(1 << NUM_RANKS, -1, dtype=np.int8)
    for top in range(NUM_RANKS - 1, 3, -1):  # the highest straight first
        window = 0b11111 << (top - 4)
        straight[((masks & window) == window) & (straight < 0)] = top
    straight[((masks & _WHEEL) == _WHEEL) & (straight < 0)] = 3
    return popcount, highest, straight


POPCOUNT, HIGHEST, STRAIGHT_TOP = _tables()
CARD_BITS = np.array(
    [1 << (SUIT_BITS * (c % NUM_SUITS) + c // NUM_SUITS) for c in range(NUM_RANKS * NUM_SUITS)],
    dtype=np.int64,
)  # card index 4 * rank + suit (the reference's makeCard) -> its bit


@njit(cache=True, inline="always")
def _top(mask, keep):
    """``mask`` without its lowest bits beyond the ``keep`` highest."""
    while POPCOUNT[mask] > keep:
        mask &= mask - 1
    return mask


@njit(cache=True, inline="always")
def _value(category, primary, kickers):
    return (category << CATEGORY_SHIFT) | (primary << PRIMARY_SHIFT) | kickers


@njit(cache=True)
def rank_cardset(cards):
    """The value of the best five-card hand in the cardset ``cards`` (any number of cards)."""
    s0 = cards & _RANK_FIELD
    s1 = (cards >> SUIT_BITS) & _RANK_FIELD
    s2 = (cards >> 2 * SUIT_BITS) & _RANK_FIELD
    s3 = (cards >> 3 * SUIT_BITS) & _RANK_FIELD
    flush = -1
    if max(POPCOUNT[s0], POPCOUNT[s1], POPCOUNT[s2], POPCOUNT[s3]) >= 5:  # rare: test once
        straight_flush = -1
        for suit in (s0, s1, s2, s3):  # more than 9 cards can hold two flushes
            if POPCOUNT[suit] >= 5:
                straight_flush = max(straight_flush, int(STRAIGHT_TOP[suit]))
                flush = max(flush, _top(suit, 5))
        if straight_flush >= 0:
            return _value(STRAIGHT_FLUSH, 0, straight_flush)
    ranks = s0 | s1 | s2 | s3
    four = s0 & s1 & s2 & s3
    if four:
        quad = np.int64(HIGHEST[four])
        return _value(QUADS, quad, _top(ranks & ~(1 << quad), 1))
    three = (s0 & s1 & (s2 | s3)) | (s2 & s3 & (s0 | s1))
    two = (s0 & (s1 | s2 | s3)) | (s1 & (s2 | s3)) | (s2 & s3)
    trips = np.int64(HIGHEST[three])
    if three and two & ~(1 << trips):
        return _value(FULL_HOUSE, trips, np.int64(HIGHEST[two & ~(1 << trips)]))
    if flush >= 0:
        return _value(FLUSH, 0, flush)
    straight = np.int64(STRAIGHT_TOP[ranks])
    if straight >= 0:
        return _value(STRAIGHT, 0, straight)
    if three:
        return _value(TRIPS, trips, _top(ranks & ~(1 << trips), 2))
    if POPCOUNT[two] >= 2:
        pairs = _top(two, 2)
        return _value(TWO_PAIR, pairs, _top(ranks & ~pairs, 1))
    if two:
        return _value(PAIR, np.int64(HIGHEST[two]), _top(ranks & ~two, 3))
    return _value(HIGH_CARD, 0, _top(ranks, 5))


@njit(cache=True)
def rank_hands(hands, out):
    """``out[i]``: the value of row i of ``hands`` (card indices 4 * rank + suit), or -1 where the
    row holds a card outside 0..51 or the same card twice."""
    for i in range(hands.shape[0]):
        cards = np.int64(0)
        for c in hands[i]:
            if c < 0 or c >= CARD_BITS.size or cards & CARD_BITS[c]:
                cards = np.int64(-1)
                break
            cards |= CARD_BITS[c]
        out[i] = -1 if cards < 0 else rank_cardset(cards)


@njit(cache=True)
def count_categories(deck, size, counts):
    """Add to ``counts[category]`` every ``size``-card hand (``size`` >= 2) of the cardsets in
    ``deck`` (one card's bit each), in lexicographic order; the last card is the inner loop."""
    n = deck.size
    idx = np.arange(size - 1)  # the first size - 1 cards' positions
    while True:
        head = np.int64(0)
        for i in idx:
            head |= deck[i]
        for j in range(idx[size - 2] + 1, n):
            counts[rank_cardset(head | deck[j]) >> CATEGORY_SHIFT] += 1
        if not next_combination(idx, n - 1):
            return


@njit(cache=True, inline="always")
def next_combination(idx, n):
    """Advance ``idx`` (increasing positions in 0..n-1) to the next combination in
    lexicographic order; False (``idx`` unchanged) after the last one."""
    k = idx.size
    i = k - 1
    while i >= 0 and idx[i] == n - k + i:
        i -= 1
    if i < 0:
        return False
    idx[i] += 1
    for t in range(i + 1, k):
        idx[t] = idx[t - 1] + 1
    return True
