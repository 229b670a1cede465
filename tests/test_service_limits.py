"""Limits that bound the server's memory, streams and idle time, each refused with
RESOURCE_EXHAUSTED naming it; memory per session does not grow with the hands seen."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import queue
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from service_support import connected, random_observations, running_server

from oppmodel.clients.client import observation_message
from oppmodel.clients.commands import serve_cmd
from oppmodel.modeling.errors import NotFoundError, ResourceExhaustedError
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.server.metrics import Metrics
from oppmodel.server.session_spec import Limits, SessionSpec
from oppmodel.server.sessions import SessionManager
from oppmodel.server.storage_sqlite import SQLiteStore
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc


def _spec(config: MBBRConfig) -> SessionSpec:
    return SessionSpec("kuhn_poker(players=3)", 3, "us", ("a", "b"), config)


def _held_count(models: dict, key: str) -> int:
    return len(models)


@pytest.mark.parametrize(
    ("posterior", "model_workers"), [("samples", 0), ("dirichlet", 0), ("dirichlet", 1)]
)
def test_live_sessions_stay_within_the_memory_budget_and_reload_when_used(
    tmp_path, posterior, model_workers
):
    """... and with a model worker, the worker holds the models of exactly the sessions kept."""
    hands = list(enumerate(random_observations(40, seed=1), start=1))
    spec = _spec(MBBRConfig(posterior=posterior))

    async def scenario():
        store = SQLiteStore(tmp_path / "db.sqlite", synchronous="NORMAL")
        with ThreadPoolExecutor(1) as executor:
            probe = SessionManager(store, executor=executor, metrics=Metrics(), limits=Limits())
            one = await probe.get("", (await probe.create("", spec)).session_id)
            await probe.observe(one, hands[:5])
            budget = int(2.5 * one.nbytes)  # room for two sessions that saw 5 hands or more
            limits = Limits(memory_bytes=budget)
            manager = SessionManager(
                store,
                executor=executor,
                metrics=Metrics(),
                limits=limits,
                model_workers=model_workers,
            )
            sids = [(await manager.create("", spec)).session_id for _ in range(8)]
            peaks, live = [], []
            for sid in sids * 2:  # round robin: sessions leave memory and reload when used
                session = await manager.get("", sid)
                await manager.observe(session, hands[: session.hands_observed + 5])
                peaks.append(manager.cache.total_bytes)
                live.append(len(manager.cache))
            counts = [(await manager.get("", sid)).hands_observed for sid in sids]
            if model_workers:
                host = (await manager.get("", sids[-1])).host
                held = await host.worker.call(_held_count, "")
                assert held == len(manager.cache)
            await manager.close()
        store.close()
        return budget, peaks, live, counts

    budget, peaks, live, counts = asyncio.run(scenario())
    assert max(peaks) <= budget
    assert max(live[8:]) <= 2  # once every session has seen hands, two fit
    assert counts == [10] * 8  # every evicted session came back with everything it had


def test_a_session_that_alone_exceeds_the_memory_budget_is_refused_and_not_stored(tmp_path):
    limits = Limits(memory_bytes=1 << 20)
    with connected(tmp_path / "db.sqlite", limits=limits) as (client, _):
        client.create_session(config=MBBRConfig(k=10))  # small: fits
        with pytest.raises(ResourceExhaustedError, match="--memory-mb"):
            client.create_session(config=MBBRConfig(k=200, posterior="samples"))  # 200 x 200 x 3
        assert len(client.list_sessions()) == 1


def test_memory_of_a_session_does_not_grow_with_the_hands_it_has_seen(tmp_path):
    """Past the bounded caches (one entry per distinct hand of the game), thousands more hands
    add nothing: only the last Limits.recent_hands are kept to compare resends."""
    distinct = random_observations(60, seed=3, profile="uniform")
    stream = [distinct[i % 60] for i in range(9000)]
    items = list(enumerate(stream, start=1))

    async def scenario():
        store = SQLiteStore(tmp_path / "db.sqlite", synchronous="NORMAL")
        with ThreadPoolExecutor(1) as executor:
            limits = Limits(snapshot_hands=10**9, snapshot_seconds=1e9)
            manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=limits)
            sid = (await manager.create("", _spec(MBBRConfig(posterior="dirichlet")))).session_id
            session = await manager.get("", sid)
            tracemalloc.start()
            for start in range(0, len(items), 200):
                if start == 3000:  # caches full, every structure at its working size
                    estimates = [session.nbytes]
                    gc.collect()
                    before = tracemalloc.get_traced_memory()[0]
                await manager.observe(session, items[start : start + 200])
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
            tracemalloc.stop()
            estimates.append(session.nbytes)
        store.close()
        return estimates, grown, len(session.recent)

    estimates, grown, recent = asyncio.run(scenario())
    assert estimates[0] == estimates[1]
    assert recent == Limits().recent_hands
    assert grown < 30_000  # 6,000 more hands at the old ~280 bytes each would be 1.7 MB


def _requests(sid: str, hands, first: int):
    return [
        pb.ObserveRequest(session_id=sid, observation=observation_message(first + i, obs))
        for i, obs in enumerate(hands)
    ]


def _open_stream(stub, sid: str, hands, first: int):
    """A stream that sent ``hands`` and stays open: (request queue, response iterator)."""
    requests: queue.SimpleQueue = queue.SimpleQueue()
    for request in _requests(sid, hands, first):
        requests.put(request)
    responses = stub.Observe(iter(requests.get, None), timeout=20)
    for _ in hands:
        next(responses)
    return requests, responses


@contextlib.contextmanager
def _server_and_stream(tmp_path, hand, *, idle_seconds: float):
    """(client, session id, stream) of a server with that idle limit: an Observe stream of a new
    session that carried ``hand`` and stays open (its request queue and response iterator)."""
    limits = Limits(stream_idle_seconds=idle_seconds)
    with connected(tmp_path / "db.sqlite", limits=limits) as (client, port):
        sid = client.create_session().session_id
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.OpponentModelServiceStub(channel)
            yield client, sid, _open_stream(stub, sid, [hand], 1)


def _ends_idle(responses, *, after: float, details: str) -> None:
    """The stream's next answer is its end for idleness, ``after`` seconds from now or later."""
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as info:
        next(responses)
    assert after < time.monotonic() - started < 5
    assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert details in info.value.details()


