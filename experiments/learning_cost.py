"""What MBBR pays to learn, in exact expected value: its policy hand by hand against a fixed pair.

A match against two fixed profiles is played as the duplicate protocol plays it (our position
rotating every hand, both relative seat orders of the pair), but after every hand the script
computes the *exact* expected value of the policy MBBR would play in the next one against the true
pair, so there is no card luck in the figures: what is left is the variation between learning
trajectories, over ``--seeds`` seeds. Reported per stretch of the match (in the game's unit,
milli-antes per hand in Kuhn and Leduc), for each prior, with the exact best-response ceiling of
the pair beside it. Against two copies of one equilibrium the ceiling is 0 and every milli-ante
below it is the cost of learning. ``--attribute`` also says where
it is paid: per information set of ours, what switching to the better action there would have gained
(:func:`oppmodel.modeling.evaluation.limit.deviation_gains`), summed over the match.

MBBR here is the Dirichlet posterior (``--posterior``) at the paper's other settings, without a
safety budget unless ``--safety-budgets`` gives some (in the game's unit, mA/h with antes and
mbb/h with blinds; ``inf`` = none; one row per prior and
budget: ``oppmodel.modeling.mbbr.safety`` bounds the cost against pairs of N1, N2 and N3 by the
budget in 3-player Kuhn, in another game the cost against players of the default strategy,
``cfr+cfr``); pairs are panel names or fixed ``STYLE@S`` (adaptive styles have no fixed profile to
evaluate against). ``--game`` is 3-player Kuhn (default) or any 3-player limit game, e.g.
``leduc3p``, where the pair defaults to two ``cfr`` agents (the bundled CFR strategy, also MBBR's
default strategy and prior mean there) and each hand's exact value is one sweep over Leduc's 1,120
public nodes x 1,680 deals; or a 2-player limit game (``leduc2p``), where ``--pairs`` names one
opponent each (default ``cfr``) and there is one seat order.

    python experiments/learning_cost.py [--game leduc3p|leduc2p] [--pairs n3+n3,n2+n2]
                                       [--priors informed,typed] [--safety-budgets inf,0.5]
                                       [--eta 4] [--hands 3000] [--seeds 6]
                                       [--quick] [--attribute] [--json]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from oppmodel.clients.commands._games import resolve_game  # noqa: E402
from oppmodel.clients.lab.reports import emit_report, machine  # noqa: E402
from oppmodel.clients.lab.runner import run_trajectories  # noqa: E402
from oppmodel.modeling.games.acpc.limit_game import LimitGame  # noqa: E402
from oppmodel.modeling.games.kuhn3p import equilibria  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Prior  # noqa: E402
from oppmodel.modeling.play.diluted import fixed_profile  # noqa: E402
from oppmodel.modeling.play.tournament import response_ceiling  # noqa: E402

DEFAULT_PAIRS = "n3+n3,n2+n2,n1+n1,n2+n3,calling-station+bluffer,n1+maniac,calling-station@0.35+n3"
DEFAULT_LIMIT_PAIRS = "cfr+cfr"
DEFAULT_2P_OPPONENTS = "cfr"
WINDOW_EDGES = (100, 300, 1000, 2000)


def largest_gains(game: LimitGame, gains: np.ndarray, count: int = 5) -> dict[str, float]:
    """The ``count`` largest per-hand gains (rates) keyed "P<position + 1> <infostate>"."""
    order = np.argsort(gains, axis=None)[::-1][:count]
    cells = [np.unravel_index(k, gains.shape) for k in order]
    rounded = {
        f"P{p + 1} {game.infoset_string(int(p), int(i))}": round(float(gains[p, i]), 3)
        for p, i in cells
    }
    return {key: value for key, value in rounded.items() if value > 0.0}


def gains_by_round(game: LimitGame, gains: np.ndarray) -> dict[str, float]:
    """The per-hand deviation gains (rates) summed by our position and betting round, keyed
    "P<position + 1> round <r + 1>": where in the hand a limit game's cost is paid."""
    out = {}
    for p in range(game.num_players):
        rounds = game.tree.node_round[game.infoset_node[p]]
        for r in range(game.num_rounds):
            out[f"P{p + 1} round {r + 1}"] = round(
                float(gains[p, : len(rounds)][rounds == r].sum()), 3
            )
    return out


