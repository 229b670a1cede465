"""MBBR's share of the static oracle: what it wins against each stationary group of a panel field,
as a fraction of what the exact best response to the group's true strategies wins.

The oracle knows the opponents' strategies before the first hand and plays the exact best response
to them in every position (:func:`oppmodel.modeling.evaluation.limit.best_response`), so its win
rate is the ceiling no learner can pass. Both sides are *exact expected values per hand*, no card
luck: MBBR's is the exact value of the policy it plays in each hand of a match against the group
(:func:`oppmodel.modeling.play.learning_cost.trajectory`, as ``experiments/learning_cost.py``
plays it: our position rotating every hand, both seat orders of a 3-player group), the oracle's
the best response's value in the same position. The share at hand t is the ratio of the two
cumulative sums over the first t hands, per group summed over seeds and seat orders, with the
standard error over seeds; the field's figure is the mean of the groups' shares. The share over
hands 1000 to the end says what is left once most is learned.

Fields: ``kuhn3p``, the competent field's stationary groups (every pair of N1-N3 and the five fixed
styles diluted with N2 to 0.35, ``oppmodel.modeling.play.fields``); the three adaptive styles have
no fixed strategy, so no oracle (reported as skipped). ``leduc2p``: the Leduc field's opponents
(``cfr`` and every style, plain and diluted with cfr); ``leduc3p``: ``cfr`` with each of them.
Groups whose oracle wins less than ``--min-ceiling`` (two cfr agents: +0.5 mA/h) have no
meaningful share; they are reported and left out of the average.

    python experiments/oracle_share.py [--game kuhn3p|leduc2p|leduc3p] [--groups A+B,...]
                                      [--safety-budgets 0.5,inf] [--mbbr-prior PRIOR]
                                      [--hands 3000] [--seeds 2]
                                      [--workers 2] [--journal FILE] [--out FILE] [--json]

The trajectories run seed by seed (every group's seed 0 before any seed 1). ``--journal`` keeps
each finished one with its CPU seconds, so a stopped run resumes, and a run with fewer ``--seeds``
reports from what a longer one journalled.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from oppmodel.clients.commands._games import resolve_game  # noqa: E402
from oppmodel.clients.lab.journal import Journal  # noqa: E402
from oppmodel.clients.lab.reports import emit_report, machine  # noqa: E402
from oppmodel.clients.lab.runner import run_all  # noqa: E402
from oppmodel.modeling.evaluation.limit import best_response  # noqa: E402
from oppmodel.modeling.games.acpc.limit_game import LimitGame  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior  # noqa: E402
from oppmodel.modeling.play.adaptive import is_adaptive  # noqa: E402
from oppmodel.modeling.play.diluted import fixed_profile  # noqa: E402
from oppmodel.modeling.play.fields import (  # noqa: E402
    DEFAULT_SHARE,
    STYLES,
    competent_field,
)
from oppmodel.modeling.play.learning_cost import trajectory  # noqa: E402
from oppmodel.modeling.play.panel import CFR  # noqa: E402
from oppmodel.modeling.play.tournament import seated_profile  # noqa: E402

GAMES = ("kuhn3p", "leduc2p", "leduc3p")
CHECKPOINTS = (100, 300, 500, 1000, 3000)
LATE = 1000  # the share over the hands from here on: what is left once most is learned
MIN_CEILING = 1.0  # groups whose oracle wins less (the game's unit) have no meaningful share


def field_groups(game: str) -> tuple[list[tuple[str, ...]], dict[str, str]]:
    """The groups of opponents of ``game``'s field that have an oracle, and the ones that have
    none with the reason."""
    if game == "kuhn3p":
        field = [name for name in competent_field(DEFAULT_SHARE) if name != "mbbr"]
        fixed = [name for name in field if not is_adaptive(name.split("@", 1)[0])]
        skipped = {
            name: "adaptive: it changes its strategy with the match, so there is no fixed "
            "strategy to best-respond to"
            for name in field
            if name not in fixed
        }
        return list(itertools.combinations(fixed, 2)), skipped
    opponents = [CFR, *STYLES.split(",")]
    if game == "leduc2p":
        return [(name,) for name in opponents], {}
    return [(CFR, name) for name in opponents], {}


def seat_orders(group: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Both relative seat orders of a pair (one if the two are the same), a single opponent's
    one."""
    orders = [group, group[::-1]] if len(group) == 2 else [group]
    return list(dict.fromkeys(orders))


