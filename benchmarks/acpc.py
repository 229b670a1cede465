"""Benchmark: ACPC matches through the project's dealer over loopback TCP, with and without the
service.

The figures, each the median over repeats of a 3p Kuhn match (seed 42):

* ``processes``: hands per second with three agent *processes* (``acpc-agent --agent example``,
  the reference ``example_player``'s strategy), timed from the first finished hand to the last so
  that interpreter start-up is excluded. This is the set-up of a real ACPC match.
* ``service``: the same match with the project's MBBR agents playing through the service
  (``acpc-agent --service ADDR``: three agent processes, one ``oppmodel serve`` process; every
  decision a GetAction, every hand an acknowledged Observe), and ``mbbr_in_process``: the same
  MBBR agents with the model in the agent process (``--in-process``), which separates the cost of
  the service from that of the model. Service calls that missed their deadline and fell back to
  N1 are counted and reported (they would flatter the service's rate).
* ``threads``: the same with the three agents as threads of the dealer's process (how
  ``oppmodel tournament`` runs built-in agents; they share the GIL with the dealer).
* ``dealer CPU``: CPU time of the dealer thread per hand (``time.thread_time``) in the process
  match: what the dealer costs, system calls included, excluding the wait for the agents.
* ``dealer logic``: wall time per hand of the dealer with in-memory seats that answer at once
  (hand h plays the (h mod 13)-th of the 13 possible bettings): its own Python work, no sockets.

The reference dealer with its C ``example_player``s plays 3000 hands in about 0.7 s (about 4300
hands/s, timed on the reference log of a seed-42 match); the ratio to that figure is reported.

``--holdem``: instead, issue 35's served hold'em match: one ``acpc-agent --service`` process
(MBBR over the bundled blueprint's abstraction) against a hold'em style (``--opponent``, a thread
of this process) on the 2-player game file, 3,000 hands (deck seed 42), the style's first action
of hand h held until h / ``--rate`` seconds after the first (100 hands/s; 0: unpaced). Reported:
the decisions by the service and by the fallback, each answered GetAction's time (median, p99,
max: the agent's tally), the hands per second, the server's CPU per decision and per hand (the
server process and its model workers, from /proc; the session's start is in it, with the agent's
warm-up GetResponse of the whole response table), the same from the first hand to the last
split into the server's main process (gRPC, the store) and its model workers (the models), the
agent process's from its first hand to its last and this process's (the dealer and the style:
``harness``) CPU per hand, and the machine's load average during it. The three CPU figures
times the pace are the cores the match needs: above the machine's ``cores``, the pace cannot be
met whatever the service does.

    python benchmarks/acpc.py [--quick] [--json]
    python benchmarks/acpc.py --holdem [--hands 3000] [--rate 100] [--opponent calling-station]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from oppmodel.clients.acpc.agent import connect, make_policy, play_match  # noqa: E402
from oppmodel.clients.acpc.dealer import DealerConfig, MatchDealer  # noqa: E402
from oppmodel.clients.acpc.log import LoggedHand  # noqa: E402
from oppmodel.clients.client import OpponentModelClient  # noqa: E402
from oppmodel.clients.lab.process_tree import process_cpu, tree_cpu  # noqa: E402
from oppmodel.modeling.errors import OppModelError  # noqa: E402
from oppmodel.modeling.games.acpc.betting import HandState  # noqa: E402
from oppmodel.modeling.games.acpc.bundled import game_path  # noqa: E402
from oppmodel.modeling.games.acpc.gamedef import read_game_def  # noqa: E402
from oppmodel.server.app import free_ports  # noqa: E402

GAME_FILE = game_path("kuhn3p")
GAME = read_game_def(GAME_FILE)
REFERENCE_HANDS_PER_SECOND = 3000 / 0.7


HOLDEM_FILE = game_path("holdem2p")


def start_service(workdir: Path, stderr=subprocess.DEVNULL) -> tuple[subprocess.Popen, str]:
    """``oppmodel serve`` in its own process on a free loopback port; waits until it answers."""
    (port,) = free_ports()
    command = [sys.executable, "-m", "oppmodel.clients.cli", "serve", "--port", str(port)]
    command += ["--db", str(workdir / "bench.sqlite")]
    process = subprocess.Popen(command, cwd=ROOT, stderr=stderr)
    target = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # a loaded machine starts it slowly
    with OpponentModelClient(target, timeout=1.0) as client:
        while True:
            try:
                client.list_sessions()
                return process, target
            except OppModelError:  # not serving yet
                if time.monotonic() > deadline or process.poll() is not None:
                    process.kill()
                    raise RuntimeError("the benchmark's service did not start") from None
                time.sleep(0.1)


def quiet_dealer(
    match: str,
    hands: int,
    workdir: Path,
    *,
    start_timeout_ms: int | None = None,
    on_hand: Callable[[LoggedHand], None] | None = None,
) -> MatchDealer:
    """A 3-seat dealer of ``hands`` hands (deck seed 42) logging to ``workdir/<match>.log``, its
    console output swallowed, as both benchmark matches use it."""
    return MatchDealer(
        DealerConfig(
            match=match,
            game_file=GAME_FILE.name,
            game=GAME,
            hands=hands,
            seed=42,
            names=("a", "b", "c"),
            quiet=True,
            log_path=workdir / f"{match}.log",
            start_timeout_ms=start_timeout_ms,
        ),
        stdout=io.StringIO(),
        stderr=io.StringIO(),
        on_hand=on_hand,
    )


def run_match(
    hands: int, agents: str, workdir: Path, service: str | None = None
) -> tuple[float, float, int]:
    """One match; returns (hands per second from first to last hand, dealer CPU s per hand,
    decisions the agents played without the service although they were told to use it).

    ``agents``: ``processes`` (example players), ``threads`` (example players in this process),
    ``service`` (MBBR through ``service``) or ``mbbr`` (MBBR in each agent process).
    """
    stamps: list[float] = []
    dealer = quiet_dealer(
        "bench",
        hands,
        workdir,
        start_timeout_ms=60_000,
        on_hand=lambda _hand: stamps.append(time.perf_counter()),
    )
    ports = dealer.listen()
    workers: list = []
    for seed, port in enumerate(ports):
        if agents != "threads":
            command = [
                sys.executable,
                "-m",
                "oppmodel.clients.commands.acpc_agent_cmd",
                str(GAME_FILE),
            ]
            command += ["127.0.0.1", str(port), "--seed", str(seed), "--json"]
            if agents == "processes":
                command += ["--agent", "example"]
            elif agents == "mbbr":
                command += ["--in-process"]
            else:
                command += ["--service", str(service)]  # the default decision budget
            workers.append(
                subprocess.Popen(
                    command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
                )
            )
        else:
            policy = make_policy("example", GAME, seed)

            def play(port: int = port, policy=policy) -> None:
                play_match(GAME, connect("127.0.0.1", port, 10), policy, read_timeout=60)

            worker = threading.Thread(target=play, daemon=True)
            worker.start()
            workers.append(worker)
    cpu = time.thread_time()
    result = dealer.run()
    cpu = time.thread_time() - cpu
    fallbacks = 0
    for worker in workers:
        if agents == "threads":
            worker.join()
        else:
            tally = json.loads(worker.communicate()[0])
            fallbacks += tally.get("fallback_decisions", 0)
    if result.status != 0:
        raise RuntimeError(f"the benchmark match failed: {result.error}")
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), cpu / hands, fallbacks


def terminal_bettings(prefix: str = "") -> list[str]:
    """The 13 finished betting strings of 3p Kuhn (betting legality does not depend on cards)."""
    state = HandState.from_betting(GAME, prefix)
    if state.finished:
        return [prefix]
    return [b for action in state.valid_actions() for b in terminal_bettings(prefix + action)]


class MemorySeat:
    """A seat without a socket: sends VERSION, then answers every state it must act on at once
    with the next action of that hand's scripted betting."""

    def __init__(self, bettings: list[str]) -> None:
        self.bettings = bettings
        self.last = "VERSION:2.0.0\r\n"

    def send(self, text: str) -> bool:
        self.last = text
        return True

    def readline(self, timeout: float | None) -> str:
        state = self.last.rstrip("\r\n")
        if not state.startswith("MATCHSTATE:"):
            return self.last
        _, _, hand, betting, _ = state.split(":")
        return f"{state}:{self.bettings[int(hand)][len(betting)]}\n"

    def close(self) -> None:
        pass


