"""What one seat observes of a finished hand, and its validation.

Observability follows the ACPC dealer: a seat always sees its own card and every action; it sees
another player's card only at a showdown (two or more players did not fold) and only if that player
did not fold. A folded card, and every card when all but one fold, stays hidden (None).

Two records, one per kind of compiled game, each with its maker and its validator:

- ``HandObservation`` (``observe_hand``, ``validate_observation``) for ``KuhnGame``: the betting in
  OpenSpiel letters, cards as integers. The service, its protos and snapshots, the ACPC harness and
  the Kuhn match engine speak it, so it stays exactly as it is.
- ``LimitObservation`` (``observe_limit_hand``, ``validate_limit_observation``) for any compiled
  ACPC limit game (``LimitGame``: Leduc, and Kuhn compiled from its game file): the ACPC betting of
  every round, hole and board cards as the dealer writes them. The MBBR model of a game takes the
  record of its game kind (``MBBRModel.observe``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import FOLD, HandState
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.matchstate import MatchState
from oppmodel.modeling.games.kuhn import KuhnGame


@dataclass(frozen=True)
class HandObservation:
    """One finished hand from our seat's point of view."""

    position: int  # our position in this hand
    history: str  # terminal betting in OpenSpiel letters
    cards: tuple[int | None, ...]  # per position; ours required, others None when hidden

    def message_fields(self) -> dict[str, Any]:
        """The fields of the API's ``Observation`` message that carry this hand: the Kuhn
        fields (our card, the OpenSpiel history, every other card shown)."""
        return {
            "position": self.position,
            "our_card": self.cards[self.position],
            "history": self.history,
            "revealed": [
                {"position": p, "card": c}
                for p, c in enumerate(self.cards)
                if c is not None and p != self.position
            ],
        }


def observe_hand(game: KuhnGame, position: int, history: str, cards: list[int]) -> HandObservation:
    """The observation ``position`` makes of a hand whose full deal is ``cards``."""
    return HandObservation(position, history, game.visible_cards(history, cards, position))


def validate_observation(game: KuhnGame, obs: HandObservation) -> None:
    """Raise InvalidArgumentError / IllegalActionError naming the field if ``obs`` is impossible."""
    game.check_position(obs.position)
    if not isinstance(obs.history, str):
        raise IllegalActionError("history", "must be a string of 'p'/'b'")
    if not game.is_terminal(obs.history):
        raise IllegalActionError("history", f"{obs.history!r} is not a finished hand")
    if len(obs.cards) != game.num_players:
        raise InvalidArgumentError(
            "cards", f"needs {game.num_players} entries, got {len(obs.cards)}"
        )
    seen: dict[int, int] = {}
    for i, c in enumerate(obs.cards):
        if c is None:
            continue
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < game.num_cards:
            raise InvalidArgumentError(f"cards[{i}]", f"card {c!r} not in 0..{game.num_cards - 1}")
        if c in seen:
            raise InvalidArgumentError(
                f"cards[{i}]", f"card {c} already held by position {seen[c]}"
            )
        seen[c] = i
    if obs.cards[obs.position] is None:
        raise InvalidArgumentError(f"cards[{obs.position}]", "our own card is required")
    folded = game.folded(obs.history)
    showdown = folded.count(False) >= 2
    for i, c in enumerate(obs.cards):
        if i == obs.position:
            continue
        visible = showdown and not folded[i]
        if visible and c is None:
            raise InvalidArgumentError(f"cards[{i}]", "a showdown card is missing")
        if not visible and c is not None:
            reason = "folded" if folded[i] else "won without a showdown"
            raise InvalidArgumentError(f"cards[{i}]", f"position {i} {reason}: its card is hidden")


# --- any compiled ACPC limit game ------------------------------------------------------------


@dataclass(frozen=True)
class LimitObservation:
    """One finished hand of a compiled limit game (``LimitGame``) from our seat's point of view,
    in ACPC notation (cards as the dealer writes them, ``"Ks"``; several cards run together,
    ``"AsKh"``).

    ``hole[p]`` is position p's hole cards: ours always, another's only if it was shown at a
    showdown (two or more players did not fold) and that player did not fold; None where hidden.
    ``board[r]`` is the board cards dealt for round r, for every round the hand reached (round 0
    first, ``""`` where a round deals none: Leduc's round 0), so a hand that ended in round r has
    r + 1 entries.
    """

    position: int  # our position in this hand
    betting: str  # the finished ACPC betting, '/' between rounds ("rc/cr")
    hole: tuple[str | None, ...]  # per position; ours required, others None when hidden
    board: tuple[str, ...]  # per round reached

    def __hash__(self) -> int:
        """The fields' hash (the one the dataclass would make), computed once: the model's caches
        are keyed by the observation, a few lookups a hand, and a tuple's hash is not cached."""
        try:
            return self._hash  # type: ignore[attr-defined]
        except AttributeError:
            value = hash((self.position, self.betting, self.hole, self.board))
            object.__setattr__(self, "_hash", value)
            return value

    def __getstate__(self) -> dict[str, Any]:
        """The fields only: a string's hash differs between processes (pickled to a worker)."""
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def message_fields(self) -> dict[str, Any]:
        """The fields of the API's ``Observation`` message that carry this hand: its MATCHSTATE
        line (any limit game's hands travel so)."""
        hole = tuple(h or "" for h in self.hole)
        return {"matchstate": str(MatchState(self.position, 0, self.betting, hole, self.board))}