def oracle_by_position(game: LimitGame, order: tuple[str, ...]) -> np.ndarray:
    """The exact best response's win rate (the game's unit) in each of our positions against the
    opponents seated in ``order`` (offset 1, 2, ... from us)."""
    others = [fixed_profile(game, name) for name in order]
    return np.array(
        [
            game.rate_unit.rate(best_response(game, seated_profile(game, p, None, others), p)[1])
            for p in range(game.num_players)
        ]
    )


def shares(mbbr: np.ndarray, oracle: np.ndarray, hands: int) -> dict[int, float]:
    """Cumulative MBBR over cumulative oracle at each checkpoint within ``hands`` (both
    (runs, hands) arrays of per-hand rates)."""
    points = [c for c in CHECKPOINTS if c < hands] + [hands]
    return {c: float(mbbr[:, :c].sum() / oracle[:, :c].sum()) for c in points}


def group_row(
    game: LimitGame, group: tuple[str, ...], runs: list[np.ndarray], seeds: int, hands: int
) -> dict:
    """One group's figures from its trajectories (seed-major, then seat order)."""
    orders = seat_orders(group)
    oracle_rates = {order: oracle_by_position(game, order) for order in orders}
    per_hand = np.array([oracle_rates[o][np.arange(hands) % game.num_players] for o in orders])
    mbbr = np.array(runs).reshape(seeds, len(orders), hands)
    oracle = np.broadcast_to(per_hand, mbbr.shape)
    ceiling = float(per_hand.mean())
    curve = shares(mbbr.reshape(-1, hands), oracle.reshape(-1, hands), hands)
    per_seed = [shares(mbbr[s], oracle[s], hands)[hands] for s in range(seeds)]
    late = float(mbbr[..., LATE:].sum() / oracle[..., LATE:].sum()) if hands > LATE else None
    return {
        "group": "+".join(group),
        "oracle": ceiling,
        "mbbr": float(mbbr.mean()),
        "share_curve": {str(c): v for c, v in curve.items()},
        "share": curve[hands],
        "share_se": float(np.std(per_seed, ddof=1) / math.sqrt(seeds)) if seeds > 1 else None,
        "share_late": late,
    }


def job_key(order: tuple[str, ...], seed: int) -> tuple[str, str | None, int]:
    """A trajectory's key: (first, second, seed); ``second`` is None in a 2-player game."""
    return (order[0], order[1] if len(order) > 1 else None, seed)


def _run(task: tuple) -> tuple[tuple, list[float], float]:
    """One trajectory's per-hand rates and its CPU seconds."""
    start = time.process_time()
    values = trajectory(task)[0]
    return task, [float(v) for v in values], time.process_time() - start


