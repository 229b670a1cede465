"""Numba kernels of the hold'em card abstraction (``abstraction.py``): hand strength against one
random opponent hand on a complete board, and its square's expectation over the board cards to come.

Cards are cardsets (int64, the evaluator's layout in ``_hand_rank_kernels.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from oppmodel.modeling.games.acpc._hand_rank_kernels import (
    CARD_BITS,
    SUIT_BITS,
    next_combination,
    rank_cardset,
)

BOARD_SIZE = 5  # a complete hold'em board
RANK_FIELD = (1 << 13) - 1  # one suit's ranks in a cardset


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
def expected_strength_squared(hole, board, board_size, rollouts, seed):
    """E[HS^2] over the boards that complete ``board`` (``board_size`` cards) to five: every
    completion when there are at most ``rollouts`` of them (or ``rollouts`` is 0), else
    ``rollouts`` completions drawn without repeats from a generator seeded with ``seed``."""
    need = BOARD_SIZE - board_size
    if need == 0:
        return river_strength(hole, board) ** 2
    free = np.array([b for b in CARD_BITS if not (hole | board) & b], dtype=np.int64)
    completions = 1
    for k in range(need):
        completions = completions * (free.size - k) // (k + 1)
    if rollouts == 0 or completions <= rollouts:
        return _every_completion(hole, board, free, need) / completions
    np.random.seed(seed)
    total = 0.0
    for _ in range(rollouts):
        drawn = np.int64(0)
        for k in range(need):  # a partial Fisher-Yates shuffle: ``need`` distinct cards
            j = k + np.random.randint(free.size - k)
            free[k], free[j] = free[j], free[k]
            drawn |= free[k]
        total += river_strength(hole, board | drawn) ** 2
    return total / rollouts


@njit(cache=True)
def _every_completion(hole, board, free, need):
    """The sum of HS^2 over every set of ``need`` cards of ``free`` added to ``board``."""
    idx = np.arange(need)
    total = 0.0
    while True:
        drawn = np.int64(0)
        for i in idx:
            drawn |= free[i]
        total += river_strength(hole, board | drawn) ** 2
        if not next_combination(idx, free.size):
            return total


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
    the cards ``first[k] < second[k]`` (indices, every pair of the unseen cards), ``hs[k]`` its
    value, ``opponents`` the hands each one meets (those of the other unseen cards). One
    evaluation per hand, then one pass over the hands sorted by value counts, per hand, the
    hands below it and tied with it, less those sharing one of its cards (inclusion-exclusion:
    only the hand itself shares both)."""
    hands = first.size
    value = np.empty(hands, dtype=np.int64)
    for k in range(hands):
        value[k] = rank_cardset(board | CARD_BITS[first[k]] | CARD_BITS[second[k]])
    order = np.argsort(value)
    below_card = np.zeros(CARD_BITS.size, dtype=np.int64)
    tied_card = np.zeros(CARD_BITS.size, dtype=np.int64)
    below = 0
    start = 0
    while start < hands:
        end = start
        while end < hands and value[order[end]] == value[order[start]]:
            a, b = first[order[end]], second[order[end]]
            tied_card[a] += 1
            tied_card[b] += 1
            end += 1
        tied = end - start
        for t in range(start, end):
            k = order[t]
            a, b = first[k], second[k]
            won = below - below_card[a] - below_card[b]
            ties = tied - tied_card[a] - tied_card[b] + 1
            hs[k] = (won + 0.5 * ties) / opponents
        for t in range(start, end):
            a, b = first[order[t]], second[order[t]]
            below_card[a] += tied_card[a]
            below_card[b] += tied_card[b]
            tied_card[a] = 0
            tied_card[b] = 0
        below += tied
        start = end


@njit(cache=True)
def preflop_sums(boards, weights, out):
    """Add, for every hole (``out[a, b]``, card indices a < b), HS^2 on each complete board of
    ``boards`` that misses it, times the board's weight (its class size under suit relabelling:
    a hole's class is closed under relabelling, so the sum over a class's holes is the same on
    every board of a board class)."""
    n = CARD_BITS.size
    free = np.empty(n, dtype=np.int64)
    first = np.empty(n * n, dtype=np.int64)
    second = np.empty(n * n, dtype=np.int64)
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
        hs = np.empty(k)
        board_strengths(board, first[:k], second[:k], (m - 2) * (m - 3) // 2, hs)
        for t in range(k):
            out[first[t], second[t]] += weights[i] * hs[t] * hs[t]
