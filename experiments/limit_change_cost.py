"""What change detection costs MBBR per hand in limit games, and what it holds, measured in one run.

Per game, MBBR (the library's defaults but for ``change_hazard``) plays ``--hands`` hands against
``cfr`` opponents (our position rotating), once without change detection (hazard 0) and once with
it (``--change-hazard``), the two interleaved ``--reps`` times on the same cards so machine load
touches both alike. Timed per hand: choosing the policy (``policy``, the response solved as the
agent would) and observing the hand. Reported per setting: the median over repetitions of the mean
seconds per hand, and of the observe step alone; their ratio with to without; at the end of a
match the model's memory (``nbytes``), its snapshot's size and the time to take and restore it
(what the service stores and reloads); the load average before and after.

    python experiments/limit_change_cost.py [--games leduc2p,leduc3p] [--hands 600] [--reps 3]
                                           [--change-hazard 1e-5] [--json] [--out FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

from oppmodel.clients.lab.reports import emit_report, machine
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import observe_limit_hand
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.match import sample_terminal
from oppmodel.modeling.play.tournament import seated_profile


def play(game, config: MBBRConfig, hands: int, seed: int) -> dict:
    """One timed match against cfr opponents: seconds per hand, observe seconds per hand, and
    the model's memory and snapshot at the end."""
    model = build_model(game, config)
    pair = (fixed_profile(game, "cfr"),) * (game.num_players - 1)
    rng = np.random.default_rng(seed)
    total = observing = 0.0
    for t in range(hands):
        p = t % game.num_players
        began = time.perf_counter()
        us = model.default_strategy.copy()
        us[p] = model.policy(p)
        chosen = time.perf_counter()
        deal = int(rng.integers(game.num_deals))
        terminal = sample_terminal(game, seated_profile(game, p, us, pair), deal, rng)
        obs = observe_limit_hand(game, p, deal, terminal)
        dealt = time.perf_counter()
        model.observe(obs)
        done = time.perf_counter()
        total += (chosen - began) + (done - dealt)
        observing += done - dealt
    began = time.perf_counter()
    blob = model.snapshot()
    taken = time.perf_counter()
    build_model(game, config).restore(blob)
    restored = time.perf_counter()
    return {
        "seconds_per_hand": total / hands,
        "observe_seconds_per_hand": observing / hands,
        "nbytes": model.nbytes(),
        "snapshot_bytes": len(blob),
        "snapshot_seconds": taken - began,
        "restore_seconds": restored - taken,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="leduc2p,leduc3p", help="(%(default)s)")
    parser.add_argument("--hands", type=int, default=600, help="hands per match (%(default)s)")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions (%(default)s)")
    parser.add_argument("--change-hazard", type=float, default=MBBRConfig.change_hazard)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the report as JSON only")
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    rows = []
    for name in args.games.split(","):
        game = limit_game(name)
        settings = {"without": 0.0, "with": args.change_hazard}
        play(game, MBBRConfig(change_hazard=args.change_hazard), 30, args.seed)  # compile
        runs: dict[str, list[dict]] = {kind: [] for kind in settings}
        for rep in range(args.reps):
            for kind, hazard in settings.items():
                config = dataclasses.replace(MBBRConfig(seed=rep), change_hazard=hazard)
                runs[kind].append(play(game, config, args.hands, args.seed + rep))
        medians = {
            kind: {key: float(np.median([r[key] for r in found])) for key in found[0]}
            for kind, found in runs.items()
        }
        rows.append(
            {
                "game": name,
                **{kind: values for kind, values in medians.items()},
                "ratio_per_hand": medians["with"]["seconds_per_hand"]
                / medians["without"]["seconds_per_hand"],
                "ratio_observe": medians["with"]["observe_seconds_per_hand"]
                / medians["without"]["observe_seconds_per_hand"],
            }
        )
    report = {
        "benchmark": "limit_change_detection_cost",
        "hands": args.hands,
        "reps": args.reps,
        "change_hazard": args.change_hazard,
        "load_before": list(load_before),
        "load_after": list(os.getloadavg()),
        "machine": machine(),
        "rows": rows,
    }
    if emit_report(report, args.out, args.json):
        return 0
    print(
        f"MBBR against cfr, {args.hands} hands, median of {args.reps} interleaved repetitions; "
        f"load {load_before[0]:.1f} -> {report['load_after'][0]:.1f}\n"
    )
    print(
        "| game | detection | ms per hand | observe ms per hand | memory MiB | snapshot MB "
        "| snapshot ms | restore ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        for kind in ("without", "with"):
            m = row[kind]
            print(
                f"| {row['game']} | {kind} | {1000 * m['seconds_per_hand']:.2f} "
                f"| {1000 * m['observe_seconds_per_hand']:.2f} | {m['nbytes'] / 2**20:.1f} "
                f"| {m['snapshot_bytes'] / 1e6:.2f} | {1000 * m['snapshot_seconds']:.0f} "
                f"| {1000 * m['restore_seconds']:.0f} |"
            )
        print(
            f"| {row['game']} | ratio | {row['ratio_per_hand']:.2f}x | {row['ratio_observe']:.2f}x "
            "| | | | |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
