"""Numba kernels of MBBR (``samples.py``, ``base.py``, ``model.py``, ``safety.py``; the Dirichlet
fit's are in ``_dirichlet_kernels.py``).

Opponent moves are ``entry`` indices into a flattened ``(n - 1, num_infosets, 3)`` table:
``(offset - 1) * num_infosets * 3 + infoset * 3 + action``; the three entries of a row (one
information set) start at ``entry - entry % 3``.
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.evaluation import _limit_kernels as tree_kernels
from oppmodel.modeling.kernel_cache import njit

NUM_ACTIONS = 3
# Subnormal doubles (below TINY) cost ~100x per operation on x86 (microcode assists): a product
# that may fall there is taken times UP (exact), compared in that range, and scaled back by DOWN
TINY, UP, DOWN = np.finfo(np.float64).tiny, 2.0**600, 2.0**-600


@njit(cache=True)
def normalise_rows(mixture, out):
    """out[i] = mixture[i] / its sum, or zeros where the sum is not positive (``mixture`` and
    ``out`` are 2-D): a weighted sum of strategies (a posterior mean over samples or types) is
    one only within rounding, and x / (x + y) with x, y >= 0 is at most 1 in floating point."""
    for i in range(mixture.shape[0]):
        total = 0.0
        for a in range(mixture.shape[1]):
            total += mixture[i, a]
        for a in range(mixture.shape[1]):
            out[i, a] = mixture[i, a] / total if total > 0.0 else 0.0


@njit(cache=True)
def update_joint2(weights, out, a, bt, scale, floor, row, col):
    """One Bayes step of a (k2, k3) joint posterior whose likelihood is a @ bt (rank r): the
    previous unnormalised ``weights`` times ``scale`` (1 / their total), floored at ``floor``,
    times the likelihood, at least TINY (never subnormal), into ``out`` (``weights`` kept: a
    refused step costs no copy), and their row and column sums; returns the total. No fastmath
    (a reordered sum depends on alignment, and a restored session must give a replay's bits):
    four partial sums, in the code's order."""
    k2, k3 = weights.shape
    r = a.shape[1]
    z = np.empty(k3)
    col[:] = 0.0
    total = 0.0
    for i in range(k2):
        z[:] = 0.0
        for c in range(r):
            aic = a[i, c]
            for j in range(k3):
                z[j] += aic * bt[c, j]
        for j in range(k3):  # elementwise: vectorised without reordering a sum
            v = max(max(weights[i, j] * scale, floor) * (z[j] * UP), TINY * UP) * DOWN
            out[i, j] = v
            col[j] += v
        s0 = s1 = s2 = s3 = 0.0
        tail = k3 - k3 % 4
        for j in range(0, tail, 4):
            s0 += out[i, j]
            s1 += out[i, j + 1]
            s2 += out[i, j + 2]
            s3 += out[i, j + 3]
        for j in range(tail, k3):
            s0 += out[i, j]
        row[i] = (s0 + s1) + (s2 + s3)
        total += row[i]
    return total


@njit(cache=True)
def solve_hole(ints, floats, profile, player, scratch, choice, rows, strategy):
    """The best response of ``player`` to ``profile`` on one hole's packed tree
    (``evaluation.limit.pack_tree``): its pure rows ``rows`` into ``strategy``; returns the value
    summed over the hole's deals. ``scratch`` (3 I,) and ``choice`` (I,): scratch."""
    cfv = scratch.reshape((choice.shape[0], NUM_ACTIONS))
    cfv[:] = 0.0
    choice[:] = -1
    tree = tree_kernels.unpack_tree(ints, floats)
    value = tree_kernels.sweep(tree, profile, player, True, cfv, scratch[:0], choice)
    write_choices(strategy, rows, choice)
    return value


@njit(cache=True)
def write_choices(strategy, rows, choice):
    """Make the rows ``rows`` of ``strategy`` pure: action ``choice[i]`` at row i."""
    for i in rows:
        for a in range(strategy.shape[1]):
            strategy[i, a] = 0.0
        strategy[i, choice[i]] = 1.0


@njit(cache=True)
def sample_means(marginals, taus, seats, profile):
    """Every opponent's posterior-mean strategy (Alg 5) into its row ``profile[seats[d - 1]]``:
    the sum over samples s of ``marginals[d - 1, s] taus[d - 1, s]``, each row then divided by
    its sum; a term below TINY is left out (never subnormal; by a select: vectorised), as is a
    sample whose weight is (tau <= 1)."""
    k, size, lim = taus.shape[1], taus.shape[2] * taus.shape[3], TINY * UP
    for d_1 in range(seats.shape[0]):
        rows, tau = profile[seats[d_1]], taus[d_1].reshape((k, size))
        out = rows.reshape(size)
        out[:] = 0.0
        for s in range(k):
            w = marginals[d_1, s] * UP
            if w >= lim:
                for e in range(size):
                    v = w * tau[s, e]
                    out[e] += (v if v >= lim else 0.0) * DOWN
        normalise_rows(rows, rows)


@njit(cache=True)
def observe_pair(taus, rows, weights, out, scale, floor, marginals):
    """One Bayes step of a two-opponent joint table (``samples.py``): the likelihood of the hand
    ``rows`` as rank factors (:func:`pair_factors`) and the fused update (``update_joint2``) of
    ``weights`` into ``out``; the normalised marginals into ``marginals`` (2, k). Returns the
    new total."""
    k, m = taus.shape[1], rows.shape[0]
    a, bt = np.empty((k, m)), np.empty((m, k))
    g = pair_factors(taus[0], taus[1], rows, a, bt)
    total = update_joint2(weights, out, a[:, :g], bt[:g], scale, floor, marginals[0], marginals[1])
    if total != 0.0:  # (a hand of probability 0 is refused by the caller)
        for s in range(k):
            marginals[0, s] = marginals[0, s] / total
            marginals[1, s] = marginals[1, s] / total
    return total


@njit(cache=True)
def sample_factors(tau, rows, offset, out):
    """out[s, r] = prod over the moves of assignment r made by the opponent at ``offset`` (1-based)
    of tau[s, information set, action]; ``rows`` is (m, L, 3) as ``Evidence.rows``."""
    k = tau.shape[0]
    m, moves = rows.shape[0], rows.shape[1]
    for s in range(k):
        for r in range(m):
            prob = 1.0
            for j in range(moves):
                if rows[r, j, 0] == offset - 1:
                    prob *= tau[s, rows[r, j, 1], rows[r, j, 2]]
            out[s, r] = prob


@njit(cache=True)
def pair_factors(tau1, tau2, rows, a, bt):
    """Rank factors of the likelihood of a hand with two opponents: z = a[:, :g] @ bt[:g],
    returns g. Assignment r explains the hand under the sample pair (s1, s2) with probability
    f1[s1, r] f2[s2, r] (``sample_factors``); assignments whose moves of the second opponent
    are at the same information sets share their f2 column, so each such group is one rank term
    (in 3-player Kuhn with both hands hidden: 3 terms, not 6). ``a`` is (k, m), ``bt`` (m, k)."""
    k = tau1.shape[0]
    m, moves = rows.shape[0], rows.shape[1]
    group = np.empty(m, dtype=np.int64)
    first = np.empty(m, dtype=np.int64)  # the first assignment of each group
    g = 0
    for r in range(m):
        group[r] = -1
        for c in range(g):
            same = True
            for j in range(moves):
                if rows[r, j, 0] == 1 and rows[r, j, 1] != rows[first[c], j, 1]:
                    same = False
                    break
            if same:
                group[r] = c
                break
        if group[r] < 0:
            group[r] = g
            first[g] = r
            g += 1
    for s in range(k):
        for c in range(g):
            a[s, c] = 0.0
        for r in range(m):
            prob = 1.0
            for j in range(moves):
                if rows[r, j, 0] == 0:
                    prob *= tau1[s, rows[r, j, 1], rows[r, j, 2]]
            a[s, group[r]] += prob
        for c in range(g):
            prob = 1.0
            for j in range(moves):
                if rows[first[c], j, 0] == 1:
                    prob *= tau2[s, rows[first[c], j, 1], rows[first[c], j, 2]]
            bt[c, s] = prob
    return g


@njit(cache=True)
def bayes_leaf_values(tree, taus, opponents, weights, player, deals, out):
    """out[t, j]: the expectation over the joint table ``weights`` (flat, normalised, (k,) * m) of
    the opponents' reach of terminal t under deal ``deals[j]`` times ``player``'s payoff there;
    ``taus[i]`` (k, num_infosets, 3) the samples of the opponent at ``opponents[i]``. A reach
    depends only on the opponent's sequence, named by its last move, 1 + 3 I + a (0: none): one
    sweep gives the sequences and their reaches, then the table is contracted one opponent at a
    time, the last first, over only the sequence combinations some (terminal, deal) meets."""
    seq, reach = _opponent_sequences(tree, taus, opponents, deals)
    child, turned = _contract_others(seq, reach, weights)
    k = taus.shape[1]
    for t in range(tree.terminal_pot.shape[0]):
        cls, pot = tree.terminal_class[t], tree.terminal_pot[t]
        spent = tree.terminal_spent[t, player]
        for j in range(deals.shape[0]):
            total = 0.0
            col, here = child[t, j], seq[0, t, j]
            for s in range(k):
                total += turned[col, s] * reach[0, here, s]
            out[t, j] = total * (tree.share[cls, deals[j], player] * pot - spent)


@njit(cache=True)
def _opponent_sequences(tree, taus, opponents, deals):
    """``(seq, reach)`` for :func:`bayes_leaf_values`: ``seq[i, t, j]`` opponent i's sequence at
    terminal t under deal ``deals[j]`` and ``reach[i, sequence, s]`` its reach under sample s,
    from one pre-order sweep that computes each sequence's reach once."""
    m, k = opponents.shape[0], taus.shape[1]
    num = deals.shape[0]
    size = 1 + NUM_ACTIONS * taus.shape[2]
    seq = np.empty((m, tree.terminal_pot.shape[0], num), dtype=np.int64)
    reach = np.empty((m, size, k))
    done = np.zeros((m, size), dtype=np.bool_)
    last = np.zeros((tree.max_depth + 1, m, num), dtype=np.int64)
    for i in range(m):
        reach[i, 0] = 1.0
        done[i, 0] = True
    for node in range(1, tree.node_player.shape[0]):
        q, rnd, base, a = tree_kernels.move_into(tree, node)
        depth = tree.node_depth[node]
        last[depth] = last[depth - 1]
        for i in range(m):
            if opponents[i] != q:
                continue
            for j in range(num):
                infoset = base + tree.deal_view[rnd, deals[j], q]
                here = 1 + NUM_ACTIONS * infoset + a
                if not done[i, here]:
                    before = last[depth - 1, i, j]
                    for s in range(k):
                        reach[i, here, s] = reach[i, before, s] * taus[i, s, infoset, a]
                    done[i, here] = True
                last[depth, i, j] = here
        t = tree.node_terminal[node]
        if t >= 0:
            seq[:, t] = last[depth]
    return seq, reach


@njit(cache=True)
def _contract_others(seq, reach, weights):
    """``(child, turned)``: the joint table ``weights`` contracted with the reaches of opponents
    1.. (the last first); ``turned[child[t, j], s]`` is what (terminal t, deal j) gets with
    opponent 0's sample s. Level i: ``flat`` is the table contracted with opponents i + 1.. as
    (k^(i + 1), width), column child[t, j] being what (t, j) needs of those opponents."""
    m, num_terminals, num = seq.shape
    size, k = reach.shape[1], reach.shape[2]
    child = np.zeros((num_terminals, num), dtype=np.int64)
    width = 1
    flat = weights
    for i in range(m - 1, 0, -1):
        keys = (seq[i] * width + child).ravel()
        uniq = _distinct(keys, size * width)
        child = np.searchsorted(uniq, keys).reshape((num_terminals, num))
        if width == 1:  # the last opponent: rows of the table times its gathered reaches
            nxt = _times_last_reach(flat, reach[i], uniq, k**i)
        else:
            nxt = _times_reach(flat.reshape((k**i, k, width)), reach[i], uniq)
        flat = nxt.ravel()
        width = uniq.shape[0]
    return child, np.ascontiguousarray(flat.reshape((k, width)).T)


@njit(cache=True)
def _times_last_reach(flat, reach, uniq, rows):
    """``nxt[c, e]``: row c of the table ``flat`` (rows x k, flat) times the last opponent's reach
    of sequence ``uniq[e]`` under each sample."""
    k, count = reach.shape[1], uniq.shape[0]
    gathered = np.empty((k, count))
    for s in range(k):
        for e in range(count):
            gathered[s, e] = reach[uniq[e], s]
    nxt = np.zeros((rows, count))
    for c in range(rows):
        for s in range(k):
            w = flat[c * k + s]
            for e in range(count):
                nxt[c, e] += w * gathered[s, e]
    return nxt


@njit(cache=True)
def _times_reach(table, reach, uniq):
    """``nxt[c, e]``: block c of ``table`` (rows, k, width), at column ``uniq[e] % width``, times
    this opponent's reach of sequence ``uniq[e] // width`` under each sample."""
    rows, k, width = table.shape
    nxt = np.empty((rows, uniq.shape[0]))
    turned = np.empty((width, k))  # one row block of the table, sample axis last
    for c in range(rows):
        for s in range(k):
            for u in range(width):
                turned[u, s] = table[c, s, u]
        for e in range(uniq.shape[0]):
            u, here = uniq[e] % width, uniq[e] // width
            total = 0.0
            for s in range(k):
                total += turned[u, s] * reach[here, s]
            nxt[c, e] = total
    return nxt


@njit(cache=True)
def _distinct(keys, bound):
    """The distinct values of ``keys`` (all in [0, bound)), sorted."""
    if bound <= 4 * keys.shape[0] + 1024:  # small range: mark them
        seen = np.zeros(bound, dtype=np.bool_)
        for x in keys:
            seen[x] = True
        return np.flatnonzero(seen)
    ordered = np.sort(keys)
    keep = np.ones(ordered.shape[0], dtype=np.bool_)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


@njit(cache=True)
def best_response_to_leaf_values(tree, leaf, player, deals, cfv, choice):
    """Backward induction of ``player`` over the deals ``deals``: leaf[t, j] is the value of
    terminal t under deal ``deals[j]`` (others' reach and payoff folded in). Each information set
    of the player takes the action best for it (``evaluation``'s ``player_node_value``, ``cfv``
    (I, 3) its scratch) and writes it to ``choice``. Returns the value. Nodes are in pre-order,
    so a reverse sweep meets every child before its parent."""
    num = deals.shape[0]
    value = np.zeros((tree.node_player.shape[0], num))
    below = np.zeros((NUM_ACTIONS, num))
    seen = np.empty((tree.round_views.shape[0], num), dtype=np.int64)
    for r in range(seen.shape[0]):
        for j in range(num):
            seen[r, j] = tree.deal_view[r, deals[j], player]
    cfv[:] = 0.0
    for node in range(value.shape[0] - 1, -1, -1):
        t, children = tree.node_terminal[node], tree.node_children[node]
        for a in range(NUM_ACTIONS if t < 0 else 0):
            if children[a] >= 0:
                below[a] = value[children[a]]
        if t >= 0:
            value[node] = leaf[t]
        elif tree.node_player[node] != player:
            for a in range(NUM_ACTIONS):
                if children[a] >= 0:
                    value[node] += below[a]
        else:
            r, base = tree.node_round[node], tree.node_base[node]
            views = tree.round_views[r]
            tree_kernels.player_node_value(
                value[node], below, children, cfv, choice, cfv, base, seen[r], views, True
            )
    total = 0.0
    for j in range(num):
        total += value[0, j]
    return total


@njit(cache=True)
def mix_rows(default, candidate, rows, default_reach, candidate_reach, share, out):
    """``out[j]``: information set ``rows[j]`` of the once-per-hand mixture of ``default`` (I, A)
    with probability 1 - ``share`` and ``candidate`` (rows by j) with ``share``: each action's
    mass (1 - share) * default's own reach * its probability + share * candidate's own reach *
    its probability, normalised; a row neither strategy reaches keeps the default's."""
    for j in range(rows.shape[0]):
        i = rows[j]
        weight_default = (1.0 - share) * default_reach[i]
        weight_candidate = share * candidate_reach[i]
        total = 0.0
        for a in range(default.shape[1]):
            mass = weight_default * default[i, a] + weight_candidate * candidate[j, a]
            out[j, a] = mass
            total += mass
        for a in range(default.shape[1]):
            out[j, a] = out[j, a] / total if total > 0.0 else default[i, a]
