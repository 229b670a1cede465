"""Where MBBR's missing share of the static oracle goes, exact values (3-player Kuhn, Leduc).

``oracle_share.py`` says how much of the oracle MBBR wins; this says where the rest goes. It plays
the same trajectories (MBBR at every default, our position rotating every hand, both seat orders,
the same seeds: its ``played`` figures are ``oracle_share.py``'s), and at every ``--stride``-th
hand it also values, exactly against the true pair and at the posterior of that hand, what other
policies would have won in that hand:

- ``mean``: the best response to the posterior-mean models, played from the first hand and
  without the safety budget: ``played`` below it is what the default phase (H) and the bankroll
  hold back at the same posterior;
- ``true_unseen`` / ``true_rare``: the best response to the models with the true strategy at every
  opponent information set seen fewer than 1 / 10 times (expected visits, hidden cards included):
  what the sets the data have not reached cost (the exploration gap);
- ``true_seen``: the best response to the models with the true strategy at every set seen at least
  once (the model kept only where it was never seen): what estimating the seen sets costs;
- ``no_nut_fold`` (3-player Kuhn only): the best response to the models with every opponent's
  folds of an ace set to 0 (the ace wins every showdown in Kuhn, so folding it to a bet is
  dominated; the prior's epsilon floor gives it 5%, and with the folded cards hidden the data
  barely tell 5% from 0);
- ``prior_rare`` / ``light_rare``: the best response to the models with the rarely seen sets
  (fewer than 10 visits) shrunk toward the prior more (the prior's mean alone) or less (the
  data's counts plus one pseudo-count of the prior's mean, not eta's);
- ``robust_rare``: the mean response, but the default's play at every information set of ours
  whose decision changes for one of 16 posterior draws at the rarely seen sets (it does not
  deviate where the posterior's spread could flip the choice). No Bayes response to the posterior
  is needed beside ``mean``: the value of a strategy is multilinear in the opponents' rows and a
  hand meets each row at most once, so under a product of Dirichlets its expectation over the
  posterior is its value at the posterior mean, and the two responses are the same;
- ``oracle``: the best response to the true pair.

Also per hand the models' own view of the response's edge: how much more the mean response wins
than the oracle's strategy *under the models* (``model_edge``), against how much less it wins
against the truth (``true_loss``): a response chosen among near-ties by the models has a small
edge and a large loss.

``--reveal`` makes MBBR see every hand's cards (the opponents' folded holes too): the same
learner with the hidden cards' cost removed. ``--nut-fold-floor X`` is a probe of a prior that
knows folding an ace is dominated (its mean for an ace's fold X instead of the epsilon floor;
3-player Kuhn only). ``--game leduc2p`` (or ``leduc3p``) plays ``oracle_share.py``'s field of that
game (a 2-player group is one opponent); groups whose oracle wins less than ``--min-ceiling``
(``cfr``: nothing to win) are reported and left out of the mean.

    python experiments/oracle_gap.py [--game kuhn3p|leduc2p|leduc3p] [--groups A+B,...]
        [--hands 3000] [--seeds 2] [--stride 1]
        [--safety-budget 0.5] [--epsilon 0.05] [--hands-default 100] [--reveal]
        [--nut-fold-floor 1e-4] [--workers 2]
        [--journal FILE] [--out FILE]

(``--stride`` above 1 values the counterfactuals on every k-th hand only; ``played`` is every
hand's. The journal keeps each finished trajectory, so a stopped run resumes.)
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

try:  # imported as experiments.oracle_gap (the tests), or run as a script from its folder
    from experiments.oracle_share import (
        GAMES,
        LATE,
        MIN_CEILING,
        field_groups,
        job_key,
        seat_orders,
    )
except ModuleNotFoundError:
    from oracle_share import GAMES, LATE, MIN_CEILING, field_groups, job_key, seat_orders

from oppmodel.clients.lab.journal import Journal  # noqa: E402
from oppmodel.clients.lab.reports import emit_report, machine  # noqa: E402
from oppmodel.modeling.evaluation.limit import best_response, expected_values  # noqa: E402
from oppmodel.modeling.games.acpc.compiler import limit_game  # noqa: E402
from oppmodel.modeling.mbbr import base, priors  # noqa: E402
from oppmodel.modeling.mbbr import model as model_module  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig  # noqa: E402
from oppmodel.modeling.mbbr.model import build_model  # noqa: E402
from oppmodel.modeling.observation import (  # noqa: E402
    LimitObservation,
    _limit_facts,
    observe_limit_hand,
)
from oppmodel.modeling.play.diluted import fixed_profile  # noqa: E402
from oppmodel.modeling.play.match import sample_terminal  # noqa: E402
from oppmodel.modeling.play.tournament import seated_profile  # noqa: E402

VARIANTS = (
    "played",
    "mean",
    "true_unseen",
    "true_rare",
    "true_seen",
    "no_nut_fold",
    "prior_rare",
    "light_rare",
    "robust_rare",
    "oracle",
)
EXTRA = ("model_edge", "true_loss")
WINDOWS = ((0, 100), (100, 300), (300, LATE), (LATE, None))
RARE = 10.0  # expected visits below which a set counts as rarely seen
DRAWS = 16  # the robust response's posterior draws


def _value(game, truth: np.ndarray, p: int, strategy: np.ndarray) -> float:
    profile = truth.copy()
    profile[p] = strategy
    return game.rate_unit.rate(float(expected_values(game, profile)[p]))


def _with_truth(game, model, p: int, truth: np.ndarray, where) -> np.ndarray:
    """The models' profile of position ``p`` with the true rows where ``where(visits)``."""
    profile = model.models_profile(p).copy()
    counts = model.opponent_counts()
    n = game.num_players
    for d in range(1, n):
        q = (p + d) % n
        rows = np.asarray(game.infosets(q))
        visits = counts[d - 1, q, rows].sum(axis=1)
        chosen = rows[where(visits)]
        profile[q, chosen] = truth[q, chosen]
    return profile


