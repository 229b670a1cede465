"""Numba kernels of the sample posterior (see modeling/mbbr/samples.py)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def normalise_rows(mixture, out):
    """out[i] = mixture[i] / its sum, or zeros where the sum is not positive (``mixture`` and
    ``out`` are 2-D; see ``priors.mixed_distributions``)."""
    for i in range(mixture.shape[0]):
        total = 0.0
        for a in range(mixture.shape[1]):
            total += mixture[i, a]
        for a in range(mixture.shape[1]):
            out[i, a] = mixture[i, a] / total if total > 0.0 else 0.0


@njit(cache=True)
def card_likelihoods(tau, nodes, actions, infoset_of, out):
    """out[s, x] = prod over the opponent's actions of tau[s, infoset(x, node), action].

    ``tau`` is (k, num_infosets, 2); ``nodes``/``actions`` list the opponent's moves in the hand.
    """
    k = tau.shape[0]
    num_cards = out.shape[1]
    for s in range(k):
        for x in range(num_cards):
            prob = 1.0
            for m in range(nodes.shape[0]):
                prob *= tau[s, infoset_of[nodes[m], x], actions[m]]
            out[s, x] = prob


@njit(cache=True)
def likelihood_factors_3p(
    tau1, nodes1, actions1, tau2, nodes2, actions2, infoset_of, first_cards, group_of, groups, a, bt
):
    """Rank factors of a 3-player likelihood: z = a @ bt.

    Assignment m gives opponent 1 card ``first_cards[m]`` and opponent 2 card
    ``groups[group_of[m]]``; assignments sharing opponent 2's card are summed into one column.
    """
    k = tau1.shape[0]
    for s in range(k):
        for g in range(groups.shape[0]):
            a[s, g] = 0.0
    for s in range(k):
        for m in range(first_cards.shape[0]):
            prob = 1.0
            for i in range(nodes1.shape[0]):
                prob *= tau1[s, infoset_of[nodes1[i], first_cards[m]], actions1[i]]
            a[s, group_of[m]] += prob
        for g in range(groups.shape[0]):
            prob = 1.0
            for i in range(nodes2.shape[0]):
                prob *= tau2[s, infoset_of[nodes2[i], groups[g]], actions2[i]]
            bt[g, s] = prob


@njit(cache=True, fastmath=True)
def update_joint2(weights, out, a, bt, scale, floor, row, col):
    """One Bayes step of a (k2, k3) joint posterior whose likelihood is a @ bt (rank r).

    ``weights`` holds the previous unnormalised weights; ``scale`` = 1 / their total renormalises
    them on the fly, and no normalised weight may fall below ``floor``. Writes the new unnormalised
    weights into ``out`` (``weights`` is left as it was, so a step that must be refused costs no
    copy) and their row and column sums; returns (total, sum of squares).
    """
    k2, k3 = weights.shape
    r = a.shape[1]
    z = np.empty(k3)
    for j in range(k3):
        col[j] = 0.0
    total = 0.0
    sumsq = 0.0
    for i in range(k2):
        for j in range(k3):
            z[j] = 0.0
        for c in range(r):
            aic = a[i, c]
            for j in range(k3):
                z[j] += aic * bt[c, j]
        acc = 0.0
        for j in range(k3):
            v = max(weights[i, j] * scale, floor) * z[j]
            out[i, j] = v
            acc += v
            col[j] += v
            sumsq += v * v
        row[i] = acc
        total += acc
    return total, sumsq


@njit(cache=True)
def bayes_leaf_weights(
    expected, strides, seq_sizes, sequences, opponents, position, num_cards, deals, payoffs
):
    """Leaf weights of our best response to the joint posterior.

    ``expected`` (flattened) holds, for every combination of the opponents' (card, own action
    sequence), the posterior expectation of the product of their reach probabilities; opponent j's
    pair (c, q) sits at offset (c * seq_sizes[j] + q) * strides[j]. ``sequences[j, t]`` is
    opponent j's sequence at terminal t.
    """
    num_terminals, num_deals, _ = payoffs.shape
    w = np.zeros((num_cards, num_terminals))
    for d in range(num_deals):
        c = deals[d, position]
        for t in range(num_terminals):
            idx = 0
            for j in range(opponents.shape[0]):
                idx += (deals[d, opponents[j]] * seq_sizes[j] + sequences[j, t]) * strides[j]
            w[c, t] += expected[idx] * payoffs[t, d, position]
    return w / num_deals
