"""The SQL behind both storage backends: one writer thread, group commit, portable operations.

Every database operation runs on one dedicated thread that owns the connection. Writes queued while
a transaction is being committed are applied together in the next transaction, each inside its own
savepoint (one failing write does not undo the others), and their futures resolve only after COMMIT
returns: an observation is acknowledged only once it is durable.

The writer never dies of its callers: an operation whose future was cancelled while queued is
skipped (a cancelled write is not stored), and no outcome of an operation, a commit or the
resolution of a future escapes its loop. A batch that the database aborts for a reason that a
second try cures (a deadlock between processes) is rolled back and run again whole.

Operations are written once, in SQL that SQLite and PostgreSQL both run (``?`` placeholders are
translated, see ``Db``); a backend gives its connection, its schema and a ``Dialect``: how a
transaction begins, how a session's row is locked against other processes. The tables:

- ``sessions(session_id, owner, created_unix_ms, spec)``: spec is the session's JSON.
- ``observations(session_id, sequence, position, history, cards)``: cards is a JSON list with
  null where hidden (numbers in Kuhn, card text in limit games: ``storage.ObservationRow``);
  sequence runs 1, 2, ... per session without gaps; (session_id, sequence) is the primary key.
- ``snapshots(session_id, hands, state)``: at most one per session, the state after hands
  1..hands; ``state`` is self-describing (format name, version, posterior kind; see
  ``modeling/mbbr/snapshot.py``). A snapshot only ever moves forward.
- ``solved_strategies(game_key, strategy)``: a game's solved strategy file text, keyed by the
  SHA-256 of its canonical rules (``server/solved_strategies.py``); written once, never changed.
  A store of an earlier release gains the table when it is opened (``CREATE TABLE IF NOT
  EXISTS``), its other tables unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import queue
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from typing import Any, TypeVar

from oppmodel.modeling.errors import NotFoundError, ResourceExhaustedError, UnavailableError
from oppmodel.server.storage import (
    ObservationRow,
    SessionRow,
    SnapshotRow,
    StaleSessionError,
    StoredSession,
    error_reason,
)

T = TypeVar("T")
log = logging.getLogger("oppmodel.server")
# what a caller is told while the database cannot be reached: nothing about where it is
STORE_UNAVAILABLE = "store unavailable; send again"
BATCH_TRIES = 5  # a batch aborted by a transient conflict is run again up to this many times


@dataclass(frozen=True)
class Dialect:
    """What differs between the SQL of two backends."""

    name: str  # "sqlite" or "postgresql"
    placeholder: str  # "?" (SQLite) or "%s" (psycopg)
    begin_writes: str  # the statement that opens a transaction with writes
    begin_reads: str | None  # the one for reads only (None: reads run outside a transaction)
    for_update: str  # suffix of a SELECT that locks its rows against other writers
    for_share: str  # suffix of a SELECT that keeps its rows from changing until COMMIT
    # a statement taking a transaction-scoped lock on a name (one ``?`` parameter), or None
    # where one process is the only writer (SQLite's BEGIN IMMEDIATE already serialises them)
    lock_name: str | None
    text_holds_nul: bool  # whether a TEXT value may contain NUL (PostgreSQL's may not)


class Db:
    """The connection as an operation sees it: ``execute``/``executemany`` with ``?``
    placeholders whatever the backend, and the dialect's locking.

    Where TEXT cannot hold NUL (PostgreSQL: its driver refuses such a parameter outright), a
    text parameter containing one is bound as NULL: no stored text equals it, and ``= NULL``
    matches no row, so a lookup by a session id with a NUL in it finds nothing, as on SQLite,
    instead of failing (an insert of one is refused by its NOT NULL column; what the server
    writes never holds one: ids are its own, specs and cards are ASCII JSON, histories are
    checked against the game)."""

    def __init__(self, raw: Any, dialect: Dialect) -> None:
        self.raw = raw
        self.dialect = dialect

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """Run one statement; returns the cursor (``fetchone``, ``fetchall``, ``rowcount``)."""
        return self.raw.execute(_translate(sql, self.dialect.placeholder), self._bound(args))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement once per row of parameters."""
        self.raw.cursor().executemany(
            _translate(sql, self.dialect.placeholder), [self._bound(row) for row in rows]
        )

    def _bound(self, args: Sequence[Any]) -> Sequence[Any]:
        if self.dialect.text_holds_nul:
            return args
        return [None if isinstance(a, str) and "\x00" in a else a for a in args]

    def executescript(self, script: str) -> None:
        """Run several statements without parameters (a schema)."""
        if self.dialect.name == "sqlite":
            # executescript would COMMIT the writer's transaction first; run them one by one
            for statement in script.split(";"):
                if statement.strip():
                    self.raw.execute(statement)
        else:
            self.raw.execute(script)

    def lock(self, name: str) -> None:
        """Hold a lock on ``name`` until the transaction ends (against other processes)."""
        if self.dialect.lock_name is not None:
            self.execute(self.dialect.lock_name, (name,))


