"""The betting of ACPC ``limit`` games, as the reference dealer plays it: one implementation of the
rules, which the game compiler walks and every reader of ACPC text replays.

A hand starts with every position's blind (or ante) in the pot and position ``firstPlayer - 1``
to act. ``f`` folds, ``c`` checks or calls (matches the largest contribution), ``r`` bets or
raises by the round's raise size (limit: no amount). Folding is legal only when facing a bet,
raising only while the round has seen fewer than ``maxRaises`` raises. A round ends once every
player still in has acted since the last raise and matched it (counted as the reference's
``doAction`` counts it: the calls since the last raise, plus that raise); the next round opens
with its ``firstPlayer`` (or the next player still in). The hand ends when one player is left or
the last round ends. Action codes 0, 1, 2 are ``f``, ``c``, ``r`` (OpenSpiel's ``leduc_poker``
and ``universal_poker`` codes).

The betting string is ACPC's: lowercase letters, ``/`` between rounds, ending in ``/`` as soon as
a new round has begun (``rrc/`` is Leduc's second round before anyone acts). Readers accept the
reference's letter variants (``F``; ``C``, ``k``, ``K``; ``R``, ``b``, ``B``).

At the end of a hand the pot goes to the last player in, or is split equally among the best
poker hands over hole and board cards (:mod:`oppmodel.modeling.games.acpc.hand_rank`). A player
sees another's hole cards only at a showdown, and never a folded player's. Stacks that could bind
(all-in play) and no-limit betting are refused. Reference: the ACPC reference
server (project_acpc_server 1.0.42), protocol 2.0.0.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.acpc.gamedef import LIMIT, GameDef
from oppmodel.modeling.games.acpc.hand_rank import hand_strength

FOLD, CALL, RAISE = 0, 1, 2
NUM_ACTIONS = 3
ACTION_LETTERS = "fcr"  # action code -> the letter the dealer prints
# every letter a reader accepts -> the action's letter (reference ``readAction``)
LETTER_VARIANTS = {"f": "f", "F": "f", "c": "c", "C": "c", "k": "c", "K": "c"}
LETTER_VARIANTS |= {"r": "r", "R": "r", "b": "r", "B": "r"}
ROUND_SEPARATOR = "/"
_CODES = {letter: code for code, letter in enumerate(ACTION_LETTERS)}


class BettingState(NamedTuple):
    """The public state of a hand between actions (the reference's ``State`` without cards).

    A named tuple rather than a frozen dataclass: the dealer builds one per action and the
    compiler one per node, and a named tuple is three times cheaper to build.
    """

    betting: str
    round: int
    player: int  # position to act; -1 once the hand is over
    spent: tuple[int, ...]  # chips each position has put in
    folded: tuple[bool, ...]
    raises: int  # raises made this round
    called: int  # the reference's count: calls since the last raise, plus that raise

    @property
    def finished(self) -> bool:
        """Whether the hand is over."""
        return self.player < 0


def most_spent(gamedef: GameDef) -> int:
    """The most chips one player can put into a hand (every round raised to its cap)."""
    caps = zip(gamedef.max_raises, gamedef.raise_size, strict=True)
    return max(gamedef.blind) + sum(m * s for m, s in caps)


def betting_unsupported(gamedef: GameDef) -> list[str]:
    """Rules of ``gamedef`` these betting rules do not play (empty when they play all)."""
    if gamedef.betting != LIMIT:
        return ["no-limit betting (only limit games)"]
    most = most_spent(gamedef)
    if min(gamedef.stack) < most:
        return [
            f"a stack below {most} chips, the most a player can put in (all-in play is not "
            "modelled)"
        ]
    return []


def opening(gamedef: GameDef) -> BettingState:
    """The state before the first action: blinds in, round 0's first player to act."""
    n = gamedef.num_players
    return BettingState(
        betting="",
        round=0,
        player=_next_in(gamedef.first_player[0], (False,) * n),
        spent=tuple(gamedef.blind),
        folded=(False,) * n,
        raises=0,
        called=0,
    )


def is_legal(gamedef: GameDef, state: BettingState, action: int) -> bool:
    """Whether the player to act may take ``action`` (a code) now."""
    if state.player < 0:
        return False
    if action == CALL:
        return True
    if action == FOLD:
        return state.spent[state.player] < max(state.spent)
    return action == RAISE and state.raises < gamedef.max_raises[state.round]


def legal_actions(gamedef: GameDef, state: BettingState) -> list[int]:
    """The legal action codes of the player to act, in the order f, c, r (none once over)."""
    return [a for a in (FOLD, CALL, RAISE) if is_legal(gamedef, state, a)]


def after(gamedef: GameDef, state: BettingState, action: int) -> BettingState:
    """The state after a legal ``action`` by the player to act (reference ``doAction``)."""
    p, rnd = state.player, state.round
    spent, folded = list(state.spent), list(state.folded)
    raises, called = state.raises, state.called
    if action == FOLD:
        folded[p] = True
    elif action == CALL:
        spent[p] = max(spent)
        called += 1
    else:
        spent[p] = max(spent) + gamedef.raise_size[rnd]
        raises += 1
        called = 1
    betting = state.betting + ACTION_LETTERS[action]
    live = folded.count(False)
    spent_, folded_ = tuple(spent), tuple(folded)
    if live == 1 or (called >= live and rnd + 1 == gamedef.num_rounds):  # the hand is over
        return BettingState(betting, rnd, -1, spent_, folded_, raises, called)
    if called >= live:  # the round is over: the next one opens
        first = _next_in(gamedef.first_player[rnd + 1], folded)
        return BettingState(betting + ROUND_SEPARATOR, rnd + 1, first, spent_, folded_, 0, 0)
    nxt = _next_in((p + 1) % gamedef.num_players, folded)
    return BettingState(betting, rnd, nxt, spent_, folded_, raises, called)


def _next_in(start: int, folded: Sequence[bool]) -> int:
    """The first position from ``start`` on (cyclically) that has not folded."""
    n = len(folded)
    for k in range(n):
        if not folded[(start + k) % n]:
            return (start + k) % n
    raise AssertionError("no player left")  # unreachable: a hand ends with one player left


@functools.cache
def _opening_of(gamedef: GameDef) -> BettingState:
    """The opening state of a game whose betting these rules play; UnknownGameError otherwise."""
    problems = betting_unsupported(gamedef)
    if problems:
        raise UnknownGameError("game", "unsupported ACPC game: " + "; ".join(problems))
    return opening(gamedef)


class HandState:
    """One hand's betting, replayed action by action (mutable and cheap: the dealer, the agent
    and the readers of MATCHSTATE and log lines replay into it). Actions are letters ``f c r``."""

    __slots__ = ("game", "state")

    def __init__(self, game: GameDef) -> None:
        self.state = _opening_of(game)
        self.game = game

    @classmethod
    def from_betting(cls, game: GameDef, betting: str) -> HandState:
        """Replay an ACPC betting string (any letter variant; ``/`` exactly where a round ends);
        IllegalActionError naming the first bad character as ``betting[i]``."""
        hand = cls(game)
        for i, letter in enumerate(betting):
            if len(hand.state.betting) > i:  # the last action began a round: its '/' is next
                if letter != ROUND_SEPARATOR:
                    raise IllegalActionError(f"betting[{i}]", _missing_separator(hand, betting))
                continue
            action = LETTER_VARIANTS.get(letter)
            if action is None or not hand.is_valid(action):
                what = "unknown action letter" if action is None else "invalid action"
                if letter == ROUND_SEPARATOR:
                    what = "no round ended here: unexpected"
                raise IllegalActionError(f"betting[{i}]", f"{what} {letter!r} in {betting!r}")
            hand.apply(action)
        if len(hand.state.betting) > len(betting):
            raise IllegalActionError(f"betting[{len(betting)}]", _missing_separator(hand, betting))
        return hand

    @property
    def betting(self) -> str:
        """The betting so far as the dealer prints it (lowercase ``fcr``, ``/`` between rounds)."""
        return self.state.betting

    @property
    def current(self) -> int:
        """The position to act, or -1 once the hand is over."""
        return self.state.player

    @property
    def finished(self) -> bool:
        """Whether the hand is over."""
        return self.state.player < 0

    @property
    def round(self) -> int:
        """The round being played (the last one, once the hand is over)."""
        return self.state.round

    @property
    def folded(self) -> tuple[bool, ...]:
        """Whether each position has folded."""
        return self.state.folded

    @property
    def spent(self) -> tuple[int, ...]:
        """Chips each position has put in."""
        return self.state.spent

    def facing_bet(self) -> bool:
        """Whether the player to act has something to call."""
        return self.state.spent[self.current] < max(self.state.spent)

    def valid_actions(self) -> list[str]:
        """The valid actions of the player to act, in the order ``f c r``."""
        return [ACTION_LETTERS[a] for a in legal_actions(self.game, self.state)]

    def is_valid(self, action: str) -> bool:
        """Whether the player to act may take ``action`` (one of ``f c r``) now."""
        code = _CODES.get(action)
        return code is not None and is_legal(self.game, self.state, code)

    def apply(self, action: str) -> None:
        """Apply a valid action (``f``, ``c`` or ``r``) of the player to act."""
        self.state = after(self.game, self.state, _CODES[action])

    def showdown(self) -> bool:
        """Whether the finished hand went to a showdown (two or more players did not fold)."""
        return self.finished and self.folded.count(False) >= 2

    def payoffs(self, hole: Sequence[str], board: Sequence[str] = ()) -> tuple[float, ...]:
        """Chips won by each position in the finished hand, given every live player's hole cards
        (``"Ks"``, ``"AsKh"``) and, at a showdown, the board cards of every round played."""
        if not self.finished:
            raise InvalidArgumentError("betting", f"hand {self.betting!r} is not finished")
        live = [q for q in range(self.game.num_players) if not self.folded[q]]
        if len(live) > 1:
            shared = _cards("".join(board))
            needed = sum(self.game.num_board_cards[: self.round + 1])
            if len(shared) != needed:
                raise InvalidArgumentError(
                    "board", f"a showdown in round {self.round} needs {needed} board cards"
                )
            strength = {q: hand_strength(_cards(hole[q]) + shared) for q in live}
            best = max(strength.values())
            live = [q for q in live if strength[q] == best]
        share = sum(self.spent) / len(live)
        return tuple((share if q in live else 0.0) - spent for q, spent in enumerate(self.spent))

    def visible_hole(self, hole: Sequence[str], viewer: int) -> tuple[str, ...]:
        """Hole cards as ``viewer`` sees them now ('' where hidden)."""
        shown = self.showdown()
        return tuple(
            cards if q == viewer or (shown and not self.folded[q]) else ""
            for q, cards in enumerate(hole)
        )


def _missing_separator(hand: HandState, betting: str) -> str:
    return f"round {hand.round} began, so '/' must follow in {betting!r}"


def _cards(text: str) -> list[str]:
    """The two-character cards of a run like ``"AsKh"``."""
    return [text[i : i + 2] for i in range(0, len(text), 2)]
