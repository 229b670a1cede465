"""ACPC game definition files, read exactly as the reference ``readGame`` (game.c) reads them.

The format is line oriented and case-insensitive. Reading stops at a line starting with
``END GAMEDEF``; a line starting with ``GAMEDEF`` is skipped, as are empty lines and lines whose
first character is ``#``. A keyword is recognised by a case-insensitive *prefix* compare (so
``LIMIT betting`` is ``limit``), the numbers are read right after the keyword, and before each
number any spaces and ``=`` signs are skipped, so ``blind = 1 1 1``, ``blind=1 1 1`` and
``blind 1 1 1`` are the same. Unrecognised lines are silently ignored. The reference's defaults and
sanity checks are kept, including its quirk that only the first four stacks default to unlimited
(``INT32_MAX``), so games with more than four players need a ``stack`` line.

Parsing handles every keyword of every ACPC game (:func:`parse_game_def`). What the project can
model is narrower: n-player Kuhn-style limit games (one round, one hole card, no board, at most one
bet, a deck of n + 1 ranks of a single suit, antes of 1, bet size 1); :func:`kuhn_num_players`
checks that and names everything else that is unsupported.

The games the package bundles have short names (``kuhn3p``, ``leduc2p``: the table is
:data:`oppmodel.modeling.games.acpc.bundled.BUNDLED_GAMES`); wherever a
game file is asked for, :func:`read_game_def` takes a short name or a path.

Cards are two characters, rank ``23456789TJQKA`` then suit ``cdhs``; the dealer's deck is the
highest ``numRanks`` ranks of the last ``numSuits`` suits, suits outer and ranks inner (reference
``makeCard(rank, suit) = rank * 4 + suit``). Reference: ``readGame`` in the
reference server's game.c (project_acpc_server 1.0.42).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from oppmodel.modeling.errors import InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.acpc.bundled import game_path
from oppmodel.modeling.games.units import RateUnit, blinds_unit
from oppmodel.modeling.numerals import numeral_end

MAX_PLAYERS = 10
MAX_ROUNDS = 4
MAX_SUITS = 4
MAX_RANKS = 13
MAX_HOLE_CARDS = 3
INT32_MAX = 2**31 - 1
UINT8_MAX = 255
UINT32_MAX = 2**32 - 1

RANK_CHARS = "23456789TJQKA"
SUIT_CHARS = "cdhs"

LIMIT = "limit"
NOLIMIT = "nolimit"


@dataclass(frozen=True)
class GameDef:
    """A parsed ACPC game. Per-player tuples have ``num_players`` entries, per-round ``num_rounds``.

    ``blind`` is per *position* (0 = first seat after the button); ``first_player`` is 0-based (the
    file says 1-based, as the reference decrements it after reading); ``max_raises`` 255 means
    unlimited.
    """

    betting: str
    num_players: int
    num_rounds: int
    stack: tuple[int, ...]
    blind: tuple[int, ...]
    raise_size: tuple[int, ...]
    first_player: tuple[int, ...]
    max_raises: tuple[int, ...]
    num_suits: int
    num_ranks: int
    num_hole_cards: int
    num_board_cards: tuple[int, ...]
    # the file the rules were read from, as given (names the game in messages); not compared
    source: str | None = field(default=None, compare=False)

    @property
    def deck(self) -> tuple[str, ...]:
        """The dealer's fresh deck in its order: suits outer, ranks inner, lowest first."""
        return tuple(
            RANK_CHARS[r] + SUIT_CHARS[s]
            for s in range(MAX_SUITS - self.num_suits, MAX_SUITS)
            for r in range(MAX_RANKS - self.num_ranks, MAX_RANKS)
        )

    @property
    def rate_unit(self) -> RateUnit:
        """The unit of its win rates (``oppmodel.modeling.games.units``): milli-antes when every
        position posts the same blind, else milli-big-blinds."""
        return blinds_unit(self.blind, self.raise_size[0] if self.raise_size else None)

    def to_text(self) -> str:
        """The game in the reference file layout (parses back to an equal ``GameDef``)."""

        def nums(values: Iterable[int]) -> str:
            return " ".join(str(v) for v in values)

        lines = [
            "GAMEDEF",
            self.betting,
            f"numPlayers = {self.num_players}",
            f"numRounds = {self.num_rounds}",
            f"stack = {nums(self.stack)}",
            f"blind = {nums(self.blind)}",
        ]
        if self.raise_size:
            lines.append(f"raiseSize = {nums(self.raise_size)}")
        lines += [
            f"firstPlayer = {nums(p + 1 for p in self.first_player)}",
            f"maxRaises = {nums(self.max_raises)}",
            f"numSuits = {self.num_suits}",
            f"numRanks = {self.num_ranks}",
            f"numHoleCards = {self.num_hole_cards}",
            f"numBoardCards = {nums(self.num_board_cards)}",
            "END GAMEDEF",
        ]
        return "\n".join(lines) + "\n"


