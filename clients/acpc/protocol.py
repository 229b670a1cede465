"""ACPC hand state, MATCHSTATE lines and client replies (protocol version 2.0.0) for Kuhn-style
games.

A hand of a one-round limit game follows the reference dealer's rules (game.c): every position
posts its blind (in Kuhn an ante of 1); position ``firstPlayer - 1`` acts first and the turn passes
to the next position that has not folded. ``f`` folds, ``c`` checks or calls (matches the highest
total put in), ``r`` bets or raises by the round's raise size. Folding is invalid when there is
nothing to call, raising is invalid once ``maxRaises`` raises were made. The round (with one round,
the hand) ends when one player is left, or when every unfolded player has acted and matched the
highest total. Payoffs: the pot goes to the last player left, or is split among the best hole cards
at a showdown; each player's payoff is its share minus what it put in.

A MATCHSTATE line (server to client) is ``MATCHSTATE:<position>:<hand>:<betting>:<cards>``, where
cards are the hole cards by position separated by ``|`` (an empty section when hidden), followed by
the board (none in Kuhn). A client sees its own cards always and another player's only in the final
state of a showdown, and only if that player did not fold. A reply is the state it answers followed
by ``:`` and an action letter: ``fF`` fold, ``cCkK`` check/call, ``rRbB`` bet/raise; the rest of
the line is ignored. Reference: ``shared/notes/acpc-protocol.md`` sections 4-6.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS, GameDef, kuhn_num_players
from oppmodel.modeling.numerals import numeral_end

FOLD, CALL, RAISE = "f", "c", "r"
ACTION_LETTERS = {"f": FOLD, "F": FOLD, "c": CALL, "C": CALL, "k": CALL, "K": CALL}
ACTION_LETTERS |= {"r": RAISE, "R": RAISE, "b": RAISE, "B": RAISE}
VERSION_LINE = "VERSION:2.0.0"
MAX_HAND_ID = 2**32 - 1


class HandState:
    """The betting state of one hand (mutable and cheap; the dealer and the agent replay into
    it)."""

    __slots__ = (
        "acted",
        "actions",
        "current",
        "finished",
        "folded",
        "game",
        "max_spent",
        "raises",
        "spent",
    )

    def __init__(self, game: GameDef) -> None:
        _require_kuhn(game)
        self.game = game
        self.spent = list(game.blind)
        self.max_spent = max(game.blind)
        self.folded = [False] * game.num_players
        self.acted = [False] * game.num_players
        self.raises = 0
        self.actions: list[str] = []
        self.current = game.first_player[0]
        self.finished = False

    @classmethod
    def from_betting(cls, game: GameDef, betting: str) -> HandState:
        """Replay an ACPC betting string; IllegalActionError naming the first bad character."""
        state = cls(game)
        for i, letter in enumerate(betting):
            action = ACTION_LETTERS.get(letter)
            if action is None or not state.is_valid(action):
                what = "unknown action letter" if action is None else "invalid action"
                raise IllegalActionError(f"betting[{i}]", f"{what} {letter!r} in {betting!r}")
            state.apply(action)
        return state

    @property
    def betting(self) -> str:
        """The betting so far as the dealer prints it (lowercase ``fcr``)."""
        return "".join(self.actions)

    def facing_bet(self) -> bool:
        """Whether the player to act has something to call."""
        return self.spent[self.current] < self.max_spent

    def is_valid(self, action: str) -> bool:
        """Whether the player to act may take ``action`` (one of ``f c r``) now."""
        if self.finished:
            return False
        if action == FOLD:
            return self.facing_bet()
        if action == RAISE:
            return self.raises < self.game.max_raises[0]
        return action == CALL

    def valid_actions(self) -> list[str]:
        """The valid actions of the player to act, in the order ``f c r``."""
        return [a for a in (FOLD, CALL, RAISE) if self.is_valid(a)]

    def apply(self, action: str) -> None:
        """Apply a valid action of the player to act."""
        p = self.current
        if action == FOLD:
            self.folded[p] = True
        elif action == RAISE:
            self.raises += 1
            self.max_spent += self.game.raise_size[0]
            self.spent[p] = self.max_spent
        else:
            self.spent[p] = self.max_spent
        self.acted[p] = True
        self.actions.append(action)
        n = self.game.num_players
        live = [q for q in range(n) if not self.folded[q]]
        if len(live) == 1 or all(self.acted[q] and self.spent[q] == self.max_spent for q in live):
            self.finished = True
            self.current = -1
            return
        q = (p + 1) % n
        while self.folded[q]:
            q = (q + 1) % n
        self.current = q

    def showdown(self) -> bool:
        """Whether the finished hand went to a showdown (two or more players did not fold)."""
        return self.finished and self.folded.count(False) >= 2

    def payoffs(self, hole: Sequence[str]) -> tuple[float, ...]:
        """Chips won by each position in the finished hand, given every live player's card."""
        if not self.finished:
            raise InvalidArgumentError("betting", f"hand {self.betting!r} is not finished")
        live = [q for q in range(self.game.num_players) if not self.folded[q]]
        if len(live) > 1:
            ranks = {q: card_rank(hole[q]) for q in live}
            best = max(ranks.values())
            live = [q for q in live if ranks[q] == best]
        share = sum(self.spent) / len(live)
        return tuple((share if q in live else 0.0) - spent for q, spent in enumerate(self.spent))

    def visible_hole(self, hole: Sequence[str], viewer: int) -> tuple[str, ...]:
        """Hole cards as ``viewer`` sees them now ('' where hidden)."""
        shown = self.showdown()
        return tuple(
            cards if q == viewer or (shown and not self.folded[q]) else ""
            for q, cards in enumerate(hole)
        )


