"""SQLite storage: round trips, durability across reopen, group commit, per-write isolation."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from oppmodel.modeling.errors import ResourceExhaustedError
from oppmodel.server.storage import ObservationRow, SessionRow, Storage


def _session(i: int, owner: str = "") -> SessionRow:
    return SessionRow(f"s{i}", owner, 1000 + i, {"game": "kuhn_poker(players=3)", "i": i})


def test_round_trip_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    store = Storage(path)
    store.create_session(_session(1, "alice"))
    store.create_session(_session(2, "bob"))
    rows = [ObservationRow(s, s % 3, "ppp", (s % 4, None, None)) for s in range(1, 6)]
    for row in rows:
        store.append_observation("s1", row)
    store.close()

    store = Storage(path)
    assert store.get_session("s1") == _session(1, "alice")
    assert store.get_session("nope") is None
    assert store.load_observations("s1") == rows
    assert [(r.session_id, n) for r, n in store.list_sessions()] == [("s1", 5), ("s2", 0)]
    assert [r.session_id for r, _ in store.list_sessions("bob")] == ["s2"]
    assert store.delete_session("s1") is True
    assert store.delete_session("s1") is False
    assert store.load_observations("s1") == []
    store.close()


def test_wal_mode(tmp_path: Path) -> None:
    store = Storage(tmp_path / "db.sqlite")
    store.close()
    db = sqlite3.connect(tmp_path / "db.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_failed_write_does_not_undo_its_batch(tmp_path: Path) -> None:
    store = Storage(tmp_path / "db.sqlite")
    store.create_session(_session(1))
    futures = [
        store.append_observation_async("s1", ObservationRow(1, 0, "ppp", (0, None, None))),
        store.append_observation_async("s1", ObservationRow(1, 0, "ppp", (0, None, None))),
        store.append_observation_async("s1", ObservationRow(2, 1, "ppp", (1, None, None))),
        store.append_observation_async("missing", ObservationRow(1, 0, "ppp", (0, None, None))),
    ]
    outcomes = []
    for f in futures:
        try:
            f.result()
            outcomes.append("ok")
        except sqlite3.IntegrityError:
            outcomes.append("refused")
    assert outcomes == ["ok", "refused", "ok", "refused"]
    assert [r.sequence for r in store.load_observations("s1")] == [1, 2]
    store.close()


def test_concurrent_writers_all_land(tmp_path: Path) -> None:
    store = Storage(tmp_path / "db.sqlite", synchronous="NORMAL")
    for i in range(8):
        store.create_session(_session(i))

    def write(i: int) -> None:
        for s in range(1, 51):
            store.append_observation(f"s{i}", ObservationRow(s, 0, "ppp", (s % 4, None, None)))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(n == 50 for _, n in store.list_sessions())
    store.close()


def test_bad_synchronous_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Storage(tmp_path / "x.sqlite", synchronous="OFF")


def test_session_limit_is_checked_with_the_insert(tmp_path: Path) -> None:
    store = Storage(tmp_path / "db.sqlite")
    results: list[str] = []
    lock = threading.Lock()

    def create(i: int) -> None:
        try:
            store.create_session(_session(i), max_sessions=3)
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
    assert len(store.list_sessions()) == 3
    store.close()
