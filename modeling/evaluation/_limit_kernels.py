"""Numba kernels for exact evaluation of limit-game profiles (see modeling/evaluation/limit.py).

``tree`` is a :class:`oppmodel.modeling.games.acpc.limit_game.LimitTree`; a profile is ``(n, I, 3)``
action probabilities per position and information set (``f c r``). Every kernel carries one
vector over all deals through the public tree, so a sweep costs public nodes x deals and no
history tree is ever built. Values are sums over deals; callers divide by the number of deals.
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.games.acpc.limit_game import LimitTree
from oppmodel.modeling.kernel_cache import njit

NUM_ACTIONS = 3
HEADER = 7  # packed tree: nodes, terminals, players, pot classes, deals, rounds, max depth


@njit(cache=True)
def unpack_tree(ints, floats):
    """The :class:`LimitTree` of ``limit.pack_tree``'s two arrays, as views into them.

    Numba unboxes a named tuple of 15 arrays on every call from Python, which cost more than
    a 3-player Kuhn sweep itself; two arrays unbox in a fraction of that, and the views cost
    nothing here."""
    nodes, terminals, n, classes, deals, rounds = ints[:6]
    ends = np.cumsum(
        np.array([HEADER, nodes, nodes, 3 * nodes, nodes, nodes, nodes, nodes, nodes, terminals])
    )  # where each of the integer arrays before deal_view ends
    node = [ints[ends[f] : ends[f + 1]] for f in range(9)]
    views = ends[9] + rounds * deals * n
    spent, pots = terminals * n, terminals * (n + 1)
    return LimitTree(
        node[0], node[1], node[2].reshape((nodes, 3)), node[3], node[4], node[5], node[6],
        node[7], floats[:spent].reshape((terminals, n)), floats[spent:pots], node[8],
        floats[pots:].reshape((classes, deals, n)),
        ints[ends[9] : views].reshape((rounds, deals, n)), ints[views:], ints[6],
    )  # fmt: skip


@njit(cache=True, nogil=True)  # a hold'em solve runs beside the model's thread
def best_response(ints, floats, profile, player, strategy):
    """A pure best response of ``player`` to ``profile`` on the packed tree (``unpack_tree``),
    written into ``strategy`` (zeroed; padding rows: call), and its value summed over deals."""
    tree = unpack_tree(ints, floats)
    size = strategy.shape[0]
    cfv = np.zeros((size, NUM_ACTIONS))
    own_reach = np.zeros(0)  # the choices need none: the sweep skips the player's own reach
    choice = np.full(size, -1, dtype=np.int64)
    value = sweep(tree, profile, player, True, cfv, own_reach, choice)
    for i in range(size):
        strategy[i, choice[i] if choice[i] >= 0 else 1] = 1.0
    return value


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba's private flag, not in its stubs
def move_into(tree, node):
    """``(mover, round, base, action)``: the move that leads to ``node`` (not the root), with the
    mover's first information set in that round; what a forward sweep reads per node."""
    parent = tree.node_parent[node]
    return (
        tree.node_player[parent],
        tree.node_round[parent],
        tree.node_base[parent],
        tree.node_action[node],
    )


@njit(cache=True)
def reach_into(tree, profile, node, reach, skip):
    """The forward walk's step into ``node`` (not the root), in pre-order: its reach per deal,
    ``reach[depth]``, is its parent's (one level up, still there: the nodes between a parent and
    a child in pre-order are deeper ones or the child's earlier siblings) times the mover's
    probability of the move at each deal's information set, the mover ``skip``'s left out (-1:
    none). Returns the node's depth."""
    p, r, base, a = move_into(tree, node)
    k = tree.node_depth[node]
    _reach_step(reach[k - 1], reach[k], profile[p, :, a], base, tree.deal_view[r, :, p], p == skip)
    return k


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba's private flag, not in its stubs
def _reach_step(above, below, moves, base, seen, skip):
    """``below[d]``: ``above[d]`` times the move's probability at deal d's information set
    (``moves[base + seen[d]]``), or unchanged with ``skip``."""
    if skip:
        for d in range(seen.shape[0]):
            below[d] = above[d]
    else:
        for d in range(seen.shape[0]):
            below[d] = above[d] * moves[base + seen[d]]


