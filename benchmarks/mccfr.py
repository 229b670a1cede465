"""The sampled solver against the exact one: nash_conv by CPU time, external-sampling MCCFR and
CFR+ on the same game in one run, and MCCFR's iterations per CPU second on hold'em's abstract game.

- **Convergence.** On a compiled game (default leduc2p) each solver runs in steps; after each step
  its average strategy's exact nash_conv is recorded with the process CPU time spent in the solver
  so far (the measurement itself not charged). MCCFR's rows are the median over ``--seeds`` seeds
  at each step. CFR+ sweeps every deal per iteration and is the better choice wherever it fits;
  MCCFR is what remains for games whose deals cannot be enumerated.
- **Hold'em.** ``--holdem-deals`` deals of 2-player hold'em's abstract game (the default card
  abstraction, imperfect recall; the deals are bucketed first, cached, not charged): MCCFR's
  iterations per CPU second, and the abstract game's nash_conv at the end.

Run: ``python benchmarks/mccfr.py [--quick] [--json] [--out FILE]`` (under ``nice -n 19``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from oppmodel.clients.lab.reports import emit_report, machine, report_arguments
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.holdem_abstract import AbstractGameConfig, abstract_game
from oppmodel.modeling.solve.cfr import CFRSolver
from oppmodel.modeling.solve.mccfr import MCCFRConfig, MCCFRSolver


def curve(solver: CFRSolver, steps: list[int]) -> list[dict]:
    """nash_conv after each total of iterations in ``steps``, with the solver's CPU seconds."""
    rows, spent = [], 0.0
    for total in steps:
        started = time.process_time()
        solver.run(total - solver.iteration)
        spent += time.process_time() - started
        rows.append({"iterations": total, "cpu_seconds": spent, "nash_conv": solver.nash_conv()})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="leduc2p", help="a compiled game (default leduc2p)")
    parser.add_argument("--quick", action="store_true", help="a tenth of the iterations")
    parser.add_argument("--seeds", type=int, default=3, help="MCCFR seeds (default 3)")
    parser.add_argument("--holdem-deals", type=int, default=2000, help="default 2000")
    report_arguments(parser)
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    game = limit_game(args.game)
    sampled = [[10**k // scale for k in range(4, 8)] for _ in range(args.seeds)]
    runs = [curve(MCCFRSolver(game, MCCFRConfig(seed=s)), sampled[s]) for s in range(args.seeds)]
    mccfr = [
        {key: statistics.median(run[i][key] for run in runs) for key in runs[0][i]}
        for i in range(len(runs[0]))
    ]
    exact = curve(CFRSolver(game), [max(10, 1000 // scale) * k for k in (1, 2, 5, 10)])
    holdem = abstract_game("holdem2p", AbstractGameConfig(deals=args.holdem_deals))
    solver = MCCFRSolver(holdem, MCCFRConfig(seed=0))
    iterations = 200_000 // scale
    started = time.process_time()
    solver.run(iterations)
    rate = iterations / (time.process_time() - started)
    result = {
        "game": args.game,
        "mccfr": mccfr,
        "cfr_plus": exact,
        "holdem2p": {
            "game": holdem.name,
            "infosets": int(sum(holdem.infosets_per_position)),
            "iterations_per_cpu_second": rate,
            "iterations": iterations,
            "nash_conv": solver.nash_conv(),
        },
        "machine": machine(),
    }
    if emit_report(result, args.out, args.json):
        return 0
    for name in ("mccfr", "cfr_plus"):
        for row in result[name]:
            print(f"{name:8} {row['iterations']:>10,.0f} it {row['cpu_seconds']:8.2f} s CPU  "
                  f"nash_conv {row['nash_conv']:.4g}")  # fmt: skip
    h = result["holdem2p"]
    rate = h["iterations_per_cpu_second"]
    print(f"holdem2p {h['game']}: {h['infosets']:,} infosets, {rate:,.0f} "
          f"it/CPU s, nash_conv {h['nash_conv']:.4g} after {h['iterations']:,}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
