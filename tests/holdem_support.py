"""The small hold'em abstraction the hold'em model tests share (3 buckets a round, 200 deals:
built in seconds), and a seeded prior mean over it."""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.games.acpc.abstraction import AbstractionConfig, card_abstraction
from oppmodel.modeling.games.acpc.holdem_abstract import AbstractGameConfig, abstract_game
from oppmodel.modeling.holdem.posterior import AbstractSpots

SMALL_CARDS = AbstractionConfig(buckets=(3, 3, 3, 3), samples=50, rollouts=4, seed=1)
SMALL = AbstractGameConfig(SMALL_CARDS, deals=200, seed=2)


def small_spots() -> AbstractSpots:
    """2-player hold'em's spots on the small abstraction."""
    return AbstractSpots(abstract_game("holdem2p", SMALL), SMALL, card_abstraction(SMALL_CARDS))


def seeded_blueprint(spots: AbstractSpots, seed: int) -> np.ndarray:
    """A seeded profile over the legal actions, far from uniform: the prior's mean."""
    legal = spots.game.legal_mask
    raw = np.random.default_rng(seed).random(legal.shape) ** 3 * legal
    return raw / raw.sum(axis=2, keepdims=True)
