"""n-player Kuhn poker (2 to 4 players), compiled to flat arrays for numba kernels.

Rules (OpenSpiel's ``kuhn_poker(players=n)``): a deck of n + 1 cards (J < Q < K < A for three
players), every player antes 1 chip and is dealt one card. Players act in position order; until
somebody bets each may pass (check) or bet 1 chip. After the first bet every other player, in
cyclic order starting after the bettor, calls (1 chip) or passes (folds). The highest card among
players who did not fold wins the pot. Position p is to act after history h exactly when ``len(h) %
n == p``.

Histories are written with OpenSpiel's letters: ``p`` (pass: check or fold) and ``b`` (bet or
call). An information state is ``<card><history>``, e.g. ``"2ppb"``; the ACPC protocol writes the
same betting with ``c`` (check/call), ``r`` (bet) and ``f`` (fold).

The public betting tree is small (3 players: 25 nodes, 13 terminals); an information set of
position p is a pair (card, decision node of p), indexed ``card * nodes_of[p] + local_index``.
Everything a kernel needs is an array: node players and children (children have larger ids than
their parents, so a reverse sweep over ids is a backward induction), each terminal's path, every
deal (all ordered assignments of distinct cards, equally likely) and the payoff of every terminal
under every deal."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.units import RateUnit, ante_unit
from oppmodel.modeling.numerals import DIGITS

PASS, BET = 0, 1
ACTION_LETTERS = "pb"
MIN_PLAYERS, MAX_PLAYERS = 2, 4


@dataclass(frozen=True, eq=False)
class KuhnGame:
    """The compiled game. Build it with :func:`kuhn_game`; all arrays are read-only."""

    num_players: int
    histories: tuple[str, ...]  # node id -> history
    node_player: np.ndarray  # (N,) position to act, -1 at terminals
    node_children: np.ndarray  # (N, 2) child ids, -1 at terminals
    node_local: np.ndarray  # (N,) index of the node among its player's decision nodes
    node_terminal: np.ndarray  # (N,) terminal index, -1 at decision nodes
    nodes_of: np.ndarray  # (n,) number of decision nodes of each position
    infoset_of: (
        np.ndarray
    )  # (N, num_cards) info-set index of (node's player, card), -1 at terminals
    terminal_nodes: np.ndarray  # (T,) node ids of terminals
    path_nodes: np.ndarray  # (T, L) decision nodes on the path to each terminal, -1 padded
    path_actions: np.ndarray  # (T, L)
    path_len: np.ndarray  # (T,)
    deals: np.ndarray  # (D, n) card of each position; every deal has probability 1 / D
    payoffs: np.ndarray  # (T, D, n) chips won by each position
    _node_by_history: dict

    @property
    def num_cards(self) -> int:
        return self.num_players + 1

    @property
    def num_actions(self) -> int:
        return 2

    @property
    def num_nodes(self) -> int:
        return len(self.histories)

    @property
    def num_terminals(self) -> int:
        return len(self.terminal_nodes)

    @functools.cached_property
    def num_infosets(self) -> int:
        """Information sets per position, padded to the largest position."""
        return self.num_cards * int(self.nodes_of.max())

    @property
    def name(self) -> str:
        return f"kuhn{self.num_players}p"

    @property
    def rate_unit(self) -> RateUnit:
        """The unit of its win rates: milli-antes per hand, the ante being 1 chip."""
        return ante_unit(1)

    # --- histories -------------------------------------------------------------------------

    def node(self, history: str) -> int:
        """Node id of a history; IllegalActionError if it is not a valid betting sequence."""
        try:
            return self._node_by_history[history]
        except (KeyError, TypeError):
            raise IllegalActionError(
                "history", f"{history!r} is not a valid betting sequence of {self.name}"
            ) from None

    def current_player(self, history: str) -> int:
        """Position to act after ``history``, or -1 when the hand is over."""
        return int(self.node_player[self.node(history)])

    def is_terminal(self, history: str) -> bool:
        return self.current_player(history) < 0

    def legal_actions(self, history: str) -> list[int]:
        return [] if self.is_terminal(history) else [PASS, BET]

    def returns(self, history: str, cards: Sequence[int]) -> np.ndarray:
        """Chips won by each position at a terminal history with the given cards."""
        t = int(self.node_terminal[self.node(history)])
        if t < 0:
            raise IllegalActionError("history", f"{history!r} is not a finished hand")
        self.validate_cards(cards)
        return _terminal_returns(history, cards, self.num_players)

    def validate_cards(self, cards: Sequence[int], field: str = "cards") -> None:
        """Check a full deal: one distinct card in range per position."""
        if len(cards) != self.num_players:
            raise InvalidArgumentError(field, f"needs {self.num_players} cards, got {len(cards)}")
        for i, c in enumerate(cards):
            if not isinstance(c, (int, np.integer)) or not 0 <= c < self.num_cards:
                raise InvalidArgumentError(
                    f"{field}[{i}]", f"card {c!r} not in 0..{self.num_cards - 1}"
                )
        if len(set(int(c) for c in cards)) != len(cards):
            raise InvalidArgumentError(field, f"cards {list(cards)} are not distinct")

    def folded(self, history: str) -> list[bool]:
        """Which positions folded (passed after the first bet) in ``history``."""
        self.node(history)
        return _folded(history, self.num_players)

    def visible_cards(
        self, history: str, cards: Sequence[int], viewer: int
    ) -> tuple[int | None, ...]:
        """What ``viewer`` sees at the end of the hand under ACPC rules.

        Its own card always; another player's only at a showdown (two or more players did not
        fold) and only if that player did not fold. Everything else is None (hidden).
        """
        if not self.is_terminal(history):
            raise IllegalActionError("history", f"{history!r} is not a finished hand")
        self.validate_cards(cards)
        self.check_position(viewer, "viewer")
        folded = _folded(history, self.num_players)
        showdown = folded.count(False) >= 2
        return tuple(
            int(c) if (i == viewer or (showdown and not folded[i])) else None
            for i, c in enumerate(cards)
        )

    # --- information sets --------------------------------------------------------------------

    def check_position(self, position: int, field: str = "position") -> None:
        """InvalidArgumentError naming ``field`` unless ``position`` is a seat of this game."""
        if not isinstance(position, (int, np.integer)) or not 0 <= position < self.num_players:
            raise InvalidArgumentError(field, f"{position!r} not in 0..{self.num_players - 1}")

    def infoset_index(self, position: int, card: int, history: str) -> int:
        """Index of the information set of ``position`` holding ``card`` after ``history``."""
        self.check_position(position)
        if not isinstance(card, (int, np.integer)) or not 0 <= card < self.num_cards:
            raise InvalidArgumentError("card", f"card {card!r} not in 0..{self.num_cards - 1}")
        node = self.node(history)
        if self.node_player[node] != position:
            raise IllegalActionError(
                "history", f"position {position} is not to act after {history!r}"
            )
        return int(self.infoset_of[node, card])

    def infoset_string(self, position: int, index: int) -> str:
        """OpenSpiel information-state string (``"2ppb"``) of an information set."""
        self.check_position(position)
        n_local = int(self.nodes_of[position])
        if not 0 <= index < self.num_cards * n_local:
            raise InvalidArgumentError(
                "infoset", f"index {index} out of range for position {position}"
            )
        card, local = divmod(index, n_local)
        return f"{card}{self.histories[self._decision_nodes(position)[local]]}"

    def infoset_from_string(self, position: int, infostate: str) -> int:
        """Inverse of :meth:`infoset_string`."""
        if not isinstance(infostate, str) or not infostate or infostate[0] not in DIGITS:
            raise InvalidArgumentError("infostate", f"{infostate!r} is not '<card><history>'")
        return self.infoset_index(position, int(infostate[0]), infostate[1:])

    def infosets(self, position: int) -> list[int]:
        """The valid information-set indices of ``position`` (the rest are padding)."""
        self.check_position(position)
        return list(range(self.num_cards * int(self.nodes_of[position])))

    def valid_infoset_mask(self) -> np.ndarray:
        """(n, num_infosets) boolean mask of the real (non-padding) information sets."""
        return self._valid_mask.copy()

    @functools.cached_property
    def _valid_mask(self) -> np.ndarray:
        mask = np.zeros((self.num_players, self.num_infosets), dtype=bool)
        for p in range(self.num_players):
            mask[p, : self.num_cards * int(self.nodes_of[p])] = True
        mask.setflags(write=False)
        return mask

    @functools.cached_property
    def _has_padding(self) -> bool:
        return not bool(self._valid_mask.all())

    # --- ACPC betting strings ----------------------------------------------------------------

    def acpc_to_history(self, betting: str) -> str:
        """ACPC betting (``c``/``r``/``f``) to OpenSpiel letters, checking legality as it goes."""
        history = ""
        for i, ch in enumerate(betting):
            node = self._node_by_history.get(history)
            if node is None or self.node_player[node] < 0:
                raise IllegalActionError("betting", f"{betting!r}: action {i} after the hand ended")
            facing_bet = "b" in history
            if ch == "c":
                history += "b" if facing_bet else "p"
            elif ch == "r" and not facing_bet:
                history += "b"
            elif ch == "f" and facing_bet:
                history += "p"
            else:
                raise IllegalActionError(
                    "betting", f"{betting!r}: {ch!r} at action {i} is not legal after {history!r}"
                )
        return history

    def history_to_acpc(self, history: str) -> str:
        """OpenSpiel letters to ACPC betting."""
        self.node(history)
        out, facing_bet = [], False
        for ch in history:
            if facing_bet:
                out.append("c" if ch == "b" else "f")
            else:
                out.append("r" if ch == "b" else "c")
                facing_bet = ch == "b"
        return "".join(out)

    # --- helpers -----------------------------------------------------------------------------

    @functools.cached_property
    def _decision_nodes_by_position(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(self.num_players)]
        for node, player in enumerate(self.node_player):
            if player >= 0:
                out[player].append(node)
        return out

    def _decision_nodes(self, position: int) -> list[int]:
        return self._decision_nodes_by_position[position]


def _folded(history: str, n: int) -> list[bool]:
    folded = [False] * n
    first_bet = history.find("b")
    if first_bet >= 0:
        for i in range(first_bet + 1, len(history)):
            if history[i] == "p":
                folded[i % n] = True
    return folded


def _terminal_returns(history: str, cards: Sequence[int], n: int) -> np.ndarray:
    contrib = np.ones(n)
    first_bet = history.find("b")
    if first_bet >= 0:
        for i in range(first_bet, len(history)):
            if history[i] == "b":
                contrib[i % n] += 1
    folded = _folded(history, n)
    winner = max((i for i in range(n) if not folded[i]), key=lambda i: cards[i])
    out = -contrib
    out[winner] += contrib.sum()
    return out


def _is_terminal_history(history: str, n: int) -> bool:
    first_bet = history.find("b")
    if first_bet < 0:
        return len(history) == n
    return len(history) == first_bet + n


@functools.cache
def kuhn_game(num_players: int = 3) -> KuhnGame:
    """The compiled n-player Kuhn poker game (cached per player count)."""
    if not isinstance(num_players, int) or not MIN_PLAYERS <= num_players <= MAX_PLAYERS:
        raise UnknownGameError(
            "num_players", f"Kuhn poker is modelled for 2..4 players, got {num_players!r}"
        )
    n = num_players
    histories: list[str] = []
    stack = [""]
    while stack:  # depth-first pre-order: parents get smaller ids than their children
        h = stack.pop()
        histories.append(h)
        if not _is_terminal_history(h, n):
            stack.extend([h + "b", h + "p"])  # popped in order p, b
    node_by_history = {h: i for i, h in enumerate(histories)}
    num_nodes = len(histories)
    node_player = np.full(num_nodes, -1, dtype=np.int64)
    node_children = np.full((num_nodes, 2), -1, dtype=np.int64)
    node_local = np.full(num_nodes, -1, dtype=np.int64)
    node_terminal = np.full(num_nodes, -1, dtype=np.int64)
    nodes_of = np.zeros(n, dtype=np.int64)
    terminal_nodes: list[int] = []
    for i, h in enumerate(histories):
        if _is_terminal_history(h, n):
            node_terminal[i] = len(terminal_nodes)
            terminal_nodes.append(i)
        else:
            p = len(h) % n
            node_player[i] = p
            node_local[i] = nodes_of[p]
            nodes_of[p] += 1
            node_children[i] = [node_by_history[h + "p"], node_by_history[h + "b"]]
    num_cards = n + 1
    infoset_of = np.full((num_nodes, num_cards), -1, dtype=np.int64)
    for i in range(num_nodes):
        p = node_player[i]
        if p >= 0:
            infoset_of[i] = np.arange(num_cards) * nodes_of[p] + node_local[i]
    max_len = max(len(histories[t]) for t in terminal_nodes)
    num_terminals = len(terminal_nodes)
    path_nodes = np.full((num_terminals, max_len), -1, dtype=np.int64)
    path_actions = np.full((num_terminals, max_len), -1, dtype=np.int64)
    path_len = np.zeros(num_terminals, dtype=np.int64)
    for t, node in enumerate(terminal_nodes):
        h = histories[node]
        path_len[t] = len(h)
        for d, ch in enumerate(h):
            path_nodes[t, d] = node_by_history[h[:d]]
            path_actions[t, d] = ACTION_LETTERS.index(ch)
    deals = np.array(list(itertools.permutations(range(num_cards), n)), dtype=np.int64)
    payoffs = np.empty((num_terminals, len(deals), n))
    for t, node in enumerate(terminal_nodes):
        for d, deal in enumerate(deals):
            payoffs[t, d] = _terminal_returns(histories[node], deal, n)
    arrays = (
        node_player, node_children, node_local, node_terminal, nodes_of, infoset_of,
        path_nodes, path_actions, path_len, deals, payoffs,
    )  # fmt: skip
    terminal_array = np.array(terminal_nodes, dtype=np.int64)
    for a in (*arrays, terminal_array):
        a.setflags(write=False)
    return KuhnGame(
        num_players=n,
        histories=tuple(histories),
        node_player=node_player,
        node_children=node_children,
        node_local=node_local,
        node_terminal=node_terminal,
        nodes_of=nodes_of,
        infoset_of=infoset_of,
        terminal_nodes=terminal_array,
        path_nodes=path_nodes,
        path_actions=path_actions,
        path_len=path_len,
        deals=deals,
        payoffs=payoffs,
        _node_by_history=node_by_history,
    )
