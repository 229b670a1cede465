"""What the web UI costs the service: saturated throughput with and without a page watching each
session (issue 33's goal: at most 5% with one browser on each of 8 sessions).

Usage: ``python benchmarks/ui_load.py [--quick] [--json] [--sessions 8] [--refresh-seconds 1]``,
or ``--calls``: the service's CPU per call of each RPC a page's read makes (``per_call``).

The service (``oppmodel serve``, a fresh SQLite file) and the UI (``oppmodel ui --service``) run
in child processes as deployed. Here, on one event loop: every session streams hands without a
pause (ObserveBatch calls of ``--batch`` hands, closed loop: the service is saturated), and one
"browser" per session fetches the session page's live fragment every ``--refresh-seconds``, as
the page's script does (with the entity tag of the fragment it holds; the UI then reads the
service: GetSession, and GetModels and GetWinnings when the session saw new hands, at most every
``--model-seconds``). The load never stops; the
watchers are switched on and off in pairs of adjacent windows of ``--seconds`` (the first
``--settle`` seconds of each not counted; the pairs alternate which comes first), so a change
of the shared machine's load meets both alike. Reported: the hands/s of every window and the
throughput cost (1 - the median over pairs of with / without: the goal's measure), the
service's CPU ms per hand (its process and its model workers, from /proc: Linux) and what the
pages add to it (the median over pairs of with / without, less 1), each with the 95% bootstrap
interval over pairs and whether that interval settles the goal ("met", "missed" or
"unresolved"); the page fetches made (the share answered 304: the page held the current
fragment) and the UI process's own CPU per fetch.

The watchers make the requests the page's script (``clients/ui/pages.py``'s SCRIPT) makes: one
fetch of the live fragment, with the entity tag it holds, ``--refresh-seconds`` after the
previous one's answer (the script's ``setTimeout`` after each reply), nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import aiohttp
import grpc

from oppmodel.clients.client import observation_message
from oppmodel.clients.commands import serve_cmd
from oppmodel.clients.lab.process_tree import tree_cpu
from oppmodel.clients.lab.serving import hands_of
from oppmodel.clients.ui.reader import ServiceReader
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc

GOAL = 0.05  # the largest share of the saturated throughput the watching pages may cost
CALLS = 100  # --calls: calls of each kind per round
WINNINGS_HANDS = 600  # --calls: hands a GetWinnings reads (a saturated session's in 5 s)


def spawn_ui(service_port: int, args: argparse.Namespace) -> tuple[subprocess.Popen, int]:
    """``oppmodel ui`` on a free port in a child process; (process, port) once it serves."""
    process = subprocess.Popen(
        [sys.executable, "-m", "oppmodel.clients.cli", "ui", "--service",
         f"127.0.0.1:{service_port}", "--port", "0", "--refresh-seconds",
         str(args.refresh_seconds), "--model-seconds", str(args.model_seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()  # "ui: http://127.0.0.1:PORT/ (...)"
    if not line.startswith("ui: http://"):
        raise RuntimeError(f"oppmodel ui did not start: {line!r} (exit {process.poll()})")
    return process, int(line.split(":")[3].split("/")[0])


class Load:
    """Every session streaming hands at once, counting acknowledged hands."""

    def __init__(self, stub: pb_grpc.OpponentModelServiceStub, batch: int) -> None:
        self.stub = stub
        self.batch = batch
        self.hands = hands_of(300, seed=1)
        self.acked = 0
        self.stopping = False

    async def session(self, session_id: str) -> None:
        sequence = 1
        while not self.stopping:
            observations = [
                observation_message(sequence + i, self.hands[(sequence + i) % len(self.hands)])
                for i in range(self.batch)
            ]
            await self.stub.ObserveBatch(
                pb.ObserveBatchRequest(session_id=session_id, observations=observations)
            )
            sequence += self.batch
            self.acked += self.batch


class Watchers:
    """One page per session polling its live fragment, switched on and off."""

    def __init__(self, http: aiohttp.ClientSession, base: str, refresh: float) -> None:
        self.http, self.base, self.refresh = http, base, refresh
        self.on = False
        self.fetches = 0
        self.unchanged = 0  # fetches answered 304: the page held the current fragment
        self.failures: collections.Counter[int] = collections.Counter()  # by HTTP status

    async def page(self, session_id: str) -> None:
        tag = ""  # the entity tag of the fragment this page holds, sent as the script does
        while True:
            if self.on:
                headers = {"If-None-Match": tag} if tag else {}
                url = f"{self.base}/session/{session_id}/live"
                async with self.http.get(url, headers=headers) as reply:
                    await reply.read()
                    self.fetches += 1
                    self.unchanged += reply.status == 304
                    if reply.status not in (200, 304):
                        self.failures[reply.status] += 1
                    tag = reply.headers.get("ETag", tag)
            await asyncio.sleep(self.refresh)


async def measure(
    args: argparse.Namespace, service: int, ui: int, server_pid: int, ui_pid: int
) -> dict[str, object]:
    """Alternate windows without and with watchers under a constant saturating load."""
    async with (
        grpc.aio.insecure_channel(f"127.0.0.1:{service}") as channel,
        aiohttp.ClientSession() as http,
    ):
        stub = pb_grpc.OpponentModelServiceStub(channel)
        sessions = []
        for _ in range(args.sessions):
            reply = await stub.CreateSession(
                pb.CreateSessionRequest(
                    config=pb.SessionConfig(
                        game="kuhn_poker(players=3)", our_label="us",
                        opponent_labels=["left", "right"], seed=1,
                    )
                )
            )  # fmt: skip
            sessions.append(reply.session.session_id)
        load = Load(stub, args.batch)
        watchers = Watchers(http, f"http://127.0.0.1:{ui}", args.refresh_seconds)
        tasks = [asyncio.create_task(load.session(s)) for s in sessions]
        tasks += [asyncio.create_task(watchers.page(s)) for s in sessions]
        rates: dict[str, list[float]] = {"off": [], "on": []}
        cpu_per_hand: dict[str, list[float]] = {"off": [], "on": []}  # the service's, in ms
        fetches = unchanged = 0
        ui_cpu = 0.0  # the UI process's CPU seconds in the windows with pages
        await asyncio.sleep(args.settle)  # warm the JIT and the connections
        for pair in range(args.repeats):
            # pairs alternate their order, so a drift of the machine's load meets both alike
            for state in ("off", "on") if pair % 2 == 0 else ("on", "off"):
                watchers.on = state == "on"
                await asyncio.sleep(args.settle)
                first, started, fetched = load.acked, time.perf_counter(), watchers.fetches
                held = watchers.unchanged
                cpu, ui_before = tree_cpu(server_pid), tree_cpu(ui_pid)
                await asyncio.sleep(args.seconds)
                if watchers.on:
                    ui_cpu += tree_cpu(ui_pid) - ui_before
                hands = load.acked - first  # none: the service got no CPU (nan, left out)
                rates[state].append(hands / (time.perf_counter() - started))
                used = 1000 * (tree_cpu(server_pid) - cpu)
                cpu_per_hand[state].append(used / hands if hands else math.nan)
                fetches += watchers.fetches - fetched
                unchanged += watchers.unchanged - held
        load.stopping = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    ratios = _ratios(rates["on"], rates["off"])
    cpu_ratios = _ratios(cpu_per_hand["on"], cpu_per_hand["off"])
    cost = 1.0 - _median(ratios)
    cpu_cost = _median(cpu_ratios) - 1.0
    low, high = _bootstrap_ci(ratios)
    cpu_low, cpu_high = _bootstrap_ci(cpu_ratios)
    return {
        "sessions": args.sessions,
        "refresh_seconds": args.refresh_seconds,
        "model_seconds": args.model_seconds,
        "window_seconds": args.seconds,
        "pairs": args.repeats,
        "hands_per_s_without_pages": rates["off"],
        "hands_per_s_with_pages": rates["on"],
        "median_without": statistics.median(rates["off"]),
        "median_with": statistics.median(rates["on"]),
        # with / without, pair by pair: the throughput cost is 1 - their median, and its 95%
        # interval the bootstrap's over pairs (the Done-when's measure, resolved only when the
        # interval lies on one side of the goal); the ratio of the two medians above mixes
        # windows of different pairs, so the machine's drift between pairs enters it
        "throughput_ratios": ratios,
        "throughput_cost": cost,
        "throughput_cost_ci95": [1.0 - high, 1.0 - low],
        "throughput_goal": _verdict(1.0 - high, 1.0 - low),
        "service_cpu_ms_per_hand_without_pages": cpu_per_hand["off"],
        "service_cpu_ms_per_hand_with_pages": cpu_per_hand["on"],
        # the share of the service's CPU per hand the pages add: median over pairs of with /
        # without, less 1 (what a service held to its CPU loses in throughput)
        "cpu_cost": cpu_cost,
        "cpu_cost_ci95": [cpu_low - 1.0, cpu_high - 1.0],
        "cpu_goal": _verdict(cpu_low - 1.0, cpu_high - 1.0),
        "page_fetches_per_s": fetches / (args.repeats * args.seconds),
        "page_fetches_unchanged": unchanged / fetches if fetches else math.nan,  # answered 304
        # what the UI process itself spends per page fetch: on a machine without a spare core,
        # CPU the saturated service loses to the UI beside it (the throughput cost's rest)
        "ui_cpu_ms_per_fetch": 1000 * ui_cpu / fetches if fetches else math.nan,
        "page_failures": {str(status): n for status, n in sorted(watchers.failures.items())},
    }


async def per_call(args: argparse.Namespace, service: int, server_pid: int) -> dict[str, float]:
    """The service's CPU in ms per call of each RPC a page's read makes (``--calls``): over
    CALLS calls, each after a batch of new hands (the models moved, as a page finds them), less
    the CPU of as many batches alone; the median of 3 rounds. ``ObserveBatch``: a batch's own;
    "a page's read": ``ServiceReader.session_view`` of the session (``--model-seconds`` 0), as
    the UI reads it for a page of a busy session once per ``--model-seconds``."""
    reader = ServiceReader(f"127.0.0.1:{service}", model_seconds=0.0)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service}") as channel:
        stub = pb_grpc.OpponentModelServiceStub(channel)
        config = pb.SessionConfig(
            game="kuhn_poker(players=3)", our_label="us", opponent_labels=["left", "right"], seed=1
        )
        session = (await stub.CreateSession(pb.CreateSessionRequest(config=config))).session
        sid = session.session_id
        load = Load(stub, args.batch)

        async def batch() -> None:  # one ObserveBatch of --batch hands, in sequence
            sequence = load.acked + 1
            observations = [
                observation_message(sequence + i, load.hands[(sequence + i) % len(load.hands)])
                for i in range(load.batch)
            ]
            await stub.ObserveBatch(
                pb.ObserveBatchRequest(session_id=sid, observations=observations)
            )
            load.acked += load.batch

        model = pb.GetModelRequest(session_id=sid, opponent_label="left", opponent_position=1)
        response = pb.GetResponseRequest(session_id=sid, our_position=0, kind=pb.RESPONSE_KIND_MEAN)
        played = pb.GetResponseRequest(
            session_id=sid, our_position=0, kind=pb.RESPONSE_KIND_MEAN, include_played=True
        )
        models = pb.GetModelsRequest(
            session_id=sid, kind=pb.RESPONSE_KIND_MEAN, include_played=True
        )
        calls = {
            "GetSession": lambda: stub.GetSession(pb.GetSessionRequest(session_id=sid)),
            "GetModel": lambda: stub.GetModel(model),
            "GetResponse": lambda: stub.GetResponse(response),
            "GetResponse (include_played)": lambda: stub.GetResponse(played),
            "GetModels (include_played)": lambda: stub.GetModels(models),
            f"GetWinnings ({WINNINGS_HANDS} hands)": lambda: stub.GetWinnings(
                pb.GetWinningsRequest(session_id=sid, after_hand=load.acked - WINNINGS_HANDS)
            ),
            # an idle session's page: the check finds no hand since the view
            "GetWinnings (no new hands)": lambda: stub.GetWinnings(
                pb.GetWinningsRequest(session_id=sid, after_hand=load.acked)
            ),
            # a busy session's page: what oppmodel ui's reader asks after new hands
            "a page's read (oppmodel ui's reader)": lambda: reader.session_view(None, sid),
        }
        for _ in range(WINNINGS_HANDS // args.batch + 1):
            await batch()
        cpu: dict[str, list[float]] = {name: [] for name in ("ObserveBatch", *calls)}
        for _ in range(3):
            for name, call in calls.items():
                before = tree_cpu(server_pid)
                for _ in range(CALLS):
                    await batch()
                alone = tree_cpu(server_pid) - before
                before = tree_cpu(server_pid)
                for _ in range(CALLS):
                    await batch()
                    await call()
                both = tree_cpu(server_pid) - before
                cpu["ObserveBatch"].append(1000 * alone / CALLS)
                cpu[name].append(1000 * (both - alone) / CALLS)
    await reader.close()
    return {name: statistics.median(values) for name, values in cpu.items()}


def _ratios(on: list[float], off: list[float]) -> list[float]:
    """``on / off`` pair by pair, pairs with a window that measured nothing left out."""
    return [a / b for a, b in zip(on, off, strict=True) if a > 0 and b > 0]


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _bootstrap_ci(
    ratios: list[float], *, draws: int = 10_000, seed: int = 1
) -> tuple[float, float]:
    """The 95% percentile bootstrap interval of the median of ``ratios`` (pairs resampled)."""
    if not ratios:
        return math.nan, math.nan
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]


def _verdict(low: float, high: float) -> str:
    """A cost's 95% interval against the goal: 'met' (all of it at most GOAL), 'missed' (all
    above), or 'unresolved' (the windows' noise spans the goal)."""
    if high <= GOAL:
        return "met"
    return "missed" if low > GOAL else "unresolved"


def main() -> None:
    """Run the benchmark and print a summary or JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short windows (a smoke run)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--refresh-seconds", type=float, default=1.0)
    parser.add_argument("--model-seconds", type=float, default=5.0)
    parser.add_argument("--batch", type=int, default=16, help="hands per ObserveBatch call")
    parser.add_argument("--seconds", type=float, default=4.0, help="a window's measured time")
    parser.add_argument("--settle", type=float, default=1.5, help="a window's unmeasured start")
    parser.add_argument("--repeats", type=int, default=12, help="pairs of windows")
    parser.add_argument(
        "--calls", action="store_true", help="instead: the service's CPU per call a page makes"
    )
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.settle, args.repeats = 2.0, 1.0, 2
    with tempfile.TemporaryDirectory() as tmp:
        server, service = serve_cmd.spawn(Path(tmp) / "bench.sqlite")
        # its log must be read, or a full pipe stops the server
        threading.Thread(target=server.stderr.read, daemon=True).start()  # type: ignore[union-attr]
        if args.calls:
            try:
                costs = asyncio.run(per_call(args, service, server.pid))
            finally:
                server.terminate()
                server.wait(30)
            lines = (f"{name}: {ms:.2f} ms of the service's CPU" for name, ms in costs.items())
            print(json.dumps(costs, indent=2) if args.json else "\n".join(lines))
            return
        ui_process, ui = spawn_ui(service, args)
        try:
            results = asyncio.run(measure(args, service, ui, server.pid, ui_process.pid))
        finally:
            for process in (ui_process, server):
                process.terminate()
                process.wait(30)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"{args.sessions} sessions saturating the service: {results['median_without']:.0f} "
        f"hands/s without pages, {results['median_with']:.0f} with one page on each "
        f"({results['page_fetches_per_s']:.1f} fetches/s, {results['ui_cpu_ms_per_fetch']:.2f} "
        f"ms of the UI's CPU each): cost {results['throughput_cost']:.1%} of the throughput "
        f"(95% {_interval(results['throughput_cost_ci95'])}: {results['throughput_goal']}), "
        f"{results['cpu_cost']:.1%} of the service's CPU per hand "
        f"(95% {_interval(results['cpu_cost_ci95'])}: {results['cpu_goal']}; goal <= {GOAL:.0%})"
    )


def _interval(bounds: object) -> str:
    assert isinstance(bounds, list)
    return f"{bounds[0]:.1%} to {bounds[1]:.1%}"


if __name__ == "__main__":
    main()
