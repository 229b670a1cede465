"""Numba kernels of the sampled solver (see modeling/solve/mccfr.py): external-sampling MCCFR.

``tree`` is a :class:`oppmodel.modeling.games.acpc.limit_game.LimitTree` (unpacked from the two
arrays of ``evaluation.limit.pack_tree``); regrets and average-strategy sums are ``(n, I, 3)``,
indexed by position and information set (``node_base[node] + view``, the view being the cards a
position sees or, in an abstract game, its buckets).
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.evaluation._limit_kernels import unpack_tree
from oppmodel.modeling.kernel_cache import njit
from oppmodel.modeling.solve._cfr_kernels import regret_matching

NUM_ACTIONS = 3
SEED_STRIDE = 1_000_003  # iteration t of seed s draws from the generator seeded s * stride + t


@njit(cache=True)
def _matched(regrets, legal, row):
    """Regret matching of one information set: (p_fold, p_call, p_raise)."""
    return matched(regrets[row], legal[row, 0], legal[row, 1], legal[row, 2])


@njit(cache=True)
def matched(regret, l0, l1, l2):
    """Regret matching of one information set's (3,) regrets over the legal actions ``l0, l1,
    l2``: (p_fold, p_call, p_raise); every legal action alike when no regret is positive."""
    r0 = max(regret[0], 0.0) if l0 else 0.0
    r1 = max(regret[1], 0.0) if l1 else 0.0
    r2 = max(regret[2], 0.0) if l2 else 0.0
    total = r0 + r1 + r2
    if total > 0.0:
        return r0 / total, r1 / total, r2 / total
    count = (1.0 if l0 else 0.0) + (1.0 if l1 else 0.0) + (1.0 if l2 else 0.0)
    return (1.0 if l0 else 0.0) / count, (1.0 if l1 else 0.0) / count, (1.0 if l2 else 0.0) / count


@njit(cache=True)
def _next_legal(legal, row, after):
    """The first legal action above ``after`` at the information set, or -1."""
    return next_legal(legal[row, 0], legal[row, 1], legal[row, 2], after)


@njit(cache=True)
def next_legal(l0, l1, l2, after):
    """The first of the legal actions ``l0, l1, l2`` above ``after``, or -1."""
    for a in range(after + 1, NUM_ACTIONS):
        if (l0, l1, l2)[a]:
            return a
    return -1


@njit(cache=True)
def traverse(tree, deal, player, regrets, sums, legal, weight, frames):
    """External sampling of the whole tree under ``deal`` for the traverser ``player``: its own
    actions are all walked and their regrets updated; every other position's one action is
    drawn from its current strategy, whose average sums gain that strategy times ``weight``.
    Returns the traverser's sampled value (chips). Iterative (numba's cache cannot reload a
    recursive kernel): ``frames`` (max depth + 1, 9) holds, per traverser's node on the path,
    its node, row, the action being walked, its strategy (3) and its actions' values (3)."""
    depth = 0
    node = 0
    value = 0.0
    while True:
        while True:  # down to a terminal or a traverser's node
            t = tree.node_terminal[node]
            if t >= 0:
                share = tree.share[tree.terminal_class[t], deal, player]
                value = share * tree.terminal_pot[t] - tree.terminal_spent[t, player]
                break
            mover = tree.node_player[node]
            row = tree.node_base[node] + tree.deal_view[tree.node_round[node], deal, mover]
            s0, s1, s2 = _matched(regrets[mover], legal[mover], row)
            if mover == player:
                first = _next_legal(legal[mover], row, -1)
                frames[depth, 0], frames[depth, 1], frames[depth, 2] = node, row, first
                frames[depth, 3], frames[depth, 4], frames[depth, 5] = s0, s1, s2
                frames[depth, 6:] = 0.0
                depth += 1
                node = tree.node_children[node, first]
                continue
            sums[mover, row, 0] += weight * s0
            sums[mover, row, 1] += weight * s1
            sums[mover, row, 2] += weight * s2
            u = np.random.random()
            action = 0 if u < s0 else 1 if u < s0 + s1 or s2 == 0.0 else 2
            node = tree.node_children[node, action]
        while depth > 0:  # up: the value of the action walked, then the next action or done
            f = frames[depth - 1]
            row, action = int(f[1]), int(f[2])
            f[6 + action] = value
            action = _next_legal(legal[player], row, action)
            if action >= 0:
                f[2] = action
                node = tree.node_children[int(f[0]), action]
                break
            value = 0.0
            for a in range(NUM_ACTIONS):
                value += f[3 + a] * f[6 + a]
            for a in range(NUM_ACTIONS):
                if legal[player, row, a]:
                    regrets[player, row, a] += f[6 + a] - value
            depth -= 1
        if depth == 0:
            return value


@njit(cache=True)
def iterate(ints, floats, regrets, sums, current, legal, done, last, seed):
    """Iterations ``done[0] + 1`` .. ``last``: each draws one deal (uniformly) and traverses the
    tree once per position in turn; the average sums weigh iteration t by t (linear averaging).
    ``current`` is then the regret-matching strategy; ``done[0]`` the iteration reached."""
    tree = unpack_tree(ints, floats)
    n = regrets.shape[0]
    deals = tree.share.shape[1]
    frames = np.zeros((tree.max_depth + 1, 9))
    for t in range(done[0] + 1, last + 1):
        np.random.seed((seed * SEED_STRIDE + t) % 2**32)
        deal = np.random.randint(deals)
        for p in range(n):
            traverse(tree, deal, p, regrets, sums, legal, float(t), frames)
        done[0] = t
    for p in range(n):
        regret_matching(regrets[p], legal[p], current[p])
