"""The blueprint as a hold'em policy: a strategy solved in the abstract game
(:mod:`oppmodel.modeling.games.acpc.holdem_abstract`, ``oppmodel solve holdem2p``) playing the
real game.

At a spot, each hole's view is computed from the real cards as the abstract game computes it (the
card abstraction's bucket of the hole and the board of each round so far; the current round's
alone under imperfect recall), and the row of the strategy file keyed ``<view>:<betting>`` is the
answer. The file is read by its keys alone, so playing needs neither the abstract game's sample of
deals nor its tree: only the abstraction, rebuilt (or read from the cache) from the configuration
the file records (``solver.abstract_game``, written by ``oppmodel solve``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from oppmodel.modeling.errors import InvalidStrategyError
from oppmodel.modeling.games.acpc.abstraction import (
    BOARD_SIZES,
    AbstractionConfig,
    CardAbstraction,
    card_abstraction,
)
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS
from oppmodel.modeling.games.acpc.holdem_abstract import AbstractGameConfig
from oppmodel.modeling.holdem.policy import Spot

_NAMES = [r + s for r in RANK_CHARS for s in SUIT_CHARS]  # by card integer


class Blueprint:
    """A hold'em policy reading an abstract game's strategy (see the module's text)."""

    def __init__(
        self,
        positions: list[dict[str, list[float]]],
        config: AbstractGameConfig,
        *,
        name: str = "blueprint",
        cards: CardAbstraction | None = None,
    ) -> None:
        self.name = name
        self.positions = positions
        self.config = config
        self.cards = cards or card_abstraction(config.abstraction)

    @classmethod
    def from_file(cls, path: str | Path, *, name: str = "blueprint") -> Blueprint:
        """The blueprint of a strategy file ``oppmodel solve`` wrote for a hold'em game;
        InvalidStrategyError if it records no abstract game."""
        doc = json.loads(Path(path).read_text())
        recorded = (doc.get("solver") or {}).get("abstract_game")
        if not isinstance(recorded, dict) or "positions" not in doc:
            raise InvalidStrategyError("strategy", f"{path} records no hold'em abstract game")
        cards = dict(recorded["abstraction"])
        cards["buckets"] = tuple(cards["buckets"])
        config = AbstractGameConfig(
            AbstractionConfig(**cards), recorded["deals"], recorded["seed"], recorded["recall"]
        )
        return cls(doc["positions"], config, name=name)

    def view(self, hole: np.ndarray, board: tuple[int, ...], round_: int) -> str:
        """The view string of a hole (two card integers) on the board seen in ``round_``."""
        hole_names = [_NAMES[c] for c in hole]
        board_names = [_NAMES[c] for c in board]
        first = 0 if self.config.recall == "perfect" else round_
        return "/".join(
            str(self.cards.bucket(hole_names, board_names[: BOARD_SIZES[r]]))
            for r in range(first, round_ + 1)
        )

    def probabilities(self, spot: Spot, holes: np.ndarray) -> np.ndarray:
        """(k, 3): each hole's row of the strategy at its view and the spot's betting."""
        table = self.positions[spot.position]
        out = np.empty((len(holes), 3))
        for k, hole in enumerate(np.asarray(holes).reshape(-1, 2)):
            key = f"{self.view(hole, spot.board, spot.round)}:{spot.betting.betting}"
            row = table.get(key)
            if row is None:
                raise InvalidStrategyError("strategy", f"no row {key!r} in the blueprint")
            out[k] = row
        return out
