"""numba kernel of the tilt's scaling steps (:func:`oppmodel.modeling.holdem.tilt.fit_level`):
each step is a few sums over a level's rows, which numpy paid for in per-call overhead (~35 ms
a refit of 3-player Kuhn's tilted prior, 60 steps a level)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _by_group_rows(
    rows: np.ndarray, visits: np.ndarray, group: np.ndarray, out: np.ndarray
) -> None:
    """``out`` (groups, 3) = the sums by group of ``visits[k] * rows[k]`` (rows in order)."""
    out[:] = 0.0
    for k in range(rows.shape[0]):
        g = group[k]
        for a in range(3):
            out[g, a] += visits[k] * rows[k, a]


@njit(cache=True)
def _tilted_row(log_base: np.ndarray, theta: np.ndarray, k: int, g: int, out: np.ndarray) -> None:
    """``out[k]`` = the row ``exp(log_base[k] + theta[g])`` normalised (-inf stays 0)."""
    top = -np.inf
    for a in range(3):
        top = max(top, log_base[k, a] + theta[g, a])
    total = 0.0
    for a in range(3):
        out[k, a] = np.exp(log_base[k, a] + theta[g, a] - top)
        total += out[k, a]
    for a in range(3):
        out[k, a] /= total


@njit(cache=True)
def fitted_theta(
    log_base: np.ndarray,
    counts: np.ndarray,
    group: np.ndarray,
    groups: int,
    weight: float,
    iterations: int,
    limit: float,
) -> np.ndarray:
    """(groups, 3) the log multipliers after ``iterations`` scaling steps (``fit_level``'s
    text), groups numbered 0 .. ``groups`` - 1; call's multiplier the reference."""
    rows = counts.shape[0]
    visits = np.empty(rows)
    total = np.zeros(groups)
    for k in range(rows):
        visits[k] = counts[k, 0] + counts[k, 1] + counts[k, 2]
        total[group[k]] += visits[k]
    seen = total > 0.0
    for g in range(groups):
        if not seen[g]:
            total[g] = 1.0
    tilted = np.empty((rows, 3))
    zero = np.zeros((groups, 3))
    for k in range(rows):
        _tilted_row(log_base, zero, k, group[k], tilted)
    prior = np.empty((groups, 3))
    _by_group_rows(tilted, visits, group, prior)
    observed = np.zeros((groups, 3))
    for k in range(rows):
        for a in range(3):
            observed[group[k], a] += counts[k, a]
    log_target = np.empty((groups, 3))
    factor = np.empty(groups)
    for g in range(groups):
        factor[g] = (1.0 + weight / total[g]) / total[g]  # the pseudo-visits predicted as visits
        for a in range(3):
            log_target[g, a] = np.log((observed[g, a] + weight * prior[g, a] / total[g]) / total[g])
    theta = np.zeros((groups, 3))
    predicted = np.empty((groups, 3))
    for _ in range(iterations):
        for k in range(rows):
            _tilted_row(log_base, theta, k, group[k], tilted)
        _by_group_rows(tilted, visits, group, predicted)
        for g in range(groups):
            if not seen[g]:
                continue
            for a in range(3):
                step = log_target[g, a] - np.log(predicted[g, a] * factor[g])
                if np.isfinite(step):  # else an action no row allows, or none saw
                    theta[g, a] = min(max(theta[g, a] + step, -limit), limit)
            reference = theta[g, 1]
            for a in range(3):
                theta[g, a] -= reference
    return theta
