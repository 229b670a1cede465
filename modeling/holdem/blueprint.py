"""The blueprint as a hold'em policy: a strategy solved in the abstract game
(:mod:`oppmodel.modeling.games.acpc.holdem_abstract`, ``oppmodel solve holdem2p``) playing the
real game.

At a spot, each hole's view is computed from the real cards as the abstract game computes it (the
card abstraction's bucket of the hole and the board of each round so far; the current round's
alone under imperfect recall), and the row of the strategy file keyed ``<view>:<betting>`` is the
answer. The file is read by its keys alone, so playing needs neither the abstract game's sample of
deals nor its tree: only the abstraction, whose cut points the file records beside its
configuration (``solver.abstract_game``, written by ``oppmodel solve``; an older file's are rebuilt
from the configuration, or read from the cache). A file of the lazy solver (3-player hold'em)
lists only the information sets it visited and says the others check or call (``"unvisited":
"call"``); they do.

The JSON file is the interchange format; reading it takes seconds for a large file (the bundled
3-player blueprint: 41 MB of JSON, ~2.4 s of CPU), so the first read derives a binary cache of
its rows (:class:`Rows`, an ``.npz`` of arrays in ``<cache folder>/blueprints/``, keyed by a hash
of the file's bytes and :data:`CACHE_VERSION`) that later reads load instead. A flop table saved
beside the file (:mod:`oppmodel.modeling.games.acpc.flop_table`) is read with it, and a turn table
where one is saved: the buckets of every flop (and turn), so a new board of those rounds costs a
lookup, not a bucketing of the range.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError, InvalidStrategyError
from oppmodel.modeling.games.acpc.abstraction import (
    BOARD_SIZES,
    AbstractionConfig,
    CardAbstraction,
    card_abstraction,
)
from oppmodel.modeling.games.acpc.betting import CALL, NUM_ACTIONS, ROUND_SEPARATOR
from oppmodel.modeling.games.acpc.flop_table import BoardTable, tables_beside
from oppmodel.modeling.games.acpc.holdem_abstract import (
    AbstractGameConfig,
    view_index,
    view_rounds,
    view_strings,
)
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.solved import cache_folder
from oppmodel.modeling.holdem import _blueprint_kernels as kernels
from oppmodel.modeling.holdem.policy import Spot
from oppmodel.modeling.holdem.strength import hole_rows
from oppmodel.modeling.solve.lazy_mccfr import UNVISITED

log = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"  # a gzip-compressed strategy file (the bundled blueprints) reads as one
CACHE_VERSION = 1  # of the binary cache's layout: a change makes every cached file's key differ
BUCKET_CACHE = 256  # boards whose range buckets are kept (10.6 KB each), the last asked for


@dataclass(frozen=True)
class Rows:
    """One position's rows of a strategy file as arrays: ``bettings[g]`` is a betting history,
    its rows ``starts[g]:starts[g + 1]`` of ``views`` (the view's index among
    :func:`view_strings` of the betting's round) and ``probs`` (fold, call, raise)."""

    bettings: list[str]
    starts: np.ndarray  # (G + 1,) int64
    views: np.ndarray  # (R,) int32
    probs: np.ndarray  # (R, 3) float64
    # betting history -> its index in ``bettings``: made with the rows, so before any decision
    group: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "group", {b: g for g, b in enumerate(self.bettings)})

    @classmethod
    def of(cls, rows: dict[str, list[float]], config: AbstractGameConfig) -> Rows:
        """The arrays of a file's ``{"<view>:<betting>": row}`` (its order kept within a
        betting)."""
        rounds = range(len(BOARD_SIZES))
        index = [{v: i for i, v in enumerate(view_strings(config, r))} for r in rounds]
        parts = [key.partition(":") for key in rows]
        try:
            views = [index[b.count(ROUND_SEPARATOR)][v] for v, _, b in parts]
        except (KeyError, IndexError):
            bad = next(k for k, (v, _, b) in zip(rows, parts, strict=True) if not _has(index, v, b))
            raise InvalidStrategyError("strategy", f"row {bad!r}: no such view") from None
        ids: dict[str, int] = {}
        group = np.array([ids.setdefault(b, len(ids)) for _, _, b in parts], dtype=np.int64)
        order = np.argsort(group, kind="stable")
        return cls(
            list(ids),
            np.concatenate([[0], np.cumsum(np.bincount(group, minlength=len(ids)))]),
            np.array(views, dtype=np.int32)[order],
            np.array(list(rows.values()), dtype=float).reshape(-1, NUM_ACTIONS)[order],
        )

    def table(self, betting: str, views: int) -> np.ndarray:
        """(views, 3) the rows of one betting history by view index, NaN where none."""
        group = self.group.get(betting, -1)
        return kernels.group_table(self.starts, self.views, self.probs, group, views)

    def as_dict(self, config: AbstractGameConfig) -> dict[str, list[float]]:
        """The file's ``{"<view>:<betting>": row}`` again."""
        out = {}
        for g, betting in enumerate(self.bettings):
            names = view_strings(config, betting.count(ROUND_SEPARATOR))
            for r in range(self.starts[g], self.starts[g + 1]):
                out[f"{names[self.views[r]]}:{betting}"] = self.probs[r].tolist()
        return out


