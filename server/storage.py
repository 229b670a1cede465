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
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

POSTGRES_URL_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location: str) -> bool:
    """Whether a store location names a PostgreSQL database (else it is a SQLite file's path)."""
    return location.startswith(POSTGRES_URL_SCHEMES)


def redacted(location: str) -> str:
    """The location without a password, for logs and messages."""
    return re.sub(r"^(\w+://[^:/@]*):[^@]*@", r"\1@", location)


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
        self, session_id: str, *, after: int = 0
    ) -> Future[list[ObservationRow]]:
        """The observations of a session with sequence > ``after``, in sequence order."""
        ...

    def load_observation_async(
        self, session_id: str, sequence: int
    ) -> Future[ObservationRow | None]:
        """One stored observation (None if there is none with that sequence)."""
        ...

    def load_session_async(self, session_id: str) -> Future[StoredSession | None]:
        """What a reload needs (see ``StoredSession``); None if there is no such session."""
        ...

    def close(self) -> None:
        """Finish queued work and release the connection."""
        ...
