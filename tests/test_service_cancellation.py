"""Cancelled calls: the database writer survives them, and memory always equals the database."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from service_support import CompiledKuhn, kuhn_library, random_observations

from oppmodel.modeling.games.interface import ServedModel
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.server.metrics import Metrics
from oppmodel.server.perfect_info_manager import PerfectInfoManager
from oppmodel.server.perfect_info_spec import (
    SPADES3P,
    GibbsConfig,
    OpponentSpec,
    PerfectInfoLimits,
    PerfectInfoSpec,
)
from oppmodel.server.perfect_info_store import Choice
from oppmodel.server.session_spec import Limits, SessionSpec
from oppmodel.server.sessions import SessionManager
from oppmodel.server.storage import ObservationRow, SessionRow
from oppmodel.server.storage_sqlite import SQLiteStore
from oppmodel.server.tasks import ShieldedTasks


def test_a_change_outlives_its_cancelled_caller_and_drain_waits_for_it() -> None:
    """ShieldedTasks.run: the caller gets the change's result or error; a cancelled caller
    stops waiting while the change runs to its end (an error then reaches the loop's handler as
    never retrieved: logged, as with asyncio.shield), and drain returns only after it."""

    async def scenario() -> tuple[list[str], list[dict]]:
        unhandled: list[dict] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: unhandled.append(ctx))
        tasks, gate, steps = ShieldedTasks(), asyncio.Event(), []

        async def change(name: str, fail: bool) -> str:
            steps.append(f"{name} began")
            await gate.wait()
            steps.append(f"{name} ended")
            if fail:
                raise ValueError(name)
            return name

        callers = [asyncio.ensure_future(tasks.run(change(n, n == "b"))) for n in "ab"]
        while len(steps) < 2:
            await asyncio.sleep(0)
        for caller in callers:
            caller.cancel()
        for caller in callers:
            with pytest.raises(asyncio.CancelledError):
                await caller
        assert steps == ["a began", "b began"]
        gate.set()
        await tasks.drain()
        assert steps[2:] == ["a ended", "b ended"]
        assert await tasks.run(change("c", False)) == "c"
        with pytest.raises(ValueError, match="d"):
            await tasks.run(change("d", True))
        gc.collect()  # a task whose error nobody retrieved reports it once collected
        return steps, unhandled

    steps, unhandled = asyncio.run(scenario())
    assert len(steps) == 8
    assert [(c["message"], repr(c["exception"])) for c in unhandled] == [
        ("Task exception was never retrieved", "ValueError('b')")
    ]


def _session(i: int) -> SessionRow:
    return SessionRow(f"s{i}", "", 1000 + i, {"i": i})


def _blocked_writer(store: SQLiteStore) -> threading.Event:
    """Occupy the writer thread until the returned event is set."""
    release = threading.Event()
    started = threading.Event()

    def hold(db) -> None:
        started.set()
        release.wait(10)

    store.submit(hold)
    assert started.wait(10)
    return release


@pytest.mark.parametrize("write", [True, False])
def test_a_future_cancelled_while_queued_is_skipped_and_the_writer_lives_on(
    tmp_path: Path, write: bool
) -> None:
    store = SQLiteStore(tmp_path / "db.sqlite")
    store.create_session(_session(1))
    release = _blocked_writer(store)
    ran: list[str] = []
    cancelled = store.submit(lambda db: ran.append("cancelled"), write=write)
    row = ObservationRow(1, 0, "ppp", (0, None, None))
    cancelled_write = store.append_observation_async("s1", row)
    kept = store.submit(lambda db: ran.append("kept"), write=write)
    assert cancelled.cancel() and cancelled_write.cancel()
    release.set()
    kept.result(timeout=10)
    assert ran == ["kept"]
    assert store.load_observations("s1") == []  # the cancelled write was never run
    store.append_observation("s1", row)  # the writer still takes writes
    assert store.load_observations("s1") == [row]
    store.close()  # and still stops


def test_an_exception_of_an_operation_reaches_its_caller_only(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "db.sqlite")
    release = _blocked_writer(store)

    def boom(db) -> None:
        raise KeyError("boom")

    failing = [store.submit(boom, write=w) for w in (True, False)]
    fine = store.submit(lambda db: db.execute("SELECT 1").fetchone()[0])
    release.set()
    for future in failing:
        with pytest.raises(KeyError):
            future.result(timeout=10)
    assert fine.result(timeout=10) == 1
    store.create_session(_session(2))
    assert store.get_session("s2") == _session(2)
    store.close()


def _library_model(observations, config: MBBRConfig) -> CompiledKuhn:
    return kuhn_library(config, observations)


def _assert_same_posterior(model: ServedModel | CompiledKuhn, other: CompiledKuhn) -> None:
    assert model.hands_observed == other.hands_observed
    for p in range(3):
        for q in range(3):
            if p != q:
                a, b = model.opponent_model(p, q), other.opponent_model(p, q)
                assert np.array_equal(a[0], b[0]) and a[1] == b[1]


@pytest.mark.parametrize("posterior", ["samples", "dirichlet"])
def test_an_observe_cancelled_between_commit_and_apply_still_applies(
    tmp_path: Path, posterior: str
) -> None:
    """A query holds the model lock when the commit returns, and then the caller is cancelled:
    the hands are committed, so they must be applied too."""
    config = MBBRConfig(k=4, hands_default=0, seed=5, posterior=posterior)
    observations = random_observations(6, seed=3)

    async def scenario() -> tuple[ServedModel, int, list[ObservationRow]]:
        store = SQLiteStore(tmp_path / "db.sqlite")
        # One commit for the four hands, however slow the first two were to apply (the chunk
        # size follows the measured time per hand, which a numba warm-up under load inflates).
        limits = Limits(snapshot_seconds=1e9)
        with ThreadPoolExecutor(1) as executor:
            manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=limits)
            spec = SessionSpec("kuhn_poker(players=3)", 3, "me", ("a", "b"), config)
            info = await manager.create("", spec)
            session = await manager.get("", info.session_id)
            items = list(enumerate(observations, start=1))
            await manager.observe(session, items[:2])
            async with session.model_lock:  # a query in progress
                call = asyncio.ensure_future(manager.observe(session, items[2:]))
                deadline = time.monotonic() + 10
                while len(store.load_observations(info.session_id)) < len(items):
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.001)
                call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await manager.drain()
            stored = store.load_observations(info.session_id)
        store.close()
        return session.host.model, session.hands_observed, stored

    model, hands, stored = asyncio.run(scenario())
    assert hands == len(stored) == 6
    _assert_same_posterior(model, _library_model(observations, config))


def test_creates_cancelled_while_their_inserts_are_queued_leave_memory_equal_to_the_database(
    tmp_path: Path,
) -> None:
    async def scenario() -> tuple[list[str], list[str], SessionRow | None]:
        store = SQLiteStore(tmp_path / "db.sqlite")
        with ThreadPoolExecutor(1) as executor:
            manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=Limits())
            spec = SessionSpec("kuhn_poker(players=3)", 3, "me", ("a", "b"), MBBRConfig(k=2))
            release = _blocked_writer(store)
            calls = [asyncio.ensure_future(manager.create("", spec)) for _ in range(5)]
            await asyncio.sleep(0.05)
            for call in calls:
                call.cancel()
            release.set()
            await manager.drain()
            live = sorted(manager.cache.ids())
            stored = sorted(row.session_id for row, _ in store.list_sessions())
            info = await manager.create("", spec)  # the writer is alive
            again = store.get_session(info.session_id)
        store.close()
        return live, stored, again

    live, stored, again = asyncio.run(scenario())
    assert live == stored  # whatever was stored is in memory too, and nothing else
    assert again is not None


def test_a_perfect_info_observe_cancelled_while_its_commit_runs_still_remembers_it(
    tmp_path: Path,
) -> None:
    """The write is in the batch being committed (running, no longer cancellable) when the
    caller is cancelled: the choices are stored, so memory must hold them too."""

    async def scenario() -> tuple[int, int]:
        store = SQLiteStore(tmp_path / "db.sqlite")
        with ThreadPoolExecutor(1) as executor:
            manager = PerfectInfoManager(
                store, executor=executor, metrics=Metrics(), limits=PerfectInfoLimits()
            )
            opponents = tuple(OpponentSpec(f"o{i}", ("MT", "mOT"), (1.0, 1.0)) for i in range(2))
            spec = PerfectInfoSpec(SPADES3P, opponents, GibbsConfig(sweeps=10, burn_in=0), 1)
            info = await manager.create("", spec)
            session = await manager.get("", info.session_id)
            first = _blocked_writer(store)
            second = threading.Event()
            store.submit(lambda db: second.wait(10))  # joins the next batch with the write
            call = asyncio.ensure_future(manager.observe(session, [(1, Choice(0, (0.2, 0.8)))]))
            await asyncio.sleep(0.05)
            first.set()  # the next batch starts: the write is now running
            await asyncio.sleep(0.05)
            call.cancel()
            second.set()
            with pytest.raises(asyncio.CancelledError):
                await call
            await manager.drain()
            stored = store.run(lambda db: db.execute("SELECT COUNT(*) FROM pi_choices").fetchone())
            remembered = len(session.choices)
        store.close()
        return remembered, stored[0]

    assert asyncio.run(scenario()) == (1, 1)