# keyword (lower case) -> (field, how many values at most, lower bound, upper bound of the C type)
_LIST_KEYWORDS = {
    "stack": (MAX_PLAYERS, -(2**31), INT32_MAX),
    "blind": (MAX_PLAYERS, -(2**31), INT32_MAX),
    "raisesize": (MAX_ROUNDS, -(2**31), INT32_MAX),
    "firstplayer": (MAX_ROUNDS, 0, UINT8_MAX),
    "maxraises": (MAX_ROUNDS, 0, UINT8_MAX),
    "numboardcards": (MAX_ROUNDS, 0, UINT8_MAX),
}
_SCALAR_KEYWORDS = ("numplayers", "numrounds", "numsuits", "numranks", "numholecards")
_FILE_NAMES = {
    "stack": "stack",
    "blind": "blind",
    "raisesize": "raiseSize",
    "firstplayer": "firstPlayer",
    "maxraises": "maxRaises",
    "numboardcards": "numBoardCards",
    "numplayers": "numPlayers",
    "numrounds": "numRounds",
    "numsuits": "numSuits",
    "numranks": "numRanks",
    "numholecards": "numHoleCards",
}


def _scan_numbers(text: str, limit: int, keyword: str, *, lo: int, hi: int) -> list[int]:
    """Read up to ``limit`` integers, skipping whitespace and ``=`` before each (like the
    reference)."""
    values: list[int] = []
    i, n = 0, len(text)
    while len(values) < limit:
        while i < n and (text[i].isspace() or text[i] == "="):
            i += 1
        j = i
        if j < n and text[j] in "+-":
            j += 1
        k = numeral_end(text, j)
        if k == j:
            break
        value = int(text[i:k])
        if not lo <= value <= hi:
            raise InvalidArgumentError(_FILE_NAMES[keyword], f"value {value} is outside {lo}..{hi}")
        values.append(value)
        i = k
    return values


def parse_game_def(text: str) -> GameDef:
    """Parse the text of an ACPC game definition file; raises InvalidArgumentError on a bad game.

    The error's field is the offending keyword and its message is the reference's, e.g.
    ``numRounds: invalid number of rounds: 0``.
    """
    stack = [INT32_MAX] * MAX_ROUNDS + [0] * (MAX_PLAYERS - MAX_ROUNDS)  # reference quirk
    lists: dict[str, list[int]] = {
        "stack": stack,
        "blind": [0] * MAX_PLAYERS,
        "raisesize": [0] * MAX_ROUNDS,
        "firstplayer": [1] * MAX_ROUNDS,
        "maxraises": [UINT8_MAX] * MAX_ROUNDS,
        "numboardcards": [0] * MAX_ROUNDS,
    }
    read = dict.fromkeys(_LIST_KEYWORDS, 0)
    read["stack"] = 4  # reference quirk: counts as four stacks read when there is no stack line
    scalars = dict.fromkeys(_SCALAR_KEYWORDS, 0)
    betting = LIMIT
    for line in text.splitlines(keepends=True):
        if line.startswith(("#", "\n")):
            continue
        low = line.lower()
        if low.startswith("end gamedef"):
            break
        if low.startswith("gamedef"):
            continue
        if low.startswith("limit"):
            betting = LIMIT
            continue
        if low.startswith("nolimit"):
            betting = NOLIMIT
            continue
        for key, (limit, lo, hi) in _LIST_KEYWORDS.items():
            if low.startswith(key):
                values = _scan_numbers(line[len(key) :], limit, key, lo=lo, hi=hi)
                lists[key][: len(values)] = values
                read[key] = len(values)
                break
        else:
            for key in _SCALAR_KEYWORDS:
                if low.startswith(key):
                    values = _scan_numbers(line[len(key) :], 1, key, lo=0, hi=UINT8_MAX)
                    if values:
                        scalars[key] = values[0]
                    break
    return _checked(betting, scalars, lists, read)


