"""Numba kernels of the hold'em card abstraction (``abstraction.py``): hand strength against one
random opponent hand on a complete board, and its square's expectation over the board cards to come.

Cards are cardsets (int64, the evaluator's layout in ``_hand_rank_kernels.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from oppmodel.modeling.games.acpc._hand_rank_kernels import (
    CARD_BITS,
    CATEGORY_SHIFT,
    NUM_CATEGORIES,
    SUIT_BITS,
    next_combination,
    rank_cardset,
)

RANK_FIELD = (1 << 13) - 1  # one suit's ranks in a cardset
INDEX_BITS = 11  # a hand's index in a board's sort key (a complete board leaves 1,081 hands)
INDEX_MASK = (1 << INDEX_BITS) - 1
VALUE_BITS = CATEGORY_SHIFT + (NUM_CATEGORIES - 1).bit_length()  # an evaluator value's bits
DIGIT_BITS = 10  # a radix pass's digit: three passes over a value
DIGIT_MASK = (1 << DIGIT_BITS) - 1


@njit(cache=True)
def river_strength(hole, board):
    """HS: the share of the opponent's two-card hands (from the cards outside ``hole | board``)
    that ``hole`` beats on ``board``, ties counting one half."""
    ours = rank_cardset(hole | board)
    known = hole | board
    won, total = 0.0, 0
    for i in range(CARD_BITS.size):
        if known & CARD_BITS[i]:
            continue
        first = board | CARD_BITS[i]
        for j in range(i + 1, CARD_BITS.size):
            if known & CARD_BITS[j]:
                continue
            theirs = rank_cardset(first | CARD_BITS[j])
            won += 1.0 if ours > theirs else 0.5 if ours == theirs else 0.0
            total += 1
    return won / total


@njit(cache=True)
def canonical_boards(size):
    """The boards of ``size`` cards up to suit relabelling: each board whose four 13-bit suit
    fields are non-increasing (one per class), with its class's size (4! over the product of the
    factorials of equal fields' counts)."""
    out_b, out_w = [], []
    idx = np.arange(size)
    while True:
        board = np.int64(0)
        for i in idx:
            board |= CARD_BITS[i]
        fields = [(board >> (SUIT_BITS * s)) & RANK_FIELD for s in range(4)]
        if fields[0] >= fields[1] >= fields[2] >= fields[3]:
            orbit, run = 24, 1
            for s in range(1, 4):
                run = run + 1 if fields[s] == fields[s - 1] else 1
                orbit //= run  # divides by the factorial of each run of equal fields
            out_b.append(board)
            out_w.append(orbit)
        if not next_combination(idx, CARD_BITS.size):
            break
    return np.array(out_b, dtype=np.int64), np.array(out_w, dtype=np.int64)


@njit(cache=True)
def board_strengths(board, first, second, opponents, hs):
    """HS (``river_strength``) of every two-card hand on a complete ``board`` at once: hand k is
    the cards ``first[k] < second[k]`` (indices, every pair of the unseen cards; at most
    ``1 << INDEX_BITS``), ``hs[k]`` its value, ``opponents`` the hands each one meets (those of
    the other unseen cards). One evaluation per hand, then one pass over the hands sorted by
    value counts, per hand, the hands below it and tied with it, less those sharing one of its
    cards (inclusion-exclusion: only the hand itself shares both)."""
    hands = first.size
    if hands > 1 << INDEX_BITS:
        raise ValueError("board_strengths: more hands than INDEX_BITS can number")
    keys = np.empty(hands, dtype=np.int64)  # value << INDEX_BITS | k: one sort moves both
    for k in range(hands):
        keys[k] = rank_cardset(board | CARD_BITS[first[k]] | CARD_BITS[second[k]]) << INDEX_BITS
        keys[k] |= k
    keys = _sorted_by_value(keys)
    below_card = np.zeros(CARD_BITS.size, dtype=np.int64)
    tied_card = np.zeros(CARD_BITS.size, dtype=np.int64)
    below = 0
    start = 0
    while start < hands:
        end = start
        value = keys[start] >> INDEX_BITS
        while end < hands and keys[end] >> INDEX_BITS == value:
            k = keys[end] & INDEX_MASK
            tied_card[first[k]] += 1
            tied_card[second[k]] += 1
            end += 1
        tied = end - start
        for t in range(start, end):
            k = keys[t] & INDEX_MASK
            a, b = first[k], second[k]
            won = below - below_card[a] - below_card[b]
            ties = tied - tied_card[a] - tied_card[b] + 1
            hs[k] = (won + 0.5 * ties) / opponents
        for t in range(start, end):
            k = keys[t] & INDEX_MASK
            a, b = first[k], second[k]
            below_card[a] += tied_card[a]
            below_card[b] += tied_card[b]
            tied_card[a] = 0
            tied_card[b] = 0
        below += tied
        start = end


@njit(cache=True)
def _sorted_by_value(keys):
    """``keys`` (``value << INDEX_BITS | index``, values below ``1 << VALUE_BITS``, the indices
    increasing) sorted by value, ties in index order: a least-significant-digit radix sort of
    the value's bits, ``DIGIT_BITS`` a pass (numba's argsort of a board's 1,081 hands took 3.5
    times as long as evaluating them); a pass whose digit is the same in every key moves
    nothing."""
    out = np.empty_like(keys)
    count = np.empty((1 << DIGIT_BITS) + 1, dtype=np.int64)
    for shift in range(INDEX_BITS, INDEX_BITS + VALUE_BITS, DIGIT_BITS):
        count[:] = 0
        for key in keys:
            count[((key >> shift) & DIGIT_MASK) + 1] += 1
        if count.max() == keys.size:
            continue
        for d in range(1 << DIGIT_BITS):
            count[d + 1] += count[d]
        for key in keys:
            d = (key >> shift) & DIGIT_MASK
            out[count[d]] = key
            count[d] += 1
        keys, out = out, keys
    return keys


@njit(cache=True)
def board_sums(boards, weights, sums, counts):
    """Add, for every two-card hand (``sums[a, b]``, card indices a < b) of the cards outside
    each complete board of ``boards`` (cardsets), HS^2 on that board times the board's weight,
    and the weight to ``counts[a, b]``: the sums whose ratio is E[HS^2] over the boards. Every
    hand of a board is valued in one ``board_strengths`` call, so a whole range costs what one
    hand's expectation would."""
    n = CARD_BITS.size
    free = np.empty(n, dtype=np.int64)
    first = np.empty(n * n, dtype=np.int64)
    second = np.empty(n * n, dtype=np.int64)
    hs = np.empty(n * n)
    for i in range(boards.size):
        board = boards[i]
        m = 0
        for c in range(n):
            if not board & CARD_BITS[c]:
                free[m] = c
                m += 1
        k = 0
        for x in range(m):
            for y in range(x + 1, m):
                first[k] = free[x]
                second[k] = free[y]
                k += 1
        board_strengths(board, first[:k], second[:k], (m - 2) * (m - 3) // 2, hs[:k])
        for t in range(k):
            sums[first[t], second[t]] += weights[i] * hs[t] * hs[t]
            counts[first[t], second[t]] += weights[i]
