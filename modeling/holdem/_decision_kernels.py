"""Numba kernels of the decision-time response (``decision.py``): the opponents' hole pairs drawn
by reach for each sampled board, and the rollouts of every legal action of ours over a betting
tree that grows as they meet it.

Cards are cardsets (int64, the evaluator's layout in ``_hand_rank_kernels.py``). A tree node is an
index, a row of ``tree`` (int64): the child after each action (-1 where not made yet), the
player to act (-1 at the hand's end), the round, its first row in ``rows`` (the row of view v is
``row0 + v``) and whether a raise is legal; at an end, ``spent`` and ``folded`` of its row.
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.games.acpc._hand_rank_kernels import rank_cardset
from oppmodel.modeling.kernel_cache import njit

# the columns of a tree's nodes: the child after each action (-1 not made yet), then these
PLAYER, ROUND, ROW0, RAISE_OK = 3, 4, 5, 6
DONE = -2  # a rollout at the hand's end, its value kept


@njit(cache=True)
def _disjoint_mass(holes, w1, w2):
    """Sum of ``w1[i] * w2[j]`` over the pairs of holes (``holes`` (m, 2) cards) sharing no
    card: all pairs, less those sharing a card, counted card by card, plus the pairs that are
    the same hole (counted twice)."""
    total1, total2, same = 0.0, 0.0, 0.0
    by_card1, by_card2 = np.zeros(52), np.zeros(52)
    for i in range(holes.shape[0]):
        total1 += w1[i]
        total2 += w2[i]
        same += w1[i] * w2[i]
        for c in holes[i]:
            by_card1[c] += w1[i]
            by_card2[c] += w2[i]
    return total1 * total2 - (by_card1 * by_card2).sum() + same


@njit(cache=True)
def _draw(cumulative, u):
    return min(np.searchsorted(cumulative, u * cumulative[-1], "right"), cumulative.size - 1)


@njit(cache=True)
def sample_pairs(holes, bits, w1, w2, boards, per_board, seed):
    """For each board completion (``boards``, cardsets), the weight of the completion (the mass of
    the opponents' pairs of holes that share no card with each other nor with it: the
    completions are drawn uniformly, so a completion's share of the joint is this mass) and
    ``per_board`` draws of the two opponents' holes (rows of ``holes``, cards, and of ``bits``,
    their cardsets) by ``w1`` and ``w2``,
    a draw sharing a card redrawn: the joint ``w1 w2 [disjoint]`` given the completion.
    Returns (first, second, mass) with -1 holes where a completion leaves no mass."""
    np.random.seed(seed)
    b_count = boards.size
    first = np.full(b_count * per_board, -1, dtype=np.int64)
    second = np.full(b_count * per_board, -1, dtype=np.int64)
    mass = np.zeros(b_count)
    for b in range(b_count):
        v1, v2 = w1.copy(), w2.copy()
        for i in range(bits.size):
            if bits[i] & boards[b]:
                v1[i], v2[i] = 0.0, 0.0
        mass[b] = _disjoint_mass(holes, v1, v2)
        if mass[b] <= 0.0:
            mass[b] = 0.0
            continue
        c1, c2 = np.cumsum(v1), np.cumsum(v2)
        for k in range(per_board):
            while True:
                i, j = _draw(c1, np.random.random()), _draw(c2, np.random.random())
                if not bits[i] & bits[j]:
                    break
            first[b * per_board + k], second[b * per_board + k] = i, j
    return first, second, mass


@njit(cache=True)
def showdown_ranks(holes, boards):
    """(S, n) the rank of each seat's hole ``holes`` (S, n) with the full board ``boards`` (S,)."""
    out = np.empty(holes.shape, dtype=np.int64)
    for s in range(holes.shape[0]):
        for q in range(holes.shape[1]):
            out[s, q] = rank_cardset(holes[s, q] | boards[s])
    return out


@njit(cache=True)
def _payoff(node, me, spent, folded, ranks_s):
    """Chips of ``me`` at the hand's end ``node`` (a showdown: the pot split by the best)."""
    n = spent.shape[1]
    pot, live, best = 0.0, 0, -1
    for q in range(n):
        pot += spent[node, q]
        if not folded[node, q]:
            live += 1
            best = max(best, ranks_s[q])
    if folded[node, me]:
        return -spent[node, me]
    if live == 1:
        return pot - spent[node, me]
    if ranks_s[me] < best:
        return -spent[node, me]
    winners = 0
    for q in range(n):
        if not folded[node, q] and ranks_s[q] == best:
            winners += 1
    return pot / winners - spent[node, me]


@njit(cache=True)
def walk(at, steps, want, values, tree, spent, folded, rows, views, ranks, uniforms, me):
    """Step every rollout (``at`` (S, A) its node in ``tree``, ``steps`` the uniforms it used)
    until the hand's end (``at`` DONE, its chips in ``values``) or a child not made yet (``at``
    the node, ``want`` the action); the actor's row at its view (``views`` (S, n, rounds)) in
    ``rows``, the action by ``uniforms[s, step]``: the same for every rollout of a
    sample (common random numbers). Returns the number of rollouts waiting."""
    waiting = 0
    for s in range(at.shape[0]):
        for a in range(at.shape[1]):
            node = at[s, a]
            while node >= 0:
                q = tree[node, PLAYER]
                if q < 0:
                    values[s, a] = _payoff(node, me, spent, folded, ranks[s])
                    node = DONE
                    break
                row = rows[tree[node, ROW0] + views[s, q, tree[node, ROUND]]]
                u = uniforms[s, steps[s, a]]
                act = 0 if u < row[0] else 1 if u < row[0] + row[1] else 2
                if act == 2 and not tree[node, RAISE_OK]:
                    act = 1
                nxt = tree[node, act]
                if nxt < 0:
                    want[s, a] = act
                    waiting += 1
                    break
                steps[s, a] += 1
                node = nxt
            at[s, a] = node if node >= 0 else DONE
    return waiting
