"""Every flop's buckets, computed ahead: what a blueprint reads instead of bucketing a new flop.

On a board, :meth:`~oppmodel.modeling.games.acpc.abstraction.CardAbstraction.range_buckets`
values the whole range over the board's sampled completions (100 rollouts, and the draws closed
under the suit relabellings that fix the board: up to 600 complete boards, 10-60 ms of CPU on the
flop). A player meets a new flop in most hands, so that cost was most of a blueprint's slow
decisions. The flops are only 1,755 up to suit relabelling, so their buckets fit in one table
(1,755 x 1,326 bytes): computed once (~40 s of CPU, :func:`build`), saved beside the strategy
file it serves (``X.cfr.json.gz`` -> ``X.cfr.flops.npz``, :func:`path_beside`) and read when the
blueprint is. A flop's row is the range's buckets on its canonical form, and any flop reads its
canonical row through the same relabelling of the hands ``range_buckets`` applies, so the table
answers exactly what ``range_buckets`` computes (tested on a sample of flops).

The file records the key of the abstraction it buckets (the format versions, the abstraction's
configuration and its flop cut points): a table of another abstraction is refused, not misread.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from oppmodel.clients.progress import progress_bar
from oppmodel.modeling.errors import InvalidStrategyError
from oppmodel.modeling.games.acpc.abstraction import (
    ALL_HOLES,
    BOARD_SIZES,
    DECK_SIZE,
    CardAbstraction,
    by_relabelled_hole,
    canonical_board,
)

VERSION = 1  # of the file: a change makes every saved table's key differ
FLOP = BOARD_SIZES.index(3)  # the flop's round


def table_key(cards: CardAbstraction) -> str:
    """The key of the abstraction's flop buckets: a hash of this format's version, the
    abstraction's configuration (its key holds the abstraction's version) and its flop cuts."""
    text = f"flops v{VERSION} {cards.config.key} ".encode() + cards.cuts[FLOP].tobytes()
    return hashlib.sha256(text).hexdigest()[:16]


@functools.cache
def canonical_flops() -> np.ndarray:
    """(1755, 3) every flop's canonical form (:func:`canonical_board`), each once, sorted;
    read-only."""
    found = {canonical_board(f)[1] for f in itertools.combinations(range(DECK_SIZE), 3)}
    out = np.array(sorted(found), dtype=np.int64)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class FlopTable:
    """The buckets (-1: a hand holding a board card) of every hand of ``ALL_HOLES`` on each
    canonical flop of ``flops``, for the abstraction of key ``key``."""

    key: str
    flops: np.ndarray  # (F, 3) canonical flops
    buckets: np.ndarray  # (F, 1326) int8
    _rows: dict[tuple[int, ...], int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rows = {tuple(f): r for r, f in enumerate(self.flops.tolist())}
        object.__setattr__(self, "_rows", rows)

    def range_buckets(self, board: tuple[int, ...]) -> np.ndarray | None:
        """(1326,) what ``CardAbstraction.range_buckets(board)`` answers for a flop, read from
        the table; None if the table does not hold the flop's canonical form."""
        relabel, canonical = canonical_board(board)
        row = self._rows.get(canonical)
        if row is None:
            return None
        return by_relabelled_hole(self.buckets[row], relabel)

    def save(self, path: Path) -> None:
        """Write the table as ``.npz`` (whole or not at all: a temporary file, renamed)."""
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
        np.savez_compressed(tmp, key=self.key, flops=self.flops, buckets=self.buckets)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path, cards: CardAbstraction) -> FlopTable:
        """The table saved at ``path`` for ``cards``; InvalidStrategyError if it buckets another
        abstraction (or another version's)."""
        with np.load(path) as data:
            table = cls(str(data["key"]), data["flops"], data["buckets"])
        if table.key != table_key(cards):
            raise InvalidStrategyError(
                "strategy", f"{path} holds the flops of another card abstraction: delete it"
            )
        return table


def build(
    cards: CardAbstraction, flops: np.ndarray | None = None, *, show_progress: bool = True
) -> FlopTable:
    """The table of ``cards`` over ``flops`` (canonical; every flop by default, ~40 s of CPU)."""
    flops = canonical_flops() if flops is None else flops
    buckets = np.empty((len(flops), len(ALL_HOLES)), dtype=np.int8)
    bar = progress_bar(len(flops), desc="flop buckets", unit="flop", show=show_progress)
    try:
        for r, flop in enumerate(flops.tolist()):
            buckets[r] = cards.range_buckets(tuple(flop))
            bar.update()
    finally:
        bar.close()
    return FlopTable(table_key(cards), flops, buckets)


def path_beside(strategy: Path) -> Path:
    """Where the flop table of a strategy file lives: beside it, ``.json`` or ``.json.gz``
    replaced by ``.flops.npz``."""
    name = strategy.name.removesuffix(".gz").removesuffix(".json")
    return strategy.with_name(f"{name}.flops.npz")
