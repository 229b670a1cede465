"""Benchmark: MBBR's full hand cycle (posterior update, opponent models, response) on one core.

For each k the agent observes a stream of seeded random 3p Kuhn hands and computes its policy for
the next hand (so the response is recomputed every hand), with the paper's ``mean`` response and the
exact ``bayes`` response. Figures are medians over repeats, in hands per second. The ``update only``
figure and a bare streaming pass over the same three k x k tables (read and write every weight once,
the memory-traffic floor of any dense update) say how close the update gets to the memory bound.
The last row is the Dirichlet posterior over a 3000-hand stream (informed and typed prior), and
its ratio to k = 10 samples.

    python benchmarks/posterior.py [--quick] [--json]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core, as the issue asks; set before numpy loads BLAS

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from oppmodel.modeling.games.kuhn import kuhn_game  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig  # noqa: E402
from oppmodel.modeling.mbbr.model import build_model  # noqa: E402
from oppmodel.modeling.observation import HandObservation, observe_hand  # noqa: E402

GOALS = {100: 5000.0, 1000: 300.0}  # hands/s for the full cycle, from the issue


def random_hands(count: int, seed: int) -> list[HandObservation]:
    game = kuhn_game(3)
    rng = np.random.default_rng(seed)
    hands = []
    for h in range(count):
        deal = [int(c) for c in rng.permutation(game.num_cards)[:3]]
        history = game.histories[game.terminal_nodes[rng.integers(game.num_terminals)]]
        hands.append(observe_hand(game, h % 3, history, deal))
    return hands


def cycle_rate(
    k: int,
    response: str | None,
    hands: list[HandObservation],
    posterior: str = "samples",
    prior: str = "informed",
) -> float:
    """Hands per second: observe, then (unless response is None) the policy for the next hand."""
    game = kuhn_game(3)
    config = MBBRConfig(
        k=k,
        seed=0,
        hands_default=0,
        response=response or "mean",
        posterior=posterior,
        prior=prior,
    )
    model = build_model(game, config)
    for obs in hands[:5]:  # warm the JIT and the caches
        model.observe(obs)
        model.policy(obs.position)
    start = time.perf_counter()
    for obs in hands:
        model.observe(obs)
        if response is not None:
            model.policy((obs.position + 1) % 3)
    return len(hands) / (time.perf_counter() - start)


def streaming_rate(k: int, passes: int) -> float:
    """Passes per second of reading and writing a k x k float64 table once (in place).

    Like the agent, it cycles through three tables (one per our position), so at large k the
    tables do not stay in cache and the figure is the memory-traffic floor of a dense update.
    """
    tables = [np.full((k, k), 1.0 / (k * k)) for _ in range(3)]
    for table in tables:
        np.multiply(table, 1.0, out=table)
    start = time.perf_counter()
    for i in range(passes):
        np.multiply(tables[i % 3], 1.0000001, out=tables[i % 3])
    return passes / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer hands and repeats (< 30 s)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per figure (median)")
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.quick else 7)
    sizes = {10: 3000, 100: 3000, 1000: 300} if args.quick else {10: 3000, 100: 3000, 1000: 1000}
    results = []
    for k, count in sizes.items():
        hands = random_hands(count, seed=k)
        row = {"k": k, "joint_samples": k * k, "hands": count}
        for label, response in (("update_only", None), ("mean", "mean"), ("bayes", "bayes")):
            rates = [cycle_rate(k, response, hands) for _ in range(repeats)]
            row[f"{label}_hands_per_s"] = round(statistics.median(rates), 1)
        stream = statistics.median(
            streaming_rate(k, 200 if k < 1000 else 50) for _ in range(repeats)
        )
        row["stream_pass_per_s"] = round(stream, 1)
        row["update_vs_stream"] = round(row["update_only_hands_per_s"] / stream, 3)
        if k in GOALS:
            row["goal_hands_per_s"] = GOALS[k]
            row["mean_vs_goal"] = round(row["mean_hands_per_s"] / GOALS[k], 2)
            row["bayes_vs_goal"] = round(row["bayes_hands_per_s"] / GOALS[k], 2)
        results.append(row)
        if not args.json:
            print(json.dumps(row))
    # The Dirichlet posterior: no k; its cost grows with the distinct observations seen.
    hands = random_hands(3000, seed=1)
    row = {"posterior": "dirichlet", "hands": len(hands)}
    for label, response in (("update_only", None), ("mean", "mean")):
        rates = [cycle_rate(1, response, hands, "dirichlet") for _ in range(repeats)]
        row[f"{label}_hands_per_s"] = round(statistics.median(rates), 1)
    rates = [cycle_rate(1, "mean", hands, "dirichlet", "typed") for _ in range(repeats)]
    row["typed_prior_mean_hands_per_s"] = round(statistics.median(rates), 1)
    k10 = next(r for r in results if r["k"] == 10)["mean_hands_per_s"]
    row["mean_vs_samples_k10"] = round(row["mean_hands_per_s"] / k10, 2)
    row["typed_vs_informed"] = round(
        row["typed_prior_mean_hands_per_s"] / row["mean_hands_per_s"], 2
    )
    results.append(row)
    if not args.json:
        print(json.dumps(row))
    report = {
        "benchmark": "mbbr_hand_cycle_3p_kuhn",
        "machine": f"{platform.machine()} {os.cpu_count()} cores, {platform.python_version()}",
        "repeats": repeats,
        "statistic": "median",
        "results": results,
    }
    print(json.dumps(report, indent=None if not args.json else 1))


if __name__ == "__main__":
    main()