def windows(values: np.ndarray) -> list[float]:
    edges = [0, *(e for e in WINDOW_EDGES if e < len(values)), len(values)]
    return [float(values[a:b].mean()) for a, b in itertools.pairwise(edges)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--game", default="kuhn3p", help="kuhn3p (default) or a 3-player limit game: leduc3p"
    )
    parser.add_argument(
        "--pairs",
        help=f"A+B pairs (default: {DEFAULT_PAIRS}; in other games {DEFAULT_LIMIT_PAIRS}); in a "
        f"2-player limit game single opponents (default {DEFAULT_2P_OPPONENTS})",
    )
    parser.add_argument(
        "--priors",
        help=f"from {', '.join(Prior)} (default: informed,typed; in other games informed)",
    )
    parser.add_argument("--posterior", choices=Posterior.names(), default=Posterior.DIRICHLET)
    parser.add_argument(
        "--safety-budgets",
        default="inf",
        help="safety budgets B in the game's unit (mA/h with antes, mbb/h with blinds), 'inf' for "
        "none; a row per prior and budget (%(default)s)",
    )
    parser.add_argument(
        "--change-hazard",
        type=float,
        default=0.0,
        help="MBBR's change_hazard: change detection, off unless given (%(default)s)",
    )
    parser.add_argument(
        "--eta",
        type=float,
        default=MBBRConfig().eta,
        help="MBBR's prior strength eta (%(default)s)",
    )
    parser.add_argument("--hands", type=int, default=None, help="hands per match (default 3000)")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per seat order (default 6)")
    parser.add_argument("--quick", action="store_true", help="600 hands, 2 seeds")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--attribute",
        action="store_true",
        help="also report where the loss is paid: per information set of ours, what switching "
        "action there would have gained (about twice as slow)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON only")
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    hands = args.hands or (600 if args.quick else 3000)
    seeds = args.seeds or (2 if args.quick else 6)
    game = resolve_game(args.game)
    family = bool(equilibria(game))  # 3-player Kuhn: the equilibrium pairs and the typed prior
    two = game.num_players == 2
    if game.num_players not in (2, 3):
        parser.error(
            f"--game: the duplicate protocol here is for 2 or 3 players; "
            f"{game.name} has {game.num_players}"
        )
    default_pairs = DEFAULT_LIMIT_PAIRS if not family else DEFAULT_PAIRS
    default_pairs = DEFAULT_2P_OPPONENTS if two else default_pairs
    pairs_text = args.pairs or default_pairs
    pairs = [(p, None) if two else tuple(p.split("+", 1)) for p in pairs_text.split(",")]
    if any(len(pair) != 2 or (two and "+" in pair[0]) for pair in pairs):
        parser.error(f"--pairs: {'one opponent' if two else 'A+B'} each, got {pairs_text!r}")
    orders_of = (lambda a, b: ((a, b),)) if two else (lambda a, b: ((a, b), (b, a)))
    priors = (args.priors or ("informed,typed" if family else "informed")).split(",")
    budgets = [float(b) for b in args.safety_budgets.split(",")]
    settings = [(prior, budget) for prior in priors for budget in budgets]
    configs = {}
    for prior, budget in settings:
        configs[prior, budget] = MBBRConfig(
            posterior=args.posterior,
            prior=prior,
            safety_budget=budget,
            change_hazard=args.change_hazard,
            eta=args.eta,
        )
        configs[prior, budget].validate()
    tasks = [
        (*order, configs[setting], seed, hands, args.attribute, args.game)
        for a, b in pairs
        for setting in settings
        for seed in range(seeds)
        for order in orders_of(a, b)
    ]
    results = run_trajectories(tasks, args.workers)
    it, rows = iter(results), []
    orders = 1 if two else 2
    for a, b in pairs:
        ceiling = response_ceiling(game, *(fixed_profile(game, x) for x in (a, b) if x))
        for prior, budget in settings:
            runs = [next(it) for _ in range(orders * seeds)]
            per_seed = [
                np.mean([r[0] for r in runs[orders * s : orders * (s + 1)]], axis=0)
                for s in range(seeds)
            ]
            matches = [float(v.mean()) for v in per_seed]
            row = {
                "pair": a if two else f"{a}+{b}",
                "prior": prior,
                "safety_budget": None if math.isinf(budget) else budget,
                "windows": windows(np.mean(per_seed, axis=0)),
                "match": float(np.mean(matches)),
                "se": float(np.std(matches, ddof=1) / np.sqrt(seeds)) if seeds > 1 else None,
                "ceiling": ceiling,
                "per_seed": matches,
                "matches_on_later_run": sum(r[2] > 0 for r in runs),
            }
            if args.attribute:
                gains = sum(r[1] for r in runs) / (orders * seeds * hands)
                row["deviation_gains"] = largest_gains(game, gains)
                if game.num_rounds > 1:
                    row["deviation_gains_by_round"] = gains_by_round(game, gains)
            rows.append(row)
    report = {
        "benchmark": "mbbr_learning_cost_exact",
        "game": game.name,
        "hands": hands,
        "seeds": seeds,
        "posterior": args.posterior,
        "change_hazard": args.change_hazard,
        "eta": args.eta,
        "window_edges": [e for e in WINDOW_EDGES if e < hands],
        "machine": machine(),
        "rows": rows,
    }
    if emit_report(report, args.out, args.json):
        return 0
    edges = [0, *report["window_edges"], hands]
    heads = [f"{lo}-{hi}" for lo, hi in itertools.pairwise(edges)]
    print(
        f"Exact {game.rate_unit.label} of MBBR's policy in {game.name} ({args.posterior} "
        "posterior), "
        f"{seeds} seeds x {orders} orders\n"
    )
    print("| pair | prior | budget | " + " | ".join(heads) + " | whole match | ceiling |")
    print("|---" * (len(heads) + 5) + "|")
    for row in rows:
        cells = " | ".join(f"{w:+.1f}" for w in row["windows"])
        se = f" ± {row['se']:.2f}" if row["se"] is not None else ""
        budget = "none" if row["safety_budget"] is None else f"{row['safety_budget']:g}"
        print(
            f"| {row['pair']} | {row['prior']} | {budget} | {cells} | {row['match']:+.2f}{se} "
            f"| {row['ceiling']:+.1f} |"
        )
    if args.attribute:
        print(
            f"\nWhere it is paid: {game.rate_unit.label} switching one information set of ours "
            "would have gained"
        )
        print("(P1-P3 = our position, then card 0-3 = J-A and the history; OpenSpiel strings)\n")
        for row in rows:
            cells = ", ".join(f"{k} {v:.2f}" for k, v in row["deviation_gains"].items())
            print(f"- {row['pair']} ({row['prior']}, B {row['safety_budget']}): {cells or 'none'}")
            if "deviation_gains_by_round" in row:
                cells = ", ".join(
                    f"{k} {v:.2f}" for k, v in row["deviation_gains_by_round"].items()
                )
                print(f"  by position and round: {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
