"""Numba kernel of the local best response (``lbr.py``): the probability of winning at the
showdown against a weighted range, over the board cards still to come.

Cards and hands are cardsets (int64, the evaluator's layout in ``_hand_rank_kernels.py``).
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.games.acpc._hand_rank_kernels import rank_cardset
from oppmodel.modeling.kernel_cache import njit


@njit(cache=True)
def win_probability(own, board, holes, weights, free, need, rollouts, seed):
    """P(``own`` wins) at a showdown on ``board`` completed by ``need`` cards of ``free`` against
    one opponent holding ``holes[i]`` with probability proportional to ``weights[i]`` (ties one
    half): over every completion when there are at most ``rollouts`` (or ``rollouts`` is 0),
    else over ``rollouts`` completions drawn with the seed. An opponent's hand and a completion
    that share a card never meet; the estimate is the ratio of the sums over the pairs that do,
    exact when every completion is taken."""
    completions = 1
    for k in range(need):
        completions = completions * (free.size - k) // (k + 1)
    every = rollouts == 0 or completions <= rollouts
    count = completions if every else rollouts
    idx = np.arange(need)
    cards = free.copy()
    np.random.seed(seed)
    won, total = 0.0, 0.0
    for _ in range(count):
        drawn = np.int64(0)
        if every:
            for i in idx:
                drawn |= free[i]
        else:  # a partial Fisher-Yates shuffle: ``need`` distinct cards
            for k in range(need):
                j = k + np.random.randint(cards.size - k)
                cards[k], cards[j] = cards[j], cards[k]
                drawn |= cards[k]
        full = board | drawn
        ours = rank_cardset(own | full)
        for i in range(holes.size):
            w = weights[i]
            if w == 0.0 or holes[i] & drawn:
                continue
            theirs = rank_cardset(holes[i] | full)
            won += w if ours > theirs else 0.5 * w if ours == theirs else 0.0
            total += w
        if every:  # the next combination of ``need`` indices into ``free``
            i = need - 1
            while i >= 0 and idx[i] == free.size - need + i:
                i -= 1
            if i >= 0:
                idx[i] += 1
                for t in range(i + 1, need):
                    idx[t] = idx[t - 1] + 1
    return won / total if total > 0 else 0.5
