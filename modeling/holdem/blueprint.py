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
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError, InvalidStrategyError
from oppmodel.modeling.games.acpc.abstraction import (
    BOARD_SIZES,
    AbstractionConfig,
    CardAbstraction,
    card_abstraction,
)
from oppmodel.modeling.games.acpc.betting import CALL, NUM_ACTIONS
from oppmodel.modeling.games.acpc.holdem_abstract import (
    AbstractGameConfig,
    view_index,
    view_rounds,
    view_strings,
)
from oppmodel.modeling.holdem.policy import Spot
from oppmodel.modeling.holdem.strength import hole_rows
from oppmodel.modeling.solve.lazy_mccfr import UNVISITED

GZIP_MAGIC = b"\x1f\x8b"  # a gzip-compressed strategy file (the bundled blueprints) reads as one


class Blueprint:
    """A hold'em policy reading an abstract game's strategy (see the module's text)."""

    def __init__(
        self,
        positions: list[dict[str, list[float]]],
        config: AbstractGameConfig,
        *,
        name: str = "blueprint",
        cards: CardAbstraction | None = None,
        unvisited: str | None = None,
    ) -> None:
        self.name = name
        self.positions = positions
        self.config = config
        self.cards = cards or card_abstraction(config.abstraction)
        self._tables: dict[tuple[int, str], np.ndarray] = {}
        self.unvisited = unvisited  # "call": the file lists the visited sets only (lazy_mccfr)

    @classmethod
    def from_file(cls, path: str | Path, *, name: str = "blueprint") -> Blueprint:
        """The blueprint of a strategy file ``oppmodel solve`` wrote for a hold'em game (plain or
        gzip-compressed JSON); InvalidStrategyError if it records no abstract game."""
        raw = Path(path).read_bytes()
        doc = json.loads(gzip.decompress(raw) if raw[:2] == GZIP_MAGIC else raw)
        recorded = (doc.get("solver") or {}).get("abstract_game")
        if not isinstance(recorded, dict) or "positions" not in doc:
            raise InvalidStrategyError("strategy", f"{path} records no hold'em abstract game")
        fields = dict(recorded["abstraction"])
        fields["buckets"] = tuple(fields["buckets"])
        config = AbstractGameConfig(
            AbstractionConfig(**fields), recorded["deals"], recorded["seed"], recorded["recall"]
        )
        cuts = recorded.get("cuts")  # absent: rebuilt (or read from the cache) from the config
        cards = CardAbstraction(config.abstraction, tuple(map(np.array, cuts))) if cuts else None
        unvisited = doc.get("unvisited")
        return cls(doc["positions"], config, name=name, cards=cards, unvisited=unvisited)

    def probabilities(self, spot: Spot, holes: np.ndarray) -> np.ndarray:
        """(k, 3): each hole's row of the strategy at its view and the spot's betting; a whole
        range costs one bucketing of the board per round (:meth:`CardAbstraction.range_buckets`)
        and one table lookup."""
        rows = hole_rows(holes)
        rounds = view_rounds(self.config, spot.round)
        buckets = np.stack(
            [self.cards.range_buckets(spot.board[: BOARD_SIZES[r]])[rows] for r in rounds],
            axis=-1,
        )
        if (buckets < 0).any():
            raise InvalidArgumentError("holes", f"a hole shares a card with the board {spot.board}")
        views = view_index(self.config, buckets, rounds[0])
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
        none), read from the file's table once."""
        key = (position, betting)
        if key not in self._tables:
            rows = self.positions[position]
            self._tables[key] = np.array(
                [
                    rows.get(f"{view}:{betting}", [np.nan] * NUM_ACTIONS)
                    for view in view_strings(self.config, round_)
                ],
                dtype=float,
            )
        return self._tables[key]
