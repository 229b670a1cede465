"""The perfect-information tables, in the server's store (either backend).

Two tables of their own (``pi_sessions``, ``pi_choices``) beside the opponent-model ones, written
through the same writer thread (``SqlStore.run``/``SqlStore.submit``), so a choice is acknowledged
only once it is committed. What is stored is the likelihood vector (as JSON, whose float repr
round-trips exactly), whichever form the client sent. As with observations, choices are appended
only at the stored version, checked under the session's row lock (``StaleSessionError``
otherwise), so processes sharing one PostgreSQL database never store a choice twice.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from oppmodel.modeling.errors import ResourceExhaustedError
from oppmodel.server.storage_sql import SqlStore
from oppmodel.server.storage_writer import Db, append_at_version, stored_count

# In ``Dialect.schema``'s words for what differs (SQLite's text is the one earlier releases wrote).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS pi_sessions (
    session_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_unix_ms {big_integer} NOT NULL,
    spec TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pi_choices (
    session_id TEXT NOT NULL REFERENCES pi_sessions(session_id) ON DELETE CASCADE,
    sequence {big_integer} NOT NULL,
    opponent INTEGER NOT NULL,
    likelihoods TEXT NOT NULL,
    PRIMARY KEY (session_id, sequence)
){keyed_table};
"""


@dataclass(frozen=True)
class PerfectInfoRow:
    """A stored perfect-information session: id, owner, creation time and spec (JSON dict)."""

    session_id: str
    owner: str
    created_unix_ms: int
    spec: dict


@dataclass(frozen=True)
class Choice:
    """A stored choice: the opponent's index and its likelihood vector (one entry per model)."""

    opponent: int
    likelihoods: tuple[float, ...]


class PerfectInfoStore:
    """The perfect-information tables, on the shared store's writer thread (blocking calls)."""

    def __init__(self, storage: SqlStore) -> None:
        self.storage = storage

        def create(db: Db) -> None:
            db.lock("oppmodel.schema")
            db.executescript(db.dialect.schema(_SCHEMA))

        storage.run(create, write=True)

    def create_session(self, row: PerfectInfoRow, *, max_sessions: int) -> None:
        """Insert a session, unless ``max_sessions`` are stored (counted under a lock every
        creation takes, in the same transaction)."""

        def op(db: Db) -> None:
            db.lock("oppmodel.pi_sessions")
            (count,) = db.execute("SELECT COUNT(*) FROM pi_sessions").fetchone()
            if count >= max_sessions:
                raise ResourceExhaustedError(
                    f"sessions: this server holds at most {max_sessions} perfect-information "
                    "sessions"
                )
            db.execute(
                "INSERT INTO pi_sessions VALUES (?, ?, ?, ?)",
                (row.session_id, row.owner, row.created_unix_ms, json.dumps(row.spec)),
            )

        self.storage.run(op, write=True)

    def get_session(self, session_id: str) -> PerfectInfoRow | None:
        """The stored session, or None."""

        def op(db: Db) -> PerfectInfoRow | None:
            r = db.execute(
                "SELECT * FROM pi_sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            return None if r is None else PerfectInfoRow(r[0], r[1], r[2], json.loads(r[3]))

        return self.storage.run(op)

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its choices."""

        def op(db: Db) -> None:
            db.execute("DELETE FROM pi_choices WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM pi_sessions WHERE session_id = ?", (session_id,))

        self.storage.run(op, write=True)

    def append_choices(
        self, session_id: str, first: int, choices: Sequence[Choice]
    ) -> Future[None]:
        """Queue choices numbered first, first + 1, ..., stored only if ``first`` follows the
        last stored one (StaleSessionError if not; NotFoundError if the session is gone); the
        future resolves once they are committed."""
        values = [
            (session_id, first + i, c.opponent, json.dumps(c.likelihoods))
            for i, c in enumerate(choices)
        ]

        def op(db: Db) -> None:
            append_at_version(
                db, session_id, first, values=values, sessions="pi_sessions", rows="pi_choices"
            )

        return self.storage.submit(op, write=True)

    def count_choices(self, session_id: str) -> Future[int]:
        """Queue reading the last stored sequence number of a session (0 if none)."""

        return self.storage.submit(lambda db: stored_count(db, "pi_choices", session_id))

    def load_choices(self, session_id: str) -> list[Choice]:
        """Every choice of a session, in sequence order."""

        def op(db: Db) -> list[Choice]:
            rows = db.execute(
                "SELECT sequence, opponent, likelihoods FROM pi_choices WHERE session_id = ?"
                " ORDER BY sequence",
                (session_id,),
            ).fetchall()
            for expected, (sequence, _o, _l) in enumerate(rows, start=1):
                if sequence != expected:  # never written so; the database was edited
                    raise RuntimeError(f"session {session_id}: stored choices have a gap")
            return [Choice(r[1], tuple(float(x) for x in json.loads(r[2]))) for r in rows]

        return self.storage.run(op)