def dealer_logic(hands: int, workdir: Path) -> float:
    """Seconds per hand of the dealer alone (in-memory seats answering at once)."""
    cycle = terminal_bettings()
    bettings = [cycle[h % len(cycle)] for h in range(hands)]
    dealer = quiet_dealer("logic", hands, workdir)
    seats = [MemorySeat(bettings) for _ in range(3)]
    start = time.perf_counter()
    result = dealer.run(seats)
    elapsed = time.perf_counter() - start
    if result.status != 0:
        raise RuntimeError(f"the in-memory match failed: {result.error}")
    return elapsed / hands


class Paced:
    """A policy whose first action of hand h waits until h / ``rate`` seconds after the first
    hand's: the match goes no faster than ``rate`` hands a second."""

    def __init__(self, policy, rate: float) -> None:
        self.policy = policy
        self.rate = rate
        self.start: float | None = None
        self.paced = -1  # the last hand held

    def act(self, decision) -> str:
        hand = decision.state.hand
        if self.rate > 0 and hand != self.paced:
            self.paced = hand
            if self.start is None:
                self.start = time.perf_counter() - hand / self.rate
            time.sleep(max(0.0, self.start + hand / self.rate - time.perf_counter()))
        return self.policy.act(decision)

    def observe(self, hand) -> None:
        self.policy.observe(hand)


