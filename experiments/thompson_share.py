"""Probes of exploration for the static oracle's share, in 3-player Kuhn, exact values: MBBR
responding to a posterior *sample* (Thompson sampling) instead of the posterior mean, or probing
where the value of information pays (``--rows voi``, :func:`voi_profile`).

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

``--rows voi`` solves the response against the models with at most one never-reached opponent
information set moved to the answer that would pay most, where its value of information over the
hands left is worth more than the probe costs (:func:`voi_profile`): a function of the posterior,
no draw; ``--rows mean`` is MBBR at the defaults (the same trajectories as ``oracle_share.py``),
the baseline on the same seeds.

    python experiments/thompson_share.py [--groups A+B,...] [--hands 3000] [--seeds 2]
        [--first-seed 0] [--rows all|unseen|prior|voi|mean] [--workers 2] [--out FILE]

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
from scipy.special import betaincinv as beta_quantile  # noqa: E402

from oppmodel.modeling.evaluation import _limit_kernels as evaluation_kernels  # noqa: E402
from oppmodel.modeling.evaluation.limit import best_response, expected_values  # noqa: E402
from oppmodel.modeling.games.acpc.compiler import limit_game  # noqa: E402
from oppmodel.modeling.games.acpc.limit_game import LimitGame  # noqa: E402
from oppmodel.modeling.mbbr import base  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig  # noqa: E402
from oppmodel.modeling.mbbr.model import DirichletModel  # noqa: E402
from oppmodel.modeling.play.learning_cost import trajectory  # noqa: E402

WHERE = {"rows": "all"}  # the rows drawn: all, unseen, where the prior outweighs the visits; voi
POINTS = {"kind": "sigma"}  # the quadrature of ``posterior_points``
HORIZON = {"hands": 3000}  # the match's length, for the value of information (``--rows voi``)


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


def node_reach(game: LimitGame, profile: np.ndarray) -> np.ndarray:
    """(nodes, deals) every node's reach probability per deal under ``profile``, chance left out:
    the evaluation's forward step (``reach_into``), each node's row kept."""
    tree = game.tree
    by_depth = np.ones((tree.max_depth + 1, game.num_deals))
    reach = np.ones((len(tree.node_player), game.num_deals))
    for node in range(1, len(tree.node_player)):  # pre-order, as the step needs
        reach[node] = by_depth[evaluation_kernels.reach_into(tree, profile, node, by_depth, -1)]
    return reach


def infoset_reach(game: LimitGame, reach: np.ndarray, position: int, i: int) -> float:
    """The probability, over the deals, that a hand reaches information set ``i`` of
    ``position`` (``reach`` from :func:`node_reach`)."""
    node = game.infoset_node[position][i]
    seen = (
        game.tree.deal_view[game.tree.node_round[node], :, position]
        == game.infoset_view[position][i]
    )
    return float(reach[node, seen].sum()) / game.num_deals


def _seated(profile: np.ndarray, p: int, ours: np.ndarray) -> np.ndarray:
    """``profile`` with ``ours`` in position ``p`` (a copy)."""
    seated = profile.copy()
    seated[p] = ours
    return seated


QUANTILES = 4  # points per action of ``--voi-points beta``


def posterior_points(alpha: np.ndarray, m: np.ndarray) -> list[tuple[np.ndarray, float]]:
    """Quadrature points (row, weight) of an information set's posterior, mean ``m``,
    concentration sum(alpha): ``sigma``, m + (e_a - m) / sqrt(A + 1) at weight m_a per legal
    action a (the Dirichlet's mean and covariance, but a rare action's point sits far in a tail
    the Dirichlet barely has); ``beta``, per legal action (one of two) the 1/8, 3/8, 5/8, 7/8
    quantiles of its Beta(alpha_a, A - alpha_a) marginal, the others scaled in proportion to m."""
    legal = np.flatnonzero(alpha > 0)
    total = alpha.sum()
    if len(legal) < 2:  # nothing to learn
        return [(m, 1.0)]
    if POINTS["kind"] == "sigma":
        spread = 1.0 / np.sqrt(total + 1.0)
        return [(m + spread * (np.eye(3)[a] - m), float(m[a])) for a in legal]
    actions = legal[:1] if len(legal) == 2 else legal
    points = []
    for a in actions:
        rest = np.where(np.arange(3) == a, 0.0, m) / max(1.0 - m[a], 1e-12)
        for j in range(QUANTILES):
            x_a = float(beta_quantile(alpha[a], total - alpha[a], (j + 0.5) / QUANTILES))
            points.append(
                (rest * (1.0 - x_a) + np.eye(3)[a] * x_a, 1.0 / (QUANTILES * len(actions)))
            )
    return points


def voi_profile(model: DirichletModel, p: int) -> np.ndarray:
    """The models' profile of position ``p``, or, where the value of information pays for the
    probe, the same with one never-reached opponent information set I at the answer that would
    pay us most (so the response to it goes and asks). A function of the posterior alone: no
    draw, nothing a snapshot's restore would not give back.

    For each opponent information set I that the mean response never reaches (the only sets a
    passive learner never learns): its value of perfect information VOI(I) = E[V*(models with
    I's row = x)] - V*(models), V* a best response's value a hand, x over I's posterior, mean m
    (the models' row) and concentration A = sum(alpha), by the sigma points m + (e_a - m) /
    sqrt(A + 1) at weights m_a (they match the Dirichlet's mean and covariance). The probe r* is
    the response to the sigma point worth the most, at cost c = V(r*) - V*(models) <= 0 a hand
    under the models; learning I takes about A observations (the data then weigh as much as all
    before), k = A / q hands at the reach q that r* gives I. r* is played for the I with the
    largest VOI (T - k) + c k > 0, T the hands left in this position (``HORIZON``); none: the mean
    response. The safety bankroll mixes r* as any candidate, so the learning-cost bound holds."""
    version = model._version(p)
    cache = model.__dict__.setdefault("_voi", {})
    if p in cache and cache[p][0] == version:
        return cache[p][1]
    game, n = model.game, model.game.num_players
    models = model._models_profile(p)
    mean_response, v0 = best_response(game, models, p)
    reach = node_reach(game, _seated(models, p, mean_response))
    left = max(HORIZON["hands"] - model.hands_observed, 0) / n
    best, chosen = 0.0, models
    posterior = model._dirichlet[p]
    for d in range(1, n):
        o = (p + d) % n
        for i in game.infosets(o):
            if not game.valid_infoset_mask[o, i] or infoset_reach(game, reach, o, i) > 0.0:
                continue
            alpha, m = posterior.alpha[d - 1, i], models[o, i]
            points = []  # (V*, weight, the point, the response to it)
            for x, w in posterior_points(alpha, m):
                trial = models.copy()
                trial[o, i] = x
                response, value = best_response(game, trial, p)
                points.append((value, w, trial, response))
            voi = sum(w * v for v, w, _, _ in points) - v0
            _, _, trial, probe = max(points, key=lambda point: point[0])
            seated = _seated(models, p, probe)
            cost = float(expected_values(game, seated)[p]) - v0
            q = infoset_reach(game, node_reach(game, seated), o, i)
            if q <= 0.0 or voi <= 0.0:
                continue
            k = alpha.sum() / q
            net = voi * (left - k) + cost * k
            if net > best:
                best, chosen = net, trial
    cache[p] = (version, chosen)
    return chosen


def pooled_profile(model: DirichletModel, p: int) -> np.ndarray:
    """The models' profile of position ``p`` with every opponent row that answers a bet (fold
    legal) re-centred on what that opponent was seen to do when facing a bet with the same card
    anywhere: in every history and seat, over the posteriors of all our positions (the relative
    seat order is fixed in a match, so offset d is one opponent throughout). The row is
    (its counts + eta m_pool) / (its visits + eta), m_pool = (the other sets' counts + eta m0) /
    (their visits + eta), m0 the set's prior mean: a two-level prior whose upper level is the
    opponent's calling by card, so an answer never seen (to a first-position opening) is
    predicted from the answers seen elsewhere instead of from the prior (N3). A function of the
    posterior alone."""
    game, n = model.game, model.game.num_players
    version = tuple(model._version(q) for q in range(n))
    cache = model.__dict__.setdefault("_pooled", {})
    if p in cache and cache[p][0] == version:
        return cache[p][1]
    profile = model._models_profile(p).copy()
    eta = model.config.eta
    card = [[game.infoset_string(o, int(i)).split(":")[0] for i in range(game.num_infosets)]
            for o in range(n)]  # fmt: skip
    for d in range(1, n):
        pool: dict[str, np.ndarray] = {}
        for q in range(n):
            posterior, seat = model._dirichlet[q], (q + d) % n
            for i in game.infosets(seat):
                if posterior.alpha0[d - 1, i, 0] > 0.0:  # facing a bet
                    c = card[seat][i]
                    pool[c] = pool.get(c, 0.0) + posterior.expected[d - 1, i]
        posterior, o = model._dirichlet[p], (p + d) % n
        for i in game.infosets(o):
            a0 = posterior.alpha0[d - 1, i]
            if a0[0] <= 0.0:
                continue
            seen = posterior.expected[d - 1, i]
            others = pool[card[o][i]] - seen
            m_pool = (others + eta * a0 / a0.sum()) / (others.sum() + eta)
            profile[o, i] = (seen + eta * m_pool) / (seen.sum() + eta)
    cache[p] = (version, profile)
    return profile


def _solve_sampled(model: DirichletModel, p: int, kind: object, h: int, strategy: np.ndarray):
    """``MBBRModel._solve_hole`` against :func:`sampled_profile` instead of the mean."""
    return base.kernels.solve_hole(
        *model._holes.packed[p][h], PROFILE.get(WHERE["rows"], sampled_profile)(model, p), p,
        model._sweep_scratch,
        model._choice, model._holes.infosets_of_hole[p][h], strategy,
    )  # fmt: skip


PROFILE = {
    "voi": voi_profile,
    "pooled": pooled_profile,
    "mean": DirichletModel._models_profile,
}  # others: a draw


def thompson_trajectory(job: tuple) -> np.ndarray:
    """``learning_cost.trajectory`` with the sampled response (this process only)."""
    WHERE["rows"], HORIZON["hands"], POINTS["kind"], task = job
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
        choices=("all", "unseen", "prior", "voi", "pooled", "mean"),
        default="all",
        help="where to draw: every information set, the never seen ones, or those where the "
        "prior's weight is above the visits (the mean elsewhere); voi: probe where the value of "
        "information pays; pooled: each answer to a bet centred on the opponent's answers with "
        "that card elsewhere (pooled_profile); mean: no exploration (%(default)s)",
    )
    parser.add_argument(
        "--voi-points",
        choices=("sigma", "beta"),
        default="sigma",
        help="the posterior's quadrature for --rows voi (posterior_points; %(default)s)",
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
        jobs = [(args.rows, args.hands, args.voi_points, task) for task in tasks]
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
