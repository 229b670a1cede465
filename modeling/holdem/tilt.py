"""The hold'em posterior's hierarchical prior: the blueprint tilted per betting situation and per
betting node, fitted to what the opponent did (docs/modeling.md, "Hold'em opponent models").

A Dirichlet per (betting node, bucket) learns nothing at a bucket, or a node, it has not seen,
while the opponent's action at a node is public: its frequency there is observed every time the
node is reached, whatever the cards. So the prior mean of each information set i of node n is the
blueprint's row (clipped to ``[epsilon, 1 - epsilon]`` on the legal actions, as MBBR's informed
prior) times a multiplier per action, renormalised:

    mean_i(a)  is proportional to  base_i(a) * exp(theta_c(a) + delta_n(a))

with ``theta_c`` shared by every node of a *situation* c (the round, whether a bet is to be called,
whether a raise is allowed: what the panel's styles decide by, with the hand's strength) and
``delta_n`` the node's own. A tilt keeps the blueprint's order of the buckets (stronger buckets
raise more) while moving the node's average to the opponent's. Both are fitted as a
maximum-likelihood multinomial logit with the blueprint as offset (generalised iterative scaling:
each action's multiplier scaled by observed over predicted), from the fit's expected counts: at
node n, ``visits_i`` (the expected number of times bucket i reached n: the responsibilities of the
hidden hole pairs) and the node's action counts (exact: each hand's action at n is public and every
assignment of its cards has it). Each level is shrunk toward no tilt by ``weight`` pseudo-visits
that act as the level below predicts. A situation pools every node of it, so what the opponent did
on the flop's unopened nodes moves the nodes of that kind it never reached.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from oppmodel.modeling.holdem._tilt_kernels import level_theta, tilt_levels
from oppmodel.modeling.holdem.sets import CompiledSets, LazySets

SITUATION_WEIGHT = 2.0  # pseudo-visits a situation's tilt is shrunk to none by
NODE_WEIGHT = 8.0  # pseudo-visits a node's own tilt is shrunk to its situation's by
ITERATIONS = 60  # scaling steps per level (each halves the error or better on these fits)
LIMIT = 12.0  # largest |log multiplier|: keeps the rows finite and every legal action possible


class TiltMap:
    """The nodes and situations of one position's information sets (the opponent's), in either
    numbering of the sets (:mod:`oppmodel.modeling.holdem.sets`)."""

    def __init__(self, sets: CompiledSets | LazySets, position: int) -> None:
        self.position = position
        bases, views, situations = sets.decision_nodes(position)
        node_of = np.full(sets.capacity, -1, dtype=np.int64)
        for k, (base, count) in enumerate(zip(bases.tolist(), views.tolist(), strict=True)):
            node_of[base : base + count] = k
        self.rows = np.flatnonzero(node_of >= 0)  # the information sets of a node
        self.node_of = node_of[self.rows]
        # a situation's index is its code (round, fold legal, raise legal): the same in any
        # numbering, so a tilt fitted once applies to sets numbered later
        self.situation_of_node = situations
        self.num_nodes = len(bases)
        self.num_situations = 4 * sets.gamedef.num_rounds
        self.legal = sets.legal_mask[position, self.rows]


class Archive(NamedTuple):
    """One opponent's expected counts at rows no longer numbered (folded counts of nodes a
    bounded numbering dropped and no longer keeps whole: :meth:`Dropped.bounded`), kept for the
    situation level of :func:`fit_tilt`, which they would feed had they stayed. Rows of the
    same situation and log base row are one, their counts added: a scaling step's sums are
    linear in a row's counts given those two (the same fit up to the order of the sums). So it
    never holds more rows than there are distinct (situation, clipped blueprint row) pairs
    among the opponent's sets: a bound of the blueprint's, not of the hands."""

    log_base: np.ndarray  # (k, 3) the clipped blueprint row's logs (-inf where illegal)
    counts: np.ndarray  # (k, 3)
    situation: np.ndarray  # (k,) int64

    @classmethod
    def empty(cls) -> Archive:
        return cls(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, dtype=np.int64))

    def merged(self, log_base: np.ndarray, counts: np.ndarray, situation: np.ndarray) -> Archive:
        """This archive with the rows given added (merged by situation and log base row)."""
        log_base = np.concatenate([self.log_base, log_base])
        counts = np.concatenate([self.counts, counts])
        situation = np.concatenate([self.situation, situation])
        keys = np.column_stack([situation.astype(np.float64), log_base])
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        added = np.zeros((len(first), 3))
        np.add.at(added, inverse.ravel(), counts)
        return Archive(log_base[first], added, situation[first])


class Dropped:
    """One opponent's nodes a bounded numbering dropped while folded counts were at them, kept
    whole by betting, oldest first (:func:`~oppmodel.modeling.holdem.window.bound_numbering`):
    every row of the node (a view no count reached too), its counts, and the node's own tilt of
    the last refit, which :func:`fit_tilt` fits as it fits a numbered node's. A kept node met
    again is numbered with exactly the prior parameters and folded counts it would have had
    never dropped (:meth:`alpha0`); one merged into the :class:`Archive` (the oldest, beyond the
    bound) only feeds its situation's tilt, as every archived row does."""

    def __init__(
        self,
        bettings: list[str],
        starts: np.ndarray,
        log_base: np.ndarray,
        counts: np.ndarray,
        situation: np.ndarray,
        delta: np.ndarray,
    ) -> None:
        """``bettings`` (m,); ``starts`` (m + 1,) int64, node j's rows ``starts[j]:starts[j +
        1]`` of ``log_base`` and ``counts`` (k, 3); ``situation`` (m,) int64 and ``delta``
        (m, 3) per node."""
        self.bettings, self.starts = bettings, starts
        self.log_base, self.counts = log_base, counts
        self.situation, self.delta = situation, delta
        self.index = {betting: j for j, betting in enumerate(bettings)}

    @classmethod
    def empty(cls) -> Dropped:
        rows, nodes = np.zeros((0, 3)), np.zeros(0, dtype=np.int64)
        return cls([], np.zeros(1, dtype=np.int64), rows, rows.copy(), nodes, rows.copy())

    @property
    def rows(self) -> int:
        """The rows kept (every node's views)."""
        return int(self.starts[-1])

    def arrays(self) -> dict[str, np.ndarray]:
        """What a snapshot keeps (:meth:`of_arrays` reads it back)."""
        bettings = np.array(self.bettings, dtype=str).reshape(len(self.bettings))
        return {
            "bettings": bettings,
            "starts": self.starts,
            "log_base": self.log_base,
            "counts": self.counts,
            "situation": self.situation,
            "delta": self.delta,
        }

    @classmethod
    def of_arrays(cls, arrays: dict[str, np.ndarray]) -> Dropped:
        """The store of :meth:`arrays` (KeyError / ValueError if they do not fit together)."""
        bettings = [str(b) for b in arrays["bettings"]]
        starts = np.asarray(arrays["starts"], dtype=np.int64)
        rows, nodes = int(starts[-1]), len(bettings)
        if starts.shape != (nodes + 1,) or starts[0] != 0 or np.any(np.diff(starts) < 1):
            raise ValueError("the dropped nodes' row starts do not fit their bettings")
        shapes = {
            "log_base": ((rows, 3), np.float64),
            "counts": ((rows, 3), np.float64),
            "situation": ((nodes,), np.int64),
            "delta": ((nodes, 3), np.float64),
        }
        read = []
        for name, (shape, dtype) in shapes.items():
            array = np.array(arrays[name], dtype=dtype)  # a copy of our own
            if array.shape != shape:
                raise ValueError(f"the dropped nodes' {name} is {array.shape}, not {shape}")
            read.append(array)
        return cls(bettings, starts, *read)

    def added(
        self,
        bettings: list[str],
        views: np.ndarray,
        log_base: np.ndarray,
        counts: np.ndarray,
        situation: np.ndarray,
    ) -> Dropped:
        """This store with nodes added after its own (``views`` (m,) rows each, in order), their
        tilt none until the next fit."""
        starts = np.concatenate([self.starts, self.rows + np.cumsum(views)])
        return Dropped(
            self.bettings + bettings,
            starts,
            np.concatenate([self.log_base, log_base]),
            np.concatenate([self.counts, counts]),
            np.concatenate([self.situation, situation]),
            np.concatenate([self.delta, np.zeros((len(bettings), 3))]),
        )

    def without(self, drop: np.ndarray) -> Dropped:
        """This store without the nodes where ``drop`` ((m,) bool) is set."""
        keep = np.flatnonzero(~drop)
        views = np.diff(self.starts)[keep]
        rows = np.repeat(self.starts[keep], views) + row_offsets(views)
        return Dropped(
            [self.bettings[j] for j in keep.tolist()],
            np.concatenate([[0], np.cumsum(views)]).astype(np.int64),
            self.log_base[rows],
            self.counts[rows],
            self.situation[keep],
            self.delta[keep],
        )

    def bounded(self, rows: int, archive: Archive) -> tuple[Dropped, Archive]:
        """This store's oldest nodes merged into ``archive`` until it keeps ``rows`` rows at
        most; the store and archive then."""
        if self.rows <= rows:
            return self, archive
        old = np.zeros(len(self.bettings), dtype=bool)
        old[: int(np.searchsorted(self.starts, self.rows - rows))] = True
        end = int(self.starts[old.sum()])
        counted = np.flatnonzero(self.counts[:end].sum(axis=1) > 0)
        situation = np.repeat(self.situation, np.diff(self.starts))[counted]
        archive = archive.merged(self.log_base[counted], self.counts[counted], situation)
        return self.without(old), archive

    def alpha0(self, j: int, eta: float, theta: np.ndarray) -> np.ndarray:
        """(views, 3) the prior parameters node j would have now, ``theta`` the situations' tilt
        of the last refit: ``eta`` times its rows tilted by its situation's and its own, plus
        its folded counts (as :meth:`~oppmodel.modeling.holdem.posterior.HoldemPosterior.refit`
        makes a numbered node's)."""
        rows = slice(self.starts[j], self.starts[j + 1])
        mean = tilted(self.log_base[rows] + theta[self.situation[j]], self.delta[j])
        return eta * mean + self.counts[rows]


