"""Both storage backends: round trips, durability across reopen, group commit, per-write
isolation, limits counted with the insert, and appends only at the stored version (exactly once
across processes sharing one store). SQLite-only settings at the end."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from concurrent.futures import Future
from pathlib import Path

import pytest
from postgres_support import PostgresServer

from oppmodel.modeling.errors import (
    InvalidArgumentError,
    NotFoundError,
    ResourceExhaustedError,
    UnavailableError,
)
from oppmodel.server.app import free_ports, open_storage
from oppmodel.server.perfect_info_store import PerfectInfoStore
from oppmodel.server.storage import (
    ObservationRow,
    SessionRow,
    SnapshotRow,
    StaleSessionError,
    redacted,
    scrubbed,
)
from oppmodel.server.storage_sql import SqlStore
from oppmodel.server.storage_sqlite import SQLiteStore


def _session(i: int, owner: str = "") -> SessionRow:
    return SessionRow(f"s{i}", owner, 1_700_000_000_000 + i, {"game": "kuhn_poker", "i": i})


def _row(s: int) -> ObservationRow:
    return ObservationRow(s, s % 3, "ppp", (s % 4, None, None))


def _open(location: str) -> SqlStore:
    return open_storage(location, synchronous="NORMAL")


def _outcome(future: Future) -> str:
    try:
        future.result()
    except StaleSessionError:
        return "stale"
    except NotFoundError:
        return "not found"
    return "ok"


def test_round_trip_and_reopen(store_location: str) -> None:
    store = _open(store_location)
    store.create_session(_session(1, "alice"))
    store.create_session(_session(2, "bob"))
    rows = [_row(s) for s in range(1, 6)]
    for row in rows:
        store.append_observation("s1", row)
    assert store.save_snapshot_async("s1", SnapshotRow(3, b"\x00state\xff")).result()
    assert not store.save_snapshot_async("s1", SnapshotRow(2, b"older")).result()
    store.close()

    store = _open(store_location)
    assert store.get_session("s1") == _session(1, "alice")
    assert store.get_session("nope") is None
    assert store.load_observations("s1") == rows
    loaded = store.load_session_async("s1").result()
    assert loaded is not None
    assert loaded.snapshot == SnapshotRow(3, b"\x00state\xff")
    assert loaded.tail == rows[3:]
    assert [(r.session_id, n) for r, n in store.list_sessions()] == [("s1", 5), ("s2", 0)]
    assert [r.session_id for r, _ in store.list_sessions("bob")] == ["s2"]
    assert store.delete_session("s1", owner="bob") is False
    assert store.delete_session("s1") is True
    assert store.delete_session("s1") is False
    assert store.load_observations("s1") == []
    assert store.load_session_async("s1").result() is None
    store.close()


def test_failed_write_does_not_undo_its_batch(store_location: str) -> None:
    store = _open(store_location)
    store.create_session(_session(1))
    release = _blocked_writer(store)  # the four writes below go in one batch
    futures = [
        store.append_observation_async("s1", _row(1)),
        store.append_observation_async("s1", _row(1)),  # a resend: s1 is at 1 by now
        store.append_observation_async("s1", _row(2)),
        store.append_observation_async("missing", _row(1)),
    ]
    release.set()
    assert [_outcome(f) for f in futures] == ["ok", "stale", "ok", "not found"]
    assert store.load_observations("s1") == [_row(1), _row(2)]
    store.close()


def test_concurrent_writers_all_land(store_location: str) -> None:
    store = _open(store_location)
    for i in range(8):
        store.create_session(_session(i))

    def write(i: int) -> None:
        for s in range(1, 51):
            store.append_observation(f"s{i}", _row(s))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(n == 50 for _, n in store.list_sessions())
    store.close()


def test_session_limit_is_checked_with_the_insert_across_stores(store_location: str) -> None:
    stores = [_open(store_location) for _ in range(2)]  # two connections, as two processes
    results: list[str] = []
    lock = threading.Lock()

    def create(i: int) -> None:
        try:
            stores[i % 2].create_session(_session(i), max_sessions=3)
            outcome = "ok"
        except ResourceExhaustedError:
            outcome = "full"
        with lock:
            results.append(outcome)

    workers = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(results) == ["full"] * 5 + ["ok"] * 3
    assert len(stores[0].list_sessions()) == 3
    for store in stores:
        store.close()


def test_appends_only_at_the_stored_version_across_stores(store_location: str) -> None:
    """Two stores on one database (as two server processes), each appending from its own count
    of the hands: every hand is stored exactly once, and a writer that is behind is told so
    (StaleSessionError carrying the stored count) instead of storing anything."""
    stores = [_open(store_location) for _ in range(2)]
    stores[0].create_session(_session(1))
    known = [0, 0]  # what each "process" believes is stored
    refused = 0
    results: list[str] = []

    def writer(w: int) -> None:
        nonlocal refused
        while known[w] < 200:
            try:
                stores[w].append_observation("s1", _row(known[w] + 1))
                known[w] += 1
            except StaleSessionError as exc:
                results.append("stale")
                known[w] = exc.stored  # a real process reloads here
                refused += 1
            except Exception as exc:  # a duplicate key, say: the version was not checked
                results.append(repr(exc))
                return

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert stores[1].load_observations("s1") == [_row(s) for s in range(1, 201)]
    assert set(results) <= {"stale"} and refused == len(results)
    for store in stores:
        store.close()


def test_an_operation_may_not_escape_its_savepoint(store_location: str) -> None:
    """An operation's own SQL error rolls back that operation only (both backends)."""
    store = _open(store_location)
    store.create_session(_session(1))
    release = _blocked_writer(store)
    bad = store.submit(lambda db: db.execute("INSERT INTO no_such_table VALUES (1)"), write=True)
    good = store.append_observation_async("s1", _row(1))
    release.set()
    with pytest.raises(Exception, match="no_such_table"):
        bad.result()
    good.result()
    assert store.load_observations("s1") == [_row(1)]
    store.close()


