"""Numba kernels for exact evaluation of Kuhn profiles (see modeling/evaluation/kuhn.py).

Plain arrays in, plain arrays out; the game's arrays come from
:class:`oppmodel.modeling.games.kuhn.KuhnGame`.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def expected_values(
    profile, node_player, infoset_of, path_nodes, path_actions, path_len, deals, payoffs
):
    """Expected chips won by each position: sum over deals and terminals of reach x payoff."""
    num_terminals, num_deals, n = payoffs.shape
    ev = np.zeros(n)
    for d in range(num_deals):
        for t in range(num_terminals):
            prob = 1.0
            for s in range(path_len[t]):
                node = path_nodes[t, s]
                p = node_player[node]
                prob *= profile[p, infoset_of[node, deals[d, p]], path_actions[t, s]]
            if prob != 0.0:
                for i in range(n):
                    ev[i] += prob * payoffs[t, d, i]
    return ev / num_deals


@njit(cache=True)
def values_against_weights(
    strategy, weights, player, node_player, infoset_of, path_nodes, path_actions, path_len
):
    """values[h] = sum over (card c, terminal t) of weights[h, c, t] x the reach of t by the
    player's own actions under ``strategy`` holding c: the player's expected value against each
    of several leaf weights (see ``leaf_weights``)."""
    num_weights, num_cards, num_terminals = weights.shape
    values = np.zeros(num_weights)
    for c in range(num_cards):
        for t in range(num_terminals):
            reach = 1.0
            for s in range(path_len[t]):
                node = path_nodes[t, s]
                if node_player[node] == player:
                    reach *= strategy[infoset_of[node, c], path_actions[t, s]]
            if reach != 0.0:
                for h in range(num_weights):
                    values[h] += weights[h, c, t] * reach
    return values


@njit(cache=True)
def leaf_weights(
    profile,
    player,
    num_cards,
    node_player,
    infoset_of,
    path_nodes,
    path_actions,
    path_len,
    deals,
    payoffs,
):
    """w[c, t]: P(deal, others reach t) x payoff of ``player`` holding c, summed over deals.

    The player's own actions are left out: they are what a best response chooses.
    """
    num_terminals, num_deals, _ = payoffs.shape
    w = np.zeros((num_cards, num_terminals))
    for d in range(num_deals):
        c = deals[d, player]
        for t in range(num_terminals):
            prob = 1.0
            for s in range(path_len[t]):
                node = path_nodes[t, s]
                p = node_player[node]
                if p != player:
                    prob *= profile[p, infoset_of[node, deals[d, p]], path_actions[t, s]]
            w[c, t] += prob * payoffs[t, d, player]
    return w / num_deals


@njit(cache=True)
def _node_values(
    w, c, strategy, choose, player, node_player, node_children, node_terminal, infoset_of, v
):
    """Fill ``v`` with every node's value for the player holding card ``c``: it plays ``strategy``
    or, if ``choose``, the better action (ties go to pass), written into ``strategy``.

    Children have larger ids than parents, so one reverse sweep is a backward induction; a public
    node of the player with a given card is exactly one of its information sets.
    """
    for node in range(node_player.shape[0] - 1, -1, -1):
        t = node_terminal[node]
        if t >= 0:
            v[node] = w[c, t]
            continue
        pass_value = v[node_children[node, 0]]
        bet_value = v[node_children[node, 1]]
        if node_player[node] == player:
            idx = infoset_of[node, c]
            if not choose:
                v[node] = strategy[idx, 0] * pass_value + strategy[idx, 1] * bet_value
            elif bet_value > pass_value:
                strategy[idx, 0], strategy[idx, 1] = 0.0, 1.0
                v[node] = bet_value
            else:
                strategy[idx, 0], strategy[idx, 1] = 1.0, 0.0
                v[node] = pass_value
        else:
            v[node] = pass_value + bet_value


@njit(cache=True)
def backward_induction(
    w, player, node_player, node_children, node_terminal, infoset_of, num_infosets
):
    """Best response of ``player`` to leaf weights ``w[card, terminal]``: (strategy, value)."""
    strategy = np.full((num_infosets, 2), 0.5)
    v = np.empty(node_player.shape[0])
    value = 0.0
    for c in range(w.shape[0]):
        _node_values(
            w, c, strategy, True, player, node_player, node_children, node_terminal, infoset_of, v
        )
        value += v[0]
    return strategy, value


@njit(cache=True)
def deviation_gains(
    w, strategy, player, node_player, node_children, node_terminal, infoset_of, num_infosets
):
    """Per information set of ``player``: what switching to its better action there would gain,
    the rest of ``strategy`` kept, given leaf weights ``w[card, terminal]``.

    A backward sweep values every node under ``strategy``; a forward sweep gives the player's own
    reach of each node; the gain at a node is that reach times (best action value - strategy's).
    """
    num_nodes = node_player.shape[0]
    gains = np.zeros(num_infosets)
    v = np.empty(num_nodes)
    reach = np.empty(num_nodes)
    for c in range(w.shape[0]):
        _node_values(
            w, c, strategy, False, player, node_player, node_children, node_terminal, infoset_of, v
        )
        reach[0] = 1.0
        for node in range(num_nodes):
            if node_terminal[node] >= 0:
                continue
            pass_child, bet_child = node_children[node, 0], node_children[node, 1]
            if node_player[node] == player:
                idx = infoset_of[node, c]
                best = max(v[pass_child], v[bet_child])
                gains[idx] += reach[node] * (best - v[node])
                reach[pass_child] = reach[node] * strategy[idx, 0]
                reach[bet_child] = reach[node] * strategy[idx, 1]
            else:
                reach[pass_child] = reach[node]
                reach[bet_child] = reach[node]
    return gains
