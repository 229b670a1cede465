"""Numba kernels of the sample posterior (``samples.py``) and the priors' mixtures."""

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