def _rare_models(game, model, p: int, row) -> np.ndarray:
    """The models' profile of position ``p`` with ``row(alpha0, alpha)`` (an opponent's prior
    and posterior parameters at its rarely seen sets) in place of the models' rows there."""
    profile = model.models_profile(p).copy()
    fit = getattr(model, "_playing", model)._dirichlet[p]  # the run played, with detection
    n = game.num_players
    for d in range(1, n):
        q = (p + d) % n
        rows = np.asarray(game.infosets(q))
        rare = rows[fit.concentration(d)[rows] - fit.alpha0[d - 1, rows].sum(axis=1) < RARE]
        profile[q, rare] = row(fit.alpha0[d - 1, rare], fit.alpha[d - 1, rare])
    return profile


def _robust_response(game, model, p: int, rng: np.random.Generator) -> np.ndarray:
    """The mean response, but the default's play at every information set of ours where the
    responses to ``DRAWS`` posterior draws at the rarely seen sets (Dirichlet(alpha) there, the
    models elsewhere) do not all agree with it: a response that does not deviate on a decision
    that flips within the posterior's spread."""
    mean = model.response(p)[0]
    rows = np.asarray(game.infosets(p))
    agree = np.ones(len(rows), dtype=bool)
    for _ in range(DRAWS):
        draw = _rare_models(game, model, p, lambda a0, a: _dirichlet_rows(rng, a))
        agree &= (best_response(game, draw, p)[0][rows] == mean[rows]).all(axis=1)
    robust = mean.copy()
    robust[rows[~agree]] = model.default_strategy[p, rows[~agree]]
    return robust


def _dirichlet_rows(rng: np.random.Generator, alpha: np.ndarray) -> np.ndarray:
    """One draw per row of Dirichlet(alpha) (zeros stay zero)."""
    gamma = np.where(alpha > 0, rng.gamma(np.maximum(alpha, 1e-300)), 0.0)
    return gamma / gamma.sum(axis=1, keepdims=True)


def _nut_fold_floored(floor: float):
    """``priors.prior_alpha`` with the ace's folds at ``floor`` x eta in place of the epsilon
    floor (the probe ``--nut-fold-floor``: a prior that knows folding the nuts is dominated)."""

    def prior_alpha(game, prior_mean, **kwargs):
        alpha = priors.prior_alpha(game, prior_mean, **kwargs)
        for q in range(game.num_players):
            for i in game.infosets(q):
                if game.infoset_string(q, i).startswith("As:") and game.legal_mask[q, i, 0]:
                    alpha[q, i, 0] = floor * kwargs["eta"]
        return alpha

    return prior_alpha


def _without_nut_folds(game, models: np.ndarray) -> np.ndarray:
    """``models`` with the fold of every information set holding the ace set to 0 (renormalised;
    3-player Kuhn's information sets read "As:<betting>")."""
    profile = models.copy()
    for q in range(game.num_players):
        for i in game.infosets(q):
            if game.infoset_string(q, i).startswith("As:") and game.legal_mask[q, i, 0]:
                profile[q, i, 0] = 0.0
                profile[q, i] /= profile[q, i].sum()
    return profile


