"""External-sampling MCCFR on lazily built tables: the sampled solver for limit games whose
betting tree is too large for arrays (3-player limit hold'em's abstract game).

The algorithm, its draws and its averaging are :mod:`oppmodel.modeling.solve.mccfr`'s (external
sampling, regret matching, linear averaging, iteration t of seed s drawn from the generator
seeded by (s, t)); what differs is where the numbers live. The array solver holds a row per
information set of a compiled :class:`~oppmodel.modeling.games.acpc.limit_game.LimitGame`; this
one walks a :class:`~oppmodel.modeling.games.acpc.lazy_game.LazyGame` by its betting rules and
makes a public node the first time the walk reaches it and an information set (node, view) the
first time a position acts there, found again through a hash table. Only what sampling visits
exists, so memory follows the visits (:attr:`LazyMCCFRSolver.nbytes`), not the 23.9 million
public nodes of 3-player hold'em. On a game both can hold the two solvers give the same regrets
and sums bit for bit (tested on Kuhn and Leduc, 2 and 3 players).

Quality: on a LazyGame made from a compiled game the average strategy maps onto that game's
information sets (:meth:`LazyMCCFRSolver.profile_on`), so nash_conv is exact; on hold'em, where
no exact measure exists for 3 players, :meth:`LazyMCCFRSolver.regret_bound` is the sampled
counterfactual regret bound (Zinkevich et al. 2007: each position's average overall regret is
at most the sum over its information sets of the positive part of their best action's
cumulative counterfactual regret, over T), in chips a hand. It is a loose measure: every
information set met for the first time adds its own early regret, so while sampling still finds
new sets (the first tens of thousands of iterations in 3-player hold'em) it can rise; it falls
once the visited sets settle (from 10,000 to 60,000 iterations of the default abstraction:
5,601 -> 2,807).
Information sets never visited have no row. A strategy file lists the sets the average play
reaches (those whose average has weight; with a ``min_reach`` only those reached more often,
:meth:`LazyMCCFRSolver.reach_rows`), the probabilities on a grid of 1/1000, and says that the
rest play check/call (``"unvisited": "call"``; so a row that rounds to a call is left out too):
the file holds what play meets, in a size that follows the reached sets, not the visited ones.

The state (the tables up to what is made, the iteration, the seed) saves to one ``.npz`` and a
resumed run equals an uninterrupted one bit for bit.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.limit import nash_conv
from oppmodel.modeling.games.acpc.betting import (
    ACTION_LETTERS,
    CALL,
    NUM_ACTIONS,
    ROUND_SEPARATOR,
)
from oppmodel.modeling.games.acpc.lazy_game import LazyGame, opening_row
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import document_text, uniform_profile
from oppmodel.modeling.solve import _lazy_mccfr_kernels as kernels
from oppmodel.modeling.solve.cfr import SlicedSolver, read_state, write_state
from oppmodel.modeling.solve.mccfr import MCCFRConfig

UNVISITED = "call"  # what a strategy file says the information sets it does not list play
GRID = 1000  # a strategy file's probabilities are multiples of 1 / GRID
_NODE_ARRAYS = ("node_info", "node_children", "node_parent", "node_action")
_ROW_ARRAYS = ("regrets", "sums", "row_node", "row_view")


def lazy_label(game: LazyGame) -> str:
    """What a lazy sampled solve's strategy is, in words, for files and reports."""
    kind = "a Nash equilibrium" if game.num_players == 2 else "no equilibrium (3+ players)"
    return (
        f"external-sampling MCCFR average strategy of {game.name} over the information sets "
        f"it visited (approximates {kind}; the others check or call)"
    )


