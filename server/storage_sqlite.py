"""The embedded storage backend: one SQLite file in WAL mode (the default).

One process owns the file: its writer thread (``storage_writer.SqlWriter``) is the only writer, and
``BEGIN IMMEDIATE`` makes each batch's transaction exclusive against any other process that opens
the file all the same. With ``synchronous=FULL`` (the default) a commit survives power loss;
``NORMAL`` survives a crash of the process only. The schema (``storage_sql.SCHEMA`` in this
dialect) is the one every earlier release wrote, so an existing file opens unchanged.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from oppmodel.modeling.choice import Choice
from oppmodel.server.storage_sql import SqlStore
from oppmodel.server.storage_writer import Db, Dialect

SQLITE = Dialect(
    name="sqlite",
    placeholder="?",
    begin_writes="BEGIN IMMEDIATE",
    begin_reads=None,
    for_update="",
    for_share="",
    lock_name=None,
    text_holds_nul=True,
    big_integer="INTEGER",
    binary="BLOB",
    keyed_table=" WITHOUT ROWID",
)


class Synchronous(Choice):
    """SQLite's ``PRAGMA synchronous``: what a committed write survives."""

    FULL = "FULL"  # power loss (the default)
    NORMAL = "NORMAL"  # a crash of the process only


class SQLiteStore(SqlStore):
    """Sessions, observations and snapshots in the SQLite file at ``path``."""

    dialect = SQLITE
    shared = False  # one server process owns the file

    def __init__(self, path: str | Path, *, synchronous: Synchronous | str = "FULL") -> None:
        try:
            self.synchronous = Synchronous(synchronous.upper())
        except ValueError:
            raise ValueError("synchronous must be FULL or NORMAL") from None
        self.path = self.location = str(path)
        super().__init__()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self.synchronous}")
            db.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            db.close()
            raise
        return db

    def _close_connection(self, db: Db) -> None:
        with contextlib.suppress(sqlite3.Error):
            db.raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.raw.close()
