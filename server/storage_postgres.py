"""The shared storage backend: a PostgreSQL database that several server processes use at once.

Each process keeps one connection on its writer thread (``storage_writer.SqlWriter``); transactions
run at READ COMMITTED. What keeps every hand stored and applied exactly once across processes is
the transaction that appends observations: it locks the session's row (``SELECT ... FOR UPDATE``,
which serialises every writer of that session in every process), compares the last stored
sequence number with the one the writer's copy of the session has, and inserts only if they agree;
``(session_id, sequence)`` is the primary key besides. A process that was behind gets
``StaleSessionError`` and reloads the session. Creations count under an advisory lock, so
``max_sessions`` holds across processes; the schema is created under one too.

A batch that PostgreSQL aborts as a deadlock (two processes' batches locking the same sessions
in opposite orders), or that loses its connection (a restart of PostgreSQL, a dropped network
link), is rolled back and run again, on a new connection; while none can be made, calls fail with
UnavailableError (clients retry).

Needs the ``postgres`` extra (``pip install oppmodel[postgres]``: psycopg 3).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import errors as pg_errors

from oppmodel.server.storage import error_reason, is_postgres, redacted
from oppmodel.server.storage_sql import SqlStore
from oppmodel.server.storage_writer import Dialect

POSTGRESQL = Dialect(
    name="postgresql",
    placeholder="%s",
    begin_writes="BEGIN",
    begin_reads="BEGIN",
    for_update=" FOR UPDATE",
    for_share=" FOR SHARE",
    lock_name="SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
    text_holds_nul=False,
    big_integer="BIGINT",
    binary="BYTEA",
    keyed_table="",
)

CONNECT_TIMEOUT_SECONDS = 10


class PostgresStore(SqlStore):
    """Sessions, observations and snapshots in the PostgreSQL database at ``url``
    (``postgresql://user[:password]@host[:port]/dbname``, libpq's parameters allowed, or a libpq
    keyword/value string: ``host=... dbname=...``)."""

    dialect = POSTGRESQL
    shared = True

    def __init__(self, url: str) -> None:
        if not is_postgres(url):
            raise ValueError(f"not a PostgreSQL URL or connection string: {redacted(url)}")
        self.url = url
        self.location = redacted(url)
        super().__init__()

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS)

    def _is_transient(self, exc: BaseException) -> bool:
        if isinstance(exc, pg_errors.DeadlockDetected | pg_errors.SerializationFailure):
            return True
        return isinstance(exc, psycopg.OperationalError) and (
            self._db is None or self._is_broken(self._db.raw)
        )

    def _is_broken(self, raw: Any) -> bool:
        return bool(raw.closed or raw.broken)

    def _reason(self, exc: BaseException) -> str:
        return error_reason(exc, self.url)
