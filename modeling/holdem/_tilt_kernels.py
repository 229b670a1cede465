"""numba kernels of the tilt's fit (:func:`oppmodel.modeling.holdem.tilt.fit_tilt`): its scaling
steps are a few sums over a level's rows a step, and the two levels, with the selection of their
rows and groups between them, one call; numpy paid for both in per-call overhead (~35 ms a refit
of 3-player Kuhn's tilted prior at 60 steps a level, then ~0.75 ms a fit's two levels)."""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.kernel_cache import njit


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
    """``out[k]`` = the row ``exp(log_base[k] + theta[g])`` normalised (-inf stays 0). The
    largest action's exp(0) = 1 and an illegal one's exp(-inf) = 0 are not called for: the same
    bits, a third to two thirds of a step's calls (most rows allow two actions)."""
    top = -np.inf
    for a in range(3):
        top = max(top, log_base[k, a] + theta[g, a])
    total = 0.0
    for a in range(3):
        x = log_base[k, a] + theta[g, a] - top
        out[k, a] = 1.0 if x == 0.0 else 0.0 if x == -np.inf else np.exp(x)
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


@njit(cache=True)
def level_theta(
    log_base: np.ndarray,
    counts: np.ndarray,
    group: np.ndarray,
    groups: int,
    weight: float,
    iterations: int,
    limit: float,
) -> np.ndarray:
    """(groups, 3) :func:`fitted_theta` over the groups that have rows only (numbered in the
    order of their first row: a group's steps never read another's), theta = 0 elsewhere (a
    node level's groups are every decision node, thousands; its rows those of the few reached)."""
    compact = np.full(groups, -1, dtype=np.int64)
    present = np.empty(groups, dtype=np.int64)
    index = np.empty(group.shape[0], dtype=np.int64)
    found = 0
    for k in range(group.shape[0]):
        g = group[k]
        if compact[g] < 0:
            compact[g] = found
            present[found] = g
            found += 1
        index[k] = compact[g]
    fitted = fitted_theta(log_base, counts, index, found, weight, iterations, limit)
    theta = np.zeros((groups, 3))
    for j in range(found):
        theta[present[j]] = fitted[j]
    return theta


@njit(cache=True)
def tilt_levels(
    log_base: np.ndarray,
    counts: np.ndarray,
    seen: np.ndarray,
    node: np.ndarray,
    situation_of_node: np.ndarray,
    num_nodes: int,
    num_situations: int,
    situation_weight: float,
    node_weight: float,
    iterations: int,
    limit: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``fit_tilt``'s two levels over its rows (``log_base``, ``counts`` (k, 3); ``seen``, the
    rows of some visit, the only ones fitted; ``node``, each row's): the rows' log base shifted
    by their situation's tilt, each row's node tilt (k, 3), and the situations' tilt."""
    rows = np.flatnonzero(seen)
    situation = situation_of_node[node]
    log_seen, counts_seen = log_base[rows], counts[rows]
    theta = level_theta(
        log_seen, counts_seen, situation[rows], num_situations, situation_weight, iterations, limit
    )
    shifted = np.empty_like(log_base)
    for k in range(log_base.shape[0]):
        for a in range(3):
            shifted[k, a] = log_base[k, a] + theta[situation[k], a]
    delta = level_theta(
        shifted[rows], counts_seen, node[rows], num_nodes, node_weight, iterations, limit
    )
    return shifted, delta[node], theta