@njit(cache=True, nogil=True)  # a hold'em solve runs beside the model's thread
def expected_values(tree, profile):
    """Sum over deals of each position's payoff, weighted by everyone's reach probability.

    One forward sweep in pre-order: ``reach[depth]`` holds the current node's reach per deal; a
    node's parent sits one level up and is still there, since the nodes between a parent and a
    child in pre-order are deeper ones or the child's earlier siblings.
    """
    n = profile.shape[0]
    num_deals = tree.deal_view.shape[1]
    reach = np.empty((tree.max_depth + 1, num_deals))
    reach[0, :] = 1.0
    ev = np.zeros(n)
    for node in range(1, tree.node_player.shape[0]):
        k = reach_into(tree, profile, node, reach, -1)
        t = tree.node_terminal[node]
        if t < 0:
            continue
        cls, pot = tree.terminal_class[t], tree.terminal_pot[t]
        for d in range(num_deals):
            w = reach[k, d]
            if w != 0.0:
                for i in range(n):
                    ev[i] += w * (tree.share[cls, d, i] * pot - tree.terminal_spent[t, i])
    return ev


@njit(cache=True)
def sweep(tree, profile, player, best, cfv, own_reach, choice):
    """One depth-first sweep for ``player``: counterfactual values and, if ``best``, a best
    response. Returns the root value (summed over deals).

    Going down, each level carries per deal the others' reach (chance is uniform and left out)
    and the player's own reach. Coming up, a node's value per deal is the others'-reach-weighted
    payoff below it: at the player's nodes under ``profile[player]`` or, with ``best``, under the
    action that is best for the whole information set (the sum over its deals, ties to the lower
    action code), which makes this an exact backward induction over information sets. Written:
    ``cfv[I, a]`` (added to: the counterfactual value of action a at information set I, summed over
    its deals), ``own_reach[I]`` (the player's own reach of I; an empty ``own_reach``: not
    computed) and, with ``best``, ``choice[I]``.
    """
    num_deals = tree.deal_view.shape[1]
    levels = tree.max_depth + 1
    track = own_reach.shape[0] > 0
    view = np.ascontiguousarray(tree.deal_view.transpose(0, 2, 1))  # (round, position, deal)
    shares = np.ascontiguousarray(tree.share[:, :, player])  # a terminal's row, contiguous
    reach = np.empty((2, levels, num_deals))  # few allocations (a sweep of kuhn3p is ~6 us)
    others, mine = reach[0], reach[1]
    values = np.empty((levels + 1, NUM_ACTIONS, num_deals))
    root = values[levels, 0]
    walk = np.zeros((4, levels), dtype=np.int64)  # at[:, k]: level k's row in others, mine
    node_at, next_action, at = walk[0], walk[1], walk[2:]
    others[0, :] = 1.0
    mine[0, :] = 1.0
    k = 0
    while k >= 0:
        node = node_at[k]
        t = tree.node_terminal[node]
        if t >= 0:
            out = values[k - 1, tree.node_action[node]]
            cls, pot = tree.terminal_class[t], tree.terminal_pot[t]
            spent = tree.terminal_spent[t, player]
            reach, share = others[at[0, k]], shares[cls]
            for d in range(num_deals):
                out[d] = reach[d] * (share[d] * pot - spent)
            k -= 1
            continue
        p = tree.node_player[node]
        r = tree.node_round[node]
        base = tree.node_base[node]
        seen = view[r, p]
        a = next_action[k]
        while a < NUM_ACTIONS and tree.node_children[node, a] < 0:
            a += 1
        if a < NUM_ACTIONS:  # go down into the next child
            next_action[k] = a + 1
            if p == player:
                _reach_down(mine, at[1], k, profile[p, :, a], base, seen, track)
                at[0, k + 1] = at[0, k]
            else:
                _reach_down(others, at[0], k, profile[p, :, a], base, seen, True)
                at[1, k + 1] = at[1, k]
            node_at[k + 1] = tree.node_children[node, a]
            next_action[k + 1] = 0
            k += 1
            continue
        out = values[k - 1, tree.node_action[node]] if k > 0 else root
        children = tree.node_children[node]
        below = values[k]
        if p == player:
            if track:
                for d in range(num_deals):
                    own_reach[base + seen[d]] = mine[at[1, k], d]
            player_node_value(
                out, below, children, cfv, choice, profile[p], base, seen, tree.round_views[r], best
            )
        else:
            _children_sum(out, below, children)
        k -= 1
    return root.sum()


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba's private flag, not in its stubs
def _children_sum(out, below, children):
    """``out[d]``: the sum of the children's values ``below[a, d]`` in action order (from 0.0,
    as one loop over the actions would add them), one branch-free loop per set of children."""
    fold, call, raise_ = children[0] >= 0, children[1] >= 0, children[2] >= 0
    if fold and call and raise_:
        for d in range(out.shape[0]):
            out[d] = 0.0 + below[0, d] + below[1, d] + below[2, d]
    elif call and raise_ and not fold:
        for d in range(out.shape[0]):
            out[d] = 0.0 + below[1, d] + below[2, d]
    elif fold and call and not raise_:
        for d in range(out.shape[0]):
            out[d] = 0.0 + below[0, d] + below[1, d]
    else:
        for d in range(out.shape[0]):
            total = 0.0
            for b in range(NUM_ACTIONS):
                if children[b] >= 0:
                    total += below[b, d]
            out[d] = total


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba's private flag, not in its stubs
def _reach_down(moving, rows, k, moves, base, seen, track):
    """Level ``k + 1``'s reach per deal of the mover (``moving``; if ``track``), going down an
    action: its reach at level k (row ``rows[k]``) times its probability ``moves[I]`` at each
    deal's information set, into row k + 1. The others' reach is not copied: their level k + 1
    is their row at level k (the caller's ``at``; no level at or above k reads a row below it)."""
    rows[k + 1] = k + 1
    if track:
        above, below = moving[rows[k]], moving[k + 1]
        for d in range(seen.shape[0]):
            below[d] = above[d] * moves[base + seen[d]]


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba's private flag, not in its stubs
def player_node_value(out, below, children, cfv, choice, strategy, base, seen, views, best):
    """Coming up at the sweeping player's node: its children's values ``below[a, d]`` are added to
    the counterfactual values of each deal's information set, and ``out[d]`` is the value of the
    best action for the whole information set (with ``best``: its pick written to ``choice``, ties
    to the lower action code) or of ``strategy``'s mix."""
    num_deals = seen.shape[0]
    for d in range(num_deals):
        i = base + seen[d]
        for b in range(NUM_ACTIONS):
            if children[b] >= 0:
                cfv[i, b] += below[b, d]
    if best:
        for i in range(base, base + views):
            pick = -1
            for b in range(NUM_ACTIONS):
                if children[b] >= 0 and (pick < 0 or cfv[i, b] > cfv[i, pick]):
                    pick = b
            choice[i] = pick
        for d in range(num_deals):
            out[d] = below[choice[base + seen[d]], d]
    else:
        for d in range(num_deals):
            i = base + seen[d]
            total = 0.0
            for b in range(NUM_ACTIONS):
                if children[b] >= 0:
                    total += strategy[i, b] * below[b, d]
            out[d] = total