def test_a_lost_connection_is_made_again_and_a_missing_database_is_unavailable(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    import psycopg

    store = _open(postgres_url)
    store.create_session(_session(1))
    store.append_observation("s1", _row(1))
    database = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:  # as a restart would
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (database,),
        )
    store.append_observation("s1", _row(2))  # run again on a new connection
    assert store.load_observations("s1") == [_row(1), _row(2)]
    postgres_server.drop_database(postgres_url)
    with pytest.raises(UnavailableError) as caught:
        store.get_session("s1")
    # what a client is told: nothing about where the store is
    assert str(caught.value) == "store unavailable; send again"
    store.close()


def test_a_session_id_with_a_nul_names_no_session_on_every_store(store_location: str) -> None:
    """PostgreSQL's text cannot hold NUL (its driver refused the parameter: every RPC naming
    such an id was INTERNAL); like SQLite, every store finds no such session."""
    store = _open(store_location)
    store.create_session(_session(1))
    store.append_observation("s1", _row(1))
    for sid in ("s1\x00", "\x00", "s\x001"):
        assert store.get_session(sid) is None
        assert store.load_session_async(sid).result() is None
        assert store.observation_count_async(sid).result() == 0
        assert store.load_observations(sid) == []
        assert store.load_observation_async(sid, 1).result() is None
        assert store.delete_session(sid) is False
        assert store.delete_session(sid, owner="a\x00") is False
        assert store.truncate_observations_async(sid, keep=0).result() == 0
        assert store.save_snapshot_async(sid, SnapshotRow(1, b"x")).result() is False
        with pytest.raises(NotFoundError, match="session_id"):
            store.append_observation(sid, _row(1))
    assert store.list_sessions("\x00") == []
    assert store.load_observations("s1") == [_row(1)]  # the writer serves on
    store.close()


def _blocked_writer(store: SqlStore) -> threading.Event:
    """Occupy the writer thread until the returned event is set (so later writes batch)."""
    release, started = threading.Event(), threading.Event()

    def hold(db: object) -> None:
        started.set()
        release.wait(10)

    store.submit(hold)
    assert started.wait(10)
    return release


def _sqlite_columns(path: Path | str) -> dict[str, list[tuple[str, str, bool, int]]]:
    """Each table's columns in order: name, declared type, NOT NULL, place in the primary key."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            t: [(c[1], c[2], bool(c[3]), c[5]) for c in db.execute(f"PRAGMA table_info({t})")]
            for t in tables
        }
    finally:
        db.close()


def _new_store_tables(location: str) -> None:
    """Open a new store at ``location`` with every table the server keeps (the perfect-information
    ones too)."""
    store = _open(location)
    PerfectInfoStore(store)
    store.close()


def test_a_new_sqlite_file_has_the_tables_an_earlier_release_wrote(tmp_path: Path) -> None:
    """One schema for both backends: in SQLite's words it is the text every earlier release wrote
    (a stored file of one), so an old file and a new one are laid out alike."""
    _new_store_tables(str(tmp_path / "db.sqlite"))
    # a copy: SQLite opens a WAL file, read-only too, with -wal and -shm files beside it, which
    # it leaves there (test_self_contained's checksums then find them in tests/data)
    stored = tmp_path / "old.sqlite"
    shutil.copyfile(
        Path(__file__).parent / "data" / "service" / "kuhn3p-compiled-4af37df.sqlite", stored
    )
    old = sqlite3.connect(f"file:{stored}?mode=ro", uri=True)
    new = sqlite3.connect(tmp_path / "db.sqlite")
    sql = "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
    written = {name: " ".join(text.split()) for name, text in old.execute(sql)}
    made = {name: " ".join(text.split()) for name, text in new.execute(sql)}
    old.close()
    new.close()
    assert written  # the stored file has tables
    assert {name: made[name] for name in written} == written
    assert set(made) - set(written) == {"populations", "population_members"}  # added since


def test_both_backends_lay_out_the_same_tables(
    tmp_path: Path, postgres_server: PostgresServer, postgres_url: str
) -> None:
    """PostgreSQL's tables have SQLite's columns in the same order, NOT NULL and primary keys,
    in the types that hold SQLite's values (integer or bigint for INTEGER, bytea for BLOB)."""
    import psycopg

    _new_store_tables(str(tmp_path / "db.sqlite"))
    _new_store_tables(postgres_url)
    lite = _sqlite_columns(tmp_path / "db.sqlite")
    with psycopg.connect(postgres_url) as db:
        columns = db.execute(
            "SELECT c.table_name, c.column_name, c.data_type, c.is_nullable = 'NO',"
            " COALESCE(k.ordinal_position, 0)"
            " FROM information_schema.columns c LEFT JOIN information_schema.key_column_usage k"
            " ON k.table_name = c.table_name AND k.column_name = c.column_name"
            " AND k.constraint_name LIKE '%_pkey'"
            " WHERE c.table_schema = 'public' ORDER BY c.table_name, c.ordinal_position"
        ).fetchall()
    postgres: dict[str, list[tuple[str, str, bool, int]]] = {}
    for table, name, kind, not_null, key in columns:
        postgres.setdefault(table, []).append((name, kind, not_null, key))
    assert set(postgres) == set(lite)
    types = {"TEXT": {"text"}, "INTEGER": {"integer", "bigint"}, "BLOB": {"bytea"}}
    for table, cols in lite.items():
        assert [c[0] for c in postgres[table]] == [c[0] for c in cols], table
        for (name, kind, not_null, key), (_, pg_kind, pg_not_null, pg_key) in zip(
            cols, postgres[table], strict=True
        ):
            assert pg_kind in types[kind], (table, name, pg_kind)
            # SQLite lets a primary key's TEXT hold NULL unless NOT NULL is said; PostgreSQL never
            assert (pg_not_null, pg_key) == (not_null or key > 0, key), (table, name)