@functools.cache
def _require_kuhn(game: GameDef) -> None:
    kuhn_num_players(game)


def card_rank(card: str) -> int:
    """Rank index 0..12 (2..A) of a two-character card; InvalidArgumentError if malformed."""
    if len(card) != 2 or card[0] not in RANK_CHARS or card[1] not in SUIT_CHARS:
        raise InvalidArgumentError("card", f"bad card {card!r}")
    return RANK_CHARS.index(card[0])


@dataclass(frozen=True)
class MatchState:
    """One MATCHSTATE line: a position's view of a hand (hole cards '' where hidden; no board in
    Kuhn)."""

    position: int
    hand: int
    betting: str
    hole: tuple[str, ...]

    def __str__(self) -> str:
        return f"MATCHSTATE:{self.position}:{self.hand}:{self.betting}:{'|'.join(self.hole)}"


def parse_matchstate_prefix(game: GameDef, text: str) -> tuple[MatchState, HandState, int]:
    """Parse a MATCHSTATE at the start of ``text`` the way the reference does.

    Returns the state (betting normalised to lowercase), the replayed hand and the index just past
    the cards; raises InvalidArgumentError naming the bad part. Betting letters may be any accepted
    variant (``k`` for ``c``, ...); each must be valid where it stands.
    """
    head = "MATCHSTATE:"
    if not text.startswith(head):
        raise InvalidArgumentError("matchstate", "does not start with MATCHSTATE:")
    i = len(head)
    numbers = []
    for field, bound in (("position", game.num_players - 1), ("hand", MAX_HAND_ID)):
        j = numeral_end(text, i)
        if j == i or j >= len(text) or text[j] != ":":
            raise InvalidArgumentError(field, "expected a number followed by ':'")
        value = int(text[i:j])
        if value > bound:
            raise InvalidArgumentError(field, f"{value} is above {bound}")
        numbers.append(value)
        i = j + 1
    j = text.find(":", i)
    if j < 0:
        raise InvalidArgumentError("betting", "missing ':' after the betting")
    try:
        hand = HandState.from_betting(game, text[i:j])
    except IllegalActionError as exc:
        raise InvalidArgumentError("betting", str(exc)) from exc
    i = j + 1
    hole = []
    for p in range(game.num_players):
        if p:
            if i >= len(text) or text[i] != "|":
                raise InvalidArgumentError("cards", f"missing '|' before position {p}'s cards")
            i += 1
        start = i
        for _ in range(game.num_hole_cards):
            if i + 1 < len(text) and text[i] in RANK_CHARS and text[i + 1] in SUIT_CHARS:
                i += 2
        if i - start not in (0, 2 * game.num_hole_cards):
            raise InvalidArgumentError("cards", f"position {p} has too few hole cards")
        hole.append(text[start:i])
    state = MatchState(numbers[0], numbers[1], hand.betting, tuple(hole))
    return state, hand, i


def parse_matchstate(game: GameDef, line: str) -> tuple[MatchState, HandState]:
    """Parse a whole MATCHSTATE line (a trailing ``\\r\\n`` or ``\\n`` is allowed)."""
    text = line.rstrip("\r\n")
    state, hand, end = parse_matchstate_prefix(game, text)
    if end != len(text):
        raise InvalidArgumentError("matchstate", f"unexpected text after the cards: {text[end:]!r}")
    return state, hand


def same_state(a: MatchState, b: MatchState) -> bool:
    """The reference's ``matchStatesEqual``: viewer, hand, betting and the viewer's own cards."""
    return (
        a.position == b.position
        and a.hand == b.hand
        and a.betting == b.betting
        and a.hole[a.position] == b.hole[b.position]
    )


def format_reply(state: MatchState, action: str) -> str:
    """The client's reply line to ``state`` (``\\r\\n`` terminated, as the example player sends)."""
    if action not in (FOLD, CALL, RAISE):
        raise IllegalActionError("action", f"{action!r} is not one of f, c, r")
    return f"{state}:{action}\r\n"
