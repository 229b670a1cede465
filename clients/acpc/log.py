"""The reference dealer's match log (``<match>.log``): reading, writing and checking.

Layout, one record per line (a match resumed with ``-a`` appends a second header block)::

    # name/game/hands/seed <match> <gamefile> <hands> <seed>
    #--t_response <ms>
    #--t_hand <ms>
    #--t_per_hand <ms>
    STATE:<hand>:<betting>:<hole cards by position, '|'-separated>[/<board>...]:<payoffs>:<names>
    SCORE:<totals>:<names>

In STATE lines the payoffs and names are in *position* order of that hand and every player's cards
are shown (folded ones too); in SCORE they are in *seat* order (command-line order). Numbers are
printed with ``%.6f`` and trailing zeros (and a trailing point) removed: ``4``, ``-2``, ``0.5``.
Reading and writing are exact inverses on reference logs (byte for byte). :func:`check_log` replays
every hand and recomputes its payoffs and the final score. Reference: the logs the
reference dealer (project_acpc_server 1.0.42) writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.numerals import is_numeral, parse_numeral


@dataclass(frozen=True)
class LogHeader:
    """The four header lines the dealer writes when it opens the log."""

    match: str
    game_file: str
    hands: int
    seed: int
    t_response: int
    t_hand: int
    t_per_hand: int


@dataclass(frozen=True)
class LogComment:
    """Any other comment line, kept verbatim (without its newline)."""

    text: str


@dataclass(frozen=True)
class LoggedHand:
    """A STATE line: one finished hand with every card, payoffs and names in position order."""

    hand: int
    betting: str
    hole: tuple[str, ...]
    board: tuple[str, ...]
    payoffs: tuple[float, ...]
    names: tuple[str, ...]


@dataclass(frozen=True)
class LogScore:
    """The SCORE line: match totals and names in seat order."""

    totals: tuple[float, ...]
    names: tuple[str, ...]


LogEntry = LogHeader | LogComment | LoggedHand | LogScore


@dataclass(frozen=True)
class DealerLog:
    """A whole log, as the sequence of its lines' records."""

    entries: tuple[LogEntry, ...]

    @property
    def header(self) -> LogHeader | None:
        """The first header block, if any."""
        return next((e for e in self.entries if isinstance(e, LogHeader)), None)

    @property
    def hands(self) -> tuple[LoggedHand, ...]:
        """The STATE records in file order."""
        return tuple(e for e in self.entries if isinstance(e, LoggedHand))

    @property
    def score(self) -> LogScore | None:
        """The last SCORE record (None for a match that was aborted)."""
        scores = [e for e in self.entries if isinstance(e, LogScore)]
        return scores[-1] if scores else None


def format_number(value: float) -> str:
    """``%.6f`` with trailing zeros and a trailing point removed, as the reference prints chips."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def format_header(header: LogHeader) -> str:
    """The four header lines (newline terminated)."""
    return (
        f"# name/game/hands/seed {header.match} {header.game_file} {header.hands} {header.seed}\n"
        f"#--t_response {header.t_response}\n"
        f"#--t_hand {header.t_hand}\n"
        f"#--t_per_hand {header.t_per_hand}\n"
    )


def format_hand(hand: LoggedHand) -> str:
    """A STATE line (newline terminated)."""
    cards = "|".join(hand.hole) + "".join("/" + b for b in hand.board)
    payoffs = "|".join(format_number(v) for v in hand.payoffs)
    return f"STATE:{hand.hand}:{hand.betting}:{cards}:{payoffs}:{'|'.join(hand.names)}\n"


def format_score(score: LogScore) -> str:
    """A SCORE line (newline terminated), as in the log and on the dealer's stdout."""
    totals = "|".join(format_number(v) for v in score.totals)
    return f"SCORE:{totals}:{'|'.join(score.names)}\n"


def format_log(log: DealerLog) -> str:
    """The whole log text."""
    out = []
    for entry in log.entries:
        if isinstance(entry, LogHeader):
            out.append(format_header(entry))
        elif isinstance(entry, LogComment):
            out.append(entry.text + "\n")
        elif isinstance(entry, LoggedHand):
            out.append(format_hand(entry))
        else:
            out.append(format_score(entry))
    return "".join(out)


def _numbers(text: str, field: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split("|"))
    except ValueError:
        raise InvalidArgumentError(field, f"expected '|'-separated numbers, got {text!r}") from None


def _parse_hand(line: str) -> LoggedHand:
    parts = line.split(":")
    if len(parts) != 6:
        raise InvalidArgumentError("STATE", f"expected 6 ':'-separated fields, got {len(parts)}")
    _, hand, betting, cards, payoffs, names = parts
    hole, *board = cards.split("/")
    record = LoggedHand(
        hand=parse_numeral(hand, "hand"),
        betting=betting,
        hole=tuple(hole.split("|")),
        board=tuple(board),
        payoffs=_numbers(payoffs, "payoffs"),
        names=tuple(names.split("|")),
    )
    if not len(record.hole) == len(record.payoffs) == len(record.names):
        raise InvalidArgumentError("STATE", "cards, payoffs and names differ in count")
    return record


