"""Numba kernels of the Dirichlet posterior (see modeling/mbbr/dirichlet.py)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def digamma(x):
    """psi(x) for x > 0: recurrence up to 10, then the asymptotic series (error < 1e-12)."""
    result = 0.0
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))))
    return result + math.log(x) - 0.5 / x - series


@njit(cache=True)
def fit(alpha0, alpha, counts, row_start, entry_start, moves, max_iterations, tolerance):
    """Coordinate-ascent variational Bayes over a histogram of observations; updates ``alpha``.

    Observation o (seen ``counts[o]`` times) is explained by the hidden-card assignments
    ``row_start[o]:row_start[o + 1]``; assignment r makes the opponents' moves listed in rows
    ``entry_start[r]:entry_start[r + 1]`` of ``moves``, each (opponent, information set, action).
    Each sweep weighs every assignment by exp(E_q[log likelihood]) and sets alpha = alpha0 +
    expected counts; the sweeps stop once no parameter moves by more than ``tolerance``. Returns
    whether the fit ended in finite positive parameters; if not, ``alpha`` is left as it was.
    """
    before = alpha.copy()
    entry_opponent, entry_infoset, entry_action = moves[:, 0], moves[:, 1], moves[:, 2]
    num_opponents, num_infosets, _ = alpha.shape
    elog = np.empty_like(alpha)
    expected = np.empty_like(alpha)
    scores = np.empty(max(row_start[-1], 1))
    # Only the information sets some observation may have visited are scored (the others keep
    # alpha0): their digammas are most of a sweep.
    visited = np.zeros((num_opponents, num_infosets), dtype=np.bool_)
    for e in range(moves.shape[0]):
        visited[entry_opponent[e], entry_infoset[e]] = True
    sweeps = 0
    while sweeps < max_iterations:
        sweeps += 1
        for d in range(num_opponents):
            for i in range(num_infosets):
                if not visited[d, i]:
                    continue
                total = digamma(alpha[d, i, 0] + alpha[d, i, 1])
                for a in range(2):
                    elog[d, i, a] = digamma(alpha[d, i, a]) - total
        expected[:] = 0.0
        for o in range(counts.shape[0]):
            first, last = row_start[o], row_start[o + 1]
            best = -np.inf
            for r in range(first, last):
                s = 0.0
                for e in range(entry_start[r], entry_start[r + 1]):
                    s += elog[entry_opponent[e], entry_infoset[e], entry_action[e]]
                scores[r] = s
                best = max(best, s)
            norm = 0.0
            for r in range(first, last):
                scores[r] = math.exp(scores[r] - best)
                norm += scores[r]
            for r in range(first, last):
                w = counts[o] * scores[r] / norm
                for e in range(entry_start[r], entry_start[r + 1]):
                    expected[entry_opponent[e], entry_infoset[e], entry_action[e]] += w
        change = 0.0
        for d in range(num_opponents):
            for i in range(num_infosets):
                for a in range(2):
                    updated = alpha0[d, i, a] + expected[d, i, a]
                    change = max(change, abs(updated - alpha[d, i, a]))
                    alpha[d, i, a] = updated
        if change <= tolerance:
            break
    for x in alpha.ravel():
        if not (math.isfinite(x) and x > 0.0):
            alpha[:] = before
            return False
    return True