def limit_observation_cards(obs: LimitObservation) -> tuple[str | None, ...]:
    """The cards of ``obs`` as one flat tuple: every position's hole cards (None where hidden),
    then the board of each round reached. The record of a hand in storage (beside its position
    and betting); :func:`limit_observation_of` reads it back."""
    return (*obs.hole, *obs.board)


def limit_observation_of(
    position: int, betting: str, cards: Sequence[str | None], num_players: int
) -> LimitObservation:
    """The observation of a :func:`limit_observation_cards` record (not validated)."""
    return LimitObservation(
        int(position),
        betting,
        tuple(cards[:num_players]),
        tuple(str(c) for c in cards[num_players:]),
    )


def observe_limit_hand(
    game: LimitGame, position: int, deal: int, terminal: int
) -> LimitObservation:
    """The observation ``position`` makes of the hand dealt ``game.deal_cards[deal]`` that ended
    at terminal ``terminal`` (an index into the game's terminals, ``tree.node_terminal``)."""
    game.check_position(position)
    if not isinstance(deal, (int, np.integer)) or not 0 <= deal < game.num_deals:
        raise InvalidArgumentError("deal", f"{deal!r} not in 0..{game.num_deals - 1}")
    if not isinstance(terminal, (int, np.integer)) or not 0 <= terminal < game.num_terminals:
        raise InvalidArgumentError("terminal", f"{terminal!r} not in 0..{game.num_terminals - 1}")
    facts = _limit_facts(game)
    node = int(facts.terminal_node[terminal])
    live = facts.live[terminal]
    showdown = int(live.sum()) >= 2
    hole = tuple(
        facts.hole_text[deal][p] if p == position or (showdown and live[p]) else None
        for p in range(game.num_players)
    )
    board = facts.board_text[deal][: int(game.tree.node_round[node]) + 1]
    return LimitObservation(int(position), game.bettings[node], hole, board)


def observe_limit_cards(
    game: LimitGame,
    position: int,
    betting: str,
    hole: tuple[str, ...],
    board: tuple[str, ...],
) -> LimitObservation:
    """The observation ``position`` makes of a finished hand whose every card is known (a dealer
    log's line): ``hole[p]`` every position's hole cards, ``board[r]`` the board of each round
    dealt (at least the rounds the hand reached; later ones are dropped). The cards the dealer
    hides from that seat are hidden here too, so a replay never learns more than the live seat
    did. InvalidArgumentError / IllegalActionError naming the field if the hand is impossible."""
    game.check_position(position)
    node = game.node(betting)
    terminal = int(game.tree.node_terminal[node])
    if terminal < 0:
        raise IllegalActionError("betting", f"{betting!r} is not a finished hand")
    live = _limit_facts(game).live[terminal]
    showdown = int(live.sum()) >= 2
    shown = tuple(
        cards if p == position or (showdown and live[p]) else None for p, cards in enumerate(hole)
    )
    rounds = int(game.tree.node_round[node]) + 1
    obs = LimitObservation(int(position), betting, shown, tuple(board[:rounds]))
    validate_limit_observation(game, obs)
    return obs


def validate_limit_observation(game: LimitGame, obs: LimitObservation) -> None:
    """Raise InvalidArgumentError / IllegalActionError naming the field if ``obs`` is impossible
    in ``game`` (the ACPC dealer could not have shown it to that seat)."""
    game.check_position(obs.position)
    _check_betting_text(obs)
    node = game.node(obs.betting)
    terminal = int(game.tree.node_terminal[node])
    if terminal < 0:
        raise IllegalActionError("betting", f"{obs.betting!r} is not a finished hand")
    rounds = int(game.tree.node_round[node]) + 1
    facts = _limit_facts(game)
    _check_limit_cards(game.gamedef, facts.card_index, obs, rounds, facts.live[terminal])


