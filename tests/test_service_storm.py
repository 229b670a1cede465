"""Faults against a real server in its own process: a storm of calls cancelled by 1-200 ms
deadlines under load, and kill -9 at random moments; the writer lives, memory equals the
database, SIGTERM stops the server within 5 s, and no acknowledged hand is ever lost."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
import threading
import time
import urllib.request
from pathlib import Path

import grpc
import numpy as np
from service_support import random_observations

from oppmodel.clients.client import OpponentModelClient, observation_message
from oppmodel.clients.commands import serve_cmd
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import HandObservation
from oppmodel.server.app import free_ports
from oppmodel.server.errors import INTERNAL_MESSAGE
from oppmodel.server.session_models import build_model
from oppmodel.server.session_spec import SessionSpec
from oppmodel.server.storage import ObservationRow
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc
from oppmodel.v1_codec import write_config

GAME = kuhn_game(3)
CONFIGS = (
    MBBRConfig(posterior="samples", k=10, hands_default=0),
    MBBRConfig(posterior="samples", k=40, hands_default=0),
    MBBRConfig(posterior="dirichlet", hands_default=0),
    MBBRConfig(posterior="dirichlet", prior="typed", hands_default=0),
)
HANDS = random_observations(400, seed=21, profile="uniform")  # every session sees these, in order


class ServerProcess:
    """``oppmodel serve`` in a child process whose log is read as it comes (a full pipe would
    stop the server)."""

    def __init__(self, db: Path, *options: str) -> None:
        self.process, self.port = serve_cmd.spawn(db, *options)
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            if line.startswith("{"):
                self.events.append(json.loads(line))

    def sigterm(self) -> float:
        """Send SIGTERM; the seconds until the process exited (status 0 asserted)."""
        start = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=30) == 0
        return time.monotonic() - start

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)

    def errors(self) -> list[dict]:
        self._reader.join(timeout=5)
        return [e for e in self.events if e.get("level") in ("ERROR", "CRITICAL")]


def _create_request(config: MBBRConfig) -> pb.CreateSessionRequest:
    """The request the Python client sends for ``config`` (the API's one codec), every field
    set: a default that changes (the prior, issue 29) reaches the storm too."""
    session = pb.SessionConfig(
        game="kuhn_poker(players=3)", our_label="us", opponent_labels=["opp_A", "opp_B"]
    )
    write_config(config, session, every_field=True)
    return pb.CreateSessionRequest(config=session)


def _observe_requests(sid: str, first: int, count: int) -> list[pb.ObserveRequest]:
    return [
        pb.ObserveRequest(session_id=sid, observation=observation_message(s, HANDS[s - 1]))
        for s in range(first, min(first + count, len(HANDS)) + 1)
    ]


async def _storm(port: int, sids: list[str], *, calls: int, seed: int) -> dict[str, int]:
    """``calls`` Observe and CreateSession calls with deadlines of 1-200 ms, 32 at a time, while
    a steady load (long deadlines) streams hands and asks for actions. Returns outcome counts."""
    rng = np.random.default_rng(seed)
    acked = dict.fromkeys(sids, 0)  # the highest acknowledgement seen per session
    outcomes: dict[str, int] = {}
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.OpponentModelServiceStub(channel)

        async def one() -> None:
            deadline = float(rng.uniform(0.001, 0.2))
            if rng.random() < 0.35:
                config = CONFIGS[int(rng.integers(len(CONFIGS)))]
                call = stub.CreateSession(_create_request(config), timeout=deadline)
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await call
            else:
                sid = sids[int(rng.integers(len(sids)))]
                call = stub.Observe(timeout=deadline)
                with contextlib.suppress(Exception):  # writing fails once the call has ended
                    for request in _observe_requests(sid, acked[sid] + 1, int(rng.integers(1, 24))):
                        await call.write(request)
                    await call.done_writing()
                with contextlib.suppress(grpc.aio.AioRpcError):
                    async for ack in call:
                        acked[sid] = max(acked[sid], ack.sequence)
            code = (await call.code()).name  # the call's status, as the server or deadline set it
            if code == "INTERNAL" and await call.details() != INTERNAL_MESSAGE:
                # grpc's client reporting its own failure to write or read a call that the
                # deadline had ended ("Internal error from Core"); the server never said it (its
                # counts of what it answered are checked too).
                code = "CLIENT_SIDE_END"
            outcomes[code] = outcomes.get(code, 0) + 1

        async def load(stop: asyncio.Event) -> None:
            sid = sids[0]
            while not stop.is_set():
                batch = _observe_requests(sid, acked[sid] + 1, 8)
                if batch:
                    async for ack in stub.Observe(iter(batch), timeout=30):
                        acked[sid] = max(acked[sid], ack.sequence)
                info_state = pb.InfoState(position=1, card=2, history="p")
                await stub.GetAction(pb.GetActionRequest(session_id=sid, info_state=info_state))

        stop = asyncio.Event()
        loads = [asyncio.create_task(load(stop)) for _ in range(2)]
        pending: set[asyncio.Task] = set()
        for _ in range(calls):
            if len(pending) >= 32:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            pending.add(asyncio.create_task(one()))
        await asyncio.wait(pending)
        stop.set()
        await asyncio.gather(*loads)
    return outcomes


def _stored(db: Path) -> dict[str, tuple[dict, list[ObservationRow]]]:
    """Every session in the database: (spec JSON, observations in order)."""
    with sqlite3.connect(db) as raw:
        specs = dict(raw.execute("SELECT session_id, spec FROM sessions").fetchall())
        rows = raw.execute(
            "SELECT session_id, sequence, position, history, cards FROM observations"
            " ORDER BY session_id, sequence"
        ).fetchall()
    out = {sid: (json.loads(spec), []) for sid, spec in specs.items()}
    for sid, sequence, position, history, cards in rows:
        out[sid][1].append(ObservationRow(sequence, position, history, tuple(json.loads(cards))))
    return out


def _assert_memory_equals_database(port: int, db: Path) -> int:
    """Every session the server holds equals a fresh replay of what the database stores: the
    same hands_observed, the same models bit for bit. Returns the number of sessions."""
    stored = _stored(db)
    with OpponentModelClient(f"127.0.0.1:{port}", timeout=30) as client:
        assert {s.session_id for s in client.list_sessions()} == set(stored)
        for sid, (spec, rows) in stored.items():
            assert [r.sequence for r in rows] == list(range(1, len(rows) + 1))
            assert [(r.position, r.history, r.cards) for r in rows] == [
                (h.position, h.history, tuple(h.cards)) for h in HANDS[: len(rows)]
            ]
            model = build_model(SessionSpec.from_json(spec))
            for row in rows:
                model.observe(HandObservation(row.position, row.history, row.cards))
            assert client.get_session(sid).hands_observed == len(rows)
            for label, offset in (("opp_A", 1), ("opp_B", 2)):
                position = (offset + 1) % 3
                got = client.model(sid, label, position)
                want, ess = model.opponent_model(got.our_position, position)
                assert got.effective_sample_size == ess
                assert np.array_equal(got.strategy.probabilities, want[GAME.infosets(position)])
    return len(stored)


def test_a_cancellation_storm_leaves_the_writer_alive_memory_equal_to_the_database(tmp_path):
    db = tmp_path / "db.sqlite"
    (metrics_port,) = free_ports()
    options = ("--grace", "3", "--snapshot-hands", "40", "--metrics-port", str(metrics_port))
    server = ServerProcess(db, *options)
    with OpponentModelClient(f"127.0.0.1:{server.port}", timeout=30) as client:
        sids = [client.create_session(config=CONFIGS[i % 4]).session_id for i in range(8)]
    started = time.monotonic()
    outcomes = asyncio.run(_storm(server.port, sids, calls=1200, seed=5))
    storm_seconds = time.monotonic() - started
    assert sum(outcomes.values()) == 1200
    assert outcomes.get("DEADLINE_EXCEEDED", 0) >= 50, outcomes  # the storm did cut calls short
    assert set(outcomes) <= {"OK", "DEADLINE_EXCEEDED", "CANCELLED", "CLIENT_SIDE_END"}, outcomes
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10)
    served = [line for line in metrics.read().decode().splitlines() if "requests_total{" in line]
    assert served and not [line for line in served if "INTERNAL" in line or "UNKNOWN" in line]
    with OpponentModelClient(f"127.0.0.1:{server.port}", timeout=30) as client:  # writer alive
        sid = client.create_session(config=CONFIGS[2]).session_id
        assert client.observe(sid, HANDS[:5], first_sequence=1) == 5
    sessions = _assert_memory_equals_database(server.port, db)
    assert server.sigterm() < 5.0
    assert server.errors() == []
    server = ServerProcess(db)  # and after a restart on the same file
    assert _assert_memory_equals_database(server.port, db) == sessions
    server.sigterm()
    print(f"storm: {outcomes} in {storm_seconds:.1f} s; {sessions} sessions checked")


def test_kill_9_at_random_moments_loses_no_acknowledged_hand_snapshots_included(tmp_path):
    db = tmp_path / "db.sqlite"
    rng = np.random.default_rng(13)
    server = ServerProcess(db, "--snapshot-hands", "30")
    with OpponentModelClient(f"127.0.0.1:{server.port}", timeout=30) as client:
        sids = [client.create_session(config=config).session_id for config in CONFIGS]
    acked = dict.fromkeys(sids, 0)
    snapshots_seen = 0
    for _ in range(4):
        stop = threading.Event()

        def feed(port: int = server.port, stop: threading.Event = stop) -> None:
            with OpponentModelClient(f"127.0.0.1:{port}", reconnect_seconds=0) as client:
                while not stop.is_set():
                    for sid in sids:
                        first = acked[sid] + 1
                        if first > len(HANDS):
                            return
                        batch = HANDS[first - 1 : first + 24]
                        try:
                            acked[sid] = client.observe(sid, batch, first_sequence=first)
                        except Exception:
                            return  # the server is gone

        feeder = threading.Thread(target=feed)
        feeder.start()
        time.sleep(float(rng.uniform(0.2, 1.5)))
        server.kill()  # no shutdown, no checkpoint, snapshots possibly half written
        stop.set()
        feeder.join(timeout=30)
        with sqlite3.connect(db) as raw:
            (stored,) = raw.execute("SELECT COUNT(*) FROM snapshots").fetchone()
        snapshots_seen = max(snapshots_seen, stored)
        server = ServerProcess(db, "--snapshot-hands", "30")
        with OpponentModelClient(f"127.0.0.1:{server.port}", timeout=30) as client:
            for sid in sids:
                held = client.get_session(sid).hands_observed
                assert held >= acked[sid]  # nothing acknowledged is lost
                acked[sid] = held
        _assert_memory_equals_database(server.port, db)
    server.sigterm()
    assert snapshots_seen > 0  # reloads went through snapshots, not only full replays
