"""The service stores snapshots as it goes; a reload restores the latest, replays only the tail."""

from __future__ import annotations

import asyncio
import itertools
import logging
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from mbbr_support import POSTERIORS_AND_PRIORS
from service_support import CompiledKuhn, connected, kuhn_library, random_observations

from oppmodel.modeling.errors import FailedPreconditionError
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.server.metrics import Metrics
from oppmodel.server.session_spec import Limits, SessionSpec
from oppmodel.server.sessions import SessionManager
from oppmodel.server.storage_sqlite import SQLiteStore


def _library(config: MBBRConfig, hands, n: int = 3) -> CompiledKuhn:
    return kuhn_library(config, hands, n)


async def _observe_then_reload(db: Path, spec: SessionSpec, hands, limits: Limits, batch: int):
    """Observe ``hands`` in batches, stop, then load the session in a fresh manager."""
    with ThreadPoolExecutor(1) as executor:
        store = SQLiteStore(db)
        manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=limits)
        sid = (await manager.create("", spec)).session_id
        session = await manager.get("", sid)
        items = list(enumerate(hands, start=1))
        for i in range(0, len(items), batch):
            _, error = await manager.observe(session, items[i : i + batch])
            assert error is None
        live = session.host.model.snapshot()
        await manager.drain()
        store.close()

        store = SQLiteStore(db)
        manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=limits)
        reloaded = await manager.get("", sid)
        store.close()
    return live, reloaded


@pytest.mark.parametrize(("posterior", "prior"), POSTERIORS_AND_PRIORS)
def test_reload_restores_the_snapshot_and_replays_the_tail_only(tmp_path, caplog, posterior, prior):
    config = MBBRConfig(k=4, hands_default=0, seed=3, posterior=posterior, prior=prior)
    spec = SessionSpec("kuhn_poker(players=3)", 3, "us", ("a", "b"), config)
    hands = random_observations(44, seed=6, profile="uniform")
    limits = Limits(snapshot_hands=10, snapshot_seconds=1e9)
    with caplog.at_level(logging.INFO, logger="oppmodel.server"):
        live, reloaded = asyncio.run(
            _observe_then_reload(tmp_path / "db.sqlite", spec, hands, limits, batch=3)
        )
    (loaded,) = [r for r in caplog.records if r.msg == "session loaded"]
    # Batches of 3 end at 3, 6, ..., 42, 44: snapshots after 12, 24 and 36 hands.
    assert reloaded.snapshot_hands == 36
    assert (loaded.hands, loaded.replayed) == (44, 8)
    assert reloaded.host.model.snapshot() == live  # bit for bit what memory held
    assert reloaded.host.model.snapshot() == _library(config, hands).snapshot()  # and a full replay


def test_a_snapshot_that_cannot_be_used_means_a_full_replay(tmp_path):
    config = MBBRConfig(k=4, hands_default=0, seed=3)
    spec = SessionSpec("kuhn_poker(players=3)", 3, "us", ("a", "b"), config)
    hands = random_observations(30, seed=6)
    limits = Limits(snapshot_hands=10, snapshot_seconds=1e9)
    db = tmp_path / "db.sqlite"
    asyncio.run(_observe_then_reload(db, spec, hands[:20], limits, batch=10))
    with sqlite3.connect(db) as raw:
        (stored,) = raw.execute("SELECT hands FROM snapshots").fetchone()
        raw.execute("UPDATE snapshots SET state = ?", (b"damaged",))
    assert stored == 20

    async def reload():
        with ThreadPoolExecutor(1) as executor:
            store = SQLiteStore(db)
            manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=limits)
            (info,) = await manager.list("")
            session = await manager.get("", info.session_id)
            store.close()
        return session

    session = asyncio.run(reload())
    assert session.snapshot_hands == 0 and session.hands_observed == 20
    assert session.host.model.snapshot() == _library(config, hands[:20]).snapshot()


def test_resends_older_than_the_recent_window_are_checked_against_storage(tmp_path):
    hands = random_observations(20, seed=4)
    limits = Limits(recent_hands=4)
    with connected(tmp_path / "db.sqlite", limits=limits) as (client, _):
        sid = client.create_session(config=MBBRConfig(k=3)).session_id
        assert client.observe(sid, hands, first_sequence=1) == 20
        assert client.observe(sid, hands[2:4], first_sequence=3) == 20  # old resends, equal
        with pytest.raises(FailedPreconditionError, match="different content"):
            client.observe(sid, [hands[5]], first_sequence=3)
        assert client.observe(sid, hands[18:20], first_sequence=19) == 20  # recent ones
        assert client.get_session(sid).hands_observed == 20


@pytest.mark.parametrize("posterior", ["samples", "dirichlet"])
def test_through_the_server_a_restart_resumes_exactly(tmp_path, posterior):
    config = MBBRConfig(k=5, hands_default=0, seed=8, posterior=posterior)
    hands = random_observations(60, seed=9)
    limits = Limits(snapshot_hands=16)
    db = tmp_path / "db.sqlite"
    with connected(db, limits=limits) as (client, _):
        sid = client.create_session(config=config).session_id
        for i in range(0, 50, 5):
            client.observe(sid, hands[i : i + 5], first_sequence=i + 1)
    with sqlite3.connect(db) as raw:
        ((stored,),) = raw.execute("SELECT hands FROM snapshots").fetchall()
        assert 16 <= stored <= 50
    library = _library(config, hands)
    with connected(db, limits=limits) as (client, _):
        assert client.observe(sid, hands[50:], first_sequence=51) == 60
        got = client.model(sid, "opp_A", 1)
        want, ess = library.opponent_model(got.our_position, 1)
        assert got.effective_sample_size == ess
        assert np.array_equal(got.strategy.probabilities, want[kuhn_game(3).infosets(1)])


def test_a_costly_batch_is_committed_in_chunks_each_followed_by_a_due_snapshot(
    tmp_path, monkeypatch
):
    """What is committed but not in a snapshot is what a reload after a crash replays, so a
    batch that would take more than snapshot_seconds to apply goes in several commits."""
    hands = list(enumerate(random_observations(40, seed=2), start=1))
    commits: list[int] = []
    stored_snapshots: list[int] = []

    async def scenario():
        store = SQLiteStore(tmp_path / "db.sqlite")
        append, save = store.append_observations_async, store.save_snapshot_async

        def counted_append(sid, rows):
            commits.append(len(rows))
            return append(sid, rows)

        def counted_save(sid, row):
            stored_snapshots.append(row.hands)
            return save(sid, row)

        monkeypatch.setattr(store, "append_observations_async", counted_append)
        monkeypatch.setattr(store, "save_snapshot_async", counted_save)
        # every hand costs more than the budget, and the snapshots' own cost is not weighed
        limits = Limits(snapshot_seconds=1e-9, snapshot_cost_factor=0.0)
        with ThreadPoolExecutor(1) as executor:
            manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=limits)
            spec = SessionSpec("kuhn_poker(players=3)", 3, "us", ("a", "b"), MBBRConfig())
            session = await manager.get("", (await manager.create("", spec)).session_id)
            acks, error = await manager.observe(session, hands)
        store.close()
        return acks, error

    acks, error = asyncio.run(scenario())
    assert error is None and [a.hands_observed for a in acks] == list(range(1, 41))
    assert commits == [16] + [1] * 24  # unmeasured: 16 hands; then one hand's worth each
    assert stored_snapshots == list(itertools.accumulate(commits))
