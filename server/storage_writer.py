"""The writer thread under both SQL storage backends: one connection, group commit, retries.

Every database operation runs on one dedicated thread that owns the connection. Writes queued while
a transaction is being committed are applied together in the next transaction, each inside its own
savepoint (one failing write does not undo the others), and their futures resolve only after COMMIT
returns: an observation is acknowledged only once it is durable.

The writer never dies of its callers: an operation whose future was cancelled while queued is
skipped (a cancelled write is not stored), and no outcome of an operation, a commit or the
resolution of a future escapes its loop. A batch that the database aborts for a reason that a
second try cures (a deadlock between processes) is rolled back and run again whole.

Operations are written in SQL that SQLite and PostgreSQL both run (``?`` placeholders are
translated, see ``Db``); a backend gives its connection, its schema and a ``Dialect``: how a
transaction begins, how a session's row is locked against other processes. The operations on the
opponent-model tables are ``storage_sql.SqlStore``'s; ``append_at_version`` is shared by every
kind of session that appends numbered rows.
"""

from __future__ import annotations

import contextlib
import functools
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

from oppmodel.modeling.errors import NotFoundError, UnavailableError
from oppmodel.server.storage import StaleSessionError, error_reason

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
    # the words of a schema that differ: the type of a 64-bit integer column, of a byte string,
    # and the suffix of a table stored in its primary key's order (SQLite's WITHOUT ROWID)
    big_integer: str
    binary: str
    keyed_table: str

    def schema(self, template: str) -> str:
        """``template``'s statements in this dialect (its ``{big_integer}``, ``{binary}`` and
        ``{keyed_table}`` filled in): one schema for both backends."""
        return template.format(
            big_integer=self.big_integer, binary=self.binary, keyed_table=self.keyed_table
        )


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


class SqlWriter(ABC):
    """One SQL connection owned by a thread that runs queued operations; thread-safe.

    ``submit`` queues an operation and returns a future (a write's resolves once it is
    committed); ``run`` blocks until it is done.
    """

    dialect: Dialect
    location: str  # what was opened (a path, or a URL without its password), for messages

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


def _STOP(db: Db) -> None:
    """Sentinel operation that tells the writer thread to close the store; never run."""
    raise AssertionError("never run")
