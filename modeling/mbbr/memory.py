"""Approximate memory of models, for the service's budget of live sessions."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

ENTRY_BYTES = 160  # a cache entry of small Python objects (a tuple key and its slot), measured
ARRAY_OBJECT_BYTES = 112  # an ndarray object besides its data (sys.getsizeof of an empty one)


def array_bytes(arrays: Iterable[np.ndarray]) -> int:
    """Bytes of ``arrays``: the memory behind them, each buffer counted once (views share
    theirs), and each array object's own header."""
    buffers, objects = {}, 0
    for array in arrays:
        objects += 1
        base = array
        while isinstance(base.base, np.ndarray):
            base = base.base
        buffers[id(base)] = base.nbytes
    return sum(buffers.values()) + objects * ARRAY_OBJECT_BYTES
