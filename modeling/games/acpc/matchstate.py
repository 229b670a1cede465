"""MATCHSTATE lines: the ACPC text of one position's view of a hand, read and written for any
limit game (the one parser of them; the dealer, the agent and the service all read through it).

The grammar (protocol version 2.0.0, as the reference dealer project_acpc_server 1.0.42 writes it)::

    MATCHSTATE:<position>:<hand>:<betting>:<hole 0>|<hole 1>|...|<hole n-1><board 0>[/<board 1>...]

``position`` is the viewer's (0 = first after the button) and ``hand`` the hand number (at most
2^32 - 1), both in ASCII digits. ``betting`` is ACPC betting, checked against the game's rules as
it is read (:mod:`oppmodel.modeling.games.acpc.betting`: ``/`` exactly where a round ends, the
reference's letter variants accepted, each action legal where it stands). Each hole section holds
``numHoleCards`` cards or none (hidden); the board follows the last hole section, one section per
round reached, each ``/``-separated from the previous one and holding exactly that round's
``numBoardCards`` (Leduc in round 1: ``Ks|/Qh``). Cards are rank ``23456789TJQKA`` then suit
``cdhs``. Sections are read as the reference's ``readMatchState`` reads them, up to the number of
cards a section can hold; like the reference it does not check that the cards are the game's deck
or distinct, which is the caller's business where it matters (the service checks its own card).

The lines of a dealer's log (``STATE:<hand>:<betting>:<cards>:...``) share the betting and cards
grammar, with every hole section shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import ROUND_SEPARATOR, HandState
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS, GameDef
from oppmodel.modeling.numerals import numeral_end

HEAD = "MATCHSTATE:"
MAX_HAND_ID = 2**32 - 1


@dataclass(frozen=True)
class MatchState:
    """One MATCHSTATE line: a position's view of a hand.

    ``hole[p]`` is position p's hole cards as one string (``""`` where hidden); ``board[r]`` is
    round r's board cards, one entry per round reached (round 0 has none in Kuhn and Leduc).
    """

    position: int
    hand: int
    betting: str
    hole: tuple[str, ...]
    board: tuple[str, ...] = ("",)

    @property
    def round(self) -> int:
        """The round the hand is in (the last one played, once it is over)."""
        return len(self.board) - 1

    @property
    def cards(self) -> str:
        """The cards part: hole sections, then the board of each round reached."""
        return "|".join(self.hole) + ROUND_SEPARATOR.join(self.board)

    def __str__(self) -> str:
        return f"{HEAD}{self.position}:{self.hand}:{self.betting}:{self.cards}"


def parse_matchstate_prefix(game: GameDef, text: str) -> tuple[MatchState, HandState, int]:
    """Parse a MATCHSTATE at the start of ``text`` the way the reference does.

    Returns the state (betting normalised to lowercase), the replayed hand and the index just past
    the cards; InvalidArgumentError whose field names the bad part (``matchstate``, ``position``,
    ``hand``, ``betting`` or ``cards``).
    """
    if not text.startswith(HEAD):
        raise InvalidArgumentError("matchstate", f"does not start with {HEAD}")
    i = len(HEAD)
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
        raise IllegalActionError("betting", str(exc)) from exc
    hole, i = _hole_sections(game, text, j + 1)
    board, i = _board_sections(game, text, i, hand.round)
    state = MatchState(numbers[0], numbers[1], hand.betting, hole, board)
    return state, hand, i


def parse_matchstate(game: GameDef, line: str) -> tuple[MatchState, HandState]:
    """Parse a whole MATCHSTATE line (a trailing ``\\r\\n`` or ``\\n`` is allowed)."""
    text = line.rstrip("\r\n")
    state, hand, end = parse_matchstate_prefix(game, text)
    if end != len(text):
        raise InvalidArgumentError("matchstate", f"unexpected text after the cards: {text[end:]!r}")
    return state, hand


def _read_cards(text: str, i: int, most: int) -> int:
    """The index past up to ``most`` two-character cards starting at ``i``."""
    for _ in range(most):
        if i + 1 < len(text) and text[i] in RANK_CHARS and text[i + 1] in SUIT_CHARS:
            i += 2
        else:
            break
    return i


def _hole_sections(game: GameDef, text: str, i: int) -> tuple[tuple[str, ...], int]:
    """Every position's hole section (``numHoleCards`` cards or none), ``|``-separated."""
    hole = []
    for p in range(game.num_players):
        if p:
            if text[i : i + 1] != "|":
                raise InvalidArgumentError("cards", f"missing '|' before position {p}'s cards")
            i += 1
        end = _read_cards(text, i, game.num_hole_cards)
        if end - i not in (0, 2 * game.num_hole_cards):
            raise InvalidArgumentError("cards", f"position {p} has too few hole cards")
        hole.append(text[i:end])
        i = end
    return tuple(hole), i


def _board_sections(game: GameDef, text: str, i: int, last: int) -> tuple[tuple[str, ...], int]:
    """The board of rounds 0..``last``: exactly ``numBoardCards`` each, ``/`` before rounds 1.."""
    board = []
    for r in range(last + 1):
        if r:
            if text[i : i + 1] != ROUND_SEPARATOR:
                raise InvalidArgumentError("cards", f"missing '/' before round {r}'s board")
            i += 1
        size = game.num_board_cards[r]
        end = _read_cards(text, i, size)
        if end - i != 2 * size:
            raise InvalidArgumentError("cards", f"round {r}'s board needs {size} cards")
        board.append(text[i:end])
        i = end
    return tuple(board), i