def gap_trajectory(task: tuple) -> dict[str, list[float]]:
    """One trajectory's window sums of every variant (``VARIANTS`` + ``EXTRA``), per window of
    ``WINDOWS`` (the counterfactuals over the hands evaluated, with their count)."""
    first, second, config, seed, hands, stride, reveal, *rest = task
    floor = rest[0] if rest else None
    game_name = rest[1] if len(rest) > 1 else "kuhn3p"
    if reveal:  # a folded hole is no part of a valid observation: this script's processes only
        base.validate_limit_observation = lambda game, obs: None
    if floor is not None:  # the probe's prior, in this script's processes only
        model_module.prior_alpha = _nut_fold_floored(floor)
    game = limit_game(game_name)
    n = game.num_players
    pair = tuple(fixed_profile(game, opponent) for opponent in (first, second)[: n - 1])
    model = build_model(game, config)
    rng = np.random.default_rng([seed, 7])  # learning_cost.trajectory's stream
    per_hand = {name: np.full(hands, np.nan) for name in (*VARIANTS, *EXTRA)}
    oracle = {}
    for p in range(n):
        truth = seated_profile(game, p, None, pair)
        strategy, _ = best_response(game, truth, p)
        oracle[p] = (strategy, _value(game, truth, p, strategy))
    for t in range(hands):
        p = t % n
        us = model.default_strategy.copy()
        us[p] = model.policy(p)
        profile = seated_profile(game, p, us, pair)
        per_hand["played"][t] = game.rate_unit.rate(float(expected_values(game, profile)[p]))
        if t % stride == 0:
            truth = profile
            mean = model.response(p)[0]
            per_hand["mean"][t] = _value(game, truth, p, mean)
            per_hand["oracle"][t] = oracle[p][1]
            for name, where in (
                ("true_unseen", lambda v: v < 1.0),
                ("true_rare", lambda v: v < RARE),
                ("true_seen", lambda v: v >= 1.0),
            ):
                target = _with_truth(game, model, p, truth, where)
                per_hand[name][t] = _value(game, truth, p, best_response(game, target, p)[0])
            if game_name == "kuhn3p":  # the ace is the nuts at every set in 3-player Kuhn only
                target = _without_nut_folds(game, model.models_profile(p))
                best = best_response(game, target, p)[0]
                per_hand["no_nut_fold"][t] = _value(game, truth, p, best)
            for name, row in (
                ("prior_rare", lambda a0, a: a0 / a0.sum(axis=1, keepdims=True)),
                ("light_rare", _light_rows),
            ):
                target = _rare_models(game, model, p, row)
                per_hand[name][t] = _value(game, truth, p, best_response(game, target, p)[0])
            draws = np.random.default_rng([seed, t, 11])  # not the trajectory's stream
            per_hand["robust_rare"][t] = _value(
                game, truth, p, _robust_response(game, model, p, draws)
            )
            models = model.models_profile(p)
            per_hand["model_edge"][t] = _value(game, models, p, mean) - _value(
                game, models, p, oracle[p][0]
            )
            per_hand["true_loss"][t] = oracle[p][1] - per_hand["mean"][t]
        obs = _observation(game, profile, p, rng, reveal)
        model.observe(obs)
    out = {}
    for name, values in per_hand.items():
        sums = []
        for a, b in WINDOWS:
            window = values[a:b]
            done = window[~np.isnan(window)]
            sums.append([float(done.sum()), int(done.size)])
        out[name] = sums
    return out


