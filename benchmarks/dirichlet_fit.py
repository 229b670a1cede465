"""Benchmark: the two Dirichlet fits on 3-player Kuhn, the one to keep (issue 30).

Kuhn's own stack fits the product of Dirichlets by mean-field variational Bayes
(``mbbr/dirichlet.py``); the compiled stack by incremental collapsed variational Bayes (CVB0,
``mbbr/limit_dirichlet.py``). For each opponent of the panel (both opponents playing it, we play
the default N1 from a rotating position) both fits observe the same seeded training hands; then
each predicts seeded held-out hands: the log-loss is minus the mean log probability its
posterior-mean models give the opponents' moves, averaged over the cards we did not see (the
deal's and our own moves' probability is the same for both fits and left out). Lower is better; the
exact posterior predictive is the floor. Also the hands/s of the fit alone (observe only).

    python benchmarks/dirichlet_fit.py [--train 300] [--test 2000] [--seeds 3] [--json]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core; set before numpy loads BLAS

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from oppmodel.modeling.games.acpc.compiler import limit_game  # noqa: E402
from oppmodel.modeling.games.acpc.strategy import kuhn_profile_on  # noqa: E402
from oppmodel.modeling.games.kuhn import kuhn_game  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig  # noqa: E402
from oppmodel.modeling.mbbr.limit_evidence import hand_likelihood, limit_evidence  # noqa: E402
from oppmodel.modeling.mbbr.limit_model import build_limit_model  # noqa: E402
from oppmodel.modeling.mbbr.model import build_model  # noqa: E402
from oppmodel.modeling.observation import HandObservation, observe_limit_hand  # noqa: E402
from oppmodel.modeling.play.match import sample_terminal  # noqa: E402
from oppmodel.modeling.play.panel import named_profile  # noqa: E402
from oppmodel.modeling.play.tournament import seated_profile  # noqa: E402

OPPONENTS = ["n1", "n2", "n3", "uniform", "always-bet", "calling-station", "tight-passive",
             "maniac", "bluffer"]  # fmt: skip
CONFIG = MBBRConfig(safety_budget=math.inf, change_hazard=0.0)  # the posterior alone


def play(game, name: str, count: int, seed: int):
    """``count`` hands of both opponents playing ``name`` against N1, our position rotating."""
    rng = np.random.default_rng(seed)
    them, us = named_profile(game, name), named_profile(game, "n1")
    out = []
    for t in range(count):
        p = t % 3
        deal = int(rng.integers(game.num_deals))
        terminal = sample_terminal(game, seated_profile(game, p, us, [them, them]), deal, rng)
        out.append(observe_limit_hand(game, p, deal, terminal))
    return out


def as_kuhn(game, obs) -> HandObservation:
    kuhn = kuhn_game(3)
    cards = tuple(None if c is None else game.deck.index(c) for c in obs.hole)
    return HandObservation(obs.position, kuhn.acpc_to_history(obs.betting), cards)


def log_loss(game, profiles, hands) -> float:
    """Minus the mean log predictive probability of the opponents' moves in ``hands`` (the
    hidden cards' assignments equally likely)."""
    logs = []
    for obs in hands:
        evidence = limit_evidence(game, obs)
        likelihood = hand_likelihood(evidence, obs.position, profiles[obs.position])
        logs.append(math.log(likelihood / len(evidence.rows)))
    return -statistics.fmean(logs)


def fits(game, train, test) -> dict[str, float]:
    """Log-loss of both fits after ``train``, on ``test``, and their observe-only hands/s."""
    start = time.perf_counter()
    compiled = build_limit_model(game, CONFIG)
    for obs in train:
        compiled.observe(obs)
    compiled_rate = len(train) / (time.perf_counter() - start)
    kuhn_train = [as_kuhn(game, obs) for obs in train]
    start = time.perf_counter()
    kuhn = build_model(kuhn_game(3), CONFIG)
    for obs in kuhn_train:
        kuhn.observe(obs)
    kuhn_rate = len(train) / (time.perf_counter() - start)
    ours = [compiled.models_profile(p) for p in range(3)]
    theirs = [kuhn_profile_on(game, kuhn.models_profile(p)) for p in range(3)]
    return {
        "cvb0_log_loss": log_loss(game, ours, test),
        "mean_field_log_loss": log_loss(game, theirs, test),
        "cvb0_observe_hands_per_s": compiled_rate,
        "mean_field_observe_hands_per_s": kuhn_rate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=300, help="training hands per opponent")
    parser.add_argument("--test", type=int, default=2000, help="held-out hands per opponent")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per opponent (median)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    args = parser.parse_args()
    game = limit_game("kuhn3p")
    rows = []
    for name in OPPONENTS:
        runs = []
        for seed in range(args.seeds):
            train = play(game, name, args.train, seed=2 * seed)
            test = play(game, name, args.test, seed=2 * seed + 1)
            runs.append(fits(game, train, test))
        row = {"opponent": name}
        for key in runs[0]:
            row[key] = round(statistics.median(r[key] for r in runs), 4 if "loss" in key else 1)
        row["cvb0_minus_mean_field"] = round(row["cvb0_log_loss"] - row["mean_field_log_loss"], 4)
        rows.append(row)
        if not args.json:
            print(json.dumps(row))
    report = {
        "benchmark": "dirichlet_fit_kuhn3p",
        "train": args.train,
        "test": args.test,
        "seeds": args.seeds,
        "statistic": "median",
        "cvb0_better_on": sum(r["cvb0_minus_mean_field"] < 0 for r in rows),
        "mean_field_better_on": sum(r["cvb0_minus_mean_field"] > 0 for r in rows),
        "mean_difference": round(statistics.fmean(r["cvb0_minus_mean_field"] for r in rows), 4),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "results": rows,
    }
    print(json.dumps(report, indent=1 if args.json else None))


if __name__ == "__main__":
    main()