@functools.lru_cache(maxsize=256)
def _translate(sql: str, placeholder: str) -> str:
    return sql if placeholder == "?" else sql.replace("?", placeholder)


Operation = Callable[[Db], Any]


class SqlStore(ABC):
    """A store of sessions, observations and snapshots over one SQL connection; every method is
    thread-safe (``storage.SessionStore``).

    Methods ending in ``_async`` queue the operation and return a future (a write's resolves once
    it is committed); the others block until it is done. ``run``/``submit`` run any operation
    on the writer thread: for other session kinds that keep their own tables in the same database
    (``server/perfect_info_store.py``).
    """

    dialect: Dialect
    location: str  # what was opened (a path, or a URL without its password), for messages
    shared: bool  # whether other processes may write the same sessions (storage.SessionStore)

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Operation, Future, bool]] = queue.SimpleQueue()
        self._closed = False
        self._unreachable = False  # since a batch found the database unreachable (logged once)
        ready: Future[None] = Future()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name=f"oppmodel-{self.dialect.name}", daemon=True
        )
        self._thread.start()
        ready.result()

    # -- what a backend provides -----------------------------------------------------------------
    @abstractmethod
    def _connect(self) -> Any:
        """A new connection in autocommit mode (transactions are begun explicitly)."""

    @abstractmethod
    def _schema(self) -> str:
        """The statements that create the tables (if missing)."""

    def _is_transient(self, exc: BaseException) -> bool:
        """Whether running the aborted batch again may succeed (a deadlock, a lost
        connection)."""
        return False

    def _is_broken(self, raw: Any) -> bool:
        """Whether the connection is lost (and a new one must be made before the next batch)."""
        return False

    # -- writes ----------------------------------------------------------------------------------
    def create_session(self, row: SessionRow, *, max_sessions: int | None = None) -> None:
        """Insert a new session; ResourceExhaustedError if ``max_sessions`` are stored already."""
        self.create_session_async(row, max_sessions=max_sessions).result()

    def create_session_async(
        self, row: SessionRow, *, max_sessions: int | None = None
    ) -> Future[None]:
        """Queue the insert of a new session (see ``create_session``).

        Counting and inserting happen in one transaction, under a lock that every creation
        takes, so concurrent creations (in any process) cannot overshoot the limit.
        """

        def op(db: Db) -> None:
            if max_sessions is not None:
                db.lock("oppmodel.sessions")
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

        def op(db: Db) -> bool:
            where, args = "session_id = ?", [session_id]
            if owner is not None:
                where, args = "session_id = ? AND owner = ?", [session_id, owner]
            found = db.execute(
                f"SELECT 1 FROM sessions WHERE {where}{db.dialect.for_update}", args
            ).fetchone()
            if found is None:
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
        """Queue consecutive observations, stored all or none, and only at the stored version:
        the first must follow the last stored one, checked under the session's row lock in the
        insert's transaction (StaleSessionError if not; NotFoundError if the session is gone).
        The future resolves once they are committed. The rows are encoded on the writer thread,
        off the caller's event loop: ``rows`` must not change until then."""
        if not rows:
            raise ValueError("no observations to append")
        first = rows[0].sequence
        if [row.sequence for row in rows] != list(range(first, first + len(rows))):
            raise ValueError("observations to append must be numbered consecutively")

        def op(db: Db) -> None:  # the rows are encoded here, on the writer thread
            values = [
                (session_id, row.sequence, row.position, row.history, json.dumps(row.cards))
                for row in rows
            ]
            append_at_version(
                db, session_id, first, values=values, sessions="sessions", rows="observations"
            )

        return self._submit(op, write=True)

    def truncate_observations_async(self, session_id: str, *, keep: int) -> Future[int]:
        """Queue the removal of every observation after sequence ``keep`` (and of a snapshot
        beyond it): the undo of a commit whose hands could not be applied. Returns how many
        observations were removed."""

        def op(db: Db) -> int:
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

        def op(db: Db) -> bool:
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
        return self._call(lambda db: _session_row(db, session_id))

    def list_sessions(self, owner: str | None = None) -> list[tuple[SessionRow, int]]:
        """Sessions (of one owner, or all) with their observation counts, oldest first."""
        return self.list_sessions_async(owner).result()

    def list_sessions_async(self, owner: str | None = None) -> Future[list[tuple[SessionRow, int]]]:
        """Queue ``list_sessions``."""

        def op(db: Db) -> list[tuple[SessionRow, int]]:
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

    def observation_count_async(self, session_id: str) -> Future[int]:
        """Queue reading the last stored sequence number of a session (0 if none)."""
        return self._submit(lambda db: stored_count(db, "observations", session_id))

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

        def op(db: Db) -> ObservationRow | None:
            r = db.execute(
                "SELECT sequence, position, history, cards FROM observations"
                " WHERE session_id = ? AND sequence = ?",
                (session_id, sequence),
            ).fetchone()
            return None if r is None else _observation_row(r)

        return self._submit(op)

    def load_session_async(self, session_id: str) -> Future[StoredSession | None]:
        """Queue reading what a reload needs (see ``StoredSession``); None if no such session.

        The session's row is held against writers (of any process) while it is read."""

        def op(db: Db) -> StoredSession | None:
            row = _session_row(db, session_id, lock=db.dialect.for_share)
            if row is None:
                return None
            r = db.execute(
                "SELECT hands, state FROM snapshots WHERE session_id = ?", (session_id,)
            ).fetchone()
            snapshot = None if r is None else SnapshotRow(int(r[0]), bytes(r[1]))
            after = 0 if snapshot is None else snapshot.hands
            return StoredSession(row, snapshot, _observations(db, session_id, after))

        return self._submit(op)

    def ping_async(self) -> Future[None]:
        """Queue a round trip to the database (connecting again if the connection was lost);
        the future fails with UnavailableError while the database cannot be reached."""
        return self._submit(lambda db: db.execute("SELECT 1").fetchone())

    def load_solved_async(self, game_key: str) -> Future[str | None]:
        """Queue reading a game's stored solved strategy (None if there is none)."""

        def op(db: Db) -> str | None:
            r = db.execute(
                "SELECT strategy FROM solved_strategies WHERE game_key = ?", (game_key,)
            ).fetchone()
            return None if r is None else str(r[0])

        return self._submit(op)

    def save_solved_async(self, game_key: str, strategy: str) -> Future[None]:
        """Queue storing a game's solved strategy (the first one stored stays: every solve of a
        game gives the same strategy)."""

        def op(db: Db) -> None:
            db.execute(
                "INSERT INTO solved_strategies VALUES (?, ?) ON CONFLICT (game_key) DO NOTHING",
                (game_key, strategy),
            )

        return self._submit(op, write=True)

    def run(self, op: Callable[[Db], T], *, write: bool = False) -> T:
        """Run ``op(db)`` on the writer thread (writes inside its transaction); blocking."""
        return self._call(op, write=write)

    def submit(self, op: Callable[[Db], T], *, write: bool = False) -> Future[T]:
        """Queue ``op(db)``; the future resolves once it ran (a write: once committed)."""
        return self._submit(op, write=write)

    def close(self) -> None:
        """Finish queued work and close the connection."""
        if self._closed:
            return
        self._closed = True
        done: Future[None] = Future()
        self._queue.put((_STOP, done, False))
        done.result()
        self._thread.join()

    # -- the writer thread -----------------------------------------------------------------------
    def _submit(self, op: Callable[[Db], T], *, write: bool = False) -> Future[T]:
        if self._closed:
            raise RuntimeError("storage is closed")
        fut: Future[T] = Future()
        self._queue.put((op, fut, write))
        return fut

    def _call(self, op: Callable[[Db], T], *, write: bool = False) -> T:
        return self._submit(op, write=write).result()

    def _open(self) -> Db:
        db = Db(self._connect(), self.dialect)
        created: Future[None] = Future()
        try:
            _run_batch(db, [(lambda d: _create_schema(d, self._schema()), created, True)])
            created.result()
        except BaseException:
            with contextlib.suppress(Exception):
                db.raw.close()
            raise
        return db

    def _run(self, ready: Future[None]) -> None:
        try:
            self._db: Db | None = self._open()
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
                stop = self._run_with_retries(batch)
            except BaseException as exc:  # a bug or a lost database: fail the batch, keep serving
                error = exc
                if self._db is None or self._is_broken(self._db.raw):
                    self._lost(exc)
                    error = UnavailableError(STORE_UNAVAILABLE)
                else:
                    log.error("storage batch failed", exc_info=exc)
                for op, fut, _write in batch:
                    if op is _STOP:
                        stop = fut
                    else:
                        _resolve(fut, None, error)
        if self._db is not None:
            self._close_connection(self._db)
        while True:  # anything queued after the stop request will never run
            try:
                _op, fut, _write = self._queue.get_nowait()
            except queue.Empty:
                break
            if fut.set_running_or_notify_cancel():
                _resolve(fut, None, RuntimeError("storage is closed"))
        _resolve(stop, None, None)

    def _connected(self) -> Db:
        """The connection, made again first if it was lost (ConnectionError if it cannot be)."""
        if self._db is None or self._is_broken(self._db.raw):
            if self._db is not None:
                with contextlib.suppress(Exception):
                    self._db.raw.close()
                self._db = None
            self._db = Db(self._connect(), self.dialect)
            self._unreachable = False
            log.info("storage: connected again", extra={"store": self.location})
        return self._db

    def _lost(self, exc: BaseException) -> None:
        """Log, once per outage, that the database cannot be reached (its host and the driver's
        reason, never the password); calls fail with UnavailableError meanwhile."""
        if not self._unreachable:
            self._unreachable = True
            log.warning(
                "storage: cannot reach the database",
                extra={"store": self.location, "reason": self._reason(exc)},
            )

    def _reason(self, exc: BaseException) -> str:
        """The driver's message for ``exc`` as a log may show it (a backend whose location
        holds secrets scrubs them)."""
        return error_reason(exc, self.location)

    def _run_with_retries(self, batch: list) -> Future | None:
        """Run a batch; one aborted for a transient reason (a deadlock, a lost connection) is
        rolled back and run again, on a new connection if need be, up to BATCH_TRIES times.

        A connection lost during COMMIT leaves its outcome unknown, so the batch may run again
        after it did commit: appends are then refused as stale (the caller reloads and finds
        its hands stored), never stored twice."""
        for attempt in range(1, BATCH_TRIES + 1):
            try:
                return _run_batch(self._connected(), batch, transient=self._is_transient)
            except _TransientAbort as abort:
                if attempt == BATCH_TRIES:
                    raise abort.cause from None
                time.sleep(random.uniform(0.0, 0.002 * 2**attempt))  # let the other side finish
        raise AssertionError("unreachable")

    def _close_connection(self, db: Db) -> None:
        """Close the connection (a backend may tidy up first)."""
        db.raw.close()