def validate_rules_observation(
    gamedef: GameDef, card_index: dict[str, int], obs: LimitObservation
) -> None:
    """:func:`validate_limit_observation`'s checks in a game too large to compile (3-player
    hold'em): the betting replayed by the rules; ``card_index`` the deck's cards."""
    n = gamedef.num_players
    if not isinstance(obs.position, (int, np.integer)) or not 0 <= obs.position < n:
        raise InvalidArgumentError("position", f"{obs.position!r} not in 0..{n - 1}")
    _check_betting_text(obs)
    hand = HandState.from_betting(gamedef, obs.betting)
    if not hand.finished:
        raise IllegalActionError("betting", f"{obs.betting!r} is not a finished hand")
    live = ~np.array(hand.folded)
    _check_limit_cards(gamedef, card_index, obs, hand.round + 1, live)


def _check_betting_text(obs: LimitObservation) -> None:
    if not isinstance(obs.betting, str):
        raise IllegalActionError("betting", "must be a string of ACPC actions")


def _check_limit_cards(
    gamedef: GameDef,
    index: dict[str, int],
    obs: LimitObservation,
    rounds: int,
    live: np.ndarray,
) -> None:
    """The cards' checks of a finished hand that reached ``rounds`` rounds with the positions
    ``live`` (did not fold) in."""
    n = gamedef.num_players
    if not isinstance(obs.hole, tuple) or len(obs.hole) != n:
        raise InvalidArgumentError("hole", f"needs a tuple of {n} entries, got {obs.hole!r}")
    if not isinstance(obs.board, tuple) or len(obs.board) != rounds:
        raise InvalidArgumentError(
            "board", f"needs a tuple of {rounds} entries (one per round reached), got {obs.board!r}"
        )
    seen: dict[str, str] = {}

    def read(field: str, text: object, size: int) -> None:
        if not isinstance(text, str) or len(text) != 2 * size:
            raise InvalidArgumentError(field, f"needs {size} card(s) like 'Ks', got {text!r}")
        for i in range(0, len(text), 2):
            card = text[i : i + 2]
            if card not in index:
                raise InvalidArgumentError(field, f"{card!r} is not in the deck {' '.join(index)}")
            if card in seen:
                raise InvalidArgumentError(field, f"{card} is already in {seen[card]}")
            seen[card] = field

    for p, text in enumerate(obs.hole):
        if text is not None:
            read(f"hole[{p}]", text, gamedef.num_hole_cards)
    for r, text in enumerate(obs.board):
        read(f"board[{r}]", text, gamedef.num_board_cards[r])
    if obs.hole[obs.position] is None:
        raise InvalidArgumentError(f"hole[{obs.position}]", "our own hole cards are required")
    showdown = int(live.sum()) >= 2
    for p, text in enumerate(obs.hole):
        if p == obs.position:
            continue
        visible = showdown and bool(live[p])
        if visible and text is None:
            raise InvalidArgumentError(f"hole[{p}]", "cards shown at the showdown are missing")
        if not visible and text is not None:
            reason = "folded" if not live[p] else "won without a showdown"
            raise InvalidArgumentError(f"hole[{p}]", f"position {p} {reason}: its cards are hidden")


class _LimitFacts(NamedTuple):
    """What observations of one game read over and over, built once per game."""

    terminal_node: np.ndarray  # (T,) node id of each terminal
    live: np.ndarray  # (T, n) True for the positions that did not fold
    hole_text: list[tuple[str, ...]]  # [deal][position] hole cards, deck order
    board_text: list[tuple[str, ...]]  # [deal][round] board cards, deck order
    card_index: dict[str, int]


@functools.cache  # per game object: compiled games are cached and immutable
def _limit_facts(game: LimitGame) -> _LimitFacts:
    tree, n, gamedef = game.tree, game.num_players, game.gamedef
    terminal_node = np.flatnonzero(tree.node_terminal >= 0)
    terminal_node = terminal_node[np.argsort(tree.node_terminal[terminal_node])]
    live = np.ones((len(terminal_node), n), dtype=bool)
    for t, leaf in enumerate(terminal_node):
        node = int(leaf)
        while node > 0:  # walk up: a fold (action 0) by the parent's player
            parent = int(tree.node_parent[node])
            if tree.node_action[node] == FOLD:
                live[t, int(tree.node_player[parent])] = False
            node = parent
    h = gamedef.num_hole_cards
    ends = np.cumsum([n * h, *gamedef.num_board_cards])
    hole_text, board_text = [], []
    for row in game.deal_cards.tolist():
        hole_text.append(
            tuple("".join(game.deck[c] for c in row[p * h : (p + 1) * h]) for p in range(n))
        )
        board_text.append(
            tuple(
                "".join(game.deck[c] for c in row[ends[r] : ends[r + 1]])
                for r in range(game.num_rounds)
            )
        )
    live.setflags(write=False)
    return _LimitFacts(
        terminal_node, live, hole_text, board_text, {c: i for i, c in enumerate(game.deck)}
    )