# -- SQLite only -----------------------------------------------------------------------------------
def test_wal_mode(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "db.sqlite")
    store.close()
    db = sqlite3.connect(tmp_path / "db.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_bad_synchronous_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SQLiteStore(tmp_path / "x.sqlite", synchronous="OFF")


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://someone:s3cret@127.0.0.1:{port}/nothing",
        "postgresql://someone@127.0.0.1:{port}/nothing?password=s3cret&connect_timeout=5",
        "postgres://someone@127.0.0.1:{port}/nothing?sslpassword=s3cret",
    ],
)
def test_an_unreachable_postgres_is_refused_naming_it_without_the_password(url: str) -> None:
    url = url.format(port=free_ports(1)[0])
    with pytest.raises(InvalidArgumentError, match=r"someone@127\.0\.0\.1") as caught:
        open_storage(url, synchronous="FULL")
    assert "s3cret" not in str(caught.value)
    assert caught.value.field == "store"


def test_a_libpq_connection_string_is_a_postgres_store_never_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``host=... password=...`` was taken for a SQLite file's path: the server ran on a new
    file named after the password, and printed it."""
    monkeypatch.chdir(tmp_path)
    port = free_ports(1)[0]
    conninfo = f"host=127.0.0.1 port={port} user=someone password='s3 cret' dbname=nothing"
    with pytest.raises(InvalidArgumentError, match=rf"host=127\.0\.0\.1 port={port}") as caught:
        open_storage(conninfo, synchronous="FULL")
    assert "s3" not in str(caught.value) and "cret" not in str(caught.value)
    assert caught.value.field == "store"
    assert list(tmp_path.iterdir()) == []


def test_a_url_of_another_scheme_is_refused_as_unsupported(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="mysql:// is not a supported store") as caught:
        open_storage("mysql://someone:s3cret@127.0.0.1/db", synchronous="FULL")
    assert caught.value.field == "store"
    assert "s3cret" not in str(caught.value)
    with pytest.raises(InvalidArgumentError, match="no folder") as caught:
        open_storage(str(tmp_path / "missing" / "db.sqlite"), synchronous="FULL")
    assert caught.value.field == "store"


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        ("postgresql://u:pw@db.example:5432/x", "postgresql://u@db.example:5432/x"),
        ("postgresql://:pw@db.example/x", "postgresql://db.example/x"),
        (
            "postgresql://u:p%40w@h/x?password=pw&sslmode=require",
            "postgresql://u@h/x?sslmode=require",
        ),
        ("postgres://u@h/x?PassWord=pw", "postgres://u@h/x"),
        ("postgresql://u:p/w@h/x", "postgresql://u@h/x"),
        ("host=h password=pw dbname=x", "host=h dbname=x"),
        ("host=h password='p w' sslpassword=pw dbname=x", "host=h dbname=x"),
        ("dbname=x password=p w", "dbname=x"),  # libpq refuses it; "w" may be the password's
        ("stores/oppmodel.sqlite", "stores/oppmodel.sqlite"),
    ],
)
def test_a_store_is_shown_without_its_password(location: str, shown: str) -> None:
    assert redacted(location) == shown
    assert scrubbed(f"said {location!r}", location).count("pw") == 0