def row_offsets(views: np.ndarray) -> np.ndarray:
    """Each row's place in its node, nodes of ``views`` rows one after the other."""
    return np.arange(views.sum()) - np.repeat(np.cumsum(views) - views, views)


class TiltFit(NamedTuple):
    """:func:`fit_tilt`'s fit."""

    mean: np.ndarray  # (num_infosets, 3) the tilted prior mean of the opponent's rows
    theta: np.ndarray  # (num_situations, 3) the situations' tilt
    dropped: np.ndarray  # (m, 3) the own tilt of each node of ``dropped`` (none: (0, 3))


def tilted(log_base: np.ndarray, theta: np.ndarray | float) -> np.ndarray:
    """(k, 3) the rows ``exp(log_base + theta)`` normalised (``-inf`` in ``log_base`` at an
    illegal action stays 0)."""
    logits = log_base + theta
    logits = logits - logits.max(axis=1, keepdims=True)
    out = np.exp(logits)
    return out / out.sum(axis=1, keepdims=True)


def fit_level(
    log_base: np.ndarray, counts: np.ndarray, group: np.ndarray, groups: int, weight: float
) -> np.ndarray:
    """(groups, 3) the log multipliers theta_g maximising the likelihood of ``counts`` ((k, 3)
    expected counts per row) with row k's probabilities ``tilted(log_base[k], theta[group[k]])``,
    plus ``weight`` pseudo-visits per group acting as its rows do at theta = 0 (spread as its
    visits): ``ITERATIONS`` scaling steps, each action's multiplier scaled by observed over
    predicted (the pseudo-visits predicted as the visits are; an action no row of the group
    allows, or none saw, keeps its multiplier). Only the groups with rows are fitted, the others
    keep theta = 0."""
    return level_theta(
        np.ascontiguousarray(log_base, dtype=np.float64),
        np.ascontiguousarray(counts, dtype=np.float64),
        np.ascontiguousarray(group, dtype=np.int64),
        int(groups),
        float(weight),
        ITERATIONS,
        LIMIT,
    )


