"""Numba kernel of the blueprint's strategy rows (``blueprint.py``): one betting history's rows
laid out by view index, what a decision-time tree reads at each node it makes (numpy's fancy
assignment of a few rows with an int32 index cost more than the rest of making the node)."""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.kernel_cache import njit


@njit(cache=True)
def group_table(starts, views, probs, group, size):
    """(size, 3) the rows ``starts[group]:starts[group + 1]`` of ``probs`` at their ``views``,
    NaN in the views that have none (every view when ``group`` is -1)."""
    out = np.full((size, probs.shape[1]), np.nan)
    if group >= 0:
        for r in range(starts[group], starts[group + 1]):
            out[views[r]] = probs[r]
    return out
