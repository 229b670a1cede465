"""What the session managers need from durable storage: the records and the ``SessionStore``
interface, with two backends (``storage_sqlite.SQLiteStore``, embedded, the default, and
``storage_postgres.PostgresStore``, shared by several server processes).

What is stored is what is needed to rebuild a session bit for bit: its configuration (with the
seed), every observation in sequence order, and the latest snapshot of its model state. The
modeling core guarantees that replaying the same observations into a fresh model with the same
configuration reproduces the posterior exactly, and that restoring a snapshot taken after hand
``s`` and replaying hands ``s + 1, ...`` gives the same bits as replaying them all
(``modeling/mbbr/snapshot.py``), so a reload costs one snapshot plus a bounded tail of hands.

Exactly once, across processes: observations are appended only at the stored version (the
store refuses rows that do not start right after the last stored sequence number, with
``StaleSessionError``, checked under the session's lock in the same transaction as the insert),
and ``(session_id, sequence)`` is unique. A process whose copy of a session is behind the store
(another process appended meanwhile) learns it from that refusal and reloads; no hand is ever
stored or applied twice.

Every write's future resolves only after its transaction committed: an observation is
acknowledged only once it is durable.
"""

from __future__ import annotations

import re
import urllib.parse
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from oppmodel.modeling.errors import InvalidArgumentError

POSTGRES_URL_SCHEMES = ("postgresql://", "postgres://")
_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# a libpq keyword/value connection string starts with a keyword and "=" ("host=db dbname=x")
_KEYWORD_START = re.compile(r"\s*[A-Za-z_]+\s*=")
_KEYWORD_PAIR = re.compile(r"\s*([A-Za-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|(?:[^\s'\\]|\\.)*)")
SECRET_PARAMETERS = frozenset({"password", "sslpassword"})  # libpq's, never displayed


def is_postgres(location: str) -> bool:
    """Whether a store location names a PostgreSQL database: a ``postgresql://`` (or
    ``postgres://``) URL, or a libpq keyword/value string (``host=db dbname=x ...``; a SQLite file
    whose name starts like one is given as ``./host=...``). Anything else is a SQLite file's path,
    except a URL of another scheme, which is neither: InvalidArgumentError naming the store."""
    if location.startswith(POSTGRES_URL_SCHEMES) or _KEYWORD_START.match(location):
        return True
    scheme = _URL_SCHEME.match(location)
    if scheme is not None:
        raise InvalidArgumentError(
            "store",
            f"{scheme.group()} is not a supported store: give a SQLite file's path, a "
            "postgresql:// URL or a libpq connection string (host=... dbname=...)",
        )
    return False


def redacted(location: str) -> str:
    """The location as consoles, logs and the operator's error messages show it: a PostgreSQL
    location without its password (the URL's ``user:password@``, a ``password`` or
    ``sslpassword`` parameter), a path as it is. Clients are never shown even this (the store's
    host, user and database are not theirs to know): they are told "store unavailable"."""
    if location.startswith(POSTGRES_URL_SCHEMES):
        return _redacted_url(location)
    if _KEYWORD_START.match(location):
        return " ".join(f"{key}={value}" for key, value in _keyword_pairs(location)[0])
    return location