def load_sampler(samples: list[float], stop: threading.Event) -> threading.Thread:
    """A thread appending the 1-minute load average every 5 s until ``stop``."""

    def sample() -> None:
        while True:
            samples.append(os.getloadavg()[0])
            if stop.wait(5.0):
                return

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    return thread


def holdem_match(
    hands: int, rate: float, opponent: str, workdir: Path, seed: int, logs: Path | None = None
) -> dict:
    """Issue 35's served hold'em match (see the module's text): the agent's tally and the
    figures around it. With ``logs``, the server's and the agent's stderr and the dealer's log
    are kept there (server.log, agent.log, holdem.log)."""
    game = read_game_def(HOLDEM_FILE)
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)
    kept = (lambda name: open(logs / name, "w")) if logs else (lambda _name: None)  # noqa: SIM115
    server, target = start_service(workdir, kept("server.log") or subprocess.DEVNULL)
    stamps: list[float] = []
    loads: list[float] = []
    agent_cpu: list[float] = []  # the agent process's CPU at the first and the last hand
    # the server's main process's and its whole tree's CPU at the first and the last hand
    server_steady: list[tuple[float, float]] = []

    def on_hand(_hand) -> None:
        stamps.append(time.perf_counter())
        if len(stamps) in (1, hands):
            agent_cpu.append(tree_cpu(agent.pid))
            server_steady.append((process_cpu(server.pid), tree_cpu(server.pid)))

    try:
        dealer = MatchDealer(
            DealerConfig(
                match="holdem",
                game_file=HOLDEM_FILE.name,
                game=game,
                hands=hands,
                seed=42,
                names=("mbbr", opponent),
                quiet=True,
                log_path=(logs or workdir) / "holdem.log",
                start_timeout_ms=600_000,
                fixed_seats=True,
            ),
            stdout=io.StringIO(),
            stderr=io.StringIO(),
            on_hand=on_hand,
        )
        ports = dealer.listen()
        command = [sys.executable, "-m", "oppmodel.clients.commands.acpc_agent_cmd"]
        command += [str(HOLDEM_FILE), "127.0.0.1", str(ports[0]), "--service", target]
        command += ["--seed", str(seed), "--json", "--service-wait", "600"]
        agent = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=kept("agent.log"), text=True
        )
        policy = Paced(make_policy(opponent, game, seed + 1), rate)
        other = threading.Thread(
            target=lambda: play_match(game, connect("127.0.0.1", ports[1], 60), policy),
            daemon=True,
        )
        other.start()
        stop = threading.Event()
        sampler = load_sampler(loads, stop)
        cpu, harness_cpu = tree_cpu(server.pid), time.process_time()
        result = dealer.run()
        cpu, harness_cpu = tree_cpu(server.pid) - cpu, time.process_time() - harness_cpu
        stop.set()
        sampler.join()
        tally = json.loads(agent.communicate()[0])
        other.join()
    finally:
        server.terminate()
        server.wait(60)
    if result.status != 0:
        raise RuntimeError(f"the hold'em match failed: {result.error}")
    decisions = tally["service_decisions"] + tally["fallback_decisions"]
    (main_first, tree_first), (main_last, tree_last) = server_steady
    workers_first, workers_last = tree_first - main_first, tree_last - main_last
    return {
        "benchmark": "acpc-holdem-service",
        "hands": hands,
        "pace_hands_per_second": rate,
        "opponent": opponent,
        "hands_per_second": (len(stamps) - 1) / (stamps[-1] - stamps[0]),
        "service_decisions": tally["service_decisions"],
        "fallback_decisions": tally["fallback_decisions"],
        "outages": tally["outages"],
        "getaction_ms": tally["service_decision_ms"],
        "decision_budget_ms": tally["decision_budget_ms"],
        "server_cpu_ms_per_decision": 1000 * cpu / max(1, decisions),
        "server_cpu_ms_per_hand": 1000 * cpu / hands,
        "server_main_cpu_ms_per_hand": 1000 * (main_last - main_first) / (hands - 1),
        "model_workers_cpu_ms_per_hand": 1000 * (workers_last - workers_first) / (hands - 1),
        "agent_cpu_ms_per_hand": 1000 * (agent_cpu[-1] - agent_cpu[0]) / (hands - 1),
        "harness_cpu_ms_per_hand": 1000 * harness_cpu / hands,
        "cores": os.cpu_count(),
        "load_average": {"median": statistics.median(loads), "min": min(loads), "max": max(loads)},
        "mbb_per_hand": tally.get("mbb_per_hand"),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter matches, fewer repeats")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    parser.add_argument("--holdem", action="store_true", help="the served hold'em match only")
    parser.add_argument("--hands", type=int, help="--holdem: hands (default 3000; quick 200)")
    parser.add_argument("--rate", type=float, default=100.0, help="--holdem: hands/s at most")
    parser.add_argument("--opponent", default="calling-station", help="--holdem: the style")
    parser.add_argument("--seed", type=int, default=0, help="--holdem: the agents' seed")
    parser.add_argument("--logs", type=Path, help="--holdem: keep the logs here")
    args = parser.parse_args()
    if args.holdem:
        with tempfile.TemporaryDirectory() as tmp:
            hands = args.hands or (200 if args.quick else 3000)
            report = holdem_match(hands, args.rate, args.opponent, Path(tmp), args.seed, args.logs)
        print(json.dumps(report, indent=None if args.json else 2))
        return
    hands, repeats = (1000, 3) if args.quick else (3000, 5)
    figures: dict[str, list[float]] = {
        "processes": [],
        "threads": [],
        "dealer_cpu": [],
        "dealer_logic": [],
        "service": [],
        "mbbr_in_process": [],
    }
    fallbacks = 0
    with tempfile.TemporaryDirectory() as tmp:
        run_match(100, "threads", Path(tmp))  # warm-up
        server, target = start_service(Path(tmp))
        try:
            run_match(100, "service", Path(tmp), target)  # warm-up: the server's kernels
            for _ in range(repeats):
                rate, cpu, _ = run_match(hands, "processes", Path(tmp))
                figures["processes"].append(rate)
                figures["dealer_cpu"].append(cpu)
                figures["threads"].append(run_match(hands, "threads", Path(tmp))[0])
                figures["dealer_logic"].append(dealer_logic(3000, Path(tmp)))
                rate, _, missed = run_match(hands, "service", Path(tmp), target)
                figures["service"].append(rate)
                fallbacks += missed
                figures["mbbr_in_process"].append(run_match(hands, "mbbr", Path(tmp))[0])
        finally:
            server.terminate()
            server.wait(30)
    median = {name: statistics.median(values) for name, values in figures.items()}
    report = {
        "benchmark": "acpc",
        "hands_per_match": hands,
        "repeats": repeats,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processes_hands_per_second": median["processes"],
        "threads_hands_per_second": median["threads"],
        "dealer_cpu_us_per_hand": 1e6 * median["dealer_cpu"],
        "dealer_logic_us_per_hand": 1e6 * median["dealer_logic"],
        "reference_hands_per_second": REFERENCE_HANDS_PER_SECOND,
        "processes_vs_reference": median["processes"] / REFERENCE_HANDS_PER_SECOND,
        "service_hands_per_second": median["service"],
        "service_vs_processes": median["service"] / median["processes"],
        "mbbr_in_process_hands_per_second": median["mbbr_in_process"],
        "service_vs_mbbr_in_process": median["service"] / median["mbbr_in_process"],
        "service_fallback_decisions": fallbacks,
        "samples": figures,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"3p Kuhn over loopback TCP, {hands} hands per match, median of {repeats}")
    print(f"  agent processes: {median['processes']:8.0f} hands/s")
    print(f"  agent threads:   {median['threads']:8.0f} hands/s")
    print(f"  dealer CPU:      {1e6 * median['dealer_cpu']:8.0f} us/hand (system calls included)")
    print(f"  dealer logic:    {1e6 * median['dealer_logic']:8.0f} us/hand (in-memory seats)")
    print(
        f"  reference dealer + C example players: {REFERENCE_HANDS_PER_SECOND:.0f} hands/s "
        f"(ratio {report['processes_vs_reference']:.2f})"
    )
    print(
        f"  MBBR through the service: {median['service']:8.0f} hands/s "
        f"(x{report['service_vs_processes']:.2f} of the example players; "
        f"{fallbacks} decisions fell back to N1)"
    )
    print(
        f"  MBBR in-process:          {median['mbbr_in_process']:8.0f} hands/s "
        f"(service / in-process x{report['service_vs_mbbr_in_process']:.2f})"
    )


if __name__ == "__main__":
    main()
