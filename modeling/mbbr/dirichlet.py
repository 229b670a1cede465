"""The Dirichlet posterior, fitted incrementally (a hand's cost does not grow with the match): a
Dirichlet prior per opponent information set, the hand's likelihood summed over the hidden cards,
and a product of Dirichlets, alpha = alpha0 + expected action counts, each hand's count split over
the card assignments that explain it by collapsed variational Bayes (CVB0; Asuncion, Welling,
Smyth & Teh 2009): an assignment's responsibility is proportional to the product of the posterior
means of its moves with this hand's own contribution left out (the mean-field fit had several
fixed points in Leduc and strayed up to 0.2 from the exact posterior on four-hand data sets;
CVB0 stays within 0.035, tests enumerate it). Each distinct observation is a class keeping its
count and responsibilities; a hand steps its own class and ``REFRESH_PER_HAND`` classes with
hidden cards, round robin (incremental EM); :meth:`DirichletPosterior.converge` runs the steps to
the fixed point. With every card seen this is the exact conjugate posterior.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oppmodel.modeling.mbbr import _dirichlet_kernels as kernels
from oppmodel.modeling.mbbr.evidence import Evidence
from oppmodel.modeling.mbbr.memory import ENTRY_BYTES, array_bytes
from oppmodel.modeling.mbbr.snapshot import SnapshotError, take

CONVERGE_SWEEPS = 500
CONVERGE_TOLERANCE = 1e-9  # largest change of any expected count in the last sweep


class DirichletPosterior:
    """The posterior over the strategies of the opponents of one position (module docstring).
    Each opponent's posterior mean is kept up to date, hand by hand, in its row
    ``profile[seats[d - 1]]`` of a profile the caller owns (the models profile of the position);
    the classes' tables are packed in two arrays, so a hand is one kernel call."""

    def __init__(
        self, alpha0: np.ndarray, profile: np.ndarray, seats: Sequence[int] | np.ndarray
    ) -> None:
        """``alpha0``: (n - 1, num_infosets, 3) prior parameters (0 at illegal actions), opponent
        d - 1 at offset d; ``profile``: (n, num_infosets, 3), C-contiguous; ``seats``: (n - 1,)
        the position of the opponent at each offset."""
        self.alpha0 = np.array(alpha0, dtype=np.float64)
        self._alpha0 = self.alpha0.ravel()
        self._expected = np.zeros_like(self._alpha0)
        self.profile = profile
        self.seats = np.asarray(seats, dtype=np.int64)
        self._scratch = np.zeros((4, len(self._alpha0)))  # the kernels' (``step_class``)
        self._scratch[2:] = np.nan
        self._index: dict[object, int] = {}  # distinct observation -> its class
        self._empty = kernels.new_dirichlet_tables(16, 16, 64)  # copied by :meth:`at_prior`
        self._ints, self._floats = self._empty[0].copy(), self._empty[1].copy()
        self.version = 0  # bumped by every change of alpha
        self._flat = profile.reshape(-1)  # a view: what the kernels write
        self._write_means()
        self._prior_profile = profile.copy()  # shared by :meth:`at_prior`'s posteriors

    def at_prior(self) -> DirichletPosterior:
        """A posterior like this one at the prior, no hands seen, with a profile of its own:
        cheaper than building one (change detection opens one every few hands)."""
        fresh = object.__new__(DirichletPosterior)
        fresh.__dict__.update(self.__dict__)
        fresh._expected = np.zeros(len(self._alpha0))
        fresh.profile = self._prior_profile.copy()
        fresh._flat = fresh.profile.reshape(-1)
        fresh._index = {}
        fresh._ints, fresh._floats = self._empty[0].copy(), self._empty[1].copy()
        fresh.version = 0
        return fresh

    @property
    def expected(self) -> np.ndarray:
        """(n - 1, num_infosets, 3) the expected counts, a view the fit keeps up to date."""
        return self._expected.reshape(self.alpha0.shape)

    @property
    def alpha(self) -> np.ndarray:
        """(n - 1, num_infosets, 3) the posterior's parameters, alpha0 + expected counts."""
        return (self._alpha0 + self._expected).reshape(self.alpha0.shape)

    def observe(self, key: object, evidence: Evidence) -> bool:
        """Add one hand and update incrementally. ``key`` identifies what was seen, ``evidence``
        its assignments. Returns whether the hand was added: a step that would not end in
        finite parameters (not seen within the validated ranges of the prior; this is the
        guard) leaves everything as it was."""
        o = self._index.get(key, -1)
        entries, weights = _NONE, _NONE.ravel()
        if o < 0:
            entries, weights = evidence.entries, evidence.weights
            self._ints, self._floats = kernels.tables_with_room(
                self._ints, self._floats, *entries.shape
            )
            o = self._index[key] = len(self._index)
        applied = kernels.dirichlet_observe(
            self._ints, self._floats, o, entries, weights, self._alpha0, self._expected,
            self._scratch, self._flat, self.seats,
        )  # fmt: skip
        self.version += applied
        return applied

    def converge(self, max_sweeps: int = CONVERGE_SWEEPS) -> None:
        """Steps over every class with hidden cards until no expected count moves by more than
        ``CONVERGE_TOLERANCE`` (the fixed point of the CVB0 equations), ``max_sweeps`` at most."""
        kernels.dirichlet_recount(self._ints, self._floats, self._expected)
        self._write_means()
        kernels.dirichlet_converge(
            self._ints, self._floats, self._alpha0, self._expected, self._scratch,
            self.profile.reshape(-1), self.seats, CONVERGE_TOLERANCE, max_sweeps,
        )  # fmt: skip
        self.version += 1

    def mean(self, d: int) -> np.ndarray:
        """Posterior-mean strategy (num_infosets, 3) of the opponent at offset ``d`` (a view of
        the profile's row: do not modify it)."""
        return self.profile[self.seats[d - 1]]

    def concentration(self, d: int) -> np.ndarray:
        """Sum of alpha per information set of the opponent at offset ``d``: prior weight plus
        expected visits."""
        return self.alpha[d - 1].sum(axis=1)

    def state(self) -> tuple[list[object], dict[str, np.ndarray]]:
        """What the observations changed (``modeling/mbbr/snapshot.py``): the distinct
        observations' keys in the order their classes were made, and the arrays ``expected``,
        ``counts``, ``row_start``, ``entry_start``, ``entries``, ``resp``, ``hidden``, ``cursor``
        (0-d), ``means`` (the opponents' rows of the profile, kept as the kernels updated them)
        and, where a row stands for several assignments, ``log_weights``."""
        tables = kernels.dirichlet_tables(self._ints, self._floats)
        arrays = {name: table.copy() for name, table in zip(_TABLES, tables, strict=True)}
        arrays["expected"] = self._expected.copy()
        arrays["cursor"] = np.array(self._ints[kernels.CURSOR], dtype=np.int64)
        arrays["means"] = self.profile[self.seats].copy()
        names = _STATE_ALL if arrays["log_weights"].any() else _STATE_ALL[:-1]
        return list(self._index), {name: arrays[name] for name in names}

    def restore(self, keys: Sequence[object], state: dict[str, np.ndarray]) -> None:
        """Set what ``state()`` of a posterior with the same prior returned; SnapshotError, with
        nothing changed, if the arrays do not fit this posterior or each other."""
        m = len(keys)
        expected = take(state, "expected", "f8", self._expected.shape)
        counts = take(state, "counts", "f8", (m,))
        row_start = take(state, "row_start", "i8", (m + 1,))
        entry_start = take(state, "entry_start", "i8", (int(row_start[-1]) + 1,))
        entries = take(state, "entries", "i8", (int(entry_start[-1]),))
        resp = take(state, "resp", "f8", (int(row_start[-1]),))
        logw = take(state, "log_weights", "f8", resp.shape) if "log_weights" in state else 0 * resp
        hidden = take(state, "hidden", "i8", (None,))
        cursor = int(take(state, "cursor", "i8", ()))
        means = take(state, "means", "f8", self.profile[self.seats].shape)
        rows = np.diff(row_start)
        if (
            row_start[0] != 0
            or entry_start[0] != 0
            or np.any(rows < 1)
            or np.any(np.diff(entry_start) < 0)
            or np.any((entries < 0) | (entries >= len(expected)))
            or not np.array_equal(hidden, np.flatnonzero(rows > 1))
            or not 0 <= cursor <= max(len(hidden) - 1, 0)
        ):
            raise SnapshotError("snapshot tables of the Dirichlet posterior are not consistent")
        ints, floats = kernels.new_dirichlet_tables(m, len(resp), len(entries))
        sizes = (m, len(resp), len(entries), len(hidden), cursor)
        ints[: len(sizes)] = sizes
        tables = kernels.dirichlet_tables(ints, floats)
        values = (row_start, entry_start, entries, hidden, counts, resp, logw)
        for table, value in zip(tables, values, strict=True):
            table[:] = value
        self._ints, self._floats = ints, floats
        self._expected[:] = expected
        self._index = {key: o for o, key in enumerate(keys)}
        self.profile[self.seats] = means
        self.version += 1

    def nbytes(self) -> int:
        """Approximate bytes held: the arrays (at capacity) and the index of observations."""
        arrays = [self.alpha0, self._expected, self._scratch, self._ints, self._floats]
        return array_bytes(arrays) + len(self._index) * ENTRY_BYTES

    def _write_means(self) -> None:
        alpha = self.alpha
        self.profile[self.seats] = alpha / alpha.sum(axis=2, keepdims=True)


_NONE = np.zeros((0, 0), dtype=np.int64)  # no new class's entries
# the arrays of ``_dirichlet_kernels.dirichlet_tables``, as ``state()`` names them
_TABLES = ("row_start", "entry_start", "entries", "hidden", "counts", "resp", "log_weights")
# ``state()``'s arrays, in the order snapshots have always stored them
_STATE = ("expected", "counts", "row_start", "entry_start", "entries", "resp", "hidden", "cursor")
_STATE_ALL = (*_STATE, "means", "log_weights")