class LazyMCCFRSolver(SlicedSolver):
    """External-sampling MCCFR on a :class:`LazyGame` (see the module's text)."""

    def __init__(self, game: LazyGame, config: MCCFRConfig | None = None) -> None:
        self.game = game
        self.config = config or MCCFRConfig()
        self._done = np.zeros(1, dtype=np.int64)
        self.margin, self.max_depth = game.bounds
        size = 4 * self.margin
        root = opening_row(game.gamedef)
        self.tables = kernels.LazyTables(
            node_info=np.zeros((size, len(root)), dtype=np.int32),
            node_children=np.full((size, NUM_ACTIONS), kernels.EMPTY, dtype=np.int32),
            node_parent=np.full(size, -1, dtype=np.int32),
            node_action=np.full(size, -1, dtype=np.int32),
            keys=np.full(_hash_size(size), kernels.EMPTY, dtype=np.int64),
            slots=np.zeros(_hash_size(size), dtype=np.int32),
            regrets=np.zeros((size, NUM_ACTIONS)),
            sums=np.zeros((size, NUM_ACTIONS)),
            row_node=np.zeros(size, dtype=np.int32),
            row_view=np.zeros(size, dtype=np.int32),
            counts=np.array([1, 0], dtype=np.int64),
        )
        self.tables.node_info[0] = root

    # --- running -----------------------------------------------------------------------------

    def _advance(self, last: int) -> None:
        """Run the kernel to iteration ``last``, growing the tables whenever it stops for room."""
        while True:
            kernels.iterate(
                self.game.rules, self.tables, self.game.deal_view, self.game.share, self._done,
                last, self.config.seed, self.margin, self.game.view_stride, self.max_depth,
            )  # fmt: skip
            if self.iteration >= last:
                return
            self._grow()

    def _grow(self) -> None:
        """Twice the room (at least the margin more) for nodes and rows, rehashed."""
        t = self.tables
        nodes, rows = (int(c) for c in t.counts)
        node_size = max(2 * len(t.node_parent), nodes + 2 * self.margin)
        row_size = max(2 * len(t.row_node), rows + 2 * self.margin)
        grown = {
            name: _resized(getattr(t, name), node_size, fill)
            for name, fill in zip(_NODE_ARRAYS, (0, kernels.EMPTY, -1, -1), strict=True)
        }
        grown |= {name: _resized(getattr(t, name), row_size, 0) for name in _ROW_ARRAYS}
        keys = np.full(_hash_size(row_size), kernels.EMPTY, dtype=np.int64)
        slots = np.zeros(len(keys), dtype=np.int32)
        self.tables = kernels.LazyTables(**grown, keys=keys, slots=slots, counts=t.counts)
        self._rehash()  # from the grown rows: load grows before it copies the saved ones in

    # --- sizes -------------------------------------------------------------------------------

    @property
    def num_nodes(self) -> int:
        """Public nodes made so far (visited at least once)."""
        return int(self.tables.counts[0])

    @property
    def num_infosets(self) -> int:
        """Information sets made so far (a position acted there at least once)."""
        return int(self.tables.counts[1])

    @property
    def nbytes(self) -> int:
        """Memory the tables hold (allocated, with their room to grow)."""
        return sum(a.nbytes for a in self.tables)

    # --- the strategy ------------------------------------------------------------------------

    def _rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(row's node row (rows, 5 + n), legal actions (rows, 3)) of every information set."""
        t = self.tables
        info = t.node_info[t.row_node[: self.num_infosets]].astype(np.int64)
        spent = info[:, kernels.SPENT :]
        rules = self.game.gamedef
        caps = np.array(rules.max_raises)[info[:, kernels.ROUND]]
        mine = spent[np.arange(len(info)), info[:, kernels.PLAYER]]
        legal = np.ones((len(info), NUM_ACTIONS), dtype=bool)
        legal[:, 0] = mine < spent.max(axis=1)
        legal[:, 2] = info[:, kernels.RAISES] < caps
        return info, legal

    def average_rows(self) -> np.ndarray:
        """(rows, 3) the average strategy of every information set made; regret matching's
        current strategy where the average has no weight yet (only ever the traverser's)."""
        _, legal = self._rows()
        rows = self.num_infosets
        regrets = np.where(legal, np.maximum(self.tables.regrets[:rows], 0.0), 0.0)
        positive = regrets.sum(axis=1, keepdims=True)
        current = np.where(positive > 0, regrets / np.where(positive > 0, positive, 1.0), legal)
        current /= current.sum(axis=1, keepdims=True)
        sums = self.tables.sums[:rows]
        totals = sums.sum(axis=1, keepdims=True)
        return np.where(totals > 0, sums / np.where(totals > 0, totals, 1.0), current)

    def bettings(self) -> list[str]:
        """The ACPC betting of every node made (a node is made after its parent)."""
        t = self.tables
        rounds = t.node_info[: self.num_nodes, kernels.ROUND].tolist()
        parents, actions = t.node_parent.tolist(), t.node_action.tolist()
        out = [""]
        for c in range(1, self.num_nodes):
            p = parents[c]
            began = ROUND_SEPARATOR if rounds[c] > rounds[p] else ""
            out.append(out[p] + ACTION_LETTERS[actions[c]] + began)
        return out

    def reach_rows(self) -> np.ndarray:
        """(rows,) how often each information set was reached by the play its average strategy
        averages: its average-strategy weight over the most it could have (iteration t weighs
        t, and each iteration samples the play n - 1 times, once per other traverser), so the
        share of sampled plays that reached it, summing to 1 over the opening sets (0: only walked
        by its own player's traversal, so it has no average)."""
        total = (self.game.num_players - 1) * self.iteration * (self.iteration + 1) / 2
        weight = self.tables.sums[: self.num_infosets].sum(axis=1)
        return weight / total if total else weight

    def strategy_tables(
        self, *, min_reach: float | None = None, grid: int | None = None
    ) -> list[dict[str, list[float]]]:
        """Per position, ``{"<view>:<betting>": [p_fold, p_call, p_raise]}`` of every
        information set made (the keys of a LimitGame's strategy files); with ``min_reach``
        only those reached more often than that (:meth:`reach_rows`), with ``grid`` the
        probabilities as multiples of 1 / ``grid`` (:func:`quantized`), the rows that then say
        check/call dropped (what an unlisted set plays): a compact file of the sets play meets."""
        info, _ = self._rows()
        average = self.average_rows()
        kept = np.ones(len(average), dtype=bool)
        if min_reach is not None:
            kept &= self.reach_rows() > min_reach
        if grid is not None:
            average = quantized(average, grid)
            kept &= average[:, CALL] < 1.0
        bettings = self.bettings()
        strings = self.game.view_strings
        tables: list[dict[str, list[float]]] = [{} for _ in range(self.game.num_players)]
        t = self.tables
        for r in np.flatnonzero(kept).tolist():
            player, rnd = int(info[r, kernels.PLAYER]), int(info[r, kernels.ROUND])
            key = f"{strings[rnd][t.row_view[r]]}:{bettings[t.row_node[r]]}"
            tables[player][key] = average[r].tolist()
        return tables

    def save_strategy(
        self,
        path: str | Path,
        *,
        solver: dict | None = None,
        min_reach: float = 0.0,
        grid: int = GRID,
    ) -> None:
        """Write the average strategy as a strategy file of the information sets reached more
        often than ``min_reach`` (by default those reached at all), probabilities on a grid of
        1 / ``grid``; the file says the others check or call (``"unvisited": "call"``).
        A path ending in ``.gz`` is written gzip-compressed (the blueprint reads both)."""
        doc: dict = {
            "game": self.game.name,
            "num_players": self.game.num_players,
            "actions": ACTION_LETTERS,
            "unvisited": UNVISITED,
        }
        if solver is not None:
            doc["solver"] = solver
        doc["positions"] = self.strategy_tables(min_reach=min_reach, grid=grid)
        data = document_text(doc).encode()
        path = Path(path)
        path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)

    def profile_on(self, game: LimitGame) -> np.ndarray:
        """The average strategy as a profile of the compiled ``game`` with the same
        information-state strings (uniform where no row was made)."""
        profile = np.array(uniform_profile(game))
        for p, table in enumerate(self.strategy_tables()):
            for key, row in table.items():
                profile[p, game.infoset_from_string(p, key)] = row
        return profile

    def nash_conv(self) -> float | None:
        """Exact nash_conv of the average strategy where the game was made from a compiled one
        (:func:`~oppmodel.modeling.games.acpc.lazy_game.lazy_game_of`), else None."""
        source = self.game.source
        return None if source is None else nash_conv(source, self.profile_on(source))

    def regret_bound(self) -> float:
        """The sampled counterfactual regret bound of the average play, summed over positions,
        in chips a hand (see the module's text); 0 before the first iteration."""
        if self.iteration == 0:
            return 0.0
        _, legal = self._rows()
        regrets = np.where(legal, self.tables.regrets[: self.num_infosets], -np.inf)
        return float(np.maximum(regrets.max(axis=1), 0.0).sum() / self.iteration)

    # --- state files -------------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """Write the state (what is made of the tables, the iteration, the seed), atomically."""
        t, nodes, rows = self.tables, self.num_nodes, self.num_infosets
        arrays = {name: getattr(t, name)[:nodes] for name in _NODE_ARRAYS}
        arrays |= {name: getattr(t, name)[:rows] for name in _ROW_ARRAYS}
        write_state(path, self.game.name, self.game.gamedef.to_text(), self, arrays)

    @classmethod
    def load(cls, game: LazyGame, path: str | Path) -> LazyMCCFRSolver:
        """A solver in the state :meth:`save` wrote; InvalidArgumentError if the file is not one
        or belongs to another game."""
        meta, arrays = read_state(path, (*_NODE_ARRAYS, *_ROW_ARRAYS))
        if meta["gamedef"] != game.gamedef.to_text() or meta["game"] != game.name:
            raise InvalidArgumentError(
                "state", f"{path} belongs to {meta['game']}, not to {game.name}"
            )
        solver = cls(game, MCCFRConfig(**meta["config"]))
        t = solver.tables
        t.counts[:] = len(arrays["node_parent"]), len(arrays["row_node"])
        solver._grow()  # room for what was saved and the margin, hashed
        for name, array in arrays.items():
            getattr(solver.tables, name)[: len(array)] = array
        solver._rehash()
        solver.iteration = int(meta["iteration"])
        return solver

    def _rehash(self) -> None:
        t = self.tables
        t.keys[:] = kernels.EMPTY
        kernels.rehash(
            t.keys, t.slots, t.row_node, t.row_view, self.num_infosets, self.game.view_stride
        )


def quantized(rows: np.ndarray, grid: int) -> np.ndarray:
    """Each row of probabilities as multiples of 1 / ``grid`` that still sum to 1: every entry
    rounded down, the units left given to the largest remainders (ties to the lower action)."""
    scaled = rows * grid
    units = np.floor(scaled)
    left = (grid - units.sum(axis=1)).round().astype(np.int64)
    order = np.argsort(-(scaled - units), axis=1, kind="stable")
    ranks = np.argsort(order, axis=1, kind="stable")
    units += ranks < left[:, None]
    return units / grid


def _hash_size(rows: int) -> int:
    """A power of two at least twice ``rows`` (the table stays at most half full)."""
    return 1 << (2 * rows - 1).bit_length()


def _resized(array: np.ndarray, size: int, fill: int) -> np.ndarray:
    out = np.full((size, *array.shape[1:]), fill, dtype=array.dtype)
    out[: min(len(array), size)] = array[:size]
    return out
