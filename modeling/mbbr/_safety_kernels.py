"""Numba kernel of the safety bankroll's mixture (``safety.py``, ``safety.py``)."""

from __future__ import annotations

from numba import njit


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