def trajectories(
    game: LimitGame, groups: list[tuple[str, ...]], config: MBBRConfig, args: argparse.Namespace
) -> tuple[dict[tuple, np.ndarray], dict[str, float] | None]:
    """Every (first, second, seed) trajectory of ``groups`` at ``config``, seed by seed (the
    journal's and this run's), and the median and total CPU seconds of the ones played or
    journalled (None without any)."""
    budget = config.safety_budget
    settings = {
        "game": game.name,
        "hands": args.hands,
        "safety_budget": "inf" if math.isinf(budget) else budget,
        # no "prior": the eta mixture's, the default before session 50 (its journals stay valid)
        **({} if config.prior == Prior.ETA_MIXTURE else {"prior": str(config.prior)}),
    }
    journal = Journal(args.journal, settings)
    done = {key: (entry["value"], entry["seconds"]) for key, entry in journal.entries().items()}
    keys = [
        job_key(order, seed)
        for seed in range(args.seeds)
        for group in groups
        for order in seat_orders(group)
    ]
    todo = [
        (*key[:2], config, key[2], args.hands, False, args.game) for key in keys if key not in done
    ]
    for task, values, seconds in run_all(_run, todo, args.workers):
        key = (task[0], task[1], task[3])
        done[key] = (values, seconds)
        journal.record(key, values, seconds)
        name = "+".join(k for k in key[:2] if k)
        print(f"{name} seed {key[2]}: {seconds:.1f} s CPU", file=sys.stderr)
    cpu = [done[key][1] for key in keys]
    summary = {"median": float(np.median(cpu)), "total": float(np.sum(cpu))} if cpu else None
    return {key: np.asarray(done[key][0]) for key in keys}, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=GAMES, default=GAMES[0], help="(%(default)s)")
    parser.add_argument("--groups", help="A+B,... (default: the field's stationary groups)")
    parser.add_argument(
        "--safety-budgets",
        default=f"{MBBRConfig().safety_budget:g}",
        help="MBBR's safety budgets, 'inf' for none; a table each (%(default)s: the default)",
    )
    parser.add_argument(
        "--mbbr-prior",
        choices=[p for p in Prior.names() if p != Prior.POPULATION],
        default=MBBRConfig().prior,
        help="MBBR's prior (%(default)s: the default)",
    )
    parser.add_argument("--hands", type=int, default=3000, help="(%(default)s)")
    parser.add_argument("--seeds", type=int, default=2, help="per seat order (%(default)s)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--min-ceiling",
        type=float,
        default=MIN_CEILING,
        help="groups whose oracle wins less (the game's unit) are left out of the average",
    )
    parser.add_argument(
        "--journal",
        type=Path,
        default=None,
        help="append each finished trajectory here and skip the ones it holds (resumable)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON only")
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    game = resolve_game(args.game)
    groups, skipped = field_groups(args.game)
    if args.groups:
        groups = [tuple(text.split("+")) for text in args.groups.split(",")]
        if any(len(g) != game.num_players - 1 for g in groups):
            parser.error(f"--groups: {game.num_players - 1} opponents each, got {args.groups!r}")
    budgets = [float(b) for b in args.safety_budgets.split(",")]
    tables = []
    for budget in budgets:
        config = MBBRConfig(safety_budget=budget, prior=args.mbbr_prior)
        config.validate()
        runs, seconds = trajectories(game, groups, config, args)
        rows = []
        for group in groups:
            orders = seat_orders(group)
            keys = [job_key(order, seed) for seed in range(args.seeds) for order in orders]
            rows.append(group_row(game, group, [runs[k] for k in keys], args.seeds, args.hands))
        counted = [row for row in rows if row["oracle"] >= args.min_ceiling]
        average = {
            c: float(np.mean([row["share_curve"][c] for row in counted]))
            for c in (counted[0]["share_curve"] if counted else {})
        }
        lates = [row["share_late"] for row in counted if row["share_late"] is not None]
        tables.append(
            {
                "safety_budget": None if math.isinf(budget) else budget,
                "rows": rows,
                "average_share_curve": average,
                "average_share_late": float(np.mean(lates)) if lates else None,
                "groups_averaged": len(counted),
                "cpu_seconds_per_trajectory": seconds,
            }
        )
    report = {
        "benchmark": "mbbr_oracle_share",
        "game": game.name,
        "hands": args.hands,
        "seeds": args.seeds,
        "prior": str(args.mbbr_prior),
        "min_ceiling": args.min_ceiling,
        "skipped": skipped,
        "machine": machine(),
        "tables": tables,
    }
    if emit_report(report, args.out, args.json):
        return 0
    unit = game.rate_unit.label
    for table in tables:
        budget = table["safety_budget"]
        heads = list(table["average_share_curve"]) or [str(args.hands)]
        print(
            f"\nMBBR (safety budget {'none' if budget is None else f'{budget:g}'}) against the "
            f"static oracle, {game.name}, exact values, {args.seeds} seeds per seat order\n"
        )
        late = f" | hands {LATE}-{args.hands}" if args.hands > LATE else ""
        print(f"| group | oracle {unit} | MBBR {unit} | " + " | ".join(heads) + late + " |")
        print("|---" * (len(heads) + 3 + bool(late)) + "|")
        for row in table["rows"]:
            se = f" ± {row['share_se']:.1%}" if row["share_se"] is not None else ""
            cells = [f"{row['share_curve'][c]:.1%}" for c in heads]
            cells[-1] += se
            if row["share_late"] is not None:
                cells.append(f"{row['share_late']:.1%}")
            print(f"| {row['group']} | {row['oracle']:+.1f} | {row['mbbr']:+.1f} | ", end="")
            print(" | ".join(cells) + " |")
        values = [*table["average_share_curve"].values(), table["average_share_late"]]
        cells = " | ".join(f"**{v:.1%}**" for v in values if v is not None)
        print(f"| mean of {table['groups_averaged']} groups |  |  | {cells} |")
    for name, why in skipped.items():
        print(f"\nno oracle for {name}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
