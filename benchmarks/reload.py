"""Reload time of the largest sessions the server's limits allow, after a restart.

Usage: ``python benchmarks/reload.py [--quick] [--json] [--hands 3000] [--repeats 5]``

For each case (the sample posterior at the largest joint table the limits allow, for 4, 3 and 2
players; the Dirichlet posterior with the informed and the typed prior, for 4 and 3 players) a
server in its own process (``oppmodel serve``) receives ``--hands`` hands of uniform play on one
Observe stream, in batches, and stops (SIGTERM). Then, ``--repeats`` times: a new server starts on
the same SQLite file and the first GetSession is timed; it loads the session (build from the spec,
restore the latest snapshot, replay the hands after it). The server's "session loaded" log line
says how many hands it replayed. Where the last snapshot falls is luck, so the reload is timed
again with the longest tail the snapshot policy allows (the state a crash just before a due
snapshot leaves: a snapshot that far back is written into the database). The same is measured
once with the snapshot removed: the full replay that every reload cost before snapshots (the
peer).

Goal: the median reload of every case under 1 s, and no growth with the hands seen (compare
``--hands`` values). Figures are medians; the machine is shared, so read them beside the full
replay of the same run and the load average printed with them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from oppmodel.clients.client import OpponentModelClient  # noqa: E402
from oppmodel.clients.commands import serve_cmd  # noqa: E402
from oppmodel.modeling.games.interface import ServedModel  # noqa: E402
from oppmodel.modeling.games.kuhn import kuhn_game  # noqa: E402
from oppmodel.modeling.games.kuhn_openspiel import kuhn_openspiel  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig  # noqa: E402
from oppmodel.modeling.observation import HandObservation, observe_hand  # noqa: E402
from oppmodel.modeling.play.panel import named_profile  # noqa: E402
from oppmodel.server.session_spec import Limits  # noqa: E402


def largest_k(players: int, limits: Limits) -> int:
    """The largest k with k <= max_k and k^(n-1) <= max_joint_samples."""
    k = min(limits.max_k, math.floor(limits.max_joint_samples ** (1 / (players - 1)) + 1e-9))
    while (k + 1) ** (players - 1) <= limits.max_joint_samples and k + 1 <= limits.max_k:
        k += 1
    while k ** (players - 1) > limits.max_joint_samples:
        k -= 1
    return k


def cases(limits: Limits) -> list[tuple[str, int, MBBRConfig]]:
    """(name, players, config) of the largest sessions of each kind the limits allow."""
    out = []
    for n in (4, 3, 2):
        k = largest_k(n, limits)
        config = MBBRConfig(k=k, hands_default=0, posterior="samples")
        out.append((f"samples {n}p k={k}", n, config))
    for n in (4, 3):
        for prior in ("informed", "typed"):
            config = MBBRConfig(posterior="dirichlet", prior=prior, hands_default=0)
            out.append((f"dirichlet {prior} {n}p", n, config))
    return out


def hands_of(players: int, count: int, seed: int) -> list[HandObservation]:
    """Observations of seat 0 over ``count`` hands of uniform play (ACPC rotation)."""
    import numpy as np

    game = kuhn_game(players)
    rng = np.random.default_rng(seed)
    table = named_profile(game, "uniform")
    out = []
    for hand in range(count):
        cards = [int(c) for c in rng.permutation(game.num_cards)[:players]]
        history = ""
        while not game.is_terminal(history):
            p = game.current_player(history)
            bet = table[p, game.infoset_index(p, cards[p], history), 1]
            history += "pb"[int(rng.random() < bet)]
        out.append(observe_hand(game, (-hand) % players, history, cards))
    return out


def replayed(players: int, config: MBBRConfig, observations: list[HandObservation]) -> ServedModel:
    """The library's model after ``observations``: a Kuhn session's, the compiled model behind
    the OpenSpiel presentation (what the server's would be)."""
    model = kuhn_openspiel(players).build_model(config)
    for obs in observations:
        model.observe(obs)
    return model


def longest_tail(players: int, config: MBBRConfig, observations: list[HandObservation]) -> int:
    """The most hands a reload can have to replay: the server snapshots once the hands since
    the last snapshot took ``snapshot_seconds`` to apply (or number ``snapshot_hands``; a Kuhn
    snapshot's cost, milliseconds, is under ``snapshot_seconds / snapshot_cost_factor``), checked
    after each commit, and commits at most ``snapshot_seconds`` of hands at once (and at most a
    batch, 100 hands here), so a crash just before a due snapshot leaves about one budget plus
    one commit. Apply times are measured here, on the session's last hands."""
    limits = Limits()
    model = replayed(players, config, observations[:-200])
    start = time.perf_counter()
    for obs in observations[-200:]:
        model.observe(obs)
    per_hand = (time.perf_counter() - start) / 200
    within_budget = math.ceil(limits.snapshot_seconds / per_hand)
    one_commit = min(100, within_budget)
    return min(len(observations), min(limits.snapshot_hands, within_budget) + one_commit)


def _stop(process) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)