class _TransientAbort(Exception):
    """The batch was rolled back for a reason that a second try cures (in ``cause``)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _run_batch(
    db: Db, batch: list, *, transient: Callable[[BaseException], bool] = lambda exc: False
) -> Future | None:
    """Run one batch (writes in one transaction); returns the stop future if asked to stop.

    A future cancelled while queued is skipped: its operation never runs (a cancelled write is
    not stored). Every other future is resolved once, after COMMIT: with the operation's value,
    its exception, or the commit's exception for writes if the transaction failed. If an
    operation or the commit fails for a transient reason, the whole batch is rolled back and
    ``_TransientAbort`` raised with no future resolved: the caller runs it again.
    """
    stop = None
    runnable = []
    for op, fut, write in batch:
        if op is _STOP:
            stop = fut
        elif fut.running() or fut.set_running_or_notify_cancel():  # False: cancelled
            runnable.append((op, fut, write))
    results: list[tuple[Future, Any, BaseException | None, bool]] = []
    has_writes = any(write for _op, _fut, write in runnable)
    begin = db.dialect.begin_writes if has_writes else db.dialect.begin_reads
    in_transaction = False
    try:
        if begin is not None and runnable:
            db.execute(begin)
            in_transaction = True
        for op, fut, write in runnable:
            if in_transaction:
                db.execute("SAVEPOINT op")
            try:
                value, error = op(db), None
            except Exception as exc:
                if transient(exc):
                    raise _TransientAbort(exc) from exc
                value, error = None, exc
            if in_transaction:
                if error is not None:
                    db.execute("ROLLBACK TO op")
                db.execute("RELEASE op")
            results.append((fut, value, error, write))
        if in_transaction:
            db.execute("COMMIT")
    except _TransientAbort:
        _rollback(db)
        raise
    except BaseException as exc:  # the transaction failed: nothing written by this batch is durable
        if in_transaction:
            _rollback(db)
        if transient(exc):
            raise _TransientAbort(exc) from exc
        done = {id(fut) for fut, *_ in results}
        results = [(f, v, exc if w else e, w) for f, v, e, w in results]
        results += [(f, None, exc, w) for _op, f, w in runnable if id(f) not in done]
    for fut, result, failure, _write in results:
        _resolve(fut, result, failure)
    return stop


def _rollback(db: Db) -> None:
    with contextlib.suppress(Exception):
        db.execute("ROLLBACK")


def _resolve(fut: Future, value: Any, error: BaseException | None) -> None:
    """Set a future's outcome; a future already resolved or cancelled is left as it is."""
    with contextlib.suppress(InvalidStateError):
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(value)


