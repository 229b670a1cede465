"""The small hold'em abstraction the hold'em model tests share (3 buckets a round, 200 deals:
built in seconds), a 3-player hold'em small enough to compile over it, and a seeded prior mean."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from oppmodel.modeling.games.acpc.abstraction import AbstractionConfig, card_abstraction
from oppmodel.modeling.games.acpc.bundled import game_path
from oppmodel.modeling.games.acpc.holdem_abstract import AbstractGameConfig, abstract_game
from oppmodel.modeling.holdem.posterior import AbstractSpots

SMALL_CARDS = AbstractionConfig(buckets=(3, 3, 3, 3), samples=50, rollouts=4, seed=1)
SMALL = AbstractGameConfig(SMALL_CARDS, deals=200, seed=2)


def small_spots(game: str | Path = "holdem2p") -> AbstractSpots:
    """A hold'em game's spots on the small abstraction (2-player hold'em's by default)."""
    return AbstractSpots(abstract_game(game, SMALL), SMALL, card_abstraction(SMALL_CARDS))


def one_raise_3p(folder: Path) -> Path:
    """3-player limit hold'em with one raise a round (the ACPC game's rules otherwise), written
    in ``folder``: 4,736 public nodes, so its abstract game compiles (the real one's 23.9 million
    do not)."""
    text = game_path("holdem3p").read_text(encoding="ascii")
    path = folder / "holdem.limit.3p.one_raise.game"
    path.write_text(text.replace("maxRaises = 3 4 4 4", "maxRaises = 1 1 1 1"), encoding="ascii")
    return path


def seeded_blueprint(spots: AbstractSpots, seed: int) -> np.ndarray:
    """A seeded profile over the legal actions, far from uniform: the prior's mean."""
    legal = spots.game.legal_mask
    raw = np.random.default_rng(seed).random(legal.shape) ** 3 * legal
    return raw / raw.sum(axis=2, keepdims=True)
