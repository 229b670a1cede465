"""A limit game whose betting is walked by its rules instead of stored as a tree: for games whose
public tree is too large for arrays (3-player limit hold'em: 23.9 million public nodes).

A :class:`~oppmodel.modeling.games.acpc.limit_game.LimitGame` holds one row per public node and
one per (node, view) information set, whether or not a solver ever reaches them. A
:class:`LazyGame` holds only what does not grow with the betting tree: the rules as a small
integer array (:func:`rules_array`, read by the sampled solver's kernels, which apply the
betting rules of :mod:`oppmodel.modeling.games.acpc.betting` node by node), the deals (equally
likely), each position's view per round and deal, and the pot shares per set of positions still
in. The solver (:mod:`oppmodel.modeling.solve.lazy_mccfr`) numbers the public nodes and the
information sets it visits as it first meets them, so memory follows what sampling reaches.

Information sets and their strings are a LimitGame's: ``<view>:<betting>``, the betting ACPC's.
A LazyGame made from a compiled game (:func:`lazy_game_of`: Kuhn, Leduc, identity views) has the
same deals, views and shares as that game, so a profile solved here maps onto it row by row
(exact nash_conv); hold'em's (:func:`~oppmodel.modeling.games.acpc.holdem_abstract.
lazy_abstract_game`) sees buckets, as its array-built abstract game does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.games.acpc.betting import BettingState, after, legal_actions, opening
from oppmodel.modeling.games.acpc.compiler import pot_shares
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.games.acpc.limit_game import LimitGame

# rules_array's layout: [n, rounds, firstPlayer[rounds], raiseSize[rounds], maxRaises[rounds]]
RULES_HEADER = 2


@dataclass(frozen=True, eq=False)
class LazyGame:
    """The rules, deals, views and pot shares of a limit game (see the module's text)."""

    name: str
    gamedef: GameDef
    deal_cards: np.ndarray  # (D, cards): holes by position, then the board
    deal_view: np.ndarray  # (R, D, n) view of each position in each round
    share: np.ndarray  # (2^n - 1, D, n): pot fraction per deal when the positions of mask+1 are in
    view_strings: tuple[tuple[str, ...], ...]  # round -> view -> its text
    source: LimitGame | None = None  # the compiled game it was made from, if any

    @property
    def num_players(self) -> int:
        return self.gamedef.num_players

    @property
    def num_deals(self) -> int:
        return len(self.deal_cards)

    @functools.cached_property
    def rules(self) -> np.ndarray:
        """The betting rules as the kernels read them (:func:`rules_array`)."""
        return rules_array(self.gamedef)

    @functools.cached_property
    def bounds(self) -> tuple[int, int]:
        """(the most public nodes one external-sampling iteration visits, the longest betting):
        :func:`walk_bounds`."""
        return walk_bounds(self.gamedef)

    @property
    def view_stride(self) -> int:
        """Views per round at most: an information set's key is ``node * stride + view``."""
        return max(len(v) for v in self.view_strings)


def rules_array(gamedef: GameDef) -> np.ndarray:
    """The betting rules as int64: players, rounds, then per round the first player (0-based),
    the raise size and the raise cap."""
    return np.array(
        [
            gamedef.num_players,
            gamedef.num_rounds,
            *gamedef.first_player,
            *gamedef.raise_size,
            *gamedef.max_raises,
        ],
        dtype=np.int64,
    )


def opening_row(gamedef: GameDef) -> np.ndarray:
    """The root's row of the kernels' node table: player to act, round, raises, calls, folded
    positions (a bit mask), then each position's chips in (the blinds)."""
    state = opening(gamedef)
    return np.array([state.player, 0, 0, 0, 0, *state.spent], dtype=np.int32)


def walk_bounds(gamedef: GameDef) -> tuple[int, int]:
    """The most public nodes one external-sampling iteration can visit (summed over the
    traversers: every action of the traverser walked, one of anyone else's), which bounds the
    nodes and information sets one iteration adds; and the longest betting in actions."""

    def visits(traverser: int) -> int:
        @functools.cache
        def below(state: BettingState) -> int:
            if state.player < 0:
                return 1
            kids = [
                below(after(gamedef, state, a)._replace(betting=""))
                for a in legal_actions(gamedef, state)
            ]
            return 1 + (sum(kids) if state.player == traverser else max(kids))

        return below(opening(gamedef))

    @functools.cache
    def depth(state: BettingState) -> int:
        if state.player < 0:
            return 0
        return 1 + max(
            depth(after(gamedef, state, a)._replace(betting=""))
            for a in legal_actions(gamedef, state)
        )

    return sum(visits(p) for p in range(gamedef.num_players)), depth(opening(gamedef))


def all_masks_shares(gamedef: GameDef, deal_cards: np.ndarray) -> np.ndarray:
    """(2^n - 1, D, n) pot shares for every set of positions still in (row ``mask - 1``)."""
    masks = list(range(1, 2**gamedef.num_players))
    return pot_shares(gamedef, gamedef.deck, deal_cards, masks)


def lazy_game_of(game: LimitGame) -> LazyGame:
    """The lazy form of a compiled game: the same deals, views (cards), strings and shares."""
    return LazyGame(
        name=game.name,
        gamedef=game.gamedef,
        deal_cards=game.deal_cards,
        deal_view=game.tree.deal_view,
        share=all_masks_shares(game.gamedef, game.deal_cards),
        view_strings=game.view_strings,
        source=game,
    )
