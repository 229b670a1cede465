"""Numba kernels of the CFR solvers (see modeling/solve/cfr.py).

One iteration updates the positions one after the other (alternating updates): a sweep of
``oppmodel.modeling.evaluation._limit_kernels.sweep`` gives the position's counterfactual action
values and own reach under the current profile, then :func:`update_position` turns them into
regrets, the average-strategy sums and the position's next strategy, in place.
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.evaluation._limit_kernels import sweep
from oppmodel.modeling.kernel_cache import njit

CFR_PLUS, DCFR = 0, 1
NUM_ACTIONS = 3


@njit(cache=True)
def regret_matching(regrets, legal, out):
    """Each row of ``out``: the positive part of the regrets, normalised; uniform over the legal
    actions when no regret is positive."""
    for i in range(regrets.shape[0]):
        total = 0.0
        count = 0
        for a in range(NUM_ACTIONS):
            if legal[i, a]:
                count += 1
                if regrets[i, a] > 0.0:
                    total += regrets[i, a]
        for a in range(NUM_ACTIONS):
            if not legal[i, a]:
                out[i, a] = 0.0
            elif total > 0.0:
                out[i, a] = max(regrets[i, a], 0.0) / total
            else:
                out[i, a] = 1.0 / count


@njit(cache=True)
def update_position(regrets, sums, current, cfv, own_reach, legal, size, t, params):
    """Regrets, average sums and current strategy of one position after iteration ``t`` (from 1).

    ``params`` = (algorithm, delay, alpha, beta, gamma). CFR+ (Tammelin et al. 2015): regrets
    floored at zero after every update; the average weights iteration t by max(t - delay, 0).
    DCFR (Brown & Sandholm 2019): positive regrets are multiplied by t^alpha / (t^alpha + 1),
    negative ones by t^beta / (t^beta + 1), and the average sums by (t / (t + 1))^gamma, after
    the iteration's contribution is added (so iteration s weighs s^gamma in the end).
    """
    algorithm, delay, alpha, beta, gamma = params
    if algorithm == CFR_PLUS:
        weight = max(t - delay, 0.0)
        keep_positive, keep_negative, keep_sums = 1.0, 0.0, 1.0
    else:
        weight = 1.0
        keep_positive = t**alpha / (t**alpha + 1.0)
        keep_negative = t**beta / (t**beta + 1.0)
        keep_sums = (t / (t + 1.0)) ** gamma
    for i in range(size):
        value = 0.0
        for a in range(NUM_ACTIONS):
            value += current[i, a] * cfv[i, a]
        for a in range(NUM_ACTIONS):
            if not legal[i, a]:
                continue
            r = regrets[i, a] + cfv[i, a] - value
            regrets[i, a] = r * (keep_positive if r > 0.0 else keep_negative)
            sums[i, a] = (sums[i, a] + weight * own_reach[i] * current[i, a]) * keep_sums
    regret_matching(regrets[:size], legal[:size], current[:size])


@njit(cache=True)
def iterate(tree, regrets, sums, current, legal, sizes, done, last, params):
    """Iterations ``done[0] + 1`` .. ``last``, positions updated in turn; ``done[0]`` is the
    iteration the arrays are at (kept with them, so that no interrupt falls between the two)."""
    first = done[0] + 1
    n, num_infosets, _ = current.shape
    cfv = np.empty((num_infosets, NUM_ACTIONS))
    own_reach = np.empty(num_infosets)
    choice = np.empty(num_infosets, dtype=np.int64)
    for t in range(first, last + 1):
        for p in range(n):
            cfv[:] = 0.0
            own_reach[:] = 0.0
            sweep(tree, current, p, False, cfv, own_reach, choice)
            update_position(
                regrets[p], sums[p], current[p], cfv, own_reach, legal[p], sizes[p], t, params
            )
        done[0] = t