@njit(cache=True)
def fixed_others_leaf_values(tree, profile, player, deal_column, out):
    """What each terminal is worth to ``player`` against the others' fixed strategies, summed
    over the deals of each column: ``out[t, deal_column[d]] += others' reach x payoff`` (chance
    left out, the player's own reach not applied). With a column per view of the player in the
    last round, the value of any strategy of the player is then :func:`own_strategy_value`'s
    sum over terminals and views of its own reach times this."""
    num_deals = tree.deal_view.shape[1]
    reach = np.empty((tree.max_depth + 1, num_deals))
    reach[0, :] = 1.0
    for node in range(1, tree.node_player.shape[0]):
        k = reach_into(tree, profile, node, reach, player)
        t = tree.node_terminal[node]
        if t < 0:
            continue
        cls, pot = tree.terminal_class[t], tree.terminal_pot[t]
        spent = tree.terminal_spent[t, player]
        for d in range(num_deals):
            w = reach[k, d]
            if w != 0.0:
                out[t, deal_column[d]] += w * (tree.share[cls, d, player] * pot - spent)


@njit(cache=True)
def own_strategy_value(tree, strategy, player, views, leaf, reach, own_reach):
    """The value of ``strategy`` (the player's (I, 3) rows) from :func:`fixed_others_leaf_values`'
    ``leaf`` (T, K): column k stands for the player's views ``views[:, k]`` in every round (one
    line of views the player can see, e.g. one hole and one board card). ``reach`` (N, K) is
    scratch; ``own_reach[I]`` is written with the player's own reach of each information set it
    passes. A forward sweep over public nodes x K, no deals: far cheaper than :func:`sweep`."""
    num_columns = views.shape[1]
    for c in range(num_columns):
        reach[0, c] = 1.0
    value = 0.0
    for node in range(1, tree.node_player.shape[0]):
        parent = tree.node_parent[node]
        p, r, base, a = move_into(tree, node)
        if p == player:
            for c in range(num_columns):
                i = base + views[r, c]
                own_reach[i] = reach[parent, c]
                reach[node, c] = reach[parent, c] * strategy[i, a]
        else:
            for c in range(num_columns):
                reach[node, c] = reach[parent, c]
        t = tree.node_terminal[node]
        if t >= 0:
            for c in range(num_columns):
                value += reach[node, c] * leaf[t, c]
    return value