def scrubbed(text: str, location: str) -> str:
    """``text`` (a database driver's message, say) with every secret of ``location`` in it
    replaced by ``***``: libpq quotes pieces of a connection string it cannot parse."""
    for secret in sorted(_secrets(location), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def error_reason(exc: BaseException, location: str) -> str:
    """The first line of a driver's message about the store at ``location``, scrubbed."""
    text = str(exc).strip()
    return scrubbed(text.splitlines()[0] if text else type(exc).__name__, location)


def _redacted_url(url: str) -> str:
    scheme, user, _password, base, parameters = _url_parts(url)
    kept = [p for p in parameters if _parameter_name(p) not in SECRET_PARAMETERS]
    return f"{scheme}://{user + '@' if user else ''}{base}" + ("?" + "&".join(kept) if kept else "")


def _url_parts(url: str) -> tuple[str, str, str, str, list[str]]:
    """(scheme, user, password, host/port/database, query parameters) of a URL. The user part
    runs to the last "@" before the query: a password with an unescaped "/" or "@" is still
    taken as one (libpq itself would misread it, but it is never shown)."""
    scheme, _, rest = url.partition("://")
    rest, _, query = rest.partition("?")
    userinfo, at, base = rest.rpartition("@")
    user, _, password = userinfo.partition(":") if at else ("", "", "")
    return scheme, user, password, base, [p for p in query.split("&") if p]


def _parameter_name(parameter: str) -> str:
    return urllib.parse.unquote(parameter.split("=", 1)[0]).strip().lower()


def _keyword_pairs(conninfo: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(the pairs that are not secrets, the secrets) of a keyword/value string. What does not
    parse as pairs is dropped and counted a secret (it may be the rest of a password)."""
    kept: list[tuple[str, str]] = []
    secrets: list[str] = []
    position = 0
    while (pair := _KEYWORD_PAIR.match(conninfo, position)) and pair.end() > position:
        key, value = pair.group(1), pair.group(2)
        if key.lower() in SECRET_PARAMETERS:
            secrets += [value, value.strip("'")]
        else:
            kept.append((key, value))
        position = pair.end()
    secrets += conninfo[position:].split()
    return kept, [s for s in secrets if s]


def _secrets(location: str) -> list[str]:
    """Every password in ``location``, as written and percent-decoded."""
    if _KEYWORD_START.match(location):
        return _keyword_pairs(location)[1]
    if not location.startswith(POSTGRES_URL_SCHEMES):
        return []
    _scheme, _user, password, _base, parameters = _url_parts(location)
    found = [password] + [
        p.split("=", 1)[1]
        for p in parameters
        if _parameter_name(p) in SECRET_PARAMETERS and "=" in p
    ]
    return [v for s in found for v in {s, urllib.parse.unquote(s)} if v]


@dataclass(frozen=True)
class SessionRow:
    """A stored session: its id, owner (hashed token, "" without auth), creation time and spec."""

    session_id: str
    owner: str
    created_unix_ms: int
    spec: dict[str, Any]


@dataclass(frozen=True)
class ObservationRow:
    """A stored observation. Kuhn: ``history`` in OpenSpiel letters, ``cards`` one card number
    per position, None where hidden. A limit game (Leduc): ``history`` the ACPC betting, ``cards``
    each position's hole cards as text ("Ks", None where hidden) then the board of each round
    reached (``observation.limit_observation_cards``)."""

    sequence: int
    position: int
    history: str
    cards: tuple[int | str | None, ...]


@dataclass(frozen=True)
class SnapshotRow:
    """A stored model state: the state after observations 1..``hands``
    (``oppmodel.modeling.mbbr.snapshot``)."""

    hands: int
    state: bytes


@dataclass(frozen=True)
class StoredSession:
    """What a reload reads, in one consistent read: the session, its latest snapshot (or None)
    and every observation after it, in sequence order."""

    row: SessionRow
    snapshot: SnapshotRow | None
    tail: list[ObservationRow]


class StaleSessionError(Exception):
    """Observations were offered at a version the store has moved past (or not reached): the
    caller's copy of the session is stale and must be reloaded. Never reaches a client."""

    def __init__(self, session_id: str, stored: int, offered: int) -> None:
        super().__init__(
            f"session {session_id}: {stored} observations stored, rows offered from {offered}"
        )
        self.stored = stored


class SessionStore(Protocol):
    """The storage of opponent-model sessions, as ``SessionManager`` uses it.

    Every method is thread-safe and returns a future; a write's future resolves once committed.
    """

    # Whether other processes may write the same sessions (a shared database): then copies in
    # memory are checked against the stored version before they answer.
    shared: bool

    def create_session_async(
        self, row: SessionRow, *, max_sessions: int | None = None
    ) -> Future[None]:
        """Insert a new session; ResourceExhaustedError if ``max_sessions`` are stored already
        (counted in the same transaction, so concurrent creations cannot overshoot)."""
        ...

    def delete_session_async(self, session_id: str, *, owner: str | None = None) -> Future[bool]:
        """Delete a session and everything stored about it (only if ``owner`` owns it, when
        given); resolves to whether it existed."""
        ...

    def append_observations_async(
        self, session_id: str, rows: list[ObservationRow]
    ) -> Future[None]:
        """Store consecutive observations all or none, only if the first one follows the last
        stored one: else StaleSessionError (NotFoundError if the session is gone)."""
        ...

    def truncate_observations_async(self, session_id: str, *, keep: int) -> Future[int]:
        """Remove every observation after sequence ``keep`` (and a snapshot beyond it): the undo
        of a commit whose hands could not be applied; resolves to how many were removed."""
        ...

    def save_snapshot_async(self, session_id: str, snapshot: SnapshotRow) -> Future[bool]:
        """Store a snapshot in place of an older one; resolves to whether it was stored (one not
        newer than the stored one, or of a deleted session, is not)."""
        ...

    def list_sessions_async(self, owner: str | None = None) -> Future[list[tuple[SessionRow, int]]]:
        """Sessions (of one owner, or all) with their observation counts, oldest first."""
        ...

    def observation_count_async(self, session_id: str) -> Future[int]:
        """The last stored sequence number of a session (0 if none): its version."""
        ...

    def load_observations_async(
        self, session_id: str, *, after: int = 0, upto: int | None = None
    ) -> Future[list[ObservationRow]]:
        """The observations of a session with ``after`` < sequence <= ``upto`` (None: the
        last), in sequence order."""
        ...

    def load_observation_async(
        self, session_id: str, sequence: int
    ) -> Future[ObservationRow | None]:
        """One stored observation (None if there is none with that sequence)."""
        ...

    def load_session_async(self, session_id: str) -> Future[StoredSession | None]:
        """What a reload needs (see ``StoredSession``); None if there is no such session."""
        ...

    def load_solved_async(self, game_key: str) -> Future[str | None]:
        """A game's stored solved strategy file text (None if there is none)."""
        ...

    def save_solved_async(self, game_key: str, strategy: str) -> Future[None]:
        """Store a game's solved strategy file text (a stored one stays)."""
        ...

    def save_population_async(self, owner: str, game_key: str, state: bytes) -> Future[int]:
        """Store a new version of an owner's population of a game; resolves to its version."""
        ...

    def load_population_async(
        self, owner: str, game_key: str, version: int | None = None
    ) -> Future[tuple[int, bytes] | None]:
        """(version, state) of an owner's population of a game: ``version``'s, else the latest;
        None if there is none."""
        ...

    def save_population_member_async(
        self, owner: str, game_key: str, session_id: str, counts: bytes
    ) -> Future[None]:
        """Keep a deleted session's opponent counts in its owner's population of a game."""
        ...

    def load_population_members_async(
        self, owner: str, game_key: str
    ) -> Future[list[tuple[str, bytes]]]:
        """The kept (session_id, counts) of an owner's population of a game."""
        ...

    def close(self) -> None:
        """Finish queued work and release the connection."""
        ...