def _checked(
    betting: str, scalars: dict[str, int], lists: dict[str, list[int]], read: dict[str, int]
) -> GameDef:
    """Apply the reference's sanity checks, in its order, and build the record."""
    rounds, players = scalars["numrounds"], scalars["numplayers"]
    if not 1 <= rounds <= MAX_ROUNDS:
        raise InvalidArgumentError("numRounds", f"invalid number of rounds: {rounds}")
    if not 2 <= players <= MAX_PLAYERS:
        raise InvalidArgumentError("numPlayers", f"invalid number of players: {players}")
    if read["stack"] < players:
        message = f"only read {read['stack']} stack sizes, need {players}"
        raise InvalidArgumentError("stack", message)
    if read["blind"] < players:
        raise InvalidArgumentError("blind", f"only read {read['blind']} blinds, need {players}")
    for p in range(players):
        if lists["blind"][p] > lists["stack"][p]:
            raise InvalidArgumentError(
                "blind", f"blind for player {p + 1} is greater than stack size"
            )
    if betting == LIMIT and read["raisesize"] < rounds:
        raise InvalidArgumentError(
            "raiseSize", f"only read {read['raisesize']} raise sizes, need {rounds}"
        )
    for r in range(rounds):
        first = lists["firstplayer"][r]
        if first == 0 or first > players:
            raise InvalidArgumentError(
                "firstPlayer", f"invalid first player {first} on round {r + 1}"
            )
    suits, ranks, hole = scalars["numsuits"], scalars["numranks"], scalars["numholecards"]
    if not 1 <= suits <= MAX_SUITS:
        raise InvalidArgumentError("numSuits", f"invalid number of suits: {suits}")
    if not 1 <= ranks <= MAX_RANKS:
        raise InvalidArgumentError("numRanks", f"invalid number of ranks: {ranks}")
    if not 1 <= hole <= MAX_HOLE_CARDS:
        raise InvalidArgumentError("numHoleCards", f"invalid number of hole cards: {hole}")
    if read["numboardcards"] < rounds:
        raise InvalidArgumentError(
            "numBoardCards",
            f"only read {read['numboardcards']} board card numbers, need {rounds}",
        )
    board = lists["numboardcards"][:rounds]
    if hole * players + sum(board) > suits * ranks:
        raise InvalidArgumentError(
            "numHoleCards", "too many hole and board cards for specified deck"
        )
    return GameDef(
        betting=betting,
        num_players=players,
        num_rounds=rounds,
        stack=tuple(lists["stack"][:players]),
        blind=tuple(lists["blind"][:players]),
        raise_size=tuple(lists["raisesize"][:rounds]) if betting == LIMIT else (),
        first_player=tuple(p - 1 for p in lists["firstplayer"][:rounds]),
        max_raises=tuple(lists["maxraises"][:rounds]),
        num_suits=suits,
        num_ranks=ranks,
        num_hole_cards=hole,
        num_board_cards=tuple(board),
    )


def read_game_def(name_or_path: str | Path) -> GameDef:
    """Read and parse a game definition file, given by path or by a bundled game's short name;
    every error names the file."""
    path = game_path(name_or_path)
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError as exc:
        raise InvalidArgumentError("gamefile", f"cannot read {path}: {exc.strerror}") from exc
    try:
        return replace(parse_game_def(text), source=str(name_or_path))
    except InvalidArgumentError as exc:
        raise type(exc)("gamefile", f"{path} is not a valid game definition: {exc}") from exc


def kuhn_unsupported(game: GameDef) -> list[str]:
    """Everything that keeps ``game`` from being n-player Kuhn poker (empty when it is Kuhn)."""
    n = game.num_players
    problems = []
    if game.betting != LIMIT:
        problems.append("no-limit betting (only limit)")
    if not 2 <= n <= 4:
        problems.append(f"numPlayers = {n} (only 2..4)")
    if game.num_rounds != 1:
        problems.append(f"numRounds = {game.num_rounds} (only 1)")
    if game.num_hole_cards != 1:
        problems.append(f"numHoleCards = {game.num_hole_cards} (only 1)")
    if any(game.num_board_cards):
        problems.append(f"numBoardCards = {' '.join(map(str, game.num_board_cards))} (only 0)")
    if game.max_raises[0] != 1:
        problems.append(f"maxRaises = {game.max_raises[0]} (only 1)")
    if game.num_suits != 1:
        problems.append(f"numSuits = {game.num_suits} (only 1)")
    if game.num_ranks != n + 1:
        problems.append(f"numRanks = {game.num_ranks} (Kuhn has numPlayers + 1 = {n + 1})")
    if any(b != 1 for b in game.blind):
        problems.append(f"blind = {' '.join(map(str, game.blind))} (only antes of 1)")
    if game.betting == LIMIT and game.raise_size[0] != 1:
        problems.append(f"raiseSize = {game.raise_size[0]} (only 1)")
    if game.first_player[0] != 0:
        problems.append(f"firstPlayer = {game.first_player[0] + 1} (only 1)")
    if any(s < 3 for s in game.stack):
        problems.append("stack below 3 (all-in play is not modelled)")
    return problems


def kuhn_num_players(game: GameDef) -> int:
    """The number of players of the Kuhn game ``game`` is; UnknownGameError naming what is
    unsupported."""
    problems = kuhn_unsupported(game)
    if problems:
        raise UnknownGameError(
            "game",
            "unsupported ACPC game: "
            + "; ".join(problems)
            + ". The project models n-player Kuhn-style limit games only.",
        )
    return game.num_players
