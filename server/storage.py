"""Durable session storage in SQLite (WAL), with group commit on one writer thread.

What is stored is exactly what is needed to rebuild a session bit for bit: its configuration (with
the seed) and every observation in sequence order. The modeling core guarantees that replaying the
same observations into a fresh model with the same configuration reproduces the posterior exactly,
so no model state is stored.

Every database operation runs on one dedicated thread that owns the connection. Writes queued while
a transaction is being committed are applied together in the next transaction, each inside its own
savepoint (one failing write does not undo the others), and their futures resolve only after COMMIT
returns: an observation is acknowledged only once it is durable. With ``synchronous=FULL`` (the
default) a commit survives power loss; ``NORMAL`` survives a crash of the process only.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from modeling.errors import ResourceExhaustedError

T = TypeVar("T")

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


class Storage:
    """SQLite store of sessions and observations; every method is thread-safe and blocking."""

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        if synchronous.upper() not in ("FULL", "NORMAL"):
            raise ValueError("synchronous must be FULL or NORMAL")
        self.path = str(path)
        self._queue: queue.SimpleQueue[tuple[Callable[[sqlite3.Connection], Any], Future, bool]]
        self._queue = queue.SimpleQueue()
        self._closed = False
        ready: Future[None] = Future()
        self._thread = threading.Thread(
            target=self._run, args=(synchronous.upper(), ready), name="oppmodel-sqlite", daemon=True
        )
        self._thread.start()
        ready.result()

    # -- public API ------------------------------------------------------------------------------
    def create_session(self, row: SessionRow, *, max_sessions: int | None = None) -> None:
        """Insert a new session; ResourceExhaustedError if ``max_sessions`` are stored already.

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

        self._call(op, write=True)

    def delete_session(self, session_id: str) -> bool:
        """Delete a session and its observations; returns whether it existed."""

        def op(db: sqlite3.Connection) -> bool:
            db.execute("DELETE FROM observations WHERE session_id = ?", (session_id,))
            return (
                db.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,)).rowcount > 0
            )

        return self._call(op, write=True)

    def append_observation(self, session_id: str, obs: ObservationRow) -> None:
        """Store one observation; returns once it is committed."""
        self.append_observation_async(session_id, obs).result()

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

    def get_session(self, session_id: str) -> SessionRow | None:
        """The stored session, or None."""

        def op(db: sqlite3.Connection) -> SessionRow | None:
            r = db.execute("SELECT * FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
            return None if r is None else SessionRow(r[0], r[1], r[2], json.loads(r[3]))

        return self._call(op)

    def list_sessions(self, owner: str | None = None) -> list[tuple[SessionRow, int]]:
        """Sessions (of one owner, or all) with their observation counts, oldest first."""

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

        return self._call(op)

    def load_observations(self, session_id: str) -> list[ObservationRow]:
        """Every observation of a session, in sequence order."""

        def op(db: sqlite3.Connection) -> list[ObservationRow]:
            rows = db.execute(
                "SELECT sequence, position, history, cards FROM observations"
                " WHERE session_id = ? ORDER BY sequence",
                (session_id,),
            ).fetchall()
            return [ObservationRow(r[0], r[1], r[2], tuple(json.loads(r[3]))) for r in rows]

        return self._call(op)

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

    def _run(self, synchronous: str, ready: Future[None]) -> None:
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
        while True:
            batch = [self._queue.get()]
            while True:  # group commit: take everything already waiting
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = self._run_batch(db, batch)
            if stop is not None:
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                db.close()
                stop.set_result(None)
                return

    @staticmethod
    def _run_batch(db: sqlite3.Connection, batch: list) -> Future | None:
        """Run one batch (writes in one transaction); returns the stop future if asked to stop."""
        stop = None
        results: list[tuple[Future, Any, BaseException | None, bool]] = []
        has_writes = any(write for _op, _fut, write in batch)
        if has_writes:
            db.execute("BEGIN IMMEDIATE")
        for op, fut, write in batch:
            if op is _STOP:
                stop = fut
                continue
            if write:
                db.execute("SAVEPOINT op")
            try:
                value, error = op(db), None
            except BaseException as exc:
                value, error = None, exc
            if write:
                if error is not None:
                    db.execute("ROLLBACK TO op")
                db.execute("RELEASE op")
            results.append((fut, value, error, write))
        if has_writes:
            try:
                db.execute("COMMIT")
            except BaseException as exc:  # nothing written by this batch is durable
                db.execute("ROLLBACK")
                results = [(f, v, exc if w else e, w) for f, v, e, w in results]
        for fut, value, error, _write in results:
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(value)
        return stop


def _STOP(db: sqlite3.Connection) -> None:
    """Sentinel operation that tells the writer thread to close the store; never run."""
    raise AssertionError("never run")
