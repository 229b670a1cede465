"""The opponent-model store's operations, in SQL that both backends run (SQLite, PostgreSQL).

Each operation runs on the writer thread (``storage_writer.py``: one connection, group commit, a
write's future resolved once it is committed), written once with ``?`` placeholders; a backend
gives its connection, its schema and its ``Dialect``. The tables:

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
- ``populations(owner, game_key, version, created_unix_ms, state)``: an owner's fitted
  population priors of a game (``server/populations.py``), versions 1, 2, ... per (owner, game),
  never changed once written (a session records the version it started from); ``state`` is
  ``modeling/population.py``'s bytes. Gained by earlier stores as ``solved_strategies`` was.
- ``population_members(owner, game_key, session_id, counts)``: what the opponents of an owner's
  deleted session were seen to do (their action counts, no hands; ``server/populations.py``),
  kept when the owner has a population of its game so that later fits still count them. Gained
  by earlier stores as ``solved_strategies`` was.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import Future

from oppmodel.modeling.errors import ResourceExhaustedError
from oppmodel.server.storage import ObservationRow, SessionRow, SnapshotRow, StoredSession
from oppmodel.server.storage_writer import Db, SqlWriter, append_at_version, stored_count

_LAST_SEQUENCE = 2**63 - 1  # above every sequence number (a signed 64-bit column)

# The tables of both backends, in ``Dialect.schema``'s words for what differs (SQLite's text is
# the one every earlier release wrote).
SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_unix_ms {big_integer} NOT NULL,
    spec TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS observations (
    session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    sequence {big_integer} NOT NULL,
    position INTEGER NOT NULL,
    history TEXT NOT NULL,
    cards TEXT NOT NULL,
    PRIMARY KEY (session_id, sequence)
){keyed_table};
CREATE TABLE IF NOT EXISTS snapshots (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
    hands {big_integer} NOT NULL,
    state {binary} NOT NULL
);
CREATE TABLE IF NOT EXISTS solved_strategies (
    game_key TEXT PRIMARY KEY,
    strategy TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS populations (
    owner TEXT NOT NULL,
    game_key TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_unix_ms {big_integer} NOT NULL,
    state {binary} NOT NULL,
    PRIMARY KEY (owner, game_key, version)
);
CREATE TABLE IF NOT EXISTS population_members (
    owner TEXT NOT NULL,
    game_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    counts {binary} NOT NULL,
    PRIMARY KEY (owner, game_key, session_id)
);
"""


class SqlStore(SqlWriter):
    """A store of sessions, observations and snapshots over one SQL connection; every method is
    thread-safe (``storage.SessionStore``).

    Methods ending in ``_async`` queue the operation and return a future (a write's resolves once
    it is committed); the others block until it is done. ``run``/``submit`` run any operation
    on the writer thread: for other session kinds that keep their own tables in the same database
    (``server/perfect_info_store.py``).
    """

    shared: bool  # whether other processes may write the same sessions (storage.SessionStore)

    def _schema(self) -> str:
        return self.dialect.schema(SCHEMA)

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

    def load_observations(
        self, session_id: str, *, after: int = 0, upto: int | None = None
    ) -> list[ObservationRow]:
        """The observations of a session with ``after`` < sequence <= ``upto`` (None: the
        last), in sequence order."""
        return self.load_observations_async(session_id, after=after, upto=upto).result()

    def load_observations_async(
        self, session_id: str, *, after: int = 0, upto: int | None = None
    ) -> Future[list[ObservationRow]]:
        """Queue ``load_observations``."""
        return self._submit(lambda db: _observations(db, session_id, after, upto))

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

    def save_population_async(self, owner: str, game_key: str, state: bytes) -> Future[int]:
        """Queue storing a new version of an owner's population of a game; resolves to its
        version (the next after the stored ones, numbered under a lock: concurrent fits, in
        any process, get consecutive versions)."""

        def op(db: Db) -> int:
            db.lock(f"oppmodel.populations.{owner}.{game_key}")
            (latest,) = db.execute(
                "SELECT COALESCE(MAX(version), 0) FROM populations"
                " WHERE owner = ? AND game_key = ?",
                (owner, game_key),
            ).fetchone()
            db.execute(
                "INSERT INTO populations VALUES (?, ?, ?, ?, ?)",
                (owner, game_key, latest + 1, int(time.time() * 1000), state),
            )
            return int(latest) + 1

        return self._submit(op, write=True)

    def load_population_async(
        self, owner: str, game_key: str, version: int | None = None
    ) -> Future[tuple[int, bytes] | None]:
        """Queue reading an owner's population of a game, (version, state): ``version``'s, or
        the latest when None; None if there is none."""

        def op(db: Db) -> tuple[int, bytes] | None:
            where = "owner = ? AND game_key = ?"
            args: tuple[object, ...] = (owner, game_key)
            if version is not None:
                where, args = f"{where} AND version = ?", (*args, version)
            r = db.execute(
                f"SELECT version, state FROM populations WHERE {where}"
                " ORDER BY version DESC LIMIT 1",
                args,
            ).fetchone()
            return None if r is None else (int(r[0]), bytes(r[1]))

        return self._submit(op)

    def save_population_member_async(
        self, owner: str, game_key: str, session_id: str, counts: bytes
    ) -> Future[None]:
        """Queue keeping a deleted session's opponent counts in its owner's population of a
        game (a second save of the same session replaces the first)."""

        def op(db: Db) -> None:
            db.execute(
                "INSERT INTO population_members VALUES (?, ?, ?, ?)"
                " ON CONFLICT (owner, game_key, session_id) DO UPDATE SET counts = excluded.counts",
                (owner, game_key, session_id, counts),
            )

        return self._submit(op, write=True)

    def load_population_members_async(
        self, owner: str, game_key: str
    ) -> Future[list[tuple[str, bytes]]]:
        """Queue reading the kept (session_id, counts) of an owner's population of a game."""

        def op(db: Db) -> list[tuple[str, bytes]]:
            rows = db.execute(
                "SELECT session_id, counts FROM population_members"
                " WHERE owner = ? AND game_key = ? ORDER BY session_id",
                (owner, game_key),
            ).fetchall()
            return [(str(r[0]), bytes(r[1])) for r in rows]

        return self._submit(op)


def _session_row(db: Db, session_id: str, *, lock: str = "") -> SessionRow | None:
    r = db.execute(f"SELECT * FROM sessions WHERE session_id = ?{lock}", (session_id,)).fetchone()
    return None if r is None else SessionRow(r[0], r[1], r[2], json.loads(r[3]))


def _observation_row(r: tuple) -> ObservationRow:
    return ObservationRow(r[0], r[1], r[2], tuple(json.loads(r[3])))


def _observations(
    db: Db, session_id: str, after: int, upto: int | None = None
) -> list[ObservationRow]:
    rows = db.execute(
        "SELECT sequence, position, history, cards FROM observations"
        " WHERE session_id = ? AND sequence > ? AND sequence <= ? ORDER BY sequence",
        (session_id, after, _LAST_SEQUENCE if upto is None else upto),
    ).fetchall()
    return [_observation_row(r) for r in rows]
