"""Benchmark: the bundled blueprints (``cfr``) and hold'em styles as ACPC agents against the
project's dealer over loopback TCP, in both ACPC limit hold'em games: the time of each decision
and the dealer's warnings.

Each game plays one match of ``--hands`` hands (deck seed 42); each seat is the project's agent
(``play_match``, as ``acpc-agent`` runs it, its policy built before the match: the blueprint's
file read) in a thread of this process, its policy the blueprint or a hold'em style; every call
of the policy's ``act`` (from the MATCHSTATE to the letter: the spot, the buckets or hand
strength of our cards, the draw) is timed with ``time.perf_counter``, and its thread's CPU time
with ``time.thread_time``. Printed per game: the decisions, their median, 99th percentile and
largest time in ms (all seats', then each agent's 99th percentile of wall and CPU time), the
dealer's WARNING lines
(an invalid action or a malformed reply would make one) and its exit status. The threads share
the interpreter with the dealer and each other, so a decision may wait for another seat's work:
the figures are an upper bound of a lone agent process's.

    python benchmarks/holdem_play.py [--hands 1000] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from oppmodel.clients.acpc.agent import Decision, SeatHand, connect, make_policy, play_match
from oppmodel.clients.acpc.dealer import DealerConfig, MatchDealer
from oppmodel.modeling.games.acpc.gamedef import read_game_def

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "acpc"
GAMES = {
    "holdem.limit.2p.reverse_blinds.game": ("cfr", "maniac"),  # the bundled blueprints
    "holdem.limit.3p.game": ("cfr", "maniac", "calling-station"),
}


class Timed:
    """A policy whose every decision is timed: wall time, and the CPU time of its thread."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.times: list[float] = []
        self.cpu: list[float] = []

    def act(self, decision: Decision) -> str:
        start, cpu = time.perf_counter(), time.thread_time()
        action = self.inner.act(decision)
        self.times.append(time.perf_counter() - start)
        self.cpu.append(time.thread_time() - cpu)
        return action

    def observe(self, hand: SeatHand) -> None:
        self.inner.observe(hand)


def run_game(file: str, names: tuple[str, ...], hands: int, workdir: Path) -> dict:
    game = read_game_def(DATA / file)
    err = io.StringIO()
    dealer = MatchDealer(
        DealerConfig(
            match="bench",
            game_file=file,
            game=game,
            hands=hands,
            seed=42,
            names=names,
            log_path=workdir / f"{file}.log",
            start_timeout_ms=60_000,
        ),
        stdout=io.StringIO(),
        stderr=err,
    )
    policies = [Timed(make_policy(name, game, seed)) for seed, name in enumerate(names)]
    threads = []
    for port, policy in zip(dealer.listen(), policies, strict=True):

        def play(port: int = port, policy: Timed = policy) -> None:
            play_match(game, connect("127.0.0.1", port, 10), policy, read_timeout=120)

        threads.append(threading.Thread(target=play, daemon=True))
        threads[-1].start()
    result = dealer.run()
    for thread in threads:
        thread.join()
    times = 1000 * np.array([t for policy in policies for t in policy.times])
    return {
        "game": file,
        "agents": list(names),
        "hands": result.hands_played,
        "status": result.status,
        "warnings": err.getvalue().count("WARNING"),
        "decisions": int(times.size),
        "median_ms": float(np.median(times)),
        "p99_ms": float(np.percentile(times, 99)),
        "max_ms": float(times.max()),
        "p99_ms_by_agent": {
            name: float(np.percentile(1000 * np.array(policy.times), 99))
            for name, policy in zip(names, policies, strict=True)
        },
        "p99_cpu_ms_by_agent": {
            name: float(np.percentile(1000 * np.array(policy.cpu), 99))
            for name, policy in zip(names, policies, strict=True)
        },
        "max_ms_by_agent": {
            name: float(1000 * max(policy.times))
            for name, policy in zip(names, policies, strict=True)
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=1000, help="hands per match (default 1000)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for file, names in GAMES.items():
            rows.append(run_game(file, names, args.hands, Path(tmp)))
            if not args.json:
                r = rows[-1]
                print(
                    f"{file}: {r['hands']} hands, {r['decisions']} decisions, median "
                    f"{r['median_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms, max {r['max_ms']:.1f} ms, "
                    f"{r['warnings']} warnings, status {r['status']}; p99 by agent "
                    + ", ".join(f"{k} {v:.2f} ms" for k, v in r["p99_ms_by_agent"].items())
                    + "; p99 CPU by agent "
                    + ", ".join(f"{k} {v:.2f} ms" for k, v in r["p99_cpu_ms_by_agent"].items()),
                    flush=True,
                )
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
