"""Speed of model-weight inference: Gibbs sweeps per second and the exact oracle's time.

    python benchmarks/model_weights.py [--json] [--quick]

Problem: N = 1000 observed choices of one opponent with 2 models (likelihood rows from
epsilon-greedy choices among 2-4 children with random utilities, seed 0), Dirichlet(1, 1) prior.
Reports the median over repeats (JIT warmed first) of:
- kernel sweeps/s: one chain of the numba collapsed Gibbs kernel;
- end-to-end ``gibbs_posterior`` (4 chains x 2000 sweeps + 200 burn-in, with Dirichlet draws,
  intervals, R-hat and ESS);
- the exact oracle ``exact_posterior`` for the same problem, and for 3 models with N = 200;
and the ratio oracle / end-to-end Gibbs; without ``--quick`` also both for 3 models, N = 500,
where the oracle's grid of (N + 1)^2 count vectors makes it the slower of the two.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from oppmodel.modeling.perfect_info._model_weights_kernels import gibbs_chains
from oppmodel.modeling.perfect_info.model_weights import (
    choice_likelihood,
    exact_posterior,
    gibbs_posterior,
)


def problem(n_obs: int, n_models: int, seed: int) -> np.ndarray:
    """Likelihood rows of ``n_obs`` epsilon-greedy choices (the benchmark's fixed workload)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_obs):
        k = int(rng.integers(2, 5))
        utilities = rng.integers(0, 4, size=(k, n_models))
        rows.append(choice_likelihood(utilities, int(rng.integers(k)), 0.3))
    return np.array(rows)


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``fn`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(quick: bool) -> dict[str, float | int | bool]:
    """Run the measurements and return them as a flat record."""
    repeats = 3 if quick else 7
    sweeps = 200 if quick else 2000
    lik = problem(1000, 2, seed=0)
    scaled = np.ascontiguousarray(lik / lik.max(axis=1, keepdims=True))
    alpha = np.ones(2)
    seeds = np.array([0x2545F4914F6CDD1D], dtype=np.uint64)
    out = np.zeros((1, sweeps, 2), dtype=np.int64)
    gibbs_chains(scaled, alpha, seeds, 0, out[:, :2])  # warm the JIT
    gibbs_posterior(lik, alpha, seed=0, sweeps=10, burn_in=0)

    kernel = median_seconds(lambda: gibbs_chains(scaled, alpha, seeds, 0, out), repeats)
    end_to_end = median_seconds(
        lambda: gibbs_posterior(lik, alpha, seed=1, sweeps=2000, burn_in=200, chains=4), repeats
    )
    oracle_2 = median_seconds(lambda: exact_posterior(lik, alpha), repeats)
    lik3 = problem(200, 3, seed=1)
    oracle_3 = median_seconds(lambda: exact_posterior(lik3, np.ones(3)), repeats)
    record: dict[str, float | int | bool] = {
        "quick": quick,
        "repeats": repeats,
        "n_observations": 1000,
        "n_models": 2,
        "kernel_sweeps": sweeps,
        "kernel_sweeps_per_s": sweeps / kernel,
        "kernel_ns_per_update": kernel / (sweeps * 1000) * 1e9,
        "gibbs_posterior_4x2200_s": end_to_end,
        "oracle_n1000_m2_s": oracle_2,
        "oracle_n200_m3_s": oracle_3,
        "ratio_oracle_over_gibbs_posterior": oracle_2 / end_to_end,
    }
    if not quick:  # where the oracle's (N + 1)^(models - 1) grid starts to cost
        lik3 = problem(500, 3, seed=2)
        ones = np.ones(3)
        oracle = median_seconds(lambda: exact_posterior(lik3, ones), 3)
        gibbs = median_seconds(lambda: gibbs_posterior(lik3, ones, seed=1), 3)
        record["oracle_n500_m3_s"] = oracle
        record["gibbs_posterior_n500_m3_s"] = gibbs
        record["ratio_oracle_over_gibbs_n500_m3"] = oracle / gibbs
    return record


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run, print a table or JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quick", action="store_true", help="fewer sweeps and repeats")
    args = parser.parse_args(argv)
    record = run(args.quick)
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        for key, value in record.items():
            shown = f"{value:,.4g}" if isinstance(value, float) else str(value)
            print(f"{key:36s} {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
