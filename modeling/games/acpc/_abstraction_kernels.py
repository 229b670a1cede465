"""Numba kernels of the hold'em card abstraction (``abstraction.py``): hand strength against one
random opponent hand on a complete board, and its square's expectation over the board cards to come.

Cards are cardsets (int64, the evaluator's layout in ``_hand_rank_kernels.py``).
"""

from __future__ import annotations

import math

import numpy as np

from oppmodel.modeling.games.acpc._hand_rank_kernels import (
    CARD_BITS,
    CATEGORY_SHIFT,
    NUM_RANKS,
    NUM_SUITS,
    POPCOUNT,
    PRIMARY_SHIFT,
    SUIT_BITS,
    next_combination,
    rank_cardset,
)
from oppmodel.modeling.kernel_cache import njit

RANK_FIELD = (1 << 13) - 1  # one suit's ranks in a cardset
CARD_FIELD = 6  # a card index's bits in a board's sort key, which ends with the hand's two
CARD_MASK = (1 << CARD_FIELD) - 1
PAIR_BITS = 2 * CARD_FIELD
# A seven-card value's primary and kickers by category (high card .. straight flush): a mask of
# so many ranks, or a rank (the pair, trips or quads; a straight's top, a full house's pair)
RANK = -1
PRIMARY_RANKS = (0, RANK, 2, RANK, 0, 0, RANK, RANK, 0)
KICKER_RANKS = (5, 3, 1, 2, RANK, 5, RANK, 1, RANK)


def _key_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What :func:`rank_key` reads: each 13-bit mask's index among the masks of as many bits in
    increasing order (masks of k bits compare as these indices do: the combinatorial number
    system), whether a category's primary and kickers are masks, its kickers' count of
    values and its first key."""
    bits_of = POPCOUNT[: 1 << NUM_RANKS]  # the bits of each mask, in increasing order
    index = np.empty(bits_of.size, dtype=np.int64)
    for bits in range(NUM_RANKS + 1):
        index[bits_of == bits] = np.arange(math.comb(NUM_RANKS, bits))

    def values(ranks: int) -> int:
        return NUM_RANKS if ranks == RANK else math.comb(NUM_RANKS, ranks)

    span = np.array([values(k) for k in KICKER_RANKS], dtype=np.int64)
    sizes = [values(p) * values(k) for p, k in zip(PRIMARY_RANKS, KICKER_RANKS, strict=True)]
    first = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
    return index, np.array(PRIMARY_RANKS) != RANK, np.array(KICKER_RANKS) != RANK, span, first


MASK_INDEX, PRIMARY_MASKED, KICKERS_MASKED, KICKER_SPAN, KEY_FIRST = _key_tables()
KEY_BITS = int(KEY_FIRST[-1] + KICKER_SPAN[-1] - 1).bit_length()  # 8,684 keys: 14 bits
DIGIT_BITS = (KEY_BITS + 1) // 2  # a radix pass's digit: two passes over a key
DIGIT_MASK = (1 << DIGIT_BITS) - 1


@njit(cache=True, inline="always")
def rank_key(value):
    """A seven-card hand's value (``rank_cardset``) as a key below ``1 << KEY_BITS`` that
    orders hands as their values do (and ties as they tie): the category's first key plus the
    primary's and the kickers' indices (:func:`_key_tables`), so a board's hands sort in two
    radix passes where the value's 30 bits took three."""
    c = value >> CATEGORY_SHIFT
    primary = (value >> PRIMARY_SHIFT) & RANK_FIELD
    kickers = value & RANK_FIELD
    if PRIMARY_MASKED[c]:
        primary = MASK_INDEX[primary]
    if KICKERS_MASKED[c]:
        kickers = MASK_INDEX[kickers]
    return KEY_FIRST[c] + primary * KICKER_SPAN[c] + kickers


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
def board_strengths(board, hs):
    """HS (``river_strength``) of every two-card hand of the cards outside a complete ``board``
    at once, into ``hs[a, b]`` (card indices a < b; (52, 52), the other cells untouched): the
    hands sorted by value (:func:`_sorted_hands`), one pass counts, per hand, the hands below
    it and tied with it, less those sharing one of its cards (inclusion-exclusion: only the
    hand itself shares both)."""
    free = np.empty(CARD_BITS.size, dtype=np.int64)
    m = 0
    for c in range(CARD_BITS.size):
        if not board & CARD_BITS[c]:
            free[m] = c
            m += 1
    opponents = (m - 2) * (m - 3) // 2  # the hands each one meets: of the other unseen cards
    keys = _sorted_hands(board, free[:m])
    k = keys.size
    below_card = np.zeros(CARD_BITS.size, dtype=np.int64)
    tied_card = np.zeros(CARD_BITS.size, dtype=np.int64)
    below = 0
    start = 0
    while start < k:
        key = keys[start] >> PAIR_BITS
        if start + 1 == k or keys[start + 1] >> PAIR_BITS != key:  # no tie: the usual case
            a, b = (keys[start] >> CARD_FIELD) & CARD_MASK, keys[start] & CARD_MASK
            hs[a, b] = (below - below_card[a] - below_card[b]) / opponents
            below_card[a] += 1
            below_card[b] += 1
            below += 1
            start += 1
            continue
        end = start
        while end < k and keys[end] >> PAIR_BITS == key:
            tied_card[(keys[end] >> CARD_FIELD) & CARD_MASK] += 1
            tied_card[keys[end] & CARD_MASK] += 1
            end += 1
        tied = end - start
        for t in range(start, end):
            a, b = (keys[t] >> CARD_FIELD) & CARD_MASK, keys[t] & CARD_MASK
            won = below - below_card[a] - below_card[b]
            ties = tied - tied_card[a] - tied_card[b] + 1
            hs[a, b] = (won + 0.5 * ties) / opponents
        for t in range(start, end):
            a, b = (keys[t] >> CARD_FIELD) & CARD_MASK, keys[t] & CARD_MASK
            below_card[a] += tied_card[a]
            below_card[b] += tied_card[b]
            tied_card[a] = 0
            tied_card[b] = 0
        below += tied
        start = end


