"""Numba kernel of change detection (see modeling/mbbr/change.py)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def log_predictives(models, entries, ends, out):
    """``out[r]`` = log of the probability run r's models give the opponents' moves of one hand,
    summed over the hidden-card assignments: ``models[r, d - 1]`` (num_infosets, 2) is run r's
    model of the opponent at offset d; assignment a makes the moves in rows
    ``ends[a - 1]:ends[a]`` of ``entries``, each (offset - 1, information set, action)
    (``evidence.move_table``). -inf where no assignment explains the moves."""
    for r in range(models.shape[0]):
        total = 0.0
        first = 0
        for a in range(ends.shape[0]):
            likelihood = 1.0
            for e in range(first, ends[a]):
                likelihood *= models[r, entries[e, 0], entries[e, 1], entries[e, 2]]
            total += likelihood
            first = ends[a]
        out[r] = math.log(total) if total > 0.0 else -np.inf