def _loaded_event(process) -> dict:
    """The server's "session loaded" log line (read from its stderr after it stopped)."""
    for line in process.stderr:
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("msg") == "session loaded":
                return event
    return {}


def timed_reload(db: Path, sid: str) -> tuple[float, dict]:
    """(seconds of the first GetSession after a restart, the server's load log line)."""
    process, port = serve_cmd.spawn(db)
    try:
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=120) as client:
            start = time.perf_counter()
            client.get_session(sid)
            seconds = time.perf_counter() - start
    finally:
        _stop(process)
    return seconds, _loaded_event(process)


def run_case(players: int, config: MBBRConfig, *, hands: int, repeats: int) -> dict:
    """Fill one session, then time its reloads with and without the snapshot."""
    game = "kuhn_poker" if players == 2 else f"kuhn_poker(players={players})"
    labels = [f"opp_{i}" for i in range(players - 1)]
    observations = hands_of(players, hands, seed=players)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "reload.sqlite"
        process, port = serve_cmd.spawn(db, "--synchronous", "NORMAL")
        try:
            with OpponentModelClient(f"127.0.0.1:{port}", timeout=600) as client:
                sid = client.create_session(
                    game=game, opponent_labels=labels, config=config
                ).session_id
                for first in range(0, hands, 100):
                    client.observe(sid, observations[first : first + 100], first_sequence=first + 1)
        finally:
            _stop(process)
        with sqlite3.connect(db) as raw:
            stored = raw.execute("SELECT hands, length(state) FROM snapshots").fetchone()
        snapshot_hands, snapshot_bytes = stored or (0, 0)
        reloads = [timed_reload(db, sid) for _ in range(repeats)]
        tail = longest_tail(players, config, observations)
        with sqlite3.connect(db) as raw:  # the state a crash just before a snapshot leaves
            state = replayed(players, config, observations[: hands - tail]).snapshot()
            raw.execute("DELETE FROM snapshots")
            raw.execute("INSERT INTO snapshots VALUES (?, ?, ?)", (sid, hands - tail, state))
        worst = [timed_reload(db, sid)[0] for _ in range(repeats)]
        with sqlite3.connect(db) as raw:
            raw.execute("DELETE FROM snapshots")
        full_seconds, full_event = timed_reload(db, sid)
    seconds = [s for s, _ in reloads]
    return {
        "hands": hands,
        "snapshot_hands": snapshot_hands,
        "snapshot_bytes": snapshot_bytes,
        "replayed_hands": reloads[0][1].get("replayed"),
        "reload_ms_median": 1000 * statistics.median(seconds),
        "reload_ms_min": 1000 * min(seconds),
        "reload_ms_max": 1000 * max(seconds),
        "longest_tail_hands": tail,
        "reload_longest_tail_ms_median": 1000 * statistics.median(worst),
        "full_replay_ms": 1000 * full_seconds,
        "full_replay_hands": full_event.get("replayed"),
        "ratio_full_to_snapshot": full_seconds / statistics.median(seconds),
    }


def main() -> None:
    """Run every case and print a table or JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer hands and repeats")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--hands", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", help="run only the cases whose name contains this")
    args = parser.parse_args()
    hands, repeats = (400, 2) if args.quick else (args.hands, args.repeats)
    limits = Limits()
    results: dict[str, object] = {
        "limits": {
            "max_k": limits.max_k,
            "max_joint_samples": limits.max_joint_samples,
            "snapshot_seconds": limits.snapshot_seconds,
            "snapshot_hands": limits.snapshot_hands,
        },
        "load_average_before": os.getloadavg(),
        "cases": {},
    }
    for name, players, config in cases(limits):
        if args.only and args.only not in name:
            continue
        result = run_case(players, config, hands=hands, repeats=repeats)
        results["cases"][name] = result
        if not args.json:
            print(
                f"{name:28s} {result['reload_ms_median']:8.1f} ms reload "
                f"(replayed {result['replayed_hands']}, snapshot {result['snapshot_bytes']} B), "
                f"{result['reload_longest_tail_ms_median']:7.1f} ms replaying "
                f"{result['longest_tail_hands']} "
                f"vs {result['full_replay_ms']:8.1f} ms full replay of {hands} hands",
                flush=True,
            )
    results["load_average_after"] = os.getloadavg()
    results["goal_reload_under_1s"] = all(
        r["reload_ms_median"] < 1000 for r in results["cases"].values()
    )
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"load average {results['load_average_after']}")


if __name__ == "__main__":
    main()
