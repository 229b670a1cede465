"""A probe of exploration for the static oracle's share: MBBR responding to a posterior *sample*
(Thompson sampling) instead of the posterior mean, in 3-player Kuhn, exact values.

Why: the points MBBR leaves against the Kuhn field are mostly one decision, opening the betting
with the ace in the first position, whose answers are seen only in hands where MBBR opens, which
the response to the posterior mean never does (RESULTS, "MBBR's share of the static oracle"). A
response to a draw from the posterior opens whenever the draw at the unseen answering sets calls
often enough, so the answers get seen and the mean then learns them; where the posterior is
concentrated (sets seen hundreds of times) the draw is close to the mean.

What this changes, and only in this script's processes: the Dirichlet model's response is solved
against a profile whose opponent rows are one draw of Dirichlet(alpha) per information set (alpha
the posterior's parameters), drawn afresh whenever the posterior changes from a generator seeded
by (config seed, our position, posterior version). Everything else is MBBR at the defaults: the
safety bankroll books and mixes the sampled response exactly as it does the mean one (the learning
cost bound is the bankroll's, whatever the candidate), and its rule-out alternative stays the
posterior-mean models. Not a library option (yet): the draw's key would have to survive a
snapshot's restore for a service session to answer bit for bit after a reload.

    python experiments/thompson_share.py [--groups A+B,...] [--hands 3000] [--seeds 2]
        [--first-seed 0] [--workers 2] [--out FILE]

Groups default to the competent field's 28 stationary groups (``oracle_share.field_groups``);
equilibrium pairs (n3+n3, ...) have no share and report MBBR's value: the learning cost.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from oracle_share import LATE, field_groups, group_row, seat_orders  # noqa: E402

from oppmodel.modeling.games.acpc.compiler import limit_game  # noqa: E402
from oppmodel.modeling.mbbr import base  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig  # noqa: E402
from oppmodel.modeling.mbbr.model import DirichletModel  # noqa: E402
from oppmodel.modeling.play.learning_cost import trajectory  # noqa: E402

WHERE = {"rows": "all"}  # the rows drawn: all, unseen, or where the prior outweighs the visits


def sampled_profile(model: DirichletModel, p: int) -> np.ndarray:
    """The models' profile of position ``p`` with each opponent's rows one draw of its Dirichlet
    posterior, the same draw until the posterior changes."""
    version = model._version(p)
    cache = model.__dict__.setdefault("_thompson", {})
    if p in cache and cache[p][0] == version:
        return cache[p][1]
    rng = np.random.default_rng([model.config.seed, p, version])
    profile = model._models_profile(p).copy()
    n = model.game.num_players
    posterior = model._dirichlet[p]
    for d in range(1, n):
        rows = model.game.infosets((p + d) % n)
        alpha = posterior.alpha[d - 1, rows]
        draw = rng.standard_gamma(np.where(alpha > 0, alpha, 1.0)) * (alpha > 0)
        drawn = draw / draw.sum(axis=1, keepdims=True)
        if WHERE["rows"] != "all":  # only where the prior still outweighs what was seen
            prior = posterior.alpha0[d - 1, rows].sum(axis=1)
            seen = alpha.sum(axis=1) - prior
            keep = seen <= 0 if WHERE["rows"] == "unseen" else seen < prior
            drawn = np.where(keep[:, None], drawn, profile[(p + d) % n, rows])
        profile[(p + d) % n, rows] = drawn
    cache[p] = (version, profile)
    return profile


def _solve_sampled(model: DirichletModel, p: int, kind: object, h: int, strategy: np.ndarray):
    """``MBBRModel._solve_hole`` against :func:`sampled_profile` instead of the mean."""
    return base.kernels.solve_hole(
        *model._holes.packed[p][h], sampled_profile(model, p), p, model._sweep_scratch,
        model._choice, model._holes.infosets_of_hole[p][h], strategy,
    )  # fmt: skip


def thompson_trajectory(job: tuple) -> np.ndarray:
    """``learning_cost.trajectory`` with the sampled response (this process only)."""
    WHERE["rows"], task = job
    DirichletModel._solve_hole = _solve_sampled  # type: ignore[method-assign]
    return trajectory(task)[0]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", help="A+B,... (default: the field's stationary groups)")
    parser.add_argument("--hands", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=2, help="per seat order (%(default)s)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--rows",
        choices=("all", "unseen", "prior"),
        default="all",
        help="where to draw: every information set, the never seen ones, or those where the "
        "prior's weight is above the visits (the mean elsewhere; %(default)s)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    game = limit_game("kuhn3p")
    groups = field_groups("kuhn3p")[0]
    if args.groups:
        groups = [tuple(text.split("+")) for text in args.groups.split(",")]
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    tasks = [
        (*order, MBBRConfig(), seed, args.hands, False, "kuhn3p")
        for group in groups
        for seed in seeds
        for order in seat_orders(group)
    ]
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        jobs = [(args.rows, task) for task in tasks]
        results = iter(pool.map(thompson_trajectory, jobs, chunksize=1))
    rows = []
    for group in groups:
        runs = [next(results) for _ in range(args.seeds * len(seat_orders(group)))]
        row = group_row(game, group, runs, args.seeds, args.hands)
        rows.append(row)
        late = f", hands {LATE}-: {row['share_late']:.1%}" if row["share_late"] else ""
        print(f"{row['group']}: MBBR {row['mbbr']:+.3f}, oracle {row['oracle']:+.1f}, "
              f"share {row['share']:.1%}{late}", flush=True)  # fmt: skip
    shared = [row for row in rows if row["oracle"] >= 1.0]
    if shared:
        print(f"mean of {len(shared)} groups: {np.mean([r['share'] for r in shared]):.1%}")
    if args.out:
        report = {"benchmark": "mbbr_thompson_share", "args": vars(args) | {"out": str(args.out)}}
        args.out.write_text(json.dumps({**report, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
