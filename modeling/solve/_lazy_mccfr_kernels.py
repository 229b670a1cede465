"""Numba kernels of external-sampling MCCFR over lazily built tables (see
modeling/solve/lazy_mccfr.py): public nodes made by the betting rules as the walk first reaches
them, information sets in an open-addressing hash table keyed by (node, view).

``rules`` is :func:`oppmodel.modeling.games.acpc.lazy_game.rules_array`. The tables
(:class:`LazyTables`) have room for what the caller allocated; an iteration starts only while
there is room for ``margin`` more nodes and rows (the most one iteration can add), so a full
table never stops an iteration half way: :func:`iterate` returns early and the caller grows it.

The betting in :func:`_after` is the rules of :mod:`oppmodel.modeling.games.acpc.betting`
(``after``, ``is_legal``) on a node's row, in numba for the hot loop; tests check that it builds
the compiled games' trees node for node. The draws are those of the array solver's kernel
(:mod:`oppmodel.modeling.solve._mccfr_kernels`) in the same order, so on a game both can hold
the two give the same regrets bit for bit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from oppmodel.modeling.kernel_cache import njit
from oppmodel.modeling.solve._mccfr_kernels import NUM_ACTIONS, SEED_STRIDE, matched, next_legal

# the columns of a node's row: whom to act (-1 at the end), round, raises and calls this round
# (the reference's count), the folded positions as a bit mask, then each position's chips in
PLAYER, ROUND, RAISES, CALLED, FOLDED, SPENT = 0, 1, 2, 3, 4, 5
HEADER = 2  # rules: [n, rounds, first[rounds], raise size[rounds], max raises[rounds]]
EMPTY = -1  # a hash slot without a key; a child not made yet
MIX = -7046029254386353131  # 2^64 / golden ratio, as a signed 64-bit integer (Fibonacci hashing)


class LazyTables(NamedTuple):
    """The solver's growing state (numba takes a named tuple of arrays)."""

    node_info: np.ndarray  # (C, 5 + n) int32: a node's row (see the columns above)
    node_children: np.ndarray  # (C, 3) int32: child per action, EMPTY until first reached
    node_parent: np.ndarray  # (C,) int32
    node_action: np.ndarray  # (C,) int32: the action from the parent
    keys: np.ndarray  # (H,) int64: node * view stride + view, EMPTY if free; H a power of 2
    slots: np.ndarray  # (H,) int32: the key's row
    regrets: np.ndarray  # (Rw, 3) float64
    sums: np.ndarray  # (Rw, 3) float64: average-strategy sums
    row_node: np.ndarray  # (Rw,) int32
    row_view: np.ndarray  # (Rw,) int32
    counts: np.ndarray  # (2,) int64: nodes made, rows made


@njit(cache=True)
def legal(rules, info):
    """(fold, call, raise) legal at a node's row (``betting.is_legal``)."""
    rnd, p = info[ROUND], info[PLAYER]
    top = info[SPENT]
    for q in range(1, rules[0]):
        top = max(top, info[SPENT + q])
    return info[SPENT + p] < top, True, info[RAISES] < rules[HEADER + 2 * rules[1] + rnd]


@njit(cache=True)
def _next_in(start, folded, n):
    """The first position from ``start`` on (cyclically) that has not folded."""
    for k in range(n):
        q = (start + k) % n
        if not (folded >> q) & 1:
            return q
    return -1


@njit(cache=True)
def _after(rules, src, action, dst):
    """Write into ``dst`` the row of the node after ``action`` at ``src`` (``betting.after``)."""
    n, rounds = rules[0], rules[1]
    p, rnd = src[PLAYER], src[ROUND]
    top = 0
    for q in range(n):
        dst[SPENT + q] = src[SPENT + q]
        top = max(top, src[SPENT + q])
    folded, raises, called = src[FOLDED], src[RAISES], src[CALLED]
    if action == 0:
        folded |= 1 << p
    elif action == 1:
        dst[SPENT + p] = top
        called += 1
    else:
        dst[SPENT + p] = top + rules[HEADER + rounds + rnd]
        raises += 1
        called = 1
    live = 0
    for q in range(n):
        live += 1 - ((folded >> q) & 1)
    dst[FOLDED], dst[ROUND], dst[RAISES], dst[CALLED] = folded, rnd, raises, called
    if live == 1 or (called >= live and rnd + 1 == rounds):
        dst[PLAYER] = -1
    elif called >= live:  # the next round opens
        dst[ROUND], dst[RAISES], dst[CALLED] = rnd + 1, 0, 0
        dst[PLAYER] = _next_in(rules[HEADER + rnd + 1], folded, n)
    else:
        dst[PLAYER] = _next_in((p + 1) % n, folded, n)


@njit(cache=True)
def child(rules, t, node, action):
    """The node after ``action`` at ``node``, made now if it is the first visit."""
    c = t.node_children[node, action]
    if c != EMPTY:
        return c
    c = t.counts[0]
    if c >= len(t.node_parent):
        raise ValueError("lazy MCCFR: node table full (the iteration margin was too small)")
    _after(rules, t.node_info[node], action, t.node_info[c])
    t.node_parent[c], t.node_action[c] = node, action
    t.node_children[node, action] = c
    t.counts[0] = c + 1
    return c


