"""What share of the static oracle a learner that knows the population reaches (3-player Kuhn;
2-player Leduc with ``--game leduc2p``).

Issue 32 asks whether 95% of the oracle over 3,000 hands is within any learner's reach. This
learner is told more than MBBR: the opponents are one of the field's stationary groups
(``oracle_share.field_groups``; in Kuhn 28 groups, each in both seat orders: 56 seated pairs; in
Leduc 2p the field's 11 opponents), equally likely a priori, and it keeps the exact posterior
over these hypotheses (each hand multiplies a hypothesis' weight by the probability of the
opponents' moves seen under it, summed over the hole cards we did not see:
``mbbr.evidence.hand_likelihood``). Each hand it plays the exact best response to that posterior
(the response to the mixture of the hypotheses' profiles, not to one averaged profile: two
opponents' play is correlated through the hypothesis), found by backward induction over our
information sets (``mixture_response``). Hypotheses whose weight falls below ``CUTOFF`` of the
total are dropped (a value error under 1e-12 chips). As MBBR, it may play the default strategy
for its first ``--hands-default`` hands.

It is greedy (it never plays a hand to learn), so the Bayes-optimal learner with the same prior
wins at least as much summed over the field, and no learner wins more than that one summed over
the field without being told more than the population. Values, windows and shares are
``oracle_share``'s (exact expected values per hand, the same seeds and card stream); groups whose
oracle wins less than ``MIN_CEILING`` (``cfr`` in Leduc) have no share and are left out of the
mean.

    python experiments/population_bound.py [--game kuhn3p|leduc2p] [--groups A+B,...]
        [--hands 3000] [--seeds 2] [--hands-default 100] [--shares 0.15,0.35,...] [--workers 1]
        [--journal FILE] [--out FILE]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

try:  # imported as experiments.population_bound (the tests), or run as a script from its folder
    from experiments.oracle_share import (
        LATE,
        MIN_CEILING,
        field_groups,
        group_row,
        job_key,
        seat_orders,
    )
except ModuleNotFoundError:
    from oracle_share import LATE, MIN_CEILING, field_groups, group_row, job_key, seat_orders

from oppmodel.clients.lab.journal import Journal  # noqa: E402
from oppmodel.clients.lab.reports import emit_report, machine  # noqa: E402
from oppmodel.modeling.evaluation.limit import counterfactual_values, expected_values  # noqa: E402
from oppmodel.modeling.games.acpc.compiler import limit_game  # noqa: E402
from oppmodel.modeling.games.acpc.solved import default_profile  # noqa: E402
from oppmodel.modeling.mbbr.evidence import hand_evidence, hand_likelihood  # noqa: E402
from oppmodel.modeling.play.diluted import fixed_profile  # noqa: E402
from oppmodel.modeling.play.learning_cost import _sample_observation  # noqa: E402
from oppmodel.modeling.play.tournament import seated_profile  # noqa: E402

CUTOFF = 1e-12  # hypotheses below this share of the posterior's weight are dropped


def hypotheses(game, shares: tuple[float, ...] | None = None) -> list[tuple[str, ...]]:
    """The field's seated pairs (offset 1, offset 2), every group in both orders (a 2-player
    game's: its opponents); with ``shares`` every seating of different agents of a wider
    population: each of the field's diluted styles at each of these shares (a learner told
    less)."""
    if shares is None:
        return [order for group in field_groups(game.name)[0] for order in seat_orders(group)]
    agents = []
    for name in dict.fromkeys(name for group in field_groups(game.name)[0] for name in group):
        style = name.split("@")[0]
        agents += [f"{style}@{s:g}" for s in shares] if "@" in name else [name]
    return list(itertools.permutations(agents, game.num_players - 1))


def mixture_response(game, profiles, weights, p: int, start: np.ndarray) -> np.ndarray:
    """A pure best response of position ``p`` to the mixture of ``profiles`` at ``weights``:
    every information set takes the action whose counterfactual value, summed over the
    hypotheses at their weights, is the largest, given the choices below it; repeated from
    ``start`` until nothing changes (a choice is right once the ones below it are: at most one
    pass more than our moves in a hand)."""
    legal = game.legal_mask[p]
    strategy = start.copy()
    for _ in range(16):
        total = np.zeros(legal.shape)
        for profile, weight in zip(profiles, weights, strict=True):
            profile = profile.copy()
            profile[p] = strategy
            total += weight * counterfactual_values(game, profile, p)[0]
        choice = np.where(legal, total, -np.inf).argmax(axis=1)
        new = np.zeros_like(strategy)
        rows = np.asarray(game.infosets(p))
        new[rows, choice[rows]] = 1.0
        if np.array_equal(new, strategy):
            return strategy
        strategy = new
    raise RuntimeError("the mixture response did not settle")


def bound_trajectory(task: tuple) -> dict:
    """One match of the population learner against (first, second) (``second`` None in a
    2-player game): the exact rate of its policy each hand, and the first hand after which the
    true pair holds 99% of the posterior. ``task``: (first, second, seed, hands, hands_default[,
    shares[, game]]), the game kuhn3p by default."""
    first, second, seed, hands, hands_default, *rest = task
    game = limit_game(rest[1] if len(rest) > 1 else "kuhn3p")
    n = game.num_players
    names = hypotheses(game, rest[0] if rest else None)
    truth_index = names.index((first, second)[: n - 1])
    pairs = [tuple(fixed_profile(game, name) for name in pair) for pair in names]
    seated = [[seated_profile(game, p, None, pair) for pair in pairs] for p in range(n)]
    default = default_profile(game, "default_strategy")
    log_weight = np.zeros(len(names))
    rng = np.random.default_rng([seed, 7])  # learning_cost.trajectory's stream
    values = np.empty(hands)
    identified = None
    for t in range(hands):
        p = t % n
        weight = np.exp(log_weight - log_weight.max())
        weight /= weight.sum()
        if identified is None and weight[truth_index] >= 0.99:
            identified = t
        us = default.copy()
        if t >= hands_default:
            live = np.flatnonzero(weight >= CUTOFF)
            profiles = [seated[p][h] for h in live]
            us[p] = mixture_response(game, profiles, weight[live], p, default[p])
        profile = seated_profile(game, p, us, pairs[truth_index])
        values[t] = game.rate_unit.rate(float(expected_values(game, profile)[p]))
        evidence = hand_evidence(game, _sample_observation(game, profile, p, rng))
        with np.errstate(divide="ignore"):
            log_weight += np.log(
                [
                    hand_likelihood(evidence.rows, evidence.weights, p, seated[p][h])
                    for h in range(len(names))
                ]
            )
    return {"values": values.tolist(), "identified": identified}


def _run(task: tuple) -> tuple[tuple, dict, float]:
    start = time.process_time()
    return task, bound_trajectory(task), time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=("kuhn3p", "leduc2p"), default="kuhn3p")
    parser.add_argument("--groups", help="A+B,... (default: the field's stationary groups)")
    parser.add_argument("--hands", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=2, help="per seat order (%(default)s)")
    parser.add_argument("--hands-default", type=int, default=100, help="(%(default)s: MBBR's H)")
    parser.add_argument(
        "--shares",
        help="hypotheses: every seating of the field's agents with its styles diluted at each of "
        "these shares, e.g. 0.15,0.35,0.55,0.75,1 (default: the field's seated groups)",
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--journal", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    game = limit_game(args.game)
    groups = field_groups(args.game)[0]
    if args.groups:
        groups = [tuple(text.split("+")) for text in args.groups.split(",")]
    shares = tuple(float(s) for s in args.shares.split(",")) if args.shares else None
    settings = {
        "hands": args.hands,
        "hands_default": args.hands_default,
        "shares": args.shares,
        "game": args.game,
    }
    journal = Journal(args.journal, settings, defaults={"shares": None, "game": "kuhn3p"})
    done = {key: entry["value"] for key, entry in journal.entries().items()}
    keys = [job_key(o, s) for g in groups for s in range(args.seeds) for o in seat_orders(g)]
    todo = [
        (*key, args.hands, args.hands_default, shares, args.game) for key in keys if key not in done
    ]
    if todo:
        with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
            for task, value, seconds in pool.imap_unordered(_run, todo):
                done[task[:3]] = value
                journal.record(task[:3], value, seconds)
                name = "+".join(k for k in task[:2] if k)
                print(f"{name} seed {task[2]}: {seconds:.1f} s CPU", file=sys.stderr)
    rows = []
    for group in groups:
        runs = [done[job_key(o, s)] for s in range(args.seeds) for o in seat_orders(group)]
        row = group_row(game, group, [np.array(r["values"]) for r in runs], args.seeds, args.hands)
        row["identified"] = [r["identified"] for r in runs]
        row["counted"] = row["oracle"] >= MIN_CEILING
        rows.append(row)
    counted = [row for row in rows if row["counted"]]
    report = {
        "benchmark": "population_bound",
        "seeds": args.seeds,
        **settings,
        "machine": machine(),
        "rows": rows,
        "mean_share": float(np.mean([row["share"] for row in counted])),
        "mean_share_late": float(np.mean([row["share_late"] for row in counted]))
        if args.hands > LATE
        else None,
    }
    if emit_report(report, args.out, args.json):
        return 0
    for row in rows:
        print(f"{row['group']}: {row['share']:.1%} late {row['share_late']} {row['identified']}")
    print(json.dumps({k: report[k] for k in ("mean_share", "mean_share_late")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