class Blueprint:
    """A hold'em policy reading an abstract game's strategy (see the module's text)."""

    def __init__(
        self,
        rows: list[Rows],
        config: AbstractGameConfig,
        *,
        name: str = "blueprint",
        cards: CardAbstraction | None = None,
        unvisited: str | None = None,
        flops: tuple[BoardTable, ...] = (),
    ) -> None:
        """``flops``: the boards' tables read beside the file (the flops', and the turns' where
        saved), which :func:`range_views` reads instead of bucketing a board of their round."""
        self.name = name
        self.rows = rows
        self.config = config
        self.cards = cards or card_abstraction(config.abstraction)
        self._tables: dict[tuple[int, str], np.ndarray] = {}
        self.unvisited = unvisited  # "call": the file lists the visited sets only (lazy_mccfr)
        self.flops = flops

    @property
    def positions(self) -> list[dict[str, list[float]]]:
        """Per position, the file's rows keyed ``<view>:<betting>``."""
        return [rows.as_dict(self.config) for rows in self.rows]

    @classmethod
    def from_file(cls, path: str | Path, *, name: str = "blueprint") -> Blueprint:
        """The blueprint of a strategy file ``oppmodel solve`` wrote for a hold'em game (plain or
        gzip-compressed JSON; its binary cache if one was derived from these bytes, else derived
        now), with the board tables beside it (flops, turns) if there are; InvalidStrategyError if
        the file records no abstract game, or a table is of another abstraction."""
        path = Path(path)
        raw = path.read_bytes()
        cached = cache_folder() / "blueprints" / f"{_cache_key(raw)}.npz"
        try:
            meta, rows = _read_cache(cached)
        except (OSError, KeyError, ValueError) as exc:
            if cached.exists():
                log.warning("cached blueprint unreadable, reading the file again: %s", exc)
            meta, rows = _parse(raw, path)
            _write_cache(cached, meta, rows)
        config, cards = _abstract_game(meta)
        tables = tables_beside(path, cards)
        return cls(rows, config, name=name, cards=cards, unvisited=meta["unvisited"], flops=tables)

    def probabilities(self, spot: Spot, holes: np.ndarray) -> np.ndarray:
        """(k, 3): each hole's row of the strategy at its view and the spot's betting; a whole
        range costs one bucketing of the board per round (:meth:`CardAbstraction.range_buckets`;
        a flop's or turn's read from the board tables where there are) and one table lookup."""
        rows = hole_rows(holes)
        views = range_views(self.config, self.cards, self.flops, spot.board, spot.round, rows)
        table = self._table(spot.position, spot.round, spot.betting.betting)
        out = table[views]
        missing = np.isnan(out[:, 0])
        if missing.any() and self.unvisited == UNVISITED:
            out[missing] = np.eye(NUM_ACTIONS)[CALL]
        elif missing.any():
            view = view_strings(self.config, spot.round)[views[np.flatnonzero(missing)[0]]]
            key = f"{view}:{spot.betting.betting}"
            raise InvalidStrategyError("strategy", f"no row {key!r} in the blueprint")
        return out

    def _table(self, position: int, round_: int, betting: str) -> np.ndarray:
        """(views, 3) the rows of one betting history by view index (NaN where the file has
        none), made once."""
        key = (position, betting)
        if key not in self._tables:
            views = len(view_strings(self.config, round_))
            self._tables[key] = self.rows[position].table(betting, views)
        return self._tables[key]


def range_views(
    config: AbstractGameConfig,
    cards: CardAbstraction,
    flops: tuple[BoardTable, ...],
    board: tuple[int, ...],
    round_: int,
    rows: np.ndarray,
) -> np.ndarray:
    """(k,) the view in ``round_`` of the hands ``rows`` (of ``ALL_HOLES``) on ``board`` (card
    integers, at least those dealt by that round): one bucketing of the board per round
    (:meth:`CardAbstraction.range_buckets`, a board's read from the tables ``flops`` where
    one holds it);
    InvalidArgumentError if a hand holds a board card."""
    rounds = view_rounds(config, round_)
    buckets = np.stack([_buckets(cards, flops, board[: BOARD_SIZES[r]])[rows] for r in rounds], -1)
    if (buckets < 0).any():
        raise InvalidArgumentError("holes", f"a hole shares a card with the board {board}")
    return view_index(config, buckets, rounds[0])


