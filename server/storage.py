"""Durable session storage in SQLite (WAL), with group commit on one writer thread.

What is stored is what is needed to rebuild a session bit for bit: its configuration (with the
seed), every observation in sequence order, and the latest snapshot of its model state. The
modeling core guarantees that replaying the same observations into a fresh model with the same
configuration reproduces the posterior exactly, and that restoring a snapshot taken after hand
``s`` and replaying hands ``s + 1, ...`` gives the same bits as replaying them all
(``modeling/mbbr/snapshot.py``), so a reload costs one snapshot plus a bounded tail of hands.

Every database operation runs on one dedicated thread that owns the connection. Writes queued while
a transaction is being committed are applied together in the next transaction, each inside its own
savepoint (one failing write does not undo the others), and their futures resolve only after COMMIT
returns: an observation is acknowledged only once it is durable. With ``synchronous=FULL`` (the
default) a commit survives power loss; ``NORMAL`` survives a crash of the process only.

The writer never dies of its callers: an operation whose future was cancelled while queued is
skipped (a cancelled write is not stored), and no outcome of an operation, a commit or the
resolution of a future escapes its loop.

The tables and their operations are plain SQL (``?`` placeholders aside, they run unchanged on
PostgreSQL, with BYTEA for BLOB), so another backend can implement the same methods:

- ``sessions(session_id, owner, created_unix_ms, spec)``: spec is the session's JSON.
- ``observations(session_id, sequence, position, history, cards)``: cards is a JSON list with
  null where hidden; sequence runs 1, 2, ... per session without gaps.
- ``snapshots(session_id, hands, state)``: at most one per session, the state after hands
  1..hands; ``state`` is self-describing (format name, version, posterior kind; see
  ``modeling/mbbr/snapshot.py``). A snapshot only ever moves forward.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from oppmodel.modeling.choice import Choice
from oppmodel.modeling.errors import ResourceExhaustedError

T = TypeVar("T")
log = logging.getLogger("oppmodel.server")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_unix_ms INTEGER NOT NULL,
    spec TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS observations (
    session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    sequence INTEGER NOT NULL,
    position INTEGER NOT NULL,
    history TEXT NOT NULL,
    cards TEXT NOT NULL,
    PRIMARY KEY (session_id, sequence)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
    hands INTEGER NOT NULL,
    state BLOB NOT NULL
);
"""


@dataclass(frozen=True)
class SessionRow:
    """A stored session: its id, owner (hashed token, "" without auth), creation time and spec."""

    session_id: str
    owner: str
    created_unix_ms: int
    spec: dict[str, Any]


@dataclass(frozen=True)
class ObservationRow:
    """A stored observation; ``cards`` has one entry per position, None where hidden."""

    sequence: int
    position: int
    history: str
    cards: tuple[int | None, ...]


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


class Synchronous(Choice):
    """SQLite's ``PRAGMA synchronous``: what a committed write survives."""

    FULL = "FULL"  # power loss (the default)
    NORMAL = "NORMAL"  # a crash of the process only