def _light_rows(alpha0: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """The posterior mean with the prior's weight cut to one pseudo-count (the data's counts plus
    the prior mean once): less shrinkage toward the prior than its eta."""
    rows = alpha - alpha0 + alpha0 / alpha0.sum(axis=1, keepdims=True)
    return rows / rows.sum(axis=1, keepdims=True)


def _observation(game, profile, p, rng, reveal: bool) -> LimitObservation:
    deal = int(rng.integers(game.num_deals))
    obs = observe_limit_hand(game, p, deal, sample_terminal(game, profile, deal, rng))
    if not reveal:
        return obs
    return LimitObservation(
        obs.position, obs.betting, _limit_facts(game).hole_text[deal], obs.board
    )


def _run(task: tuple) -> tuple[tuple, dict, float]:
    start = time.process_time()
    return task, gap_trajectory(task), time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=GAMES, default=GAMES[0], help="(%(default)s)")
    parser.add_argument("--groups", help="A+B,... (default: the field's stationary groups)")
    parser.add_argument("--hands", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=2, help="per seat order (%(default)s)")
    parser.add_argument("--stride", type=int, default=1, help="counterfactuals every k-th hand")
    parser.add_argument("--safety-budget", type=float, default=MBBRConfig().safety_budget)
    parser.add_argument("--reveal", action="store_true", help="MBBR sees every hand's cards")
    parser.add_argument("--epsilon", type=float, default=MBBRConfig().epsilon)
    parser.add_argument("--hands-default", type=int, default=MBBRConfig().hands_default)
    parser.add_argument(
        "--nut-fold-floor",
        type=float,
        default=None,
        help="probe: the prior's mean for folding an ace (default: the library's epsilon floor)",
    )
    parser.add_argument(
        "--min-ceiling",
        type=float,
        default=MIN_CEILING,
        help="groups whose oracle wins less (the game's unit) are left out of the mean",
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--journal", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    players = limit_game(args.game).num_players
    groups = field_groups(args.game)[0]
    if args.groups:
        groups = [tuple(text.split("+")) for text in args.groups.split(",")]
        if any(len(g) != players - 1 for g in groups):
            parser.error(f"--groups: {players - 1} opponents each, got {args.groups!r}")
    if math.gcd(args.stride, players) != 1:  # every k-th hand would be the same positions
        parser.error(f"--stride: must share no factor with the {players} players")
    if args.nut_fold_floor is not None and args.game != "kuhn3p":
        parser.error("--nut-fold-floor: 3-player Kuhn only (the ace is the nuts there)")
    config = MBBRConfig(
        safety_budget=args.safety_budget, epsilon=args.epsilon, hands_default=args.hands_default
    )
    config.validate()
    settings = {
        "game": args.game,
        "hands": args.hands,
        "stride": args.stride,
        "safety_budget": str(args.safety_budget),
        "reveal": args.reveal,
        "epsilon": args.epsilon,
        "hands_default": args.hands_default,
        "nut_fold_floor": args.nut_fold_floor,
    }
    done = _trajectories(groups, config, settings, args)
    rows = []
    for group in groups:
        runs = [done[job_key(order, s)] for s in range(args.seeds) for order in seat_orders(group)]
        rows.append({"group": "+".join(group), **_group_figures(runs)})
    counted = [row for row in rows if row["oracle"] >= args.min_ceiling]
    report = {
        "benchmark": "mbbr_oracle_gap",
        "seeds": args.seeds,
        **settings,
        "min_ceiling": args.min_ceiling,
        "machine": machine(),
        "rows": rows,
        "groups_averaged": len(counted),
        "mean": {
            key: float(np.mean([row[key] for row in counted]))
            for key in (counted[0] if counted else {})
            if key != "group"
        },
    }
    if emit_report(report, args.out, args.json):
        return 0
    print(json.dumps(report["mean"], indent=1))
    return 0


def _trajectories(groups: list, config: MBBRConfig, settings: dict, args) -> dict[tuple, dict]:
    """Every (first, second, seed) trajectory's window sums: the journal's, and the rest played
    on ``args.workers`` processes (each journalled as it finishes)."""
    journal = Journal(
        args.journal,
        settings,
        defaults={"game": "kuhn3p", "epsilon": 0.05, "hands_default": 100, "nut_fold_floor": None},
    )
    done = {key: entry["value"] for key, entry in journal.entries().items()}
    keys = [
        job_key(order, seed)
        for group in groups
        for seed in range(args.seeds)
        for order in seat_orders(group)
    ]
    todo = [
        (
            *key[:2],
            config,
            key[2],
            args.hands,
            args.stride,
            args.reveal,
            args.nut_fold_floor,
            args.game,
        )
        for key in keys
        if key not in done
    ]
    if todo:
        with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
            for task, value, seconds in pool.imap_unordered(_run, todo):
                key = (task[0], task[1], task[3])
                done[key] = value
                journal.record(key, value, seconds)
                name = "+".join(k for k in key[:2] if k)
                print(f"{name} seed {key[2]}: {seconds:.1f} s CPU", file=sys.stderr)
    return done


def _group_figures(runs: list[dict]) -> dict[str, float]:
    """The oracle's rate over the hands evaluated, and per window and variant the mean rate per
    hand (over the hands evaluated), and each variant's share of the oracle's."""
    oracle = [sum(run["oracle"][w][k] for run in runs for w in range(len(WINDOWS))) for k in (0, 1)]
    out = {"oracle": oracle[0] / oracle[1] if oracle[1] else float("nan")}
    for w, (a, b) in enumerate(WINDOWS):
        label = f"{a}-{b or 'end'}"
        rate = {}
        for name in (*VARIANTS, *EXTRA):
            total = sum(run[name][w][0] for run in runs)
            count = sum(run[name][w][1] for run in runs)
            if count:  # none: not valued in this game (no_nut_fold) or this window
                rate[name] = out[f"{name} {label}"] = total / count
        for name in VARIANTS[:-1]:
            if name in rate and "oracle" in rate:
                out[f"share {name} {label}"] = rate[name] / rate["oracle"]
    return out


if __name__ == "__main__":
    sys.exit(main())