def _close(stream) -> None:
    requests, responses = stream
    requests.put(None)
    list(responses)


def test_a_lock_taken_through_an_evicted_copy_holds_the_current_one_and_is_always_released(
    tmp_path,
):
    hands = list(enumerate(random_observations(3, seed=1), start=1))

    async def scenario():
        store = SQLiteStore(tmp_path / "db.sqlite", synchronous="NORMAL")
        with ThreadPoolExecutor(1) as executor:
            manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=Limits())
            sid = (await manager.create("", _spec(MBBRConfig()))).session_id
            old = await manager.get("", sid)
            await manager.observe(old, hands)
            manager.cache.forget(old)  # evicted while a caller still holds it
            async with manager.locked(old) as current:
                assert current is not old and current.hands_observed == 3
                assert current.lock.locked() and not old.lock.locked()
            assert not current.lock.locked()
            async with manager.locked(current, write=False) as reader:
                assert reader is current
                assert current.model_lock.locked() and not current.lock.locked()
            assert not current.model_lock.locked()
            with pytest.raises(ZeroDivisionError):
                async with manager.locked(current):
                    1 / 0  # noqa: B018
            assert not current.lock.locked()
            await manager.delete("", sid)
            with pytest.raises(NotFoundError, match=sid):
                async with manager.locked(current):
                    pytest.fail("entered a deleted session")
            assert not current.lock.locked()
        store.close()

    asyncio.run(scenario())


def test_observe_streams_beyond_the_cap_are_refused_naming_the_limit(tmp_path):
    hands = random_observations(1, seed=2)
    with connected(tmp_path / "db.sqlite", limits=Limits(max_streams=2)) as (client, port):
        sids = [client.create_session().session_id for _ in range(3)]
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.OpponentModelServiceStub(channel)
            streams = [_open_stream(stub, sid, hands, 1) for sid in sids[:2]]
            with pytest.raises(grpc.RpcError) as info:
                list(stub.Observe(iter(_requests(sids[2], hands, 1)), timeout=10))
            assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "--max-streams" in info.value.details()
            _close(streams[0])  # one stream ends: its slot is free again
            acks = list(stub.Observe(iter(_requests(sids[2], hands, 1)), timeout=10))
            assert [a.hands_observed for a in acks] == [1]
            _close(streams[1])


def test_an_idle_stream_is_closed_naming_the_limit_and_the_client_carries_on(tmp_path):
    hands = random_observations(3, seed=2)
    with _server_and_stream(tmp_path, hands[0], idle_seconds=0.3) as (client, sid, raw):
        requests, responses = raw
        _ends_idle(responses, after=0.25, details="--stream-idle-seconds")
        requests.put(None)
        with client.observation_stream(sid, first_sequence=2) as stream:
            assert stream.send(hands[1]) == 2
            time.sleep(0.6)  # the server closes the stream meanwhile
            assert stream.send(hands[2]) == 3  # reopened and sent, nothing lost
        assert client.get_session(sid).hands_observed == 3