class Storage:
    """SQLite store of sessions, observations and snapshots; every method is thread-safe.

    Methods ending in ``_async`` queue the operation and return a future (a write's resolves once
    it is committed); the others block until it is done.
    """

    def __init__(self, path: str | Path, *, synchronous: Synchronous | str = "FULL") -> None:
        try:
            mode = Synchronous(synchronous.upper())
        except ValueError:
            raise ValueError("synchronous must be FULL or NORMAL") from None
        self.path = str(path)
        self._queue: queue.SimpleQueue[tuple[Callable[[sqlite3.Connection], Any], Future, bool]]
        self._queue = queue.SimpleQueue()
        self._closed = False
        ready: Future[None] = Future()
        self._thread = threading.Thread(
            target=self._run, args=(mode, ready), name="oppmodel-sqlite", daemon=True
        )
        self._thread.start()
        ready.result()

    # -- writes ----------------------------------------------------------------------------------
    def create_session(self, row: SessionRow, *, max_sessions: int | None = None) -> None:
        """Insert a new session; ResourceExhaustedError if ``max_sessions`` are stored already."""
        self.create_session_async(row, max_sessions=max_sessions).result()

    def create_session_async(
        self, row: SessionRow, *, max_sessions: int | None = None
    ) -> Future[None]:
        """Queue the insert of a new session (see ``create_session``).

        Counting and inserting happen in one operation on the writer thread, so concurrent
        creations cannot overshoot the limit.
        """

        def op(db: sqlite3.Connection) -> None:
            if max_sessions is not None:
                (count,) = db.execute("SELECT COUNT(*) FROM sessions").fetchone()
                if count >= max_sessions:
                    raise ResourceExhaustedError(
                        f"sessions: this server holds at most {max_sessions} sessions"
                    )
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?)",
                (row.session_id, row.owner, row.created_unix_ms, json.dumps(row.spec)),
            )

        return self._submit(op, write=True)

    def delete_session(self, session_id: str, *, owner: str | None = None) -> bool:
        """Delete a session and everything stored about it; returns whether it existed."""
        return self.delete_session_async(session_id, owner=owner).result()

    def delete_session_async(self, session_id: str, *, owner: str | None = None) -> Future[bool]:
        """Queue the deletion of a session (only if ``owner`` owns it, when given).

        Touches nothing but rows, so a session whose spec or observations can no longer be
        built into a model is deleted all the same.
        """

        def op(db: sqlite3.Connection) -> bool:
            where, args = "session_id = ?", [session_id]
            if owner is not None:
                where, args = "session_id = ? AND owner = ?", [session_id, owner]
            if db.execute(f"SELECT 1 FROM sessions WHERE {where}", args).fetchone() is None:
                return False
            for table in ("snapshots", "observations", "sessions"):
                db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            return True

        return self._submit(op, write=True)

    def append_observation(self, session_id: str, obs: ObservationRow) -> None:
        """Store one observation; returns once it is committed."""
        self.append_observations_async(session_id, [obs]).result()

    def append_observation_async(self, session_id: str, obs: ObservationRow) -> Future[None]:
        """Queue one observation; the future resolves once it is committed."""
        return self.append_observations_async(session_id, [obs])

    def append_observations_async(
        self, session_id: str, rows: list[ObservationRow]
    ) -> Future[None]:
        """Queue observations stored all or none; the future resolves once they are committed."""
        values = [
            (session_id, row.sequence, row.position, row.history, json.dumps(row.cards))
            for row in rows
        ]

        def op(db: sqlite3.Connection) -> None:
            db.executemany("INSERT INTO observations VALUES (?, ?, ?, ?, ?)", values)

        return self._submit(op, write=True)

    def truncate_observations_async(self, session_id: str, *, keep: int) -> Future[int]:
        """Queue the removal of every observation after sequence ``keep`` (and of a snapshot
        beyond it): the undo of a commit whose hands could not be applied. Returns how many
        observations were removed."""

        def op(db: sqlite3.Connection) -> int:
            db.execute(
                "DELETE FROM snapshots WHERE session_id = ? AND hands > ?", (session_id, keep)
            )
            return db.execute(
                "DELETE FROM observations WHERE session_id = ? AND sequence > ?", (session_id, keep)
            ).rowcount

        return self._submit(op, write=True)

    def save_snapshot_async(self, session_id: str, snapshot: SnapshotRow) -> Future[bool]:
        """Queue storing a snapshot in place of an older one; returns whether it was stored (an
        older or equal snapshot than the stored one, or one of a deleted session, is not)."""

        def op(db: sqlite3.Connection) -> bool:
            if db.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone():
                return (
                    db.execute(
                        "INSERT INTO snapshots VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE"
                        " SET hands = excluded.hands, state = excluded.state"
                        " WHERE excluded.hands > snapshots.hands",
                        (session_id, snapshot.hands, snapshot.state),
                    ).rowcount
                    > 0
                )
            return False

        return self._submit(op, write=True)

    # -- reads -----------------------------------------------------------------------------------
    def get_session(self, session_id: str) -> SessionRow | None:
        """The stored session, or None."""

        def op(db: sqlite3.Connection) -> SessionRow | None:
            return _session_row(db, session_id)

        return self._call(op)

    def list_sessions(self, owner: str | None = None) -> list[tuple[SessionRow, int]]:
        """Sessions (of one owner, or all) with their observation counts, oldest first."""
        return self.list_sessions_async(owner).result()

    def list_sessions_async(self, owner: str | None = None) -> Future[list[tuple[SessionRow, int]]]:
        """Queue ``list_sessions``."""

        def op(db: sqlite3.Connection) -> list[tuple[SessionRow, int]]:
            sql = (
                "SELECT s.*, (SELECT COUNT(*) FROM observations o"
                " WHERE o.session_id = s.session_id) FROM sessions s"
            )
            args: tuple[str, ...] = ()
            if owner is not None:
                sql += " WHERE s.owner = ?"
                args = (owner,)
            rows = db.execute(sql + " ORDER BY s.created_unix_ms, s.session_id", args).fetchall()
            return [(SessionRow(r[0], r[1], r[2], json.loads(r[3])), r[4]) for r in rows]

        return self._submit(op)

    def load_observations(self, session_id: str, *, after: int = 0) -> list[ObservationRow]:
        """The observations of a session with sequence > ``after``, in sequence order."""
        return self.load_observations_async(session_id, after=after).result()

    def load_observations_async(
        self, session_id: str, *, after: int = 0
    ) -> Future[list[ObservationRow]]:
        """Queue ``load_observations``."""
        return self._submit(lambda db: _observations(db, session_id, after))

    def load_observation_async(
        self, session_id: str, sequence: int
    ) -> Future[ObservationRow | None]:
        """Queue reading one stored observation (None if there is none with that sequence)."""

        def op(db: sqlite3.Connection) -> ObservationRow | None:
            r = db.execute(
                "SELECT sequence, position, history, cards FROM observations"
                " WHERE session_id = ? AND sequence = ?",
                (session_id, sequence),
            ).fetchone()
            return None if r is None else _observation_row(r)

        return self._submit(op)

    def load_session_async(self, session_id: str) -> Future[StoredSession | None]:
        """Queue reading what a reload needs (see ``StoredSession``); None if no such session."""

        def op(db: sqlite3.Connection) -> StoredSession | None:
            row = _session_row(db, session_id)
            if row is None:
                return None
            r = db.execute(
                "SELECT hands, state FROM snapshots WHERE session_id = ?", (session_id,)
            ).fetchone()
            snapshot = None if r is None else SnapshotRow(int(r[0]), bytes(r[1]))
            after = 0 if snapshot is None else snapshot.hands
            return StoredSession(row, snapshot, _observations(db, session_id, after))

        return self._submit(op)

    def run(self, op: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        """Run ``op(connection)`` on the writer thread (writes inside its transaction); blocking.

        For other session kinds that keep their own tables in the same database
        (``server/perfect_info.py``).
        """
        return self._call(op, write=write)

    def submit(self, op: Callable[[sqlite3.Connection], T], *, write: bool = False) -> Future[T]:
        """Queue ``op(connection)``; the future resolves once it ran (a write: once committed)."""
        return self._submit(op, write=write)

    def close(self) -> None:
        """Finish queued work, checkpoint and close the connection."""
        if self._closed:
            return
        self._closed = True
        done: Future[None] = Future()
        self._queue.put((_STOP, done, False))
        done.result()
        self._thread.join()

    # -- the writer thread -----------------------------------------------------------------------
    def _submit(self, op: Callable[[sqlite3.Connection], T], *, write: bool = False) -> Future[T]:
        if self._closed:
            raise RuntimeError("storage is closed")
        fut: Future[T] = Future()
        self._queue.put((op, fut, write))
        return fut

    def _call(self, op: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        return self._submit(op, write=write).result()

    def _run(self, synchronous: Synchronous, ready: Future[None]) -> None:
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={synchronous}")
            db.execute("PRAGMA foreign_keys=ON")
            db.executescript(_SCHEMA)
        except BaseException as exc:  # report the failure to the constructor
            ready.set_exception(exc)
            return
        ready.set_result(None)
        stop = None
        while stop is None:
            batch = [self._queue.get()]
            while True:  # group commit: take everything already waiting
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                stop = _run_batch(db, batch)
            except BaseException as exc:  # a bug: fail the batch's futures, keep serving
                log.error("storage batch failed", exc_info=exc)
                for _op, fut, _write in batch:
                    _resolve(fut, None, exc)
        with contextlib.suppress(sqlite3.Error):
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        while True:  # anything queued after the stop request will never run
            try:
                _op, fut, _write = self._queue.get_nowait()
            except queue.Empty:
                break
            if fut.set_running_or_notify_cancel():
                _resolve(fut, None, RuntimeError("storage is closed"))
        _resolve(stop, None, None)


def _run_batch(db: sqlite3.Connection, batch: list) -> Future | None:
    """Run one batch (writes in one transaction); returns the stop future if asked to stop.

    A future cancelled while queued is skipped: its operation never runs (a cancelled write is
    not stored). Every other future is resolved once, after COMMIT: with the operation's value,
    its exception, or the commit's exception for writes if the transaction failed.
    """
    stop = None
    runnable = []
    for op, fut, write in batch:
        if op is _STOP:
            stop = fut
        elif fut.set_running_or_notify_cancel():  # False: cancelled while queued
            runnable.append((op, fut, write))
    results: list[tuple[Future, Any, BaseException | None, bool]] = []
    has_writes = any(write for _op, _fut, write in runnable)
    try:
        if has_writes:
            db.execute("BEGIN IMMEDIATE")
        for op, fut, write in runnable:
            if write:
                db.execute("SAVEPOINT op")
            try:
                value, error = op(db), None
            except Exception as exc:
                value, error = None, exc
            if write:
                if error is not None:
                    db.execute("ROLLBACK TO op")
                db.execute("RELEASE op")
            results.append((fut, value, error, write))
        if has_writes:
            db.execute("COMMIT")
    except BaseException as exc:  # the transaction failed: nothing written by this batch is durable
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        done = {id(fut) for fut, *_ in results}
        results = [(f, v, exc if w else e, w) for f, v, e, w in results]
        results += [(f, None, exc, w) for _op, f, w in runnable if id(f) not in done]
    for fut, result, failure, _write in results:
        _resolve(fut, result, failure)
    return stop


def _resolve(fut: Future, value: Any, error: BaseException | None) -> None:
    """Set a future's outcome; a future already resolved or cancelled is left as it is."""
    with contextlib.suppress(InvalidStateError):
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(value)


def _session_row(db: sqlite3.Connection, session_id: str) -> SessionRow | None:
    r = db.execute("SELECT * FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    return None if r is None else SessionRow(r[0], r[1], r[2], json.loads(r[3]))


def _observation_row(r: tuple) -> ObservationRow:
    return ObservationRow(r[0], r[1], r[2], tuple(json.loads(r[3])))


def _observations(db: sqlite3.Connection, session_id: str, after: int) -> list[ObservationRow]:
    rows = db.execute(
        "SELECT sequence, position, history, cards FROM observations"
        " WHERE session_id = ? AND sequence > ? ORDER BY sequence",
        (session_id, after),
    ).fetchall()
    return [_observation_row(r) for r in rows]


def _STOP(db: sqlite3.Connection) -> None:
    """Sentinel operation that tells the writer thread to close the store; never run."""
    raise AssertionError("never run")
