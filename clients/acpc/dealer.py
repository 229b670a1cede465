"""A dealer that is wire-compatible with the ACPC reference dealer (``dealer``, v1.0.42).

One listening TCP socket per seat (ports from ``-p`` or ephemeral; the first stdout line lists them
in seat order). Seats are accepted in order 0, 1, ...; each listener is closed after its accept and
the connection gets TCP_NODELAY. Then one ``VERSION:2.0.0`` line is read from each seat in order
(a line that does not parse aborts, another version only warns); a seat that sends none within
``--t_version`` (10 s by default) aborts the match, where the reference would wait forever.

Any ``limit`` game (Kuhn, Leduc, ...): several rounds, board cards, per-round raise sizes,
``maxRaises`` and ``firstPlayer``, as the one implementation of the betting rules plays them
(:mod:`oppmodel.modeling.games.acpc.betting`). Each hand: deal every card of the hand (hole cards,
then every round's board, even rounds the hand will not reach) from the match's MT19937 stream
(:mod:`oppmodel.clients.acpc.deal`); seat ``s`` plays position ``(s - h) mod n`` in hand ``h``
(position = seat with ``-f``). After every action, and once before the first, every seat in seat
order gets its MATCHSTATE (``\\r\\n`` terminated; the board of each round reached,
``/``-separated); the acting seat's reply is then read. Comments (``#``, ``;``) are skipped; a line
whose state does not parse is ignored with ``WARNING: bad state format in response``; a state
other than the current one with ``WARNING: ignoring un-requested response``; a missing action
becomes a call with ``WARNING: bad action format in response, changed to call``; an unknown or
invalid action becomes a call with ``WARNING: invalid action, changed to call``. Every non-comment
line is charged the time since the state was sent, against ``--t_response`` (per reply),
``--t_hand`` (per seat and hand) and ``--t_per_hand`` x hands (per seat and match); a seat that
sends nothing for ``--t_response`` or over-runs a budget aborts the match (exit status 1, no SCORE;
the log keeps the finished hands).

A finished hand pays the last player in, or splits the pot equally among the best poker hands
over hole and board cards (so chips can be fractions, logged as ``2.5``).

Outputs follow the reference: the log (:mod:`oppmodel.clients.acpc.log`), stderr ``TO``/``FROM``
traffic with ``sec.usec`` times, ``STARTED``/``FINISHED``, the per-100-hands time lines, and the
SCORE line (totals in seat order) on stdout and stderr; ``-q`` keeps only the header, warnings,
errors and SCORE. Differences, by design: sockets bind to 127.0.0.1 unless told otherwise; no
transaction log or resume (``-T``, ``-a``); a seat that stops reading for ``--t_response`` while the
dealer sends to it aborts the match (the reference would block); a seat that connects and never
sends its VERSION line aborts the match after ``--t_version`` (the reference waits forever; 0
restores that); a port that cannot be bound leaves no log file behind; games with board cards in
the first round are refused (none of the ACPC games has them). Reference: project_acpc_server
1.0.42's ``dealer`` (protocol 2.0.0).
"""

from __future__ import annotations

import contextlib
import re
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from oppmodel.clients.acpc.deal import CardDealer
from oppmodel.clients.acpc.log import (
    LoggedHand,
    LogHeader,
    LogScore,
    format_hand,
    format_header,
    format_score,
)
from oppmodel.clients.acpc.net import LineSocket
from oppmodel.clients.acpc.protocol import same_state
from oppmodel.modeling.errors import InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.acpc.betting import (
    ACTION_LETTERS,
    CALL,
    LETTER_VARIANTS,
    ROUND_SEPARATOR,
    HandState,
    betting_unsupported,
)
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.games.acpc.matchstate import MatchState, parse_matchstate_prefix

VERSION_RE = re.compile(r"VERSION:([0-9]+)\.([0-9]+)\.([0-9]+)")
DEFAULT_T_RESPONSE_MS = 600_000
DEFAULT_T_HAND_MS = 600_000
DEFAULT_T_PER_HAND_MS = 7_000
DEFAULT_T_VERSION_MS = 10_000  # the reference has no such bound: it waits forever


def dealer_unsupported(game: GameDef) -> list[str]:
    """Rules of ``game`` this dealer does not deal (empty when it deals the game exactly as the
    reference): no-limit betting, stacks that could bind, and board cards in round 0 (the log
    prints those glued to the last hole cards, which no reader here splits back)."""
    problems = betting_unsupported(game)
    if game.num_board_cards[0]:
        problems.append(f"{game.num_board_cards[0]} board card(s) in round 1 (only from round 2)")
    return problems