def _create_schema(db: Db, schema: str) -> None:
    db.lock("oppmodel.schema")  # two processes starting at once on one new database
    db.executescript(schema)


def stored_count(db: Db, rows: str, session_id: str) -> int:
    """The last sequence number of a session stored in table ``rows`` (0 if none): its version."""
    (last,) = db.execute(
        f"SELECT COALESCE(MAX(sequence), 0) FROM {rows} WHERE session_id = ?", (session_id,)
    ).fetchone()
    return int(last)


def append_at_version(
    db: Db,
    session_id: str,
    first: int,
    *,
    values: Sequence[Sequence[Any]],
    sessions: str,
    rows: str,
) -> None:
    """Insert ``values`` (rows of table ``rows``, numbered from ``first``) only if ``first``
    follows the session's last stored sequence number, checked under the lock of its row in
    table ``sessions``: what keeps writers in several processes from storing a row twice or
    from a stale copy. StaleSessionError if not; NotFoundError if the session is gone."""
    locked = db.execute(
        f"SELECT 1 FROM {sessions} WHERE session_id = ?{db.dialect.for_update}", (session_id,)
    ).fetchone()
    if locked is None:
        raise NotFoundError(f"session_id: no session {session_id!r}")
    stored = stored_count(db, rows, session_id)
    if stored != first - 1:
        raise StaleSessionError(session_id, stored, first)
    marks = ", ".join("?" * len(values[0]))
    db.executemany(f"INSERT INTO {rows} VALUES ({marks})", values)


def _session_row(db: Db, session_id: str, *, lock: str = "") -> SessionRow | None:
    r = db.execute(f"SELECT * FROM sessions WHERE session_id = ?{lock}", (session_id,)).fetchone()
    return None if r is None else SessionRow(r[0], r[1], r[2], json.loads(r[3]))


def _observation_row(r: tuple) -> ObservationRow:
    return ObservationRow(r[0], r[1], r[2], tuple(json.loads(r[3])))


def _observations(db: Db, session_id: str, after: int) -> list[ObservationRow]:
    rows = db.execute(
        "SELECT sequence, position, history, cards FROM observations"
        " WHERE session_id = ? AND sequence > ? ORDER BY sequence",
        (session_id, after),
    ).fetchall()
    return [_observation_row(r) for r in rows]


def _STOP(db: Db) -> None:
    """Sentinel operation that tells the writer thread to close the store; never run."""
    raise AssertionError("never run")
