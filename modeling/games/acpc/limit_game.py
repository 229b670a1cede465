"""A compiled ACPC ``limit`` game: the flat arrays numba kernels walk, and its names.

:func:`oppmodel.modeling.games.acpc.compiler.compile_limit_game` builds a :class:`LimitGame` from a
game definition; this module holds what it builds.

* **The public betting tree.** A node is a betting sequence; its children are the legal actions
  ``f`` (fold), ``c`` (check or call) and ``r`` (bet or raise), action codes 0, 1, 2 in that order
  (the codes of OpenSpiel's ``leduc_poker`` and ``universal_poker``). Nodes are numbered in
  depth-first pre-order, so children have larger ids than their parents and a reverse sweep is a
  backward induction. The tree does not branch on cards: a kernel carries a vector over all deals
  through it.
* **The chance outcomes.** Every deal of hole cards and board cards, equally likely; a deal is one
  set of cards per group (each position's hole, each round's board), in the order the dealer deals
  the groups. With one card per group these are the ordered deals (Leduc 3p: 8 x 7 x 6 x 5 = 1680).
* **Information sets.** What position p knows at a node of round r is the node and its *view*: its
  hole cards and the board dealt so far. ``deal_view[r, d, p]`` is p's view under deal d; the
  information set of the node's player is ``node_base[node] + view``, numbered per position.
  Multi-round games refine views as rounds add board cards, which is why a best response picks one
  action per information set (a set of deals), not per deal.
* **Payoffs.** Never a terminals x deals x players table (Leduc 3p has 631 terminals). Each
  terminal keeps what every position put in and which positions are still in (its *class*);
  ``share[class, d, p]`` is the fraction of the pot p wins under deal d: 1 for the last player in
  after folds, else split equally among the best showdown hands. So ``payoff = share * pot -
  spent``.

Information-state strings (the keys of strategy files) are ``<view>:<betting>``: the view is the
player's hole cards, then ``/`` and the board cards of each later round dealt so far (a round-0
board, if a game has one, follows the hole cards after a ``/`` too); the betting is the ACPC
betting with ``/`` between rounds, ending in ``/`` when a round has just begun. Cards are written
as ACPC writes them, in the dealer's deck order inside a group. Leduc: ``"Ks:r"`` (holding the
king, facing a raise in round 0), ``"Ks/Qh:rc/cr"`` (round 1, board queen, facing a raise after a
check). Kuhn is a one-round instance: ``"Ks:ccr"`` is OpenSpiel's ``"2ppb"`` in 3-player Kuhn.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import CALL, NUM_ACTIONS
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.games.units import RateUnit


class LimitTree(NamedTuple):
    """The arrays every kernel walks, in one bundle (numba takes a named tuple of arrays)."""

    node_player: np.ndarray  # (N,) position to act, -1 at terminals
    node_round: np.ndarray  # (N,)
    node_children: np.ndarray  # (N, 3) child per action f, c, r; -1 where illegal or terminal
    node_action: np.ndarray  # (N,) action that led to the node (-1 at the root)
    node_parent: np.ndarray  # (N,) parent id (-1 at the root)
    node_depth: np.ndarray  # (N,) number of actions from the root
    node_terminal: np.ndarray  # (N,) terminal index, -1 at decision nodes
    node_base: np.ndarray  # (N,) first information set of the node (node_base + view), -1
    terminal_spent: np.ndarray  # (T, n) chips each position put in
    terminal_pot: np.ndarray  # (T,)
    terminal_class: np.ndarray  # (T,) row of ``share``: which positions are still in
    share: np.ndarray  # (M, D, n) fraction of the pot each position wins
    deal_view: np.ndarray  # (R, D, n) view of each position in each round
    round_views: np.ndarray  # (R,) number of views (information sets per decision node)
    max_depth: int  # longest betting sequence (root at depth 0)


@dataclass(frozen=True, eq=False)
class LimitGame:
    """A compiled limit game (built by ``compiler.compile_limit_game``); arrays are read-only."""

    name: str
    gamedef: GameDef
    deck: tuple[str, ...]
    bettings: tuple[str, ...]  # node id -> ACPC betting
    tree: LimitTree
    deal_cards: np.ndarray  # (D, n * numHoleCards + board cards): holes by position, then board
    view_strings: tuple[tuple[str, ...], ...]  # round -> view -> "Ks/Qh"
    infosets_per_position: tuple[int, ...]
    infoset_node: tuple[np.ndarray, ...]  # position -> (I_p,) node of each information set
    infoset_view: tuple[np.ndarray, ...]  # position -> (I_p,) view of each information set
    _node_by_betting: dict
    _view_by_string: tuple[dict, ...]

    # --- sizes -------------------------------------------------------------------------------

    @property
    def num_players(self) -> int:
        return self.gamedef.num_players

    @property
    def num_rounds(self) -> int:
        return self.gamedef.num_rounds

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    @property
    def num_nodes(self) -> int:
        return len(self.bettings)

    @property
    def num_terminals(self) -> int:
        return len(self.tree.terminal_pot)

    @property
    def num_deals(self) -> int:
        return len(self.deal_cards)

    @property
    def num_infosets(self) -> int:
        """Information sets per position, padded to the largest position."""
        return max(self.infosets_per_position)

    @property
    def rate_unit(self) -> RateUnit:
        """The unit of its win rates: its rules' (``GameDef.rate_unit``)."""
        return self.gamedef.rate_unit

    def deal_sequence(self, hands: int, seed: int) -> np.ndarray:
        """(hands,) deal indices into ``deal_cards`` (hole cards by position, then the board),
        uniformly at random: a match's deals (``MatchGame``)."""
        return np.random.default_rng(seed).integers(0, self.num_deals, size=hands)

    def play_hands(self, agents: Sequence[Any], deals: np.ndarray) -> np.ndarray:
        """Play one hand per deal index (``MatchGame``): the match engine's walk of the tree,
        :func:`oppmodel.modeling.play.match.play_match`; chips won per seat."""
        from oppmodel.modeling.play.match import play_match  # the engine builds on this module

        return play_match(self, agents, deals)

    def sizes(self) -> dict[str, int]:
        """The compiled sizes, for reports: nodes, terminals, deals, information sets."""
        return {
            "nodes": self.num_nodes,
            "terminals": self.num_terminals,
            "decision_nodes": self.num_nodes - self.num_terminals,
            "deals": self.num_deals,
            "infosets": int(sum(self.infosets_per_position)),
            **{f"infosets_{p}": n for p, n in enumerate(self.infosets_per_position)},
        }

    # --- betting -----------------------------------------------------------------------------

    def node(self, betting: str) -> int:
        """Node id of an ACPC betting sequence; IllegalActionError if it is not a legal one."""
        try:
            return self._node_by_betting[betting]
        except (KeyError, TypeError):
            raise IllegalActionError(
                "betting", f"{betting!r} is not a legal betting sequence of {self.name}"
            ) from None

    def current_player(self, betting: str) -> int:
        """Position to act after ``betting``, or -1 when the hand is over."""
        return int(self.tree.node_player[self.node(betting)])

    def legal_actions(self, betting: str) -> list[int]:
        """Legal action codes (0 fold, 1 call, 2 raise) after ``betting``; empty at the end."""
        return [
            a for a in range(NUM_ACTIONS) if self.tree.node_children[self.node(betting), a] >= 0
        ]

    def child(self, betting: str, action: int) -> str:
        """The betting after one more legal action."""
        node = self.node(betting)
        if not (0 <= action < NUM_ACTIONS) or self.tree.node_children[node, action] < 0:
            raise IllegalActionError("action", f"{action!r} is not legal after {betting!r}")
        return self.bettings[self.tree.node_children[node, action]]

    # --- information sets --------------------------------------------------------------------

    def check_position(self, position: int, field: str = "position") -> None:
        if not isinstance(position, (int, np.integer)) or not 0 <= position < self.num_players:
            raise InvalidArgumentError(field, f"{position!r} not in 0..{self.num_players - 1}")

    def infosets(self, position: int) -> range:
        """The valid information-set indices of ``position`` (the rest are padding)."""
        self.check_position(position)
        return range(self.infosets_per_position[position])

    def infoset_string(self, position: int, index: int) -> str:
        """``<view>:<betting>`` of an information set (see the module docstring)."""
        if not 0 <= index < len(self.infosets(position)):
            raise InvalidArgumentError(
                "infoset", f"index {index} out of range for position {position}"
            )
        node = int(self.infoset_node[position][index])
        view = int(self.infoset_view[position][index])
        rnd = int(self.tree.node_round[node])
        return f"{self.view_strings[rnd][view]}:{self.bettings[node]}"

    def infoset_from_string(self, position: int, infostate: str) -> int:
        """Inverse of :meth:`infoset_string`."""
        self.check_position(position)
        if not isinstance(infostate, str) or infostate.count(":") != 1:
            raise InvalidArgumentError("infostate", f"{infostate!r} is not '<cards>:<betting>'")
        view_text, betting = infostate.split(":")
        node = self.node(betting)
        if self.tree.node_player[node] != position:
            raise IllegalActionError(
                "infostate", f"position {position} is not to act after {betting!r}"
            )
        view = self._view_by_string[int(self.tree.node_round[node])].get(view_text)
        if view is None:
            raise InvalidArgumentError(
                "infostate", f"{view_text!r} is not what a player sees after {betting!r}"
            )
        return int(self.tree.node_base[node]) + view

    def infostate(self, hole: str, board: Sequence[str], betting: str) -> str:
        """The information-state string of a player holding ``hole`` (``"Ks"``) who has seen the
        board of each round reached (``board[r]``, one entry per round, as a MATCHSTATE lists
        them) after ``betting``: the key of its row in a strategy file. Cards are put in deck
        order inside each group; InvalidArgumentError for a card outside the deck."""
        view = self._in_deck_order(hole)
        for r, cards in enumerate(board):
            if r > 0 or cards:
                view += "/" + self._in_deck_order(cards)
        return f"{view}:{betting}"

    def _in_deck_order(self, text: str) -> str:
        return "".join(self.deck[c] for c in sorted(self._cards(text)))

    @functools.cached_property
    def legal_mask(self) -> np.ndarray:
        """(n, num_infosets, 3) the legal actions of every information set (padding: call)."""
        out = np.zeros((self.num_players, self.num_infosets, NUM_ACTIONS), dtype=bool)
        out[:, :, CALL] = True
        for p in range(self.num_players):
            nodes = self.infoset_node[p]
            out[p, : len(nodes)] = self.tree.node_children[nodes] >= 0
        out.setflags(write=False)
        return out

    @functools.cached_property
    def valid_infoset_mask(self) -> np.ndarray:
        """(n, num_infosets) True for real information sets, False for padding."""
        mask = np.zeros((self.num_players, self.num_infosets), dtype=bool)
        for p, count in enumerate(self.infosets_per_position):
            mask[p, :count] = True
        mask.setflags(write=False)
        return mask

    # --- deals and payoffs -------------------------------------------------------------------

    def deal_index(self, hole: Sequence[str], board: Sequence[str] = ()) -> int:
        """Index of the deal with these cards: ``hole[p]`` is position p's hole cards as one
        string (``"Ks"``, ``"AsKh"``), ``board[r]`` the board cards of round r (``""`` or
        missing for rounds without any)."""
        g = self.gamedef
        if len(hole) != self.num_players:
            raise InvalidArgumentError("hole", f"needs {self.num_players} positions' cards")
        if len(board) > self.num_rounds:
            raise InvalidArgumentError("board", f"more than {self.num_rounds} rounds of cards")
        groups = [*hole, *board, *([""] * (self.num_rounds - len(board)))]
        sizes = [g.num_hole_cards] * self.num_players + list(g.num_board_cards)
        key = []
        for text, size in zip(groups, sizes, strict=True):
            cards = self._cards(text)
            if len(cards) != size:
                raise InvalidArgumentError("cards", f"{text!r} should hold {size} cards")
            key.extend(sorted(cards))
        index = self._deal_by_cards.get(tuple(key))
        if index is None:
            raise InvalidArgumentError("cards", f"{list(hole)}/{list(board)} repeats a card")
        return index

    def returns(
        self, betting: str, hole: Sequence[str | None], board: Sequence[str] = ()
    ) -> np.ndarray:
        """Chips won by each position at the end of a hand (split pots as the dealer splits).

        Cards that cannot change the result may be missing, so a seat's observation of the hand
        suffices (the dealer shows it every card that decides the pot): a folded position's hole
        cards (None), and in a hand won by folds every hole card but one's own and the board of
        the rounds never dealt; a showdown needs the hole cards of every position in it.
        """
        t = int(self.tree.node_terminal[self.node(betting)])
        if t < 0:
            raise IllegalActionError("betting", f"{betting!r} is not a finished hand")
        tree = self.tree
        share = tree.share[tree.terminal_class[t]]
        by_folds = bool(np.all(share == share[0]))
        for p, cards in enumerate(hole):
            if cards is None and not by_folds and share[:, p].any():
                raise InvalidArgumentError(f"hole[{p}]", "in the showdown: its cards are needed")
        used = set(self._cards("".join(c for c in (*hole, *board) if c)))
        spare = iter(c for c in self.deck if self._card_index[c] not in used)

        def fill(size: int) -> str:  # cards no one holds: they cannot change the result
            return "".join(next(spare) for _ in range(size))

        size = self.gamedef.num_hole_cards
        dealt = [fill(size) if cards is None else cards for cards in hole]
        if len(board) < self.num_rounds and by_folds:
            board = [*board, *(fill(k) for k in self.gamedef.num_board_cards[len(board) :])]
        d = self.deal_index(dealt, board)
        share = tree.share[tree.terminal_class[t], d]
        return share * tree.terminal_pot[t] - tree.terminal_spent[t]

    def _cards(self, text: str) -> list[int]:
        if not isinstance(text, str) or len(text) % 2:
            raise InvalidArgumentError("cards", f"{text!r} is not a run of two-character cards")
        try:
            return [self._card_index[text[i : i + 2]] for i in range(0, len(text), 2)]
        except KeyError:
            raise InvalidArgumentError(
                "cards", f"{text!r} has a card outside the deck {' '.join(self.deck)}"
            ) from None

    @functools.cached_property
    def _card_index(self) -> dict[str, int]:
        return {card: i for i, card in enumerate(self.deck)}

    @functools.cached_property
    def _deal_by_cards(self) -> dict[tuple[int, ...], int]:
        return {tuple(int(c) for c in row): d for d, row in enumerate(self.deal_cards)}
