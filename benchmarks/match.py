"""Match engine throughput in hands per second (3-player Kuhn, duplicate series).

Timed: ``oppmodel.modeling.play.match.run_duplicate`` over whole duplicate series (agents built per
match, decks drawn, every seating played, results aggregated), median of several repeats, for
- ``fixed_kernel``: three fixed-strategy agents (n1, maniac, n3): the numba kernel path;
- ``fixed_python``: the same agents through the engine's Python loop (a ``FixedStrategyAgent``
  subclass, which the kernel path does not take): what any non-fixed agent pays for the engine;
- ``mbbr``: MBBR (paper defaults, k = 10, mean response) against n1 and n3: engine plus model.
The ratio ``fixed_kernel / fixed_python`` is the kernel's speed-up. The issue's goal is at least
50,000 hands/s for fixed-strategy agents.

Run: ``python benchmarks/match.py [--quick] [--json]`` (``--quick`` finishes well under 30 s).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import numpy as np

from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play.agents import mbbr_factory
from oppmodel.modeling.play.match import FixedStrategyAgent, run_duplicate
from oppmodel.modeling.play.panel import named_profile

GOAL_FIXED_HANDS_PER_SECOND = 50_000


class PythonLoopAgent(FixedStrategyAgent):
    """A fixed strategy routed through the engine's Python loop."""


def _fixed(cls, name: str):
    def build(game, seed):
        return cls(name, game, named_profile(game, name), seed)

    return build


def _hands_per_second(names, factories, *, hands: int, duplicates: int, repeats: int) -> float:
    game = limit_game("kuhn3p")
    run_duplicate(game, names, factories, hands=50, duplicates=1, seed=99)  # warm the JIT
    rates = []
    for r in range(repeats):
        start = time.perf_counter()
        run_duplicate(game, names, factories, hands=hands, duplicates=duplicates, seed=r)
        rates.append(hands * duplicates * 6 / (time.perf_counter() - start))
    return float(np.median(rates))


def run(quick: bool) -> dict:
    names = ["n1", "maniac", "n3"]
    scale = 1 if quick else 5
    kernel = _hands_per_second(
        names, [_fixed(FixedStrategyAgent, nm) for nm in names],
        hands=20_000, duplicates=scale, repeats=3 if quick else 5,
    )  # fmt: skip
    python = _hands_per_second(
        names, [_fixed(PythonLoopAgent, nm) for nm in names],
        hands=1_000 * scale, duplicates=1, repeats=3,
    )  # fmt: skip
    mbbr_names = ["mbbr", "n1", "n3"]
    mbbr = _hands_per_second(
        mbbr_names,
        [mbbr_factory(MBBRConfig()), *[_fixed(FixedStrategyAgent, nm) for nm in ("n1", "n3")]],
        hands=300 * scale, duplicates=1, repeats=3,
    )  # fmt: skip
    return {
        "benchmark": "match",
        "game": "kuhn3p",
        "unit": "hands per second (median over repeats; 6 seatings per duplicate)",
        "fixed_kernel_hands_per_s": kernel,
        "fixed_python_hands_per_s": python,
        "mbbr_vs_n1_n3_hands_per_s": mbbr,
        "kernel_speedup": kernel / python,
        "goal_fixed_hands_per_s": GOAL_FIXED_HANDS_PER_SECOND,
        "goal_met": kernel >= GOAL_FIXED_HANDS_PER_SECOND,
        "quick": quick,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller series (under 30 s)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    result = run(args.quick)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print("match engine, 3p Kuhn duplicate series (median hands/s)")
    print(f"  fixed agents, numba kernel: {result['fixed_kernel_hands_per_s']:12,.0f}")
    print(f"  fixed agents, Python loop:  {result['fixed_python_hands_per_s']:12,.0f}")
    print(f"  MBBR (k=10) vs n1, n3:      {result['mbbr_vs_n1_n3_hands_per_s']:12,.0f}")
    print(
        f"  kernel speed-up {result['kernel_speedup']:.0f}x; goal >= "
        f"{GOAL_FIXED_HANDS_PER_SECOND:,} hands/s: {'met' if result['goal_met'] else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
