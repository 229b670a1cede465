"""Numba kernel of change detection (see modeling/mbbr/change.py)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def log_predictives(models, infoset_of, assignments, move_offset, move_node, move_action, out):
    """``out[r]`` = log of the probability run r's models give the opponents' moves of one hand,
    summed over the hidden-card assignments: ``models[r, d - 1]`` (num_infosets, 2) is run r's
    model of the opponent at offset d, ``assignments`` (m, n - 1) their possible cards, and move
    j is ``move_action[j]`` at decision node ``move_node[j]`` by the opponent at offset
    ``move_offset[j] + 1``. -inf where no assignment explains the moves."""
    for r in range(models.shape[0]):
        total = 0.0
        for a in range(assignments.shape[0]):
            likelihood = 1.0
            for j in range(move_node.shape[0]):
                d = move_offset[j]
                infoset = infoset_of[move_node[j], assignments[a, d]]
                likelihood *= models[r, d, infoset, move_action[j]]
            total += likelihood
        out[r] = math.log(total) if total > 0.0 else -np.inf