def _parse_score(line: str) -> LogScore:
    parts = line.split(":")
    if len(parts) != 3:
        raise InvalidArgumentError("SCORE", f"expected 3 ':'-separated fields, got {len(parts)}")
    score = LogScore(_numbers(parts[1], "totals"), tuple(parts[2].split("|")))
    if len(score.totals) != len(score.names):
        raise InvalidArgumentError("SCORE", "totals and names differ in count")
    return score


def _parse_header(lines: list[str]) -> LogHeader | None:
    """The header block starting at ``lines[0]``, or None if these lines are not one."""
    if len(lines) < 4 or not lines[0].startswith("# name/game/hands/seed "):
        return None
    first = lines[0].split(" ")
    keys = ("#--t_response ", "#--t_hand ", "#--t_per_hand ")
    pairs = zip(keys, lines[1:4], strict=True)
    limits = [line[len(k) :] for k, line in pairs if line.startswith(k)]
    if len(first) != 6 or len(limits) != 3 or not all(is_numeral(v) for v in (*first[4:], *limits)):
        return None
    header = LogHeader(first[2], first[3], int(first[4]), int(first[5]), *map(int, limits))
    return header if format_header(header) == "".join(x + "\n" for x in lines[:4]) else None


def parse_log(text: str) -> DealerLog:
    """Parse log text; InvalidArgumentError naming the line (``line N``) and what is wrong."""
    if text and not text.endswith("\n"):
        raise InvalidArgumentError("log", "the last line has no newline")
    lines = text.split("\n")[:-1]
    entries: list[LogEntry] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        try:
            if line.startswith("#"):
                header = _parse_header(lines[i : i + 4])
                if header is not None:
                    entries.append(header)
                    i += 4
                    continue
                entries.append(LogComment(line))
            elif line.startswith("STATE:"):
                entries.append(_parse_hand(line))
            elif line.startswith("SCORE:"):
                entries.append(_parse_score(line))
            else:
                raise InvalidArgumentError("line", "not a comment, STATE or SCORE line")
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(f"line {i + 1}", str(exc)) from exc
        i += 1
    return DealerLog(tuple(entries))


def read_log(path: str | Path) -> DealerLog:
    """Read and parse a dealer log file; every error names the file."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidArgumentError("log", f"cannot read {path}: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidArgumentError(
            "log", f"{path} is not a dealer log: line {line} is not UTF-8 text"
        ) from exc
    try:
        return parse_log(text)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError("log", f"{path}: {exc}") from exc


def hand_payoffs(game: GameDef, hand: LoggedHand) -> tuple[float, ...]:
    """Recompute a logged hand's payoffs from its betting and cards."""
    state = HandState.from_betting(game, hand.betting)
    if not state.finished:
        raise IllegalActionError("betting", f"hand {hand.hand}: {hand.betting!r} is not finished")
    if len(hand.hole) != game.num_players:
        raise InvalidArgumentError("cards", f"hand {hand.hand}: expected {game.num_players} hands")
    return state.payoffs(hand.hole, hand.board)


def check_log(game: GameDef, log: DealerLog) -> list[str]:
    """Every inconsistency in ``log`` (empty when it is sound).

    Checks that each hand's betting is legal and finished, its cards are distinct cards of the deck,
    its payoffs equal the recomputed ones, and the SCORE totals equal each name's summed payoffs.
    """
    problems = []
    deck = set(game.deck)
    for hand in log.hands:
        try:
            payoffs = hand_payoffs(game, hand)
        except InvalidArgumentError as exc:
            problems.append(f"hand {hand.hand}: {exc}")
            continue
        text = "".join((*hand.hole, *hand.board))
        cards = [text[i : i + 2] for i in range(0, len(text), 2)]
        if set(cards) - deck or len(set(cards)) != len(cards):
            problems.append(f"hand {hand.hand}: cards {hand.hole} are not distinct deck cards")
        if payoffs != hand.payoffs:
            problems.append(
                f"hand {hand.hand}: logged payoffs {hand.payoffs}, recomputed {payoffs}"
            )
    score = log.score
    if score is None:
        return problems
    players = {name for hand in log.hands for name in hand.names}
    if players != set(score.names):
        problems.append(f"SCORE: names {score.names} are not the players {sorted(players)}")
        return problems
    recomputed = seat_totals(log.hands, score.names)
    for name, total, summed in zip(score.names, score.totals, recomputed, strict=True):
        if format_number(total) != format_number(summed):
            problems.append(f"SCORE: {name} logged {total}, recomputed {summed}")
    return problems


def seat_totals(hands: Iterable[LoggedHand], names: tuple[str, ...]) -> tuple[float, ...]:
    """Each named player's summed payoffs over ``hands``, in the order of ``names``."""
    totals = dict.fromkeys(names, 0.0)
    for hand in hands:
        for name, value in zip(hand.names, hand.payoffs, strict=True):
            totals[name] += value
    return tuple(totals[name] for name in names)
