"""The small hold'em abstraction the hold'em model tests share (3 buckets a round, 200 deals:
built in seconds), a 3-player hold'em small enough to compile over it, and a seeded prior mean."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from oppmodel.modeling.games.acpc.abstraction import AbstractionConfig, card_abstraction
from oppmodel.modeling.games.acpc.betting import ACTION_LETTERS, ROUND_SEPARATOR, HandState
from oppmodel.modeling.games.acpc.bundled import game_path
from oppmodel.modeling.games.acpc.gamedef import GameDef, read_game_def
from oppmodel.modeling.games.acpc.holdem_abstract import AbstractGameConfig, abstract_game
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.holdem.match import PolicyAgent
from oppmodel.modeling.holdem.policy import HoldemPolicy
from oppmodel.modeling.holdem.posterior import AbstractSpots
from oppmodel.modeling.holdem.sets import LazySets
from oppmodel.modeling.holdem.styles import holdem_policy
from oppmodel.modeling.observation import LimitObservation

SMALL_CARDS = AbstractionConfig(buckets=(3, 3, 3, 3), samples=50, rollouts=4, seed=1)
SMALL = AbstractGameConfig(SMALL_CARDS, deals=200, seed=2)


class RecordingAgent(PolicyAgent):
    """A policy's seat that keeps every hand's end as it saw it (what an observer would send)."""

    def __init__(self, name: str, policy: HoldemPolicy, seed: int) -> None:
        super().__init__(name, policy, seed)
        self.seen: list[LimitObservation] = []

    def end_hand(self, obs: LimitObservation) -> None:
        self.seen.append(obs)


def recording_style(name: str, seed: int, game: str = "holdem3p") -> RecordingAgent:
    """A panel style's seat (``holdem_policy``) in a bundled hold'em game, keeping its hands."""
    return RecordingAgent(name, holdem_policy(name, read_game_def(game)), seed)


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


def betting_moves(gamedef: GameDef, betting: str) -> list[tuple[str, int, int, int]]:
    """Every move of a finished ``betting`` replayed by the rules: (the betting before it, its
    round, the mover, the action code)."""
    hand, out = HandState(gamedef), []
    for letter in betting.replace(ROUND_SEPARATOR, ""):
        out.append((hand.betting, hand.round, hand.current, ACTION_LETTERS.index(letter)))
        hand.apply(letter)
    return out


def seeded_blueprint(spots: AbstractSpots, seed: int) -> np.ndarray:
    """A seeded profile over the legal actions, far from uniform: the prior's mean."""
    legal = spots.game.legal_mask
    raw = np.random.default_rng(seed).random(legal.shape) ** 3 * legal
    return raw / raw.sum(axis=2, keepdims=True)


def lazy_twin(spots: AbstractSpots, blueprint: np.ndarray, capacity: int) -> AbstractSpots:
    """``spots``' abstract game with its sets numbered as met (:class:`LazySets`), the blueprint
    rows read from ``blueprint`` (a profile of the compiled game), room for ``capacity`` sets
    before the first growth."""
    game = spots.game
    tree = game.tree

    def source(position: int, round_: int, betting: str, views: int) -> np.ndarray:
        base = int(tree.node_base[game.node(betting)])
        return blueprint[position, base : base + views]

    sets = LazySets(game.gamedef, spots.config, source, capacity=capacity)
    return AbstractSpots(None, spots.config, spots.cards, sets=sets)


def as_compiled(lazy: AbstractSpots, game: LimitGame, table: np.ndarray, positions) -> np.ndarray:
    """A table over lazily numbered sets ((k, capacity, ...), axis 0 the positions
    ``positions``) in the compiled game's numbering ((k, num_infosets, ...)): each numbered
    node's rows moved to the compiled node's, for the position acting there; NaN elsewhere."""
    sets = lazy.sets
    out = np.full((len(positions), game.num_infosets, *table.shape[2:]), np.nan)
    for betting in sets.bettings:
        base, round_, player = sets.node(betting)
        views = sets.views[round_]
        compiled = int(game.tree.node_base[game.node(betting)])
        for k, q in enumerate(positions):
            if q == player:
                out[k, compiled : compiled + views] = table[k, base : base + views]
    return out
