"""The transposition table of the Spades searches (``SearchTable``).

What a key holds and why sharing values between equal keys is exact: ``_transposition_kernels``.
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.spades.cards import N_PLAYERS
from oppmodel.modeling.perfect_info._transposition_kernels import KEY_WORDS, TableArrays


class SearchTable:
    """Transposition table reusable across searches that share all parameters.

    A search bumps the generation (invalidating every entry in O(1)) whenever its parameters differ
    from the previous search's, so reuse is always safe; within one hand of play the parameters are
    fixed and later searches hit the entries of earlier ones.
    """

    def __init__(self, size_log2: int = 17) -> None:
        if not 8 <= size_log2 <= 26:
            raise InvalidArgumentError("size_log2", f"must be in 8..26, got {size_log2}")
        n = 1 << size_log2
        self.keys = np.zeros((n, KEY_WORDS), dtype=np.uint64)
        self.gen = np.zeros(n, dtype=np.int64)
        self._values: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._generation = 0
        self._params: object = None

    def generation_for(self, params: object) -> int:
        """Generation number to use for a search with ``params`` (hashable)."""
        if params != self._params:
            self._generation += 1
            self._params = params
        return self._generation

    def clear(self) -> None:
        """Invalidate every entry (the next search starts cold)."""
        self._generation += 1
        self._params = None

    def arrays(self, kind: str, n_models: int, generation: int) -> TableArrays:
        """The table as a search of ``kind`` in ``generation`` hands it to the kernel; each kind
        of search has value arrays of its own (made on first use), sharing keys and generations."""
        if kind not in self._values:
            n = self.gen.shape[0]
            self._values[kind] = (np.zeros((n, N_PLAYERS, n_models)), np.zeros(n))
        u, t = self._values[kind]
        return TableArrays(keys=self.keys, gen=self.gen, u=u, t=t, current=generation)