@njit(cache=True)
def _slot(keys, key):
    """The hash slot holding ``key``, or the free slot where it goes."""
    mask = len(keys) - 1
    h = key * MIX
    h = (h ^ (h >> 31)) & mask
    while keys[h] != key and keys[h] != EMPTY:
        h = (h + 1) & mask
    return h


@njit(cache=True)
def row(t, node, view, stride):
    """The information set (row) of ``view`` at ``node``, made (zero regrets) on first visit."""
    key = np.int64(node) * stride + view
    h = _slot(t.keys, key)
    if t.keys[h] == key:
        return t.slots[h]
    r = t.counts[1]
    if r >= len(t.row_node):
        raise ValueError("lazy MCCFR: row table full (the iteration margin was too small)")
    t.keys[h], t.slots[h] = key, r
    t.row_node[r], t.row_view[r] = node, view
    t.counts[1] = r + 1
    return r


@njit(cache=True)
def rehash(keys, slots, row_node, row_view, rows, stride):
    """Fill empty ``keys`` / ``slots`` (a new size) with the first ``rows`` rows."""
    for r in range(rows):
        key = np.int64(row_node[r]) * stride + row_view[r]
        h = _slot(keys, key)
        keys[h], slots[h] = key, r


@njit(cache=True)
def traverse(rules, t, deal_view, share, deal, player, weight, frames, stride):
    """External sampling under ``deal`` for the traverser ``player`` (as ``_mccfr_kernels.
    traverse``, on lazy tables): its actions all walked and their regrets updated, everyone
    else's one action drawn from its current strategy, whose average sums gain it times
    ``weight``. Returns the traverser's sampled value. ``frames`` as there."""
    n = rules[0]
    depth, node, value = 0, 0, 0.0
    while True:
        while True:  # down to a terminal or a traverser's node
            info = t.node_info[node]
            mover = info[PLAYER]
            if mover < 0:
                live, pot = 0, 0.0
                for q in range(n):
                    live |= (1 - ((info[FOLDED] >> q) & 1)) << q
                    pot += info[SPENT + q]
                value = share[live - 1, deal, player] * pot - info[SPENT + player]
                break
            r = row(t, node, deal_view[info[ROUND], deal, mover], stride)
            l0, l1, l2 = legal(rules, info)
            s0, s1, s2 = matched(t.regrets[r], l0, l1, l2)
            if mover == player:
                first = next_legal(l0, l1, l2, -1)
                frames[depth, 0], frames[depth, 1], frames[depth, 2] = node, r, first
                frames[depth, 3], frames[depth, 4], frames[depth, 5] = s0, s1, s2
                frames[depth, 6:] = 0.0
                depth += 1
                node = child(rules, t, node, first)
                continue
            t.sums[r, 0] += weight * s0
            t.sums[r, 1] += weight * s1
            t.sums[r, 2] += weight * s2
            u = np.random.random()
            action = 0 if u < s0 else 1 if u < s0 + s1 or s2 == 0.0 else 2
            node = child(rules, t, node, action)
        while depth > 0:  # up: the value of the action walked, then the next action or done
            f = frames[depth - 1]
            at, r, action = int(f[0]), int(f[1]), int(f[2])
            f[6 + action] = value
            l0, l1, l2 = legal(rules, t.node_info[at])
            action = next_legal(l0, l1, l2, action)
            if action >= 0:
                f[2] = action
                node = child(rules, t, at, action)
                break
            value = 0.0
            for a in range(NUM_ACTIONS):
                value += f[3 + a] * f[6 + a]
            for a, ok in enumerate((l0, l1, l2)):
                if ok:
                    t.regrets[r, a] += f[6 + a] - value
            depth -= 1
        if depth == 0:
            return value


@njit(cache=True)
def iterate(rules, t, deal_view, share, done, last, seed, margin, stride, max_depth):
    """Iterations ``done[0] + 1`` .. ``last`` (as ``_mccfr_kernels.iterate``: one deal drawn,
    one traversal per position, iteration t's average weight t), stopping early before an
    iteration the tables may not hold (``margin`` more nodes and rows, the hash at most half
    full): ``done[0]`` says how far it got."""
    n = rules[0]
    deals = share.shape[1]
    frames = np.zeros((max_depth + 1, 9))
    for it in range(done[0] + 1, last + 1):
        rows = t.counts[1] + margin
        if t.counts[0] + margin > len(t.node_parent) or rows > len(t.row_node):
            return
        if 2 * rows > len(t.keys):
            return
        np.random.seed((seed * SEED_STRIDE + it) % 2**32)
        deal = np.random.randint(deals)
        for p in range(n):
            traverse(rules, t, deal_view, share, deal, p, float(it), frames, stride)
        done[0] = it
