"""Every flop's and turn's buckets, computed ahead: what a blueprint reads instead of bucketing a
new board.

On a board, :meth:`~oppmodel.modeling.games.acpc.abstraction.CardAbstraction.range_buckets`
values the whole range over the board's completions: on the flop 100 sampled rollouts, the
draws closed under the suit relabellings that fix the board (up to 600 complete boards, 10-60 ms
of CPU); on the turn every river (~48 complete boards, 2-4 ms). A player meets a new flop in most
hands, and the 3-player decision-time response (``modeling/holdem/decision.py``) values a dozen
completions of the board at each decision, a new turn each: that bucketing was a quarter of its
CPU. Up to suit relabelling there are only 1,755 flops and 16,432 turns, so each round's buckets
fit in one table (boards x 1,326 bytes): computed once (:func:`build`: ~40 s of CPU for the
flops, ~30-60 s for the turns), saved beside the strategy file it serves (``X.cfr.json.gz`` ->
``X.cfr.flops.npz``, ``X.cfr.turns.npz``: :func:`path_beside`) and read when the blueprint is.
A board's row is the range's buckets on its canonical form, and any board reads its canonical
row through the same relabelling of the hands ``range_buckets`` applies, so the table answers
exactly what ``range_buckets`` computes (tested on a sample of boards).

The file records the key of the abstraction it buckets (the format versions, the abstraction's
configuration and the round's cut points): a table of another abstraction is refused, not
misread.
"""

from __future__ import annotations

import functools
import hashlib
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
FLOP, TURN = BOARD_SIZES.index(3), BOARD_SIZES.index(4)  # the rounds a table may hold
NAMES = {FLOP: "flops", TURN: "turns"}  # a round's in the key and the file's name


def table_key(cards: CardAbstraction, round_: int) -> str:
    """The key of the abstraction's buckets in ``round_``: a hash of this format's version, the
    abstraction's configuration (its key holds the abstraction's version) and the round's
    cuts."""
    text = f"{NAMES[round_]} v{VERSION} {cards.config.key} ".encode() + cards.cuts[round_].tobytes()
    return hashlib.sha256(text).hexdigest()[:16]


@functools.cache
def canonical_boards(round_: int) -> np.ndarray:
    """(B, cards) every board of ``round_`` (the flop or the turn) in its canonical form
    (:func:`canonical_board`), each once, sorted: 1,755 flops, 16,432 turns; read-only."""
    if round_ == FLOP:
        boards = (
            (a, b, c)
            for a in range(DECK_SIZE)
            for b in range(a + 1, DECK_SIZE)
            for c in range(b + 1, DECK_SIZE)
        )
    else:  # a turn's canonical form is that of a canonical flop and a fourth card
        boards = (
            (*flop, card)
            for flop in canonical_boards(round_ - 1).tolist()
            for card in range(DECK_SIZE)
            if card not in flop
        )
    found = {canonical_board(board)[1] for board in boards}
    out = np.array(sorted(found), dtype=np.int64)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class BoardTable:
    """The buckets (-1: a hand holding a board card) of every hand of ``ALL_HOLES`` on each
    canonical board of ``boards`` (boards of one round), for the abstraction of key ``key``."""

    key: str
    boards: np.ndarray  # (B, cards) canonical boards
    buckets: np.ndarray  # (B, 1326) int8
    _rows: dict[tuple[int, ...], int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rows = {tuple(f): r for r, f in enumerate(self.boards.tolist())}
        object.__setattr__(self, "_rows", rows)

    @property
    def round(self) -> int:
        """The round of the table's boards."""
        return BOARD_SIZES.index(self.boards.shape[1])

    def range_buckets(self, board: tuple[int, ...]) -> np.ndarray | None:
        """(1326,) what ``CardAbstraction.range_buckets(board)`` answers, read from the table;
        None if the table does not hold the board's canonical form (nor boards of its size)."""
        if len(board) != self.boards.shape[1]:
            return None
        relabel, canonical = canonical_board(board)
        row = self._rows.get(canonical)
        if row is None:
            return None
        return by_relabelled_hole(self.buckets[row], relabel)

    def save(self, path: Path) -> None:
        """Write the table as ``.npz`` (whole or not at all: a temporary file, renamed)."""
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
        np.savez_compressed(tmp, key=self.key, boards=self.boards, buckets=self.buckets)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path, cards: CardAbstraction) -> BoardTable:
        """The table saved at ``path`` for ``cards``; InvalidStrategyError if it buckets another
        abstraction (or another version's)."""
        with np.load(path) as data:
            table = cls(str(data["key"]), data["boards"], data["buckets"])
        if table.key != table_key(cards, table.round):
            raise InvalidStrategyError(
                "strategy", f"{path} holds the boards of another card abstraction: delete it"
            )
        return table


def build(
    cards: CardAbstraction,
    boards: np.ndarray | None = None,
    *,
    round_: int = FLOP,
    show_progress: bool = True,
) -> BoardTable:
    """The table of ``cards`` over ``boards`` (canonical, of ``round_``; every board of the
    round by default)."""
    boards = canonical_boards(round_) if boards is None else boards
    buckets = np.empty((len(boards), len(ALL_HOLES)), dtype=np.int8)
    name = NAMES[BOARD_SIZES.index(boards.shape[1])]
    bar = progress_bar(len(boards), desc=f"{name} buckets", unit="board", show=show_progress)
    try:
        for r, board in enumerate(boards.tolist()):
            buckets[r] = cards.range_buckets(tuple(board))
            bar.update()
    finally:
        bar.close()
    return BoardTable(table_key(cards, BOARD_SIZES.index(boards.shape[1])), boards, buckets)


def path_beside(strategy: Path, round_: int) -> Path:
    """Where the table of ``round_``'s boards of a strategy file lives: beside it, ``.json`` or
    ``.json.gz`` replaced by ``.flops.npz`` or ``.turns.npz``."""
    name = strategy.name.removesuffix(".gz").removesuffix(".json")
    return strategy.with_name(f"{name}.{NAMES[round_]}.npz")


def tables_beside(strategy: Path, cards: CardAbstraction) -> tuple[BoardTable, ...]:
    """The tables saved beside a strategy file, the flops' then the turns' (those there are)."""
    paths = (path_beside(strategy, r) for r in NAMES)
    return tuple(BoardTable.load(path, cards) for path in paths if path.exists())
