"""First-move search time for 3-player perfect-information Spades (prob-max^n and max^n).

For each of N seeded deals (7 cards each by default) the seat ``deal % 3`` leads; both searches
run from that first position with a cold transposition table (2^17 entries, allocated once and
invalidated between deals). The JIT is warmed on a separate deal first. Reports, per algorithm,
the median and 95th-percentile wall time and CPU time (CPU time is robust to a busy shared
machine), the median node count, the aggregate nodes per second, and the ratio of the prob-max^n
to the max^n median.

    python benchmarks/spades.py [--deals 100] [--hand-size 7] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from oppmodel.modeling.games.spades.bidding import bids
from oppmodel.modeling.games.spades.cards import deal
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.modeling.perfect_info import spades_search as S
from oppmodel.modeling.perfect_info.transposition import SearchTable


def _summary(times: list[float], cpu: list[float], nodes: list[int]) -> dict:
    t = np.asarray(times)
    c = np.asarray(cpu)
    return {
        "median_ms": float(np.median(t) * 1e3),
        "p95_ms": float(np.percentile(t, 95) * 1e3),
        "max_ms": float(t.max() * 1e3),
        "median_cpu_ms": float(np.median(c) * 1e3),
        "p95_cpu_ms": float(np.percentile(c, 95) * 1e3),
        "median_nodes": float(np.median(nodes)),
        "nodes_per_s": float(np.sum(nodes) / np.sum(t)),
        "nodes_per_cpu_s": float(np.sum(nodes) / np.sum(c)),
    }


def run(n_deals: int, hand_size: int, seed: int, eps: float) -> dict:
    """Time both searches on ``n_deals`` seeded deals; returns the summary as a dict."""
    table = SearchTable(17)
    weights = np.full((3, 2), 0.5)

    def timed(search) -> tuple[float, float, int]:
        table.clear()
        c0, t0 = time.process_time(), time.perf_counter()
        nodes = search().nodes
        return time.perf_counter() - t0, time.process_time() - c0, nodes

    def one(deal_index: int, rng: np.random.Generator) -> tuple[tuple, tuple]:
        hands = deal(rng, hand_size)
        leader = deal_index % 3
        state = SpadesState.start(hands, leader)
        b = bids(hands)
        pm = timed(
            lambda: S.probmaxn_search(
                state, b, me=leader, true_model="mOT", weights=weights, eps=eps, table=table
            )
        )
        mx = timed(lambda: S.maxn_search(state, b, ("mOT", "MT", "MT"), table=table))
        return pm, mx

    one(0, np.random.default_rng([seed, 10**6]))  # warm the JIT (and the table's pages)
    runs = [one(i, np.random.default_rng([seed, i])) for i in range(n_deals)]
    pm = _summary(*zip(*(r[0] for r in runs), strict=True))
    mx = _summary(*zip(*(r[1] for r in runs), strict=True))
    return {
        "benchmark": "spades_first_move",
        "deals": n_deals,
        "hand_size": hand_size,
        "seed": seed,
        "eps": eps,
        "probmaxn": pm,
        "maxn": mx,
        "ratio_probmaxn_to_maxn_median": pm["median_ms"] / mx["median_ms"],
        "goal_probmaxn_median_ms": 100.0,
        "goal_met": pm["median_ms"] < 100.0,
    }


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run, and print a table or JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--deals", type=int, default=100, help="number of seeded deals (default 100)")
    ap.add_argument("--hand-size", type=int, default=7, help="cards per player (default 7)")
    ap.add_argument("--seed", type=int, default=2007, help="seed of the deal sequence")
    ap.add_argument("--eps", type=float, default=0.1, help="prob-max^n epsilon (default 0.1)")
    ap.add_argument("--quick", action="store_true", help="20 deals only")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    res = run(20 if args.quick else args.deals, args.hand_size, args.seed, args.eps)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"{res['deals']} deals, {res['hand_size']} cards each, first move, cold table")
    cols = ("median ms", "p95 ms", "max ms", "cpu med ms", "cpu p95 ms", "nodes")
    print(f"{'':10s} " + " ".join(f"{c:>10s}" for c in cols) + f" {'nodes/cpu-s':>12s}")
    for name in ("probmaxn", "maxn"):
        r = res[name]
        keys = ("median_ms", "p95_ms", "max_ms", "median_cpu_ms", "p95_cpu_ms")
        print(
            f"{name:10s} "
            + " ".join(f"{r[k]:10.1f}" for k in keys)
            + f" {r['median_nodes']:10.0f} {r['nodes_per_cpu_s']:12.3g}"
        )
    print(f"prob-max^n / max^n median time: {res['ratio_probmaxn_to_maxn_median']:.2f}")
    print(f"goal (prob-max^n median < 100 ms): {'met' if res['goal_met'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
