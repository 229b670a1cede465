"""Numba kernels of the hold'em card abstraction (``abstraction.py``): hand strength against one
random opponent hand on a complete board, and its square's expectation over the board cards to come.

Cards are cardsets (int64, the evaluator's layout in ``_hand_rank_kernels.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from oppmodel.modeling.games.acpc._hand_rank_kernels import CARD_BITS, rank_cardset

BOARD_SIZE = 5  # a complete hold'em board


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
        i = need - 1
        while i >= 0 and idx[i] == free.size - need + i:
            i -= 1
        if i < 0:
            return total
        idx[i] += 1
        for t in range(i + 1, need):
            idx[t] = idx[t - 1] + 1
