"""Service throughput and latency, against the in-process library and a bare gRPC echo ceiling.

Usage: ``python benchmarks/service.py [--game kuhn3p|leduc3p|leduc2p] [--quick] [--json]
[--posterior samples --k 10] [--synchronous FULL] [--store postgresql://...]``

What is measured (the server always runs in its own process; the load runs here on grpc.aio):

1. Saturated throughput: 1, 8 and 64 sessions each stream their hands on one Observe stream
   (pipelined: the client writes ahead, the server acknowledges each once committed and applied);
   hands/s = hands acknowledged / wall time.
2. Action latency under a fixed open-loop load: hands arrive on a fixed schedule (``--rate``
   hands/s spread over 64 sessions, default 500); each hand is one GetAction followed by its
   observation on the session's stream. Latency is measured from the scheduled arrival (so a slow
   server cannot hide queueing), p50 and p99 reported, with what the load cost the server (on
   Linux): CPU ms per hand, and the share of the time its event loop ran and waited for a CPU.
   One loop serves every call, so once it is busy most of the time the p99 is queueing.
3. Peers measured in the same run: the in-process library (the session's model, ``observe`` on the
   same hands at the same k: the ratio says what the service costs) and a bare grpc.aio echo
   service in its own process with the same message pattern (a bidirectional stream per session
   with messages of the same size, and unary calls): the ceiling for Python gRPC on this machine.

The server stores its sessions in a fresh SQLite file, or with ``--store URL`` in that PostgreSQL
database (an empty one: the benchmark's sessions stay in it).

Sessions use the default MBBR settings (the Dirichlet posterior); ``--posterior samples --k K``
measures the paper's k samples instead. Goals on the defaults: >= 1,000 hands/s with 64 sessions;
at 500 hands/s offered over 64 sessions, p99 action latency < 10 ms.

``--game`` (default kuhn3p: 3-player Kuhn, "kuhn_poker(players=3)" sessions) takes a bundled ACPC
limit game instead: sessions of that game (its bundled solved strategy as prior and default),
hands of its bundled strategy's self-play observed as MATCHSTATE lines, GetAction asked with the
MATCHSTATE line of the seat's first decision; the library peer is the limit model. Leduc's goals
(issue 16): >= 1,000 hands/s with 64 sessions, and p99 < 10 ms at 200 hands/s offered (the
default ``--rate`` for a limit game). Every figure is the median
over ``--repeats`` runs (latency runs of the service and the echo alternate). The machine is
shared: read the service figures against the echo figures of the same run.

``--ray --replicas 1,2 --store postgresql://...`` measures ``oppmodel serve --ray`` instead (issue
18): saturated observed hands/s with ``--sessions`` sessions each sending its hands in ObserveBatch
calls of ``--batch`` hands (closed loop, every session at once, routed by session id), for the
single-process server on the same store and for each replica count (each a fresh
``oppmodel serve --ray`` with its own local Ray instance), all up at once and measured in turn
``--repeats`` times, so a change of the machine's load meets each alike; the ratios of the medians
say what Ray costs (one replica / single process) and what a replica adds (two / one). Goals
on this 2-core machine (the load generator shares the cores): two replicas >= 1.3x one, one >=
0.5x the single process. Each run is appended to ``--journal`` (JSON lines) as it is made.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import grpc
import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from oppmodel.clients.client import Hand, OpponentModelClient, observation_message  # noqa: E402
from oppmodel.clients.commands import serve_cmd  # noqa: E402
from oppmodel.clients.lab.process_tree import tree_cpu  # noqa: E402
from oppmodel.clients.lab.serving import hands_of, limit_hands_of, spawn_ray  # noqa: E402
from oppmodel.modeling.games.acpc.bundled import BUNDLED_STRATEGIES  # noqa: E402
from oppmodel.modeling.games.acpc.compiler import limit_game  # noqa: E402
from oppmodel.modeling.games.acpc.matchstate import MatchState  # noqa: E402
from oppmodel.modeling.games.kuhn import kuhn_game  # noqa: E402
from oppmodel.modeling.games.kuhn_openspiel import kuhn_openspiel  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior  # noqa: E402
from oppmodel.modeling.mbbr.model import build_model  # noqa: E402
from oppmodel.modeling.observation import (  # noqa: E402
    LimitObservation,
)
from oppmodel.server.app import ServerConfig  # noqa: E402
from oppmodel.server.storage_sqlite import Synchronous  # noqa: E402
from oppmodel.v1 import opponent_model_pb2 as pb  # noqa: E402
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc  # noqa: E402

GAME = kuhn_game(3)


# -- workload --
def first_decision(obs: LimitObservation) -> str:
    """The MATCHSTATE line of the seat's first decision in the hand of ``obs`` (every seat
    before it checked: position 0 of a Leduc hand acts first)."""
    hole = tuple((h or "") if p == obs.position else "" for p, h in enumerate(obs.hole))
    return str(MatchState(obs.position, 0, "c" * obs.position, hole, ("",)))


def library_hands_per_second(game_name: str, hands: list[Hand], config: MBBRConfig) -> float:
    """In-process observe throughput of the game's MBBR model, a Kuhn session's the compiled
    model behind the OpenSpiel presentation as the service holds it (JIT warmed first)."""

    def build():
        if game_name in KUHN_SESSIONS:
            return kuhn_openspiel(GAME.num_players).build_model(config)
        return build_model(limit_game(game_name), config)

    build().observe(hands[0])
    model = build()
    start = time.perf_counter()
    for obs in hands:
        model.observe(obs)
    return len(hands) / (time.perf_counter() - start)


KUHN_SESSIONS = {"kuhn3p": "kuhn_poker(players=3)"}  # --game -> CreateSession's game


# -- processes --
def start_echo() -> tuple[subprocess.Popen, int]:
    """The bare echo server (this file with --echo-server) in a child process."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--echo-server"], stdout=subprocess.PIPE, text=True
    )
    return process, int(process.stdout.readline())