def _buckets(
    cards: CardAbstraction, flops: tuple[BoardTable, ...], board: tuple[int, ...]
) -> np.ndarray:
    """(1326,) the buckets of every hand on ``board`` (read-only), kept for the last
    ``BUCKET_CACHE`` boards asked for: a hand's decisions and then its update ask for the same
    boards, and bucketing a board again (its canonical values relabelled, then cut) was half of
    a decision's view lookup. An entry holds its abstraction and table, so their ids
    in its key are theirs as long as it lives."""
    key = (id(cards), id(flops), board)
    with _BUCKETS_LOCK:
        kept = _BUCKETS.get(key)
        if kept is not None:
            _BUCKETS.move_to_end(key)
            return kept[2]
    read = None
    for table in flops:
        read = table.range_buckets(board)
        if read is not None:
            break
    out = cards.range_buckets(board) if read is None else read
    out.setflags(write=False)
    with _BUCKETS_LOCK:
        _BUCKETS[key] = (cards, flops, out)
        while len(_BUCKETS) > BUCKET_CACHE:
            _BUCKETS.popitem(last=False)
    return out


_BUCKETS: OrderedDict[tuple[int, int, tuple[int, ...]], tuple[Any, Any, np.ndarray]] = OrderedDict()
_BUCKETS_LOCK = threading.Lock()  # served sessions decide in threads


def _has(index: list[dict[str, int]], view: str, betting: str) -> bool:
    rnd = betting.count(ROUND_SEPARATOR)
    return rnd < len(index) and view in index[rnd]


def _cache_key(raw: bytes) -> str:
    return hashlib.sha256(f"v{CACHE_VERSION} ".encode() + raw).hexdigest()[:24]


def _parse(raw: bytes, path: Path) -> tuple[dict, list[Rows]]:
    """(what the file records of its abstract game, its rows) from the file's JSON."""
    doc = json.loads(gzip.decompress(raw) if raw[:2] == GZIP_MAGIC else raw)
    recorded = (doc.get("solver") or {}).get("abstract_game")
    if not isinstance(recorded, dict) or "positions" not in doc:
        raise InvalidStrategyError("strategy", f"{path} records no hold'em abstract game")
    meta = {"abstract_game": recorded, "unvisited": doc.get("unvisited")}
    config = _config(recorded)
    return meta, [Rows.of(rows, config) for rows in doc["positions"]]


def _config(recorded: dict) -> AbstractGameConfig:
    fields = dict(recorded["abstraction"])
    fields["buckets"] = tuple(fields["buckets"])
    return AbstractGameConfig(
        AbstractionConfig(**fields), recorded["deals"], recorded["seed"], recorded["recall"]
    )


def _abstract_game(meta: dict) -> tuple[AbstractGameConfig, CardAbstraction]:
    recorded = meta["abstract_game"]
    config = _config(recorded)
    cuts = recorded.get("cuts")  # absent: rebuilt (or read from the cache) from the config
    cards = CardAbstraction(config.abstraction, tuple(map(np.array, cuts))) if cuts else None
    return config, cards or card_abstraction(config.abstraction)


def _write_cache(path: Path, meta: dict, rows: list[Rows]) -> None:
    """Save the rows as arrays (whole or not at all: a temporary file, renamed); a cache that
    cannot be written is skipped (the file is read again next time)."""
    arrays: dict[str, Any] = {"meta": np.array(json.dumps(meta))}  # Any: savez's stub
    for p, r in enumerate(rows):
        arrays |= {
            f"bettings{p}": np.frombuffer("\n".join(r.bettings).encode(), dtype=np.uint8),
            f"starts{p}": r.starts,
            f"views{p}": r.views,
            f"probs{p}": r.probs,
        }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("cannot cache the blueprint's rows: %s", exc)


def _read_cache(path: Path) -> tuple[dict, list[Rows]]:
    with np.load(path) as data:
        meta = json.loads(str(data["meta"]))
        rows = []
        for p in range(sum(name.startswith("starts") for name in data.files)):
            starts = data[f"starts{p}"]
            text = data[f"bettings{p}"].tobytes().decode()
            bettings = text.split("\n") if len(starts) > 1 else []
            rows.append(Rows(bettings, starts, data[f"views{p}"], data[f"probs{p}"]))
    return meta, rows


def abstract_profile(game: LimitGame, positions: list[dict[str, list[float]]]) -> np.ndarray:
    """(n, num_infosets, 3) a strategy file's rows (``Blueprint.positions``, keyed
    ``<view>:<betting>``) as a profile of the abstract game; a row the file lacks checks or
    calls (the lazy solver's unvisited sets); padding rows call."""
    out = np.zeros((game.num_players, game.num_infosets, NUM_ACTIONS))
    out[:, :, 1] = 1.0
    for p in range(game.num_players):
        rows = positions[p]
        for i in game.infosets(p):
            row = rows.get(game.infoset_string(p, i))
            if row is not None:
                out[p, i] = row
    return out