@njit(cache=True)
def _sorted_hands(board, free):
    """Every two-card hand of the cards ``free`` (increasing) on a complete ``board``, as
    ``key << PAIR_BITS | a << CARD_FIELD | b`` (a < b; ``rank_key`` of its value), sorted by
    value, ties in card order. A hand that cannot make a flush is worth what its ranks are
    (the evaluator reads only how many suits hold each rank, and finds no flush), so only the
    hands that may make one are evaluated, and one hand of each pair of ranks otherwise: ~100
    evaluations a board where there are 1,081 hands."""
    suited = np.empty(NUM_SUITS, dtype=np.int64)  # the board's cards of each suit
    for s in range(NUM_SUITS):
        suited[s] = POPCOUNT[(board >> (SUIT_BITS * s)) & RANK_FIELD]
    by_ranks = np.full((NUM_RANKS, NUM_RANKS), -1, dtype=np.int64)  # keys met, by the ranks
    keys = np.empty(free.size * (free.size - 1) // 2, dtype=np.int64)
    k = 0
    for x in range(free.size):
        a = free[x]
        with_first = board | CARD_BITS[a]
        for y in range(x + 1, free.size):
            b = free[y]
            same = 1 if a % NUM_SUITS == b % NUM_SUITS else 0
            if max(suited[a % NUM_SUITS], suited[b % NUM_SUITS]) + 1 + same >= 5:
                key = rank_key(rank_cardset(with_first | CARD_BITS[b]))  # a flush is possible
            else:
                key = by_ranks[a // NUM_SUITS, b // NUM_SUITS]
                if key < 0:
                    key = rank_key(rank_cardset(with_first | CARD_BITS[b]))
                    by_ranks[a // NUM_SUITS, b // NUM_SUITS] = key
            keys[k] = key << PAIR_BITS | a << CARD_FIELD | b
            k += 1
    return _sorted_by_key(keys)


@njit(cache=True)
def _sorted_by_key(keys):
    """``keys`` (``key << PAIR_BITS | hand``, keys below ``1 << KEY_BITS``, the hands
    increasing) sorted by key, ties in hand order, in place: a least-significant-digit radix
    sort, two passes of ``DIGIT_BITS`` whose digits are counted in one read (numba's argsort
    of a board's 1,081 hands took 3.5 times as long as evaluating them)."""
    low = np.zeros((1 << DIGIT_BITS) + 1, dtype=np.int64)
    high = np.zeros((1 << DIGIT_BITS) + 1, dtype=np.int64)
    for key in keys:
        low[((key >> PAIR_BITS) & DIGIT_MASK) + 1] += 1
        high[(key >> (PAIR_BITS + DIGIT_BITS)) + 1] += 1
    for d in range(1 << DIGIT_BITS):
        low[d + 1] += low[d]
        high[d + 1] += high[d]
    out = np.empty_like(keys)
    for key in keys:
        d = (key >> PAIR_BITS) & DIGIT_MASK
        out[low[d]] = key
        low[d] += 1
    for key in out:
        d = key >> (PAIR_BITS + DIGIT_BITS)
        keys[high[d]] = key
        high[d] += 1
    return keys


@njit(cache=True)
def board_sums(boards, weights, sums, counts):
    """Add, for every two-card hand (``sums[a, b]``, card indices a < b) of the cards outside
    each complete board of ``boards`` (cardsets), HS^2 on that board times the board's weight,
    and the weight to ``counts[a, b]``: the sums whose ratio is E[HS^2] over the boards. Every
    hand of a board is valued in one ``board_strengths`` call, so a whole range costs what one
    hand's expectation would."""
    n = CARD_BITS.size
    hs = np.empty((n, n))
    for i in range(boards.size):
        board = boards[i]
        board_strengths(board, hs)
        w = weights[i]
        for a in range(n):
            if board & CARD_BITS[a]:
                continue
            for b in range(a + 1, n):
                if not board & CARD_BITS[b]:
                    sums[a, b] += w * hs[a, b] * hs[a, b]
                    counts[a, b] += w


@njit(cache=True)
def river_squares(board, holes):
    """HS^2 of each hand of ``holes`` ((k, 2) card indices) on the complete ``board`` (a
    cardset), NaN for a hand holding a board card: on a river E[HS^2] is its one board's HS^2,
    so one ``board_strengths`` call on the board itself values the range (``board_sums`` over
    one board, without the suit relabelling the boards still to complete need)."""
    hs = np.empty((CARD_BITS.size, CARD_BITS.size))
    board_strengths(board, hs)
    out = np.empty(holes.shape[0])
    for i in range(holes.shape[0]):
        a, b = holes[i, 0], holes[i, 1]
        if board & (CARD_BITS[a] | CARD_BITS[b]):
            out[i] = np.nan
        else:
            out[i] = hs[a, b] * hs[a, b]
    return out