async def echo_server() -> None:
    """Echo every message of a bidirectional stream and of unary calls; print the port."""

    async def stream(requests, context):
        async for message in requests:
            yield message

    async def unary(request, context):
        return request

    server = grpc.aio.server()
    handlers = {
        "Stream": grpc.stream_stream_rpc_method_handler(stream),
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("echo.Echo", handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(port, flush=True)
    await server.wait_for_termination()


# -- load --
async def stream_session(call, requests: list[bytes | pb.ObserveRequest]) -> int:
    """Write every request on an open stream while reading the replies; returns replies read."""

    async def writer() -> None:
        for request in requests:
            await call.write(request)
        await call.done_writing()

    task = asyncio.create_task(writer())
    replies = 0
    async for _ in call:
        replies += 1
    await task
    return replies


async def saturated(port: int, sessions: list[str], hands: list[Hand]) -> float:
    """Hands/s with every session streaming all its hands at once."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.OpponentModelServiceStub(channel)
        batches = [
            [
                pb.ObserveRequest(session_id=sid, observation=observation_message(s, obs))
                for s, obs in enumerate(hands, start=1)
            ]
            for sid in sessions
        ]
        start = time.perf_counter()
        counts = await asyncio.gather(*(stream_session(stub.Observe(), batch) for batch in batches))
        elapsed = time.perf_counter() - start
    assert sum(counts) == len(sessions) * len(hands), counts
    return sum(counts) / elapsed


async def echo_saturated(port: int, streams: int, messages: int, payload: bytes) -> float:
    """Round trips/s of the echo stream with the same pattern."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        method = channel.stream_stream("/echo.Echo/Stream")
        start = time.perf_counter()
        counts = await asyncio.gather(
            *(stream_session(method(), [payload] * messages) for _ in range(streams))
        )
        elapsed = time.perf_counter() - start
    return sum(counts) / elapsed


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """This process's garbage collector paused (after one collection), as ``timeit`` pauses it."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def drive_open_loop(
    open_stream: Callable[[], object],
    streams: int,
    act: Callable[[int], Awaitable[object]],
    observation: Callable[[int], tuple[int, object]],
    *,
    rate: float,
    seconds: float,
) -> dict[str, float]:
    """Hands arrive every 1/rate s; hand i awaits ``act(i)`` then writes ``observation(i)``.

    Latency of ``act`` is measured from the scheduled arrival, so queueing anywhere (client or
    server) counts; ``client_lag`` is the part spent before the client even started the call.
    This process's garbage collector is paused meanwhile, as ``timeit`` pauses it: a full
    collection of the load generator's own ~10^5 objects (50-190 ms here) stalled the hands in
    flight and read as the server's latency.
    """
    with _collector_paused():
        queues: list[asyncio.Queue] = [asyncio.Queue() for _ in range(streams)]

        async def feed(queue: asyncio.Queue) -> None:
            call = open_stream()

            async def drain() -> None:
                async for _ in call:
                    pass

            reader = asyncio.create_task(drain())
            while (message := await queue.get()) is not None:
                await call.write(message)
            await call.done_writing()
            await reader

        feeders = [asyncio.create_task(feed(q)) for q in queues]
        latencies: list[float] = []
        lags: list[float] = []

        async def hand(i: int, scheduled: float) -> None:
            lags.append((time.perf_counter() - scheduled) * 1000.0)
            await act(i)
            latencies.append((time.perf_counter() - scheduled) * 1000.0)
            stream, message = observation(i)
            queues[stream].put_nowait(message)

        start = time.perf_counter() + 0.05
        tasks = []
        for i in range(int(rate * seconds)):
            scheduled = start + i / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(hand(i, scheduled)))
        await asyncio.gather(*tasks)
        for queue in queues:
            queue.put_nowait(None)
        await asyncio.gather(*feeders)
        return {
            "offered_hands_per_s": rate,
            "p50_ms": float(np.percentile(latencies, 50)),
            "p99_ms": float(np.percentile(latencies, 99)),
            "client_lag_p99_ms": float(np.percentile(lags, 99)),
            "actions": len(latencies),
        }


async def open_loop(
    port: int, sessions: list[str], hands: list[Hand], *, rate: float, seconds: float
) -> dict[str, float]:
    """GetAction latency at ``rate`` hands/s over the sessions (each hand then observed)."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.OpponentModelServiceStub(channel)
        sequences = []
        for sid in sessions:  # continue each session where an earlier run left it
            reply = await stub.GetSession(pb.GetSessionRequest(session_id=sid))
            sequences.append(reply.session.hands_observed)

        def request(i: int) -> pb.GetActionRequest:
            obs = hands[i % len(hands)]
            if isinstance(obs, LimitObservation):
                return pb.GetActionRequest(
                    session_id=sessions[i % len(sessions)], matchstate=first_decision(obs), draw=i
                )
            history = ""
            while GAME.current_player(history) != obs.position:
                history += "p"
            state = pb.InfoState(
                position=obs.position, card=obs.cards[obs.position], history=history
            )
            return pb.GetActionRequest(
                session_id=sessions[i % len(sessions)], info_state=state, draw=i
            )

        def observation(i: int) -> tuple[int, pb.ObserveRequest]:
            s = i % len(sessions)
            sequences[s] += 1
            message = observation_message(sequences[s], hands[i % len(hands)])
            return s, pb.ObserveRequest(session_id=sessions[s], observation=message)

        return await drive_open_loop(
            stub.Observe,
            len(sessions),
            lambda i: stub.GetAction(request(i)),
            observation,
            rate=rate,
            seconds=seconds,
        )


def _cpu_seconds(pid: int) -> tuple[float, float, float] | None:
    """(CPU seconds of the whole process and the processes under it, of its main thread,
    seconds its main thread was ready to run but waiting for a CPU) from Linux's /proc; None
    elsewhere. A server's main thread is its event loop."""
    try:
        cpu = tree_cpu(pid)
        with open(f"/proc/{pid}/task/{pid}/schedstat", encoding="ascii") as schedstat:
            running, waiting, _ = schedstat.read().split()
    except OSError:
        return None
    return cpu, int(running) / 1e9, int(waiting) / 1e9


def with_server_cpu(pid: int, run: Callable[[], dict[str, float]]) -> dict[str, float]:
    """``run()``'s latency figures plus what it cost the server process ``pid``: CPU ms per hand,
    and the share of the wall time its event loop ran and waited for a CPU (queueing sets the
    p99 once the loop is busy most of the time)."""
    before, start = _cpu_seconds(pid), time.perf_counter()
    figures = run()
    after, wall = _cpu_seconds(pid), time.perf_counter() - start
    if before is None or after is None:
        return figures
    process, loop_running, loop_waiting = (b - a for a, b in zip(before, after, strict=True))
    return figures | {
        "server_cpu_ms_per_hand": process * 1000.0 / figures["actions"],
        "server_loop_busy": loop_running / wall,
        "server_loop_waiting_for_cpu": loop_waiting / wall,
    }


async def echo_open_loop(
    port: int, action: bytes, observation: bytes, *, rate: float, seconds: float
) -> dict[str, float]:
    """The same pattern against the echo service: a unary call, then a stream message."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        unary = channel.unary_unary("/echo.Echo/Unary")
        return await drive_open_loop(
            channel.stream_stream("/echo.Echo/Stream"),
            64,
            lambda i: unary(action),
            lambda i: (i % 64, observation),
            rate=rate,
            seconds=seconds,
        )


async def echo_unary_rate(port: int, calls: int, payload: bytes, concurrency: int = 64) -> float:
    """Unary echo calls/s with ``concurrency`` callers."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        method = channel.unary_unary("/echo.Echo/Unary")

        async def caller(n: int) -> None:
            for _ in range(n):
                await method(payload)

        start = time.perf_counter()
        await asyncio.gather(*(caller(calls // concurrency) for _ in range(concurrency)))
        return (calls // concurrency) * concurrency / (time.perf_counter() - start)


# -- Ray Serve scaling (--ray) --
async def batched(port: int, sessions: list[str], hands: list[Hand], batch: int) -> float:
    """Hands/s with every session sending all its hands in ObserveBatch calls of ``batch``, one
    call at a time per session, all sessions at once."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.OpponentModelServiceStub(channel)

        async def send(sid: str) -> int:
            acked = 0
            for start in range(0, len(hands), batch):
                request = pb.ObserveBatchRequest(
                    session_id=sid,
                    observations=[
                        observation_message(s, obs)
                        for s, obs in enumerate(hands[start : start + batch], start=start + 1)
                    ],
                )
                reply = await stub.ObserveBatch(
                    request, metadata=(("session_id", sid),), timeout=120
                )
                acked = reply.hands_observed
            return acked

        start = time.perf_counter()
        counts = await asyncio.gather(*(send(sid) for sid in sessions))
        elapsed = time.perf_counter() - start
    assert sum(counts) == len(sessions) * len(hands), counts
    return sum(counts) / elapsed


class BatchedLoad:
    """Saturated ObserveBatch runs against one server, each on fresh sessions."""

    def __init__(self, port: int, args: argparse.Namespace, hands: list[Hand]) -> None:
        self.port, self.args, self.hands = port, args, hands
        self.config = MBBRConfig(k=args.k, hands_default=100, seed=1, posterior=args.posterior)
        self.run(self.hands[: 2 * args.batch])  # warm-up: connections, caches, the JIT

    def run(self, hands: list[Hand] | None = None) -> float:
        """Hands/s of one run."""
        with OpponentModelClient(f"127.0.0.1:{self.port}", timeout=120) as client:
            sessions = [
                client.create_session(config=self.config).session_id
                for _ in range(self.args.sessions)
            ]
        return asyncio.run(batched(self.port, sessions, hands or self.hands, self.args.batch))


def ray_scaling(args: argparse.Namespace) -> dict[str, object]:
    """The single-process server and one ``serve --ray`` per replica count, all up at once on
    one store, measured in turn ``args.repeats`` times (so a change of the machine's load meets
    every server alike); each run is journaled."""
    hands: list[Hand] = list(hands_of(args.hands, seed=1))
    load_before = os.getloadavg()
    processes: list[subprocess.Popen] = []
    runs: dict[str, list[float]] = {}
    try:
        process, port = serve_cmd.spawn(args.store)
        threading.Thread(target=process.stderr.read, daemon=True).start()
        processes.append(process)
        loads = {"single_process": BatchedLoad(port, args, hands)}
        for replicas in args.replicas:
            process, port = spawn_ray(args.store, replicas)
            processes.append(process)
            loads[f"ray_{replicas}"] = BatchedLoad(port, args, hands)
        with contextlib.ExitStack() as stack:
            journal = (
                stack.enter_context(open(args.journal, "a", encoding="utf-8"))
                if args.journal
                else None
            )
            for repeat in range(args.repeats):
                for name, load in loads.items():
                    rate = load.run()
                    runs.setdefault(name, []).append(rate)
                    entry = {"server": name, "repeat": repeat, "hands_per_s": rate,
                             "load": os.getloadavg(), "batch": args.batch,
                             "sessions": args.sessions}  # fmt: skip
                    print(json.dumps(entry), file=sys.stderr, flush=True)
                    if journal is not None:
                        journal.write(json.dumps(entry) + "\n")
                        journal.flush()
    finally:
        for process in processes[1:]:
            os.killpg(process.pid, signal.SIGINT)  # serve --ray stops Serve and its own Ray
        if processes:
            processes[0].terminate()
        for process in processes:
            process.wait(timeout=120)
    rates = {name: statistics.median(values) for name, values in runs.items()}
    single = rates["single_process"]
    ratios = {f"ray_{n}_to_single_process": rates[f"ray_{n}"] / single for n in args.replicas}
    if 1 in args.replicas:
        ratios |= {f"ray_{n}_to_ray_1": rates[f"ray_{n}"] / rates["ray_1"] for n in args.replicas}
    return {
        "game": "kuhn3p",
        "posterior": args.posterior,
        "store": "postgresql",
        "batch": args.batch,
        "sessions": args.sessions,
        "hands_per_session": args.hands,
        "repeats": args.repeats,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "runs_hands_per_s": runs,
        "saturated_hands_per_s": rates,
        "ratios": ratios,
    }


def _median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    """Per-key median over repeated runs."""
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def main() -> None:
    """Run the benchmark and print a table or JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--game",
        choices=[*KUHN_SESSIONS, *BUNDLED_STRATEGIES],
        default="kuhn3p",
        help="the sessions' game (default %(default)s)",
    )
    parser.add_argument("--quick", action="store_true", help="fewer hands (a smoke run)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--posterior",
        choices=Posterior.names(),
        default=MBBRConfig().posterior,
        help="MBBR's posterior (default: the library's, %(default)s)",
    )
    parser.add_argument("--k", type=int, default=10, help="samples per model (samples only)")
    parser.add_argument(
        "--rate", type=float, help="open-loop hands/s (default: 500 in Kuhn, 200 in a limit game)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--synchronous", choices=Synchronous.names(), default=Synchronous.FULL)
    parser.add_argument(
        "--store", metavar="URL", help="a postgresql:// database (default: a fresh SQLite file)"
    )
    parser.add_argument(
        "--model-workers",
        type=int,
        default=ServerConfig.model_workers,
        help="the server's model worker processes (0: models in its own; default %(default)s)",
    )
    parser.add_argument("--echo-server", action="store_true", help=argparse.SUPPRESS)
    ray = parser.add_argument_group("oppmodel serve --ray (see the top of this file)")
    ray.add_argument("--ray", action="store_true", help="measure the Ray Serve deployment")
    ray.add_argument(
        "--replicas",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[1, 2],
        help="replica counts, comma-separated (default 1,2)",
    )
    ray.add_argument("--batch", type=int, default=32, help="hands per ObserveBatch call")
    ray.add_argument("--sessions", type=int, default=16, help="sessions sending at once")
    ray.add_argument("--hands", type=int, default=512, help="hands per session")
    ray.add_argument("--journal", metavar="FILE", help="append each measurement (JSON lines)")
    args = parser.parse_args()
    if args.echo_server:
        asyncio.run(echo_server())
        return
    if args.ray:
        if not args.store:
            parser.error("--ray needs --store postgresql://... (the replicas share it)")
        results = ray_scaling(args)
        print(json.dumps(results, indent=2))
        return
    kuhn = args.game in KUHN_SESSIONS
    session_game = KUHN_SESSIONS.get(args.game, args.game)
    players = 3 if kuhn else limit_game(args.game).num_players
    labels = [f"opp_{d}" for d in range(1, players)]
    args.rate = args.rate or (500.0 if kuhn else 200.0)
    repeats = 1 if args.quick else args.repeats
    per_session = {1: 300, 8: 150, 64: 30} if args.quick else {1: 1500, 8: 600, 64: 120}
    seconds = 2.0 if args.quick else 4.0
    count = max(per_session.values())
    hands: list[Hand] = (
        list(hands_of(count, seed=1)) if kuhn else list(limit_hands_of(args.game, count, seed=1))
    )
    config = MBBRConfig(k=args.k, hands_default=100, seed=1, posterior=args.posterior)
    if not kuhn:  # a limit game's model applies neither (the service refuses them set)
        config = dataclasses.replace(config, safety_budget=math.inf, change_hazard=0.0)
    library = statistics.median(
        library_hands_per_second(args.game, hands, config) for _ in range(3)
    )
    results: dict[str, object] = {
        "game": args.game,
        "posterior": args.posterior,
        "k": args.k if args.posterior == Posterior.SAMPLES else None,
        "synchronous": args.synchronous,
        "store": "postgresql" if args.store else "sqlite",
        "model_workers": args.model_workers,
        "library_hands_per_s": library,
    }
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or Path(tmp) / "bench.sqlite"
        process, port = serve_cmd.spawn(
            store, "--synchronous", args.synchronous, "--model-workers", str(args.model_workers)
        )
        # its log (a line per session) must be read, or a full pipe stops the server
        threading.Thread(target=process.stderr.read, daemon=True).start()
        echo, echo_port = start_echo()
        try:
            with OpponentModelClient(f"127.0.0.1:{port}") as client:
                warm = client.create_session(
                    game=session_game, opponent_labels=labels, config=config
                ).session_id
                client.observe(warm, hands[:50], first_sequence=1)
                runs: dict[int, list[float]] = {n: [] for n in per_session}
                for _ in range(repeats):
                    for n, count in per_session.items():
                        sessions = [
                            client.create_session(
                                game=session_game, opponent_labels=labels, config=config
                            ).session_id
                            for _ in range(n)
                        ]
                        runs[n].append(asyncio.run(saturated(port, sessions, hands[:count])))
                latency_sessions = [
                    client.create_session(
                        game=session_game, opponent_labels=labels, config=config
                    ).session_id
                    for _ in range(64)
                ]
            request = pb.ObserveRequest(
                session_id=latency_sessions[0], observation=observation_message(1, hands[0])
            )
            payload = request.SerializeToString()
            action = (
                pb.GetActionRequest(
                    session_id=latency_sessions[0],
                    info_state=pb.InfoState(position=1, card=2, history="p"),
                    draw=12345,
                )
                if kuhn
                else pb.GetActionRequest(
                    session_id=latency_sessions[0],
                    matchstate=first_decision(hands[1]),  # type: ignore[arg-type]
                    draw=12345,
                )
            ).SerializeToString()
            echo_runs = [
                asyncio.run(echo_saturated(echo_port, 64, per_session[64], payload))
                for _ in range(repeats)
            ]
            unary = asyncio.run(echo_unary_rate(echo_port, 2000 if args.quick else 8000, payload))
            # Service and echo alternate, so both meet the same machine; a first pass of each
            # warms connections, streams and caches.
            load = dict(rate=args.rate, seconds=seconds)
            asyncio.run(open_loop(port, latency_sessions, hands, rate=args.rate, seconds=1.0))
            asyncio.run(echo_open_loop(echo_port, action, payload, rate=args.rate, seconds=1.0))
            latency_runs, echo_latency_runs = [], []
            for _ in range(repeats):
                latency_runs.append(
                    with_server_cpu(
                        process.pid,
                        lambda: asyncio.run(open_loop(port, latency_sessions, hands, **load)),
                    )
                )
                echo_latency_runs.append(
                    with_server_cpu(
                        echo.pid,
                        lambda: asyncio.run(echo_open_loop(echo_port, action, payload, **load)),
                    )
                )
            latency = _median_run(latency_runs)
            echo_latency = _median_run(echo_latency_runs)
        finally:
            process.terminate()
            echo.terminate()
            process.wait(timeout=20)
            echo.wait(timeout=20)
    echo_rate = statistics.median(echo_runs)
    saturated_rates = {f"sessions_{n}": statistics.median(v) for n, v in runs.items()}
    results.update(
        {
            "saturated_hands_per_s": saturated_rates,
            "action_latency": latency,
            "echo_stream_round_trips_per_s": echo_rate,
            "echo_unary_calls_per_s": unary,
            "echo_action_latency": echo_latency,
            "ratio_service_to_library_64": saturated_rates["sessions_64"] / library,
            "ratio_service_to_echo_64": saturated_rates["sessions_64"] / echo_rate,
            "goals": {
                "hands_per_s_64_sessions_ge_1000": saturated_rates["sessions_64"] >= 1000,
                f"p99_action_ms_lt_10_at_{args.rate:g}": latency["p99_ms"] < 10.0,
            },
        }
    )
    if args.json:
        print(json.dumps(results, indent=2))
        return
    k = f", k = {args.k}" if args.posterior == Posterior.SAMPLES else ""
    where = "PostgreSQL" if args.store else f"SQLite synchronous = {args.synchronous}"
    print(f"{args.game}, {args.posterior} posterior{k}, store: {where}")
    print(f"in-process library:              {library:10.0f} hands/s")
    for name, rate in saturated_rates.items():
        print(f"service, {name:<22} {rate:10.0f} hands/s")
    print(f"echo stream, 64 streams:         {echo_rate:10.0f} round trips/s")
    print(f"echo unary, 64 callers:          {unary:10.0f} calls/s")
    print(
        f"GetAction at {args.rate:.0f} hands/s over 64 sessions: "
        f"p50 {latency['p50_ms']:.2f} ms, p99 {latency['p99_ms']:.2f} ms"
    )
    print(
        f"echo, same pattern and load:      p50 {echo_latency['p50_ms']:.2f} ms, "
        f"p99 {echo_latency['p99_ms']:.2f} ms"
    )
    for name, figures in (("service", latency), ("echo", echo_latency)):
        if "server_loop_busy" in figures:
            print(
                f"{name} server at that load: event loop busy {figures['server_loop_busy']:.0%} "
                f"of the time, waiting for a CPU {figures['server_loop_waiting_for_cpu']:.0%}; "
                f"{figures['server_cpu_ms_per_hand']:.2f} ms CPU per hand"
            )
    print(
        f"ratios (64 sessions): service/library {results['ratio_service_to_library_64']:.3f}, "
        f"service/echo {results['ratio_service_to_echo_64']:.3f}"
    )


if __name__ == "__main__":
    main()
