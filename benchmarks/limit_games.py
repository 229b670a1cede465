"""Leduc hold'em: best response and one CFR+ iteration, ours vs OpenSpiel's C++, in one run.

Both sides run in this process on the same inputs, interleaved where they are repeated, so that
machine load affects both alike; medians are reported with the load average before and after.

- **Best response** in 3-player Leduc (``--br-game``) to fresh random profiles (seeded; the
  position cycles 0, 1, 2). Ours: ``oppmodel.modeling.evaluation.limit.best_response(game, profile,
  p)``, validation included. OpenSpiel: ``pyspiel.TabularBestResponse.set_policy(table)`` then
  ``value_from_state(root)`` on one best-responder per position built beforehand (construction, 16 s
  or more here, is reported apart and not charged); the table is OpenSpiel's ``{infostate: [(action,
  prob)]}`` form, converted beforehand (not charged either). The values must agree within 1e-9.
  OpenSpiel is slow here (seconds per call), so it is measured on a few profiles only
  (``--openspiel-calls``); ours on many more.
- **One CFR+ iteration** in 2- and 3-player Leduc. Ours: ``CFRSolver.run(1)`` (alternating
  updates over the compiled tree, every deal). OpenSpiel: ``CFRPlusSolver.evaluate_and_update_
  policy()`` (C++; alternating updates, regret matching+, linear averaging, likewise exact).
  Construction is not timed on either side; the first iteration is a warm-up on ours (numba
  compiles) and timed on OpenSpiel's (it has no compile step; 3-player iterations take seconds,
  so only a few are run).

Goals (issue 15): best response at most 1/100 of OpenSpiel's time; a CFR+ iteration at least
10x faster. Run: ``python benchmarks/limit_games.py [--quick] [--json] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pyspiel

from oppmodel.modeling.evaluation.limit import best_response
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.openspiel import openspiel_policy_table
from oppmodel.modeling.games.acpc.strategy import random_profile
from oppmodel.modeling.solve.cfr import CFRSolver

BR_GOAL = 0.01
CFR_GOAL = 0.1
OPENSPIEL_GAMES = {"leduc2p": "leduc_poker(players=2)", "leduc3p": "leduc_poker(players=3)"}


def _seconds(fn, *args) -> tuple[object, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def best_response_benchmark(name: str, ours_calls: int, openspiel_calls: int, seed: int) -> dict:
    game = limit_game(name)
    os_game = pyspiel.load_game(OPENSPIEL_GAMES[name])
    root = os_game.new_initial_state()
    rng = np.random.default_rng(seed)
    profiles = [random_profile(game, rng) for _ in range(max(ours_calls, openspiel_calls))]
    tables = [openspiel_policy_table(game, profiles[i], os_game) for i in range(openspiel_calls)]
    best_response(game, profiles[0], 0)  # numba compiles
    construction = []
    responders = []
    for p in range(game.num_players):
        responder, seconds = _seconds(pyspiel.TabularBestResponse, os_game, p, tables[0])
        responders.append(responder)
        construction.append(seconds)
    ours, theirs, max_diff = [], [], 0.0
    for i, profile in enumerate(profiles):
        p = i % game.num_players
        (_, value), seconds = _seconds(best_response, game, profile, p)
        ours.append(seconds)
        if i < openspiel_calls:
            responders[p].set_policy(tables[i])
            their_value, seconds = _seconds(responders[p].value_from_state, root)
            theirs.append(seconds)
            max_diff = max(max_diff, abs(value - their_value))
    if max_diff > 1e-9:
        raise AssertionError(f"best-response values disagree with OpenSpiel by {max_diff}")
    ratio = float(np.median(ours) / np.median(theirs))
    return {
        "game": name,
        "ours_calls": len(ours),
        "openspiel_calls": len(theirs),
        "ours_seconds_median": float(np.median(ours)),
        "openspiel_seconds_median": float(np.median(theirs)),
        "openspiel_seconds": theirs,
        "openspiel_construction_seconds": construction,
        "ratio": ratio,
        "goal_ratio": BR_GOAL,
        "goal_met": ratio <= BR_GOAL,
        "max_value_difference": max_diff,
    }


def cfr_benchmark(name: str, ours_iterations: int, openspiel_iterations: int) -> dict:
    game = limit_game(name)
    os_game = pyspiel.load_game(OPENSPIEL_GAMES[name])
    solver = CFRSolver(game)
    solver.run(1)  # numba compiles
    theirs_solver = pyspiel.CFRPlusSolver(os_game)
    ours, theirs = [], []
    for i in range(max(ours_iterations, openspiel_iterations)):
        if i < ours_iterations:
            ours.append(_seconds(solver.run, 1)[1])
        if i < openspiel_iterations:
            theirs.append(_seconds(theirs_solver.evaluate_and_update_policy)[1])
    speedup = float(np.median(theirs) / np.median(ours))
    return {
        "game": name,
        "ours_iterations": len(ours),
        "openspiel_iterations": len(theirs),
        "ours_seconds_median": float(np.median(ours)),
        "openspiel_seconds_median": float(np.median(theirs)),
        "openspiel_seconds": theirs,
        "speedup": speedup,
        "goal_speedup": 1 / CFR_GOAL,
        "goal_met": speedup >= 1 / CFR_GOAL,
    }


def run(quick: bool, seed: int, openspiel_calls: int) -> dict:
    load_before = os.getloadavg()
    result = {
        "benchmark": "limit_games",
        "unit": "seconds (median)",
        "sizes": {name: limit_game(name).sizes() for name in OPENSPIEL_GAMES},
        "best_response": best_response_benchmark(
            "leduc3p", 10 if quick else 60, 1 if quick else openspiel_calls, seed
        ),
        "cfr_plus_iteration": [
            cfr_benchmark("leduc2p", 50 if quick else 500, 10 if quick else 50),
            cfr_benchmark("leduc3p", 5 if quick else 30, 1 if quick else openspiel_calls),
        ],
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "seed": seed,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="one OpenSpiel call per measure (about a minute)"
    )
    parser.add_argument(
        "--openspiel-calls",
        type=int,
        default=3,
        help="OpenSpiel's 3-player calls (seconds each; default 3)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random profiles")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--out", type=Path, help="also write the JSON result to this file")
    args = parser.parse_args(argv)
    result = run(args.quick, args.seed, args.openspiel_calls)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    br = result["best_response"]
    print(
        f"best response, {br['game']}: ours {br['ours_seconds_median'] * 1e3:.1f} ms "
        f"({br['ours_calls']} calls), OpenSpiel C++ {br['openspiel_seconds_median']:.2f} s "
        f"({br['openspiel_calls']} calls): ratio {br['ratio']:.5f} "
        f"(goal <= {BR_GOAL}: {'met' if br['goal_met'] else 'NOT met'})"
    )
    for cfr in result["cfr_plus_iteration"]:
        print(
            f"CFR+ iteration, {cfr['game']}: ours {cfr['ours_seconds_median'] * 1e3:.2f} ms, "
            f"OpenSpiel C++ {cfr['openspiel_seconds_median'] * 1e3:.1f} ms "
            f"({cfr['openspiel_iterations']} iterations): {cfr['speedup']:.0f}x faster "
            f"(goal >= {1 / CFR_GOAL:.0f}x: {'met' if cfr['goal_met'] else 'NOT met'})"
        )
    before, after = result["load_average_before"][0], result["load_average_after"][0]
    print(f"load average (1 min): {before:.2f} before, {after:.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