@dataclass(frozen=True)
class DealerConfig:
    """One match. ``game_file`` is the name written in the log header (as given on the command
    line).

    ``ports`` has one entry per seat (0 = ephemeral); ``log_path`` defaults to ``<match>.log``.
    ``version_timeout_ms`` bounds the wait for each VERSION line (None: forever, as the reference;
    the default is 10 s, so a client that connects and stays silent cannot hold the match).
    """

    match: str
    game_file: str
    game: GameDef
    hands: int
    seed: int
    names: tuple[str, ...]
    ports: tuple[int, ...] | None = None
    fixed_seats: bool = False
    quiet: bool = False
    write_log: bool = True
    log_path: Path | None = None
    t_response_ms: int = DEFAULT_T_RESPONSE_MS
    t_hand_ms: int = DEFAULT_T_HAND_MS
    t_per_hand_ms: int = DEFAULT_T_PER_HAND_MS
    start_timeout_ms: int | None = None
    version_timeout_ms: int | None = DEFAULT_T_VERSION_MS
    bind: str = "127.0.0.1"

    def validate(self) -> None:
        """InvalidArgumentError naming the first bad field."""
        problems = dealer_unsupported(self.game)
        if problems:
            raise UnknownGameError(
                "game", "the dealer cannot deal this game: " + "; ".join(problems)
            )
        n = self.game.num_players
        if len(self.names) != n:
            raise InvalidArgumentError("names", f"the game has {n} players, got {len(self.names)}")
        if not 0 <= self.hands <= 0xFFFFFFFF:
            raise InvalidArgumentError("hands", "must be between 0 and 4294967295")
        if not 0 <= self.seed <= 0xFFFFFFFF:
            raise InvalidArgumentError("seed", "must be between 0 and 4294967295")
        if self.ports is not None and (
            len(self.ports) != n or not all(0 <= p <= 65535 for p in self.ports)
        ):
            raise InvalidArgumentError("ports", f"need {n} ports in 0..65535")
        for name in ("t_response_ms", "t_hand_ms", "t_per_hand_ms"):
            if getattr(self, name) <= 0:
                raise InvalidArgumentError(name, "must be positive")
        for name in ("start_timeout_ms", "version_timeout_ms"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise InvalidArgumentError(name, "must be positive (None: no limit)")
        for name in self.names:
            if not name or any(c in name for c in ":| \r\n"):
                raise InvalidArgumentError("names", f"{name!r} is empty or has ':', '|' or space")


@dataclass(frozen=True)
class MatchResult:
    """How a match ended: exit status, hands finished, totals in seat order (None if aborted)."""

    status: int
    hands_played: int
    totals: tuple[float, ...] | None
    error: str | None = None


class _Abort(Exception):
    """The match cannot go on; the message is the reference's ERROR line(s)."""


def _stamp(ns: int) -> str:
    """Wall-clock time as the reference prints it: ``<sec>.<usec>``."""
    return f"{ns // 1_000_000_000}.{(ns // 1000) % 1_000_000:06d}"


@dataclass
class _Clock:
    """Time a seat has been charged (microseconds), per hand and per match."""

    hand: list[int] = field(default_factory=list)
    match: list[int] = field(default_factory=list)


class MatchDealer:
    """One match: ``listen()`` binds the seats' ports; ``run()`` plays it and returns the result."""

    def __init__(
        self,
        config: DealerConfig,
        *,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        on_hand: Callable[[LoggedHand], None] | None = None,
    ) -> None:
        config.validate()
        self.config = config
        self.out = stdout or sys.stdout
        self.err = stderr or sys.stderr
        self.on_hand = on_hand
        self.ports: tuple[int, ...] = ()
        self._listeners: list[socket.socket] = []
        self._seats: list[LineSocket] = []
        self._log: TextIO | None = None
        n = config.game.num_players
        self._clock = _Clock([0] * n, [0] * n)
        self._last_send = 0
        self._cancelled: str | None = None
        self._header_written = False

    # -- set-up -----------------------------------------------------------------------------
    def _open_log(self) -> None:
        """Write the header to the log (opened here) and to stderr, once."""
        if self._header_written:
            return
        self._header_written = True
        cfg = self.config
        header = format_header(
            LogHeader(
                cfg.match,
                cfg.game_file,
                cfg.hands,
                cfg.seed,
                cfg.t_response_ms,
                cfg.t_hand_ms,
                cfg.t_per_hand_ms,
            )
        )
        if cfg.write_log:
            path = cfg.log_path or Path(cfg.match + ".log")
            self._log = path.open("w", encoding="utf-8", newline="")
            self._log.write(header)
            self._log.flush()
        self.err.write(header)

    def listen(self) -> tuple[int, ...]:
        """Bind one listener per seat, open the log (writing its header), print the ports line.

        OSError naming the address if a port cannot be bound (nothing is written then)."""
        cfg = self.config
        ports = cfg.ports or (0,) * cfg.game.num_players
        for port in ports:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listeners.append(sock)
            try:
                sock.bind((cfg.bind, port))
                sock.listen(1)
            except OSError as exc:
                self.close()
                raise OSError(f"cannot listen on {cfg.bind}:{port}: {exc.strerror}") from exc
        self._open_log()
        self.ports = tuple(s.getsockname()[1] for s in self._listeners)
        self.out.write(" ".join(map(str, self.ports)) + "\n")
        self.out.flush()
        return self.ports

    def _accept_all(self) -> None:
        timeout = self.config.start_timeout_ms
        deadline = None if timeout is None else time.monotonic() + timeout / 1000
        for seat, listener in enumerate(self._listeners):
            if deadline is not None:
                listener.settimeout(max(deadline - time.monotonic(), 1e-6))
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                raise _Abort(
                    f"ERROR: seat {seat + 1} did not connect within --start_timeout {timeout} ms"
                ) from None
            except OSError as exc:  # cancel() shut the listener down
                raise _Abort(f"ERROR: seat {seat + 1} did not connect: {exc}") from None
            finally:
                listener.close()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._seats.append(LineSocket(conn))
        self._listeners = []

    def _read_versions(self) -> None:
        limit = self.config.version_timeout_ms
        for seat, conn in enumerate(self._seats):
            try:
                line = conn.readline(None if limit is None else limit / 1000)
            except TimeoutError:
                raise _Abort(
                    f"ERROR: could not read version string from seat {seat + 1}: "
                    f"none within {limit} ms"
                ) from None
            if line is None:
                raise _Abort(f"ERROR: could not read version string from seat {seat + 1}")
            match = VERSION_RE.match(line)
            if match is None:
                raise _Abort(f"ERROR: invalid version string {line.rstrip(chr(10))}")
            major, minor, _ = map(int, match.groups())
            if major != 2 or minor > 0:
                self.err.write("ERROR: this server is currently using version 2.0.0\n")

    # -- play -------------------------------------------------------------------------------
    def _send(self, seat: int, state: str) -> int:
        message = state + "\r\n"
        now = time.time_ns()
        if not self._seats[seat].send(message):
            raise _Abort(f"ERROR: could not send state to seat {seat + 1}")
        if not self.config.quiet:
            self.err.write(f"TO {seat + 1} at {_stamp(now)} {message}")
        self._last_send = now
        return now

    def _charge(self, seat: int, spent_us: int) -> bool:
        """Charge a reply's time to the seat; False if a limit is exceeded."""
        cfg = self.config
        if spent_us > cfg.t_response_ms * 1000:
            return False
        self._clock.hand[seat] += spent_us
        if self._clock.hand[seat] > cfg.t_hand_ms * 1000:
            return False
        self._clock.match[seat] += spent_us
        return self._clock.match[seat] <= cfg.t_per_hand_ms * 1000 * cfg.hands

    def _get_action(self, seat: int, current: MatchState, hand: HandState, sent_ns: int) -> str:
        """Read the acting seat's reply the way the reference's ``getAction`` does.

        A reply that starts with the exact text of the current state and ``:`` is that state (the
        common case, no parsing needed); anything else is parsed and compared as the reference
        does (viewer, hand, betting and the viewer's own cards)."""
        current_text = str(current)
        skip = len(current_text)
        cfg, err = self.config, self.err
        game = cfg.game
        while True:
            try:
                line = self._seats[seat].readline(cfg.t_response_ms / 1000)
            except TimeoutError:
                line = None
            if line is None:
                waited = (time.time_ns() - sent_ns) / 1e9
                raise _Abort(
                    f"ERROR: could not get action from seat {seat + 1}\n"
                    f"{waited:.6f} seconds spent waiting; timeout {cfg.t_response_ms / 1000:.6f}"
                )
            received = time.time_ns()
            if not cfg.quiet:
                err.write(f"FROM {seat + 1} at {_stamp(received)} {line}")
            if line.startswith(("#", ";")):
                continue
            if not self._charge(seat, (received - sent_ns) // 1000):
                raise _Abort(f"ERROR: seat {seat + 1} ran out of time")
            if line.startswith(current_text) and line[skip : skip + 1] == ":":
                end = skip
            else:
                try:
                    reply, _, end = parse_matchstate_prefix(game, line)
                except InvalidArgumentError:
                    err.write("WARNING: bad state format in response\n")
                    continue
                if not same_state(reply, current):
                    err.write("WARNING: ignoring un-requested response\n")
                    continue
            if line[end : end + 1] != ":":
                err.write("WARNING: bad action format in response, changed to call\n")
                return ACTION_LETTERS[CALL]
            action = LETTER_VARIANTS.get(line[end + 1 : end + 2])
            if action is None or not hand.is_valid(action):
                err.write("WARNING: invalid action, changed to call\n")
                return ACTION_LETTERS[CALL]
            return action

    def _shift(self, number: int) -> int:
        """Hand ``number``'s rotation: position ``p`` sits in seat ``(p + shift) mod n``."""
        return 0 if self.config.fixed_seats else number % self.config.game.num_players

    def _play_hand(self, number: int, dealer: CardDealer) -> LoggedHand:
        cfg = self.config
        n = cfg.game.num_players
        deal = dealer.deal()
        hand = HandState(cfg.game)
        shift = self._shift(number)
        positions = [(seat - shift) % n for seat in range(n)]
        # until the hand ends, each position sees only its own hole cards (and the board so far)
        private = [tuple(c if q == p else "" for q, c in enumerate(deal.hole)) for p in range(n)]
        heads = [f"MATCHSTATE:{p}:{number}:" for p in range(n)]
        holes = [":" + "|".join(view) for view in private]
        self._clock.hand = [0] * n
        board_round, board_text = -1, ""
        board: tuple[str, ...] = ()
        while not hand.finished:
            acting, betting = hand.current, hand.betting
            if hand.round != board_round:  # a new round shows its board cards
                board_round, board = hand.round, deal.board[: hand.round + 1]
                board_text = ROUND_SEPARATOR.join(board)
            sent_ns = 0
            for seat, position in enumerate(positions):
                stamp = self._send(seat, heads[position] + betting + holes[position] + board_text)
                if position == acting:
                    sent_ns = stamp
            current = MatchState(acting, number, betting, private[acting], board)
            hand.apply(self._get_action((acting + shift) % n, current, hand, sent_ns))
        board = deal.board[: hand.round + 1]
        for seat, position in enumerate(positions):
            seen = hand.visible_hole(deal.hole, position)
            self._send(seat, str(MatchState(position, number, hand.betting, seen, board)))
        payoffs = hand.payoffs(deal.hole, board)
        names = tuple(cfg.names[(p + shift) % n] for p in range(n))
        # the log's board: the sections after the hole cards, one per round from round 1 on
        return LoggedHand(number, hand.betting, deal.hole, board[1:], payoffs, names)

    def run(self, seats: Sequence[LineSocket] | None = None) -> MatchResult:
        """Accept the seats, play the match, write the outputs; never raises for a bad client.

        ``seats`` are already-connected seats in seat order (anything with ``readline``, ``send``
        and ``close`` like :class:`LineSocket`; the benchmark uses in-memory ones to time the
        dealer alone); by default the seats are accepted on the listening ports.
        """
        cfg, err = self.config, self.err
        if seats is None and not self.ports:
            self.listen()
        self._open_log()
        n = cfg.game.num_players
        totals = [0.0] * n
        played = 0
        try:
            if seats is None:
                self._accept_all()
            else:
                self._seats = list(seats)
            self._read_versions()
            if not cfg.quiet:
                err.write(f"STARTED at {_stamp(time.time_ns())}\n")
            dealer = CardDealer(cfg.game, cfg.seed)
            for number in range(cfg.hands):
                record = self._play_hand(number, dealer)
                shift = self._shift(number)
                for p, value in enumerate(record.payoffs):
                    totals[(p + shift) % n] += value
                if self._log is not None:
                    self._log.write(format_hand(record))
                    self._log.flush()
                played += 1
                if self.on_hand is not None:
                    self.on_hand(record)
                if not cfg.quiet and number % 100 == 0:
                    for seat in range(n):
                        seconds = self._clock.match[seat] // 1_000_000
                        err.write(
                            f"Seconds cumulatively spent in match for seat {seat}: {seconds}\n"
                        )
        except _Abort as exc:
            if self._cancelled is not None:
                exc = _Abort(f"{exc}\nERROR: match cancelled: {self._cancelled}")
            err.write(f"{exc}\n")
            err.flush()
            self.close()
            return MatchResult(1, played, None, str(exc))
        score = format_score(LogScore(tuple(totals), cfg.names))
        if self._log is not None:
            self._log.write(score)
        if not cfg.quiet:
            err.write(f"FINISHED at {_stamp(self._last_send)}\n")
        err.write(score)
        err.flush()
        self.out.write(score)
        self.out.flush()
        self.close()
        return MatchResult(0, played, tuple(totals))

    def cancel(self, reason: str) -> None:
        """Abort the match from another thread (e.g. an agent process died): shuts the sockets
        down so that a blocked accept or read returns and the match ends as aborted."""
        self._cancelled = reason
        seats = [getattr(conn, "sock", None) for conn in self._seats]
        for sock in [*self._listeners, *(s for s in seats if s is not None)]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Close the log, the listeners and the connections (idempotent)."""
        for sock in self._listeners:
            sock.close()
        self._listeners = []
        for conn in self._seats:
            conn.close()
        self._seats = []
        if self._log is not None:
            self._log.close()
            self._log = None
