"""First-move search time for 3-player perfect-information Spades (prob-max^n and max^n).

For each of N seeded deals (7 cards each by default) the seat ``deal % 3`` leads; both searches
run from that first position with a cold transposition table (2^17 entries, allocated once and
invalidated between deals). The JIT is warmed on a separate deal first. Reports, per algorithm,
the median and 95th-percentile time, the median node count, the aggregate nodes per second, and
the ratio of the prob-max^n to the max^n median.

    python benchmarks/spades.py [--deals 100] [--hand-size 7] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from modeling import spades as S


def _summary(times: list[float], nodes: list[int]) -> dict:
    t = np.asarray(times)
    return {
        "median_ms": float(np.median(t) * 1e3),
        "p95_ms": float(np.percentile(t, 95) * 1e3),
        "max_ms": float(t.max() * 1e3),
        "median_nodes": float(np.median(nodes)),
        "nodes_per_s": float(np.sum(nodes) / np.sum(t)),
    }


def run(n_deals: int, hand_size: int, seed: int, eps: float) -> dict:
    """Time both searches on ``n_deals`` seeded deals; returns the summary as a dict."""
    table = S.SearchTable(17)
    weights = np.full((3, 2), 0.5)

    def one(deal_index: int, rng: np.random.Generator) -> tuple[float, int, float, int]:
        hands = S.deal(rng, hand_size)
        leader = deal_index % 3
        pos = S.Position.start(hands, leader)
        b = S.bids(hands)
        table.clear()
        t0 = time.perf_counter()
        r = S.probmaxn_search(
            pos, b, me=leader, true_model="mOT", weights=weights, eps=eps, table=table
        )
        t1 = time.perf_counter()
        table.clear()
        m = S.maxn_search(pos, b, ("mOT", "MT", "MT"), table=table)
        t2 = time.perf_counter()
        return t1 - t0, r.nodes, t2 - t1, m.nodes

    one(0, np.random.default_rng([seed, 10**6]))  # warm the JIT (and the table's pages)
    pm_t, pm_n, mx_t, mx_n = [], [], [], []
    for i in range(n_deals):
        a, b, c, d = one(i, np.random.default_rng([seed, i]))
        pm_t.append(a)
        pm_n.append(b)
        mx_t.append(c)
        mx_n.append(d)
    pm = _summary(pm_t, pm_n)
    mx = _summary(mx_t, mx_n)
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
    cols = ("median ms", "p95 ms", "max ms", "nodes")
    print(f"{'':10s} " + " ".join(f"{c:>10s}" for c in cols) + f" {'nodes/s':>12s}")
    for name in ("probmaxn", "maxn"):
        r = res[name]
        print(
            f"{name:10s} {r['median_ms']:10.1f} {r['p95_ms']:10.1f} {r['max_ms']:10.1f} "
            f"{r['median_nodes']:10.0f} {r['nodes_per_s']:12.3g}"
        )
    print(f"prob-max^n / max^n median time: {res['ratio_probmaxn_to_maxn_median']:.2f}")
    print(f"goal (prob-max^n median < 100 ms): {'met' if res['goal_met'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