def test_a_stream_that_keeps_carrying_outlives_the_idle_limit_and_closes_once_idle(tmp_path):
    # One idle timer per stream, re-armed at each wait: requests 0.25 s apart keep a stream with
    # a 1 s limit open for 2 s; the wait after the last one ends it, timed from that wait.
    hands = random_observations(8, seed=3)
    with _server_and_stream(tmp_path, hands[0], idle_seconds=1.0) as (client, sid, raw):
        requests, responses = raw
        for request in _requests(sid, hands[1:], 2):
            time.sleep(0.25)
            requests.put(request)
            assert next(responses).sequence == request.observation.sequence
        _ends_idle(responses, after=0.9, details="nothing arrived for 1 s")
        requests.put(None)
        assert client.get_session(sid).hands_observed == 8


def test_an_oversized_observe_request_is_refused_and_changes_nothing(tmp_path):
    hands = random_observations(1, seed=2)
    with connected(tmp_path / "db.sqlite") as (client, port):
        sid = client.create_session().session_id
        (request,) = _requests(sid, hands, 1)
        request.observation.history += " " * Limits().max_observe_request_bytes
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.OpponentModelServiceStub(channel)
            with pytest.raises(grpc.RpcError) as info:
                list(stub.Observe(iter([request]), timeout=10))
        assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "at most 4096" in info.value.details()
        assert client.get_session(sid).hands_observed == 0


def test_calls_beyond_max_rpcs_are_refused(tmp_path):
    hands = random_observations(1, seed=2)
    with connected(tmp_path / "db.sqlite", max_rpcs=2) as (client, port):
        sids = [client.create_session().session_id for _ in range(2)]
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.OpponentModelServiceStub(channel)
            streams = [_open_stream(stub, sid, hands, 1) for sid in sids]
            with pytest.raises(grpc.RpcError) as info:
                stub.GetSession(pb.GetSessionRequest(session_id=sids[0]), timeout=10)
            assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            for stream in streams:
                _close(stream)
            assert stub.GetSession(pb.GetSessionRequest(session_id=sids[0]), timeout=10)


def test_serve_flags_set_the_limits(tmp_path):
    import argparse

    parser = argparse.ArgumentParser()
    serve_cmd.register(parser.add_subparsers())
    args = parser.parse_args(
        ["serve", "--db", "x", "--memory-mb", "64", "--max-streams", "7",
         "--stream-idle-seconds", "1.5", "--max-rpcs", "9"]
    )  # fmt: skip
    assert (args.memory_mb, args.max_streams, args.stream_idle_seconds, args.max_rpcs) == (
        64, 7, 1.5, 9,
    )  # fmt: skip
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["serve", "--db", "x", "--stream-idle-seconds", "0"])
    assert info.value.code == 2


def test_a_burst_of_idle_streams_each_ends_with_a_named_limit(tmp_path):
    """2,000 Observe streams opened at once and left idle: each is refused (--max-streams) or
    closed for idleness (--stream-idle-seconds), by name. gRPC's own queue of calls the server
    had not yet taken used to cancel some of them first (CANCELLED, details "CANCELLED")."""
    count = 2000

    async def burst(port: int) -> collections.Counter:
        release = asyncio.Event()

        async def nothing():  # a stream that never sends
            await release.wait()
            yield pb.ObserveRequest()

        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.OpponentModelServiceStub(channel)
            calls = [stub.Observe(nothing(), timeout=300) for _ in range(count)]
            ends = await asyncio.gather(*(_end_of(call) for call in calls))
            release.set()
        return collections.Counter(ends)

    limits = Limits(max_streams=256, stream_idle_seconds=0.5)
    with running_server(tmp_path / "db.sqlite", limits=limits) as port:
        ends = asyncio.run(burst(port))
    assert sum(ends.values()) == count
    assert set(ends) <= {
        ("RESOURCE_EXHAUSTED", "--max-streams"),
        ("RESOURCE_EXHAUSTED", "--stream-idle-seconds"),
    }, ends


async def _end_of(call: grpc.aio.StreamStreamCall) -> tuple[str, str]:
    """(status code, the flag its details name or the details) of a finished call."""
    code, details = await call.code(), await call.details()
    named = [flag for flag in ("--max-streams", "--stream-idle-seconds") if flag in details]
    return code.name, named[0] if named else details