def fit_tilt(
    tilt_map: TiltMap,
    base: np.ndarray,
    expected: np.ndarray,
    *,
    situation_weight: float = SITUATION_WEIGHT,
    node_weight: float = NODE_WEIGHT,
    archive: Archive | None = None,
    dropped: Dropped | None = None,
) -> TiltFit:
    """(num_infosets, 3) the tilted prior mean of the opponent's rows (module text): ``base``
    the clipped blueprint rows and ``expected`` the fit's expected counts, both (num_infosets,
    3) of the opponent's position; rows of no node keep ``base``. Also the situations' tilt
    (num_situations, 3), what a node not reached yet gets (:func:`tilted_rows`). The two
    weights are each level's shrinkage in pseudo-visits (hold'em's by default). ``archive``:
    counts of rows no longer numbered, fitted by the situation level only (:class:`Archive`);
    ``dropped``: nodes no longer numbered kept whole, fitted as numbered nodes are (both
    levels), their own tilts returned (:class:`TiltFit`)."""
    rows = tilt_map.rows
    with np.errstate(divide="ignore"):
        log_base = np.where(tilt_map.legal, np.log(base[rows]), -np.inf)
    counts = np.ascontiguousarray(expected[rows], dtype=np.float64)
    node_of, situation_of_node, num_nodes = (
        tilt_map.node_of, tilt_map.situation_of_node, tilt_map.num_nodes
    )  # fmt: skip
    kept = 0 if dropped is None else len(dropped.bettings)
    if dropped is not None and kept:  # a node each after the numbered ones
        views = np.diff(dropped.starts)
        log_base = np.concatenate([log_base, dropped.log_base])
        counts = np.concatenate([counts, dropped.counts])
        node_of = np.concatenate([node_of, num_nodes + np.repeat(np.arange(kept), views)])
        situation_of_node = np.concatenate([situation_of_node, dropped.situation])
        num_nodes += kept
    if archive is not None and len(archive.counts):
        # each row a node of its own after the numbered ones: its node tilt is fitted apart
        # (a node's steps read only its rows) and not used
        log_base = np.concatenate([log_base, archive.log_base])
        counts = np.concatenate([counts, archive.counts])
        node_of = np.concatenate([node_of, num_nodes + np.arange(len(archive.counts))])
        situation_of_node = np.concatenate([situation_of_node, archive.situation])
        num_nodes += len(archive.counts)
    seen = counts.sum(axis=1) > 0.0  # the fit's sums over the rows never visited add 0: skipped
    # both levels in one kernel call (numpy's per-call overhead was most of a Kuhn refit)
    shifted, delta, theta = tilt_levels(
        log_base, counts, seen, node_of, situation_of_node, num_nodes,
        tilt_map.num_situations, float(situation_weight), float(node_weight), ITERATIONS, LIMIT,
    )  # fmt: skip
    out = base.copy()
    out[rows] = tilted(shifted[: len(rows)], delta[: len(rows)])
    first = len(rows) + (dropped.starts[:-1] if dropped is not None else np.zeros(0, np.int64))
    return TiltFit(out, theta, delta[first])


def tilted_rows(base: np.ndarray, legal: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """(k, 3) the tilted prior mean of rows of nodes no hand had reached at the fit (``base``
    and ``legal`` (k, 3), ``theta`` (k, 3) their situations' tilt): :func:`fit_tilt`'s rows of a
    node with no tilt of its own, computed as it computes them."""
    with np.errstate(divide="ignore"):
        log_base = np.where(legal, np.log(base), -np.inf)
    return tilted(log_base + theta, 0.0)
