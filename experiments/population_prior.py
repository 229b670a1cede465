"""The population prior against new opponents of a seen population, and against opponents unlike it.

The population: the panel's exploitable styles (always-bet, calling-station, tight-passive,
maniac, bluffer), each member one style drawn at random and diluted with the game's solved
strategy at a share S drawn uniformly from [--share-low, 1] (``STYLE@S``: the style at share S
of its decisions, the solved strategy at the rest; as a behaviour strategy, S x style + (1 - S) x
solved at every information set). Honest by construction:

1. **fit**: MBBR at the defaults (the informed prior) plays ``--train`` members, ``--train-hands``
   hands each; the population prior is fitted to what those sessions' models counted
   (``MBBRModel.opponent_counts``, ``oppmodel.modeling.population.fit_population``);
2. **new members**: ``--test`` other members, drawn from another seed stream, never the fitted
   ones; MBBR with the population prior and MBBR with the informed prior play each on the same
   cards in both seats, ``--hands`` hands; MBBR's winnings over the first ``--early`` hands and
   over all of them, paired per opponent;
3. **unlike the population**: the same pair of MBBRs against players the population holds nothing
   like (``--unlike``: the solved strategy itself, uniform play), ``--hands`` hands, in both seats
   over ``--unlike-decks`` decks: what the population prior costs there; and against ``cfr``
   exactly, without card luck (``--exact-seeds`` learning trajectories per prior,
   ``modeling/play/learning_cost.py``: the exact expected value of MBBR's policy hand by hand).

Every MBBR runs at the defaults but for its prior (safety budget 0.5 in the game's unit, change
detection 1e-5, H = 100). Units: the game's (``game.rate_unit``; Leduc: mA/h).

``--game kuhn3p``: the members are the field's diluted styles ``STYLE@S`` (the style at share S,
N2 elsewhere: ``modeling/play/diluted.py``), met two at a time: the fit plays ``--train`` / 2
pairs, both opponents of each a member; the new members are ``--test`` / 2 pairs, and both sides
are exact (``learning_cost.trajectory``: the exact value of MBBR's policy hand by hand, our
position rotating, ``--exact-seeds`` seeds x both seat orders per pair), as is the cost against
the unlike players, the equilibrium pairs N1+N1, N2+N2 and N3+N3 (what the safety bound
protects). Three priors there: the informed (the baseline), the population as the Polya fit
(``population``), and the same population with its mixture over types
(``population_types.with_types``: ``types``); each row also gives each prior's share of the
static oracle over all hands (``oracle_share.oracle_by_position``: held-out groups of the
population). ``--shares`` gives the same shares in a 2-player game, against each new member.

    python experiments/population_prior.py [--game leduc2p|kuhn2p|kuhn3p] [--train 16]
        [--train-hands 1000] [--test 16] [--hands 3000] [--early 500] [--unlike cfr,uniform]
        [--unlike-decks 4] [--exact-seeds 2] [--shares] [--seed 32] [--workers 2] [--out FILE]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from oppmodel.modeling.evaluation.limit import expected_values  # noqa: E402
from oppmodel.modeling.games.acpc.compiler import limit_game  # noqa: E402
from oppmodel.modeling.games.acpc.limit_game import LimitGame  # noqa: E402
from oppmodel.modeling.games.acpc.solved import default_profile  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior  # noqa: E402
from oppmodel.modeling.play.agents import MBBRAgent  # noqa: E402
from oppmodel.modeling.play.diluted import fixed_profile  # noqa: E402
from oppmodel.modeling.play.learning_cost import trajectory  # noqa: E402
from oppmodel.modeling.play.match import FixedStrategyAgent, play_match  # noqa: E402
from oppmodel.modeling.play.panel import EXPLOITABLE_RULES, named_profile  # noqa: E402
from oppmodel.modeling.play.tournament import seated_profile  # noqa: E402
from oppmodel.modeling.population import Population, fit_population  # noqa: E402
from oppmodel.modeling.population_types import with_types  # noqa: E402

try:  # imported as experiments.population_prior, or run as a script from its folder
    from experiments.oracle_share import oracle_by_position, seat_orders
except ModuleNotFoundError:
    from oracle_share import oracle_by_position, seat_orders

STYLES = tuple(EXPLOITABLE_RULES)


def members(game_name: str, count: int, seed: int, stream: int, low: float) -> list[tuple]:
    """``count`` members of the population: (style, share), drawn from seed stream ``stream``."""
    rng = np.random.default_rng([seed, stream])
    draws = [(int(rng.integers(len(STYLES))), float(rng.uniform(low, 1.0))) for _ in range(count)]
    return [(STYLES[style], share) for style, share in draws]


def member_profile(game, style: str, share: float) -> np.ndarray:
    """The behaviour strategy of ``style@share``: the style at share S, the solved one elsewhere."""
    return share * named_profile(game, style) + (1 - share) * named_profile(game, "cfr")


def train_counts(job: tuple) -> np.ndarray:
    """One fitted session: the informed MBBR against one member; its model's counts."""
    game_name, profile_name, share, hands, seed = job
    game = limit_game(game_name)
    opponent = FixedStrategyAgent("opp", game, member_profile(game, profile_name, share), seed)
    mbbr = MBBRAgent(game, MBBRConfig(seed=seed), seed=seed + 1)
    play_match(game, [mbbr, opponent], game.deal_sequence(hands, seed))
    return mbbr.model.opponent_counts()[0]


def train_group_counts(job: tuple) -> np.ndarray:
    """One fitted 3-player session: the informed MBBR against a pair of members (``STYLE@S``
    names); both opponents' counts."""
    game_name, names, hands, seed = job
    game = limit_game(game_name)
    opponents = [
        FixedStrategyAgent(f"opp{i}", game, fixed_profile(game, name), seed + i)
        for i, name in enumerate(names)
    ]
    mbbr = MBBRAgent(game, MBBRConfig(seed=seed), seed=seed + 7)
    play_match(game, [mbbr, *opponents], game.deal_sequence(hands, seed))
    return mbbr.model.opponent_counts()


def exact_groups(
    pool: ProcessPoolExecutor, args, groups: list[tuple[str, ...]], priors: dict
) -> list[dict]:
    """Per group of opponent names (a pair in 3-player games, one opponent in 2-player ones): the
    exact value per hand of MBBR's policy with each of ``priors`` (name -> (prior, population)),
    over its first ``--early`` hands and all ``--hands``, averaged over ``--exact-seeds`` seeds x
    the group's seat orders (``learning_cost.trajectory``), and its share of the static oracle
    over all hands."""
    rows = []
    for group in groups:
        orders = seat_orders(group)
        game = limit_game(args.game)
        oracle = [oracle_by_position(game, o) for o in orders]
        ceiling = np.array([o[np.arange(args.hands) % len(o)] for o in oracle])
        # the most any prior can earn over the early hands: the default's first H, the oracle's
        default = [default_values(game, o) for o in orders]
        t = np.arange(args.early)
        hands_default = MBBRConfig().hands_default
        cap = [
            np.where(t < hands_default, d[t % len(d)], o[t % len(o)])
            for d, o in zip(default, oracle, strict=True)
        ]
        row = {"oracle": float(ceiling.mean()), "early_cap": float(np.mean(cap))}
        for name, (prior, given) in priors.items():
            tasks = [
                (order[0], order[1] if len(order) > 1 else None, MBBRConfig(prior=prior, seed=seed),
                 seed, args.hands, False, args.game, None, given)
                for seed in range(args.seed, args.seed + args.exact_seeds)
                for order in orders
            ]  # fmt: skip
            values = np.array([v for v, _, _ in pool.map(trajectory, tasks)])
            # no share where the oracle wins nothing (the equilibrium pairs)
            share = values.mean() / ceiling.mean() if ceiling.mean() >= 1 else None
            row[name] = [float(values[:, : args.early].mean()), float(values.mean()), share]
        rows.append(row)
        print(f"{'+'.join(group)}: {json.dumps(row)}", flush=True)
    return rows


def exact_shares(rows: list[dict], groups: list[tuple[str, ...]]) -> dict:
    """The exact rows per group and, per prior, the mean share of the static oracle over the
    groups, the share of the summed winnings, and (against the informed prior) the paired gain in
    points of the share."""
    summary = {}
    for prior in ("informed", "population", "types"):
        share = [r[prior][2] for r in rows]
        summary[f"{prior}_share"] = mean_se(share)
        summary[f"{prior}_share_of_sum"] = sum(r[prior][1] for r in rows) / sum(
            r["oracle"] for r in rows
        )
        if prior != "informed":
            summary[f"{prior}_share_gain"] = mean_se(
                [s - r["informed"][2] for s, r in zip(share, rows, strict=True)]
            )
    return {
        "rows": [{"opponents": "+".join(g), **r} for g, r in zip(groups, rows, strict=True)],
        "summary": summary,
    }


def default_values(game: LimitGame, order: tuple[str, ...]) -> np.ndarray:
    """The default strategy's exact win rate in each of our positions against ``order``."""
    pair = [fixed_profile(game, name) for name in order]
    default = default_profile(game, "default_strategy")
    return np.array([
        game.rate_unit.rate(expected_values(game, seated_profile(game, p, default, pair))[p])
        for p in range(game.num_players)
    ])  # fmt: skip


def three_player(args: argparse.Namespace, game: LimitGame) -> dict:
    """The ``--game kuhn3p`` run (module docstring): fit on pairs of members, exact values
    against new pairs and against the equilibrium pairs."""
    started = time.time()
    name = [f"{style}@{share:.2f}" for style, share in members(
        args.game, args.train, args.seed, 1, args.share_low)]  # fmt: skip
    test = [f"{style}@{share:.2f}" for style, share in members(
        args.game, args.test, args.seed, 2, args.share_low)]  # fmt: skip
    with ProcessPoolExecutor(args.workers) as pool:
        jobs = [
            (args.game, (name[j], name[j + 1]), args.train_hands, args.seed * 1000 + j)
            for j in range(0, len(name) - 1, 2)
        ]
        counts = np.concatenate(list(pool.map(train_group_counts, jobs)))
        mean = named_profile(game, "n3")
        population = fit_population(game, counts, prior_mean=mean)
        typed = with_types(population, game, counts, prior_mean=mean)
        print(f"fitted from {len(counts)} members in {time.time() - started:.0f} s: "
              f"{int(population.fitted.sum())} information sets fitted, "
              f"{len(typed.types)} types", flush=True)  # fmt: skip
        priors = {
            "informed": (Prior.INFORMED, None),
            "population": (Prior.POPULATION, population),
            "types": (Prior.POPULATION, typed),
        }
        new_pairs = [(test[j], test[j + 1]) for j in range(0, len(test) - 1, 2)]
        if args.pairs:  # given held-out groups instead (the equilibrium pairs then not run)
            new_pairs = [tuple(text.split("+")) for text in args.pairs.split(",")]
        rows = exact_groups(pool, args, new_pairs, priors)
        equilibria = [] if args.pairs else [("n1", "n1"), ("n2", "n2"), ("n3", "n3")]
        unlike = exact_groups(pool, args, equilibria, priors)
    new = [{"opponents": f"{a}+{b}", **row} for (a, b), row in zip(new_pairs, rows, strict=True)]
    summary = {}
    for prior in ("informed", "population", "types"):
        summary[f"{prior}_early"] = mean_se([r[prior][0] for r in new])
        summary[f"{prior}_full"] = mean_se([r[prior][1] for r in new])
        summary[f"{prior}_share"] = mean_se([r[prior][2] for r in new])
        if prior != "informed":
            summary[f"{prior}_early_gain"] = mean_se([r[prior][0] - r["informed"][0] for r in new])
            summary[f"{prior}_early_gain_share"] = (
                summary[f"{prior}_early"][0] / summary["informed_early"][0] - 1
            )
            summary[f"{prior}_full_gain"] = mean_se([r[prior][1] - r["informed"][1] for r in new])
    return {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "unit": game.rate_unit.name,
        "train": name,
        "rows": new,
        "summary": summary,
        "unlike_exact": {
            f"{a}+{b}": {
                **row,
                "cost": row["informed"][1] - row["population"][1],
                "types_cost": row["informed"][1] - row["types"][1],
            }
            for (a, b), row in zip(equilibria, unlike, strict=True)
        },
        "seconds": round(time.time() - started),
    }


def paired_match(job: tuple) -> dict:
    """The informed prior and each population (name -> its bytes) against one opponent profile,
    both seats, the same cards: MBBR's chips over the first ``early`` hands and over all, per
    prior."""
    game_name, profile, blobs, hands, early, seed = job
    game = limit_game(game_name)
    priors = {"informed": None} | {
        name: Population.from_bytes(game, blob) for name, blob in blobs.items()
    }
    deals = game.deal_sequence(hands, seed)
    out: dict[str, list[float]] = {}
    for name, given in priors.items():
        prior = Prior.INFORMED if given is None else Prior.POPULATION
        chips = np.zeros(2)
        for seat in (0, 1):
            config = MBBRConfig(prior=prior, seed=seed + seat)
            mbbr = MBBRAgent(game, config, seed=seed + 7 + seat, population=given)
            opponent = FixedStrategyAgent("opp", game, profile, seed + 11 + seat)
            agents = [mbbr, opponent] if seat == 0 else [opponent, mbbr]
            first = play_match(game, agents, deals[:early])[seat]
            rest = play_match(game, agents, deals[early:])[seat]  # an even split: seats rotate on
            chips += (first, first + rest)
        out[name] = [
            game.rate_unit.rate(chips[0], 2 * early),
            game.rate_unit.rate(chips[1], 2 * hands),
        ]
    return out


def exact_cost(pool: ProcessPoolExecutor, args: argparse.Namespace, populations: dict) -> dict:
    """The exact expected value of MBBR's policy hand by hand against ``cfr`` (no card luck:
    ``learning_cost.trajectory``), per prior (the informed and each of ``populations``, name ->
    population) over ``--exact-seeds`` seeds, and each population's cost: informed minus it, in
    the game's unit, over ``--hands`` hands."""
    out: dict[str, list[float]] = {}
    for name, given in ({"informed": None} | populations).items():
        prior = Prior.INFORMED if given is None else Prior.POPULATION
        tasks = [
            ("cfr", None, MBBRConfig(prior=prior, seed=seed), seed, args.hands, False, args.game,
             None, given)
            for seed in range(args.seed, args.seed + args.exact_seeds)
        ]  # fmt: skip
        out[name] = [float(values.mean()) for values, _, _ in pool.map(trajectory, tasks)]
    print(f"exact against cfr: {out}")
    costs = {
        f"{name}_cost" if name != "population" else "cost": mean_se(
            [i - p for i, p in zip(out["informed"], out[name], strict=True)]
        )
        for name in populations
    }
    return {**out, **costs}


def _gathered(pool: ProcessPoolExecutor, jobs: list, what: str, started: float) -> list[dict]:
    """The pairs of ``jobs``, in order, with a progress line per finished one."""
    rows = []
    for done, row in enumerate(pool.map(paired_match, jobs), start=1):
        rows.append(row)
        print(f"{what}: {done}/{len(jobs)} ({time.time() - started:.0f} s)", flush=True)
    return rows


def mean_se(values: list[float]) -> tuple[float, float]:
    """The mean and its standard error (NaN with fewer than two values)."""
    a = np.array(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(len(a))) if len(a) > 1 else math.nan


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="leduc2p", choices=("leduc2p", "kuhn2p", "kuhn3p"))
    counts = (
        ("--train", 16, "members fitted"),
        ("--train-hands", 1000, "hands against each fitted member"),
        ("--test", 16, "new members played"),
        ("--hands", 3000, "hands per match"),
        ("--early", 500, "the early hands, even"),
        ("--unlike-decks", 4, "decks per player unlike the population"),
        ("--exact-seeds", 2, "exact learning trajectories against cfr per prior"),
        ("--seed", 32, "the base seed"),
        ("--workers", 2, "processes"),
    )
    for flag, default, what in counts:
        parser.add_argument(flag, type=int, default=default, help=f"{what} (%(default)s)")
    parser.add_argument("--share-low", type=float, default=0.35, help="(%(default)s)")
    parser.add_argument("--unlike", default="cfr,uniform", help="(%(default)s)")
    parser.add_argument(
        "--pairs",
        help="held-out groups played instead of the new members: kuhn3p A+B,...; a 2-player "
        "game's opponents A,B,... (their exact shares, with --shares)",
    )
    parser.add_argument(
        "--shares",
        action="store_true",
        help="2-player: also each prior's exact share of the static oracle against every new "
        "member (--exact-seeds seeds x both seats; the 3-player run always gives them)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.early % 2 or not 0 < args.early < args.hands:
        parser.error("--early must be even and below --hands")
    game = limit_game(args.game)
    if game.num_players == 3:
        report = three_player(args, game)
        print(json.dumps(report["summary"]), json.dumps(report["unlike_exact"]), sep="\n")
        if args.out:
            args.out.write_text(json.dumps(report, indent=1) + "\n")
        return
    started = time.time()
    train = members(args.game, args.train, args.seed, 1, args.share_low)
    test = members(args.game, args.test, args.seed, 2, args.share_low)
    with ProcessPoolExecutor(args.workers) as pool:
        jobs = [
            (args.game, style, share, args.train_hands, args.seed * 1000 + j)
            for j, (style, share) in enumerate(train)
        ]
        counts = np.array(list(pool.map(train_counts, jobs)))
        mean = named_profile(game, "cfr")
        population = fit_population(game, counts, prior_mean=mean)
        typed = with_types(population, game, counts, prior_mean=mean)
        blob = {"population": population.to_bytes(), "types": typed.to_bytes()}
        print(f"fitted from {len(train)} members in {time.time() - started:.0f} s: "
              f"{int(population.fitted.sum())} information sets fitted, "
              f"{len(typed.types)} types")  # fmt: skip
        new_jobs = [
            (args.game, member_profile(game, style, share), blob, args.hands, args.early,
             args.seed * 1000 + 500 + j)
            for j, (style, share) in enumerate(test)
        ]  # fmt: skip
        unlike = [name for name in args.unlike.split(",") if name]
        unlike_jobs = [
            (args.game, named_profile(game, name), blob, args.hands, args.early,
             args.seed * 1000 + 900 + 10 * u + deck)
            for u, name in enumerate(unlike)
            for deck in range(args.unlike_decks)
        ]  # fmt: skip
        populations = {"population": population, "types": typed}
        exact = exact_cost(pool, args, populations) if args.exact_seeds else None
        shares = None
        if args.shares:
            priors = {"informed": (Prior.INFORMED, None)} | {
                name: (Prior.POPULATION, given) for name, given in populations.items()
            }
            groups = [(f"{style}@{share:.2f}",) for style, share in test]
            if args.pairs:  # given held-out opponents instead (the field's, say)
                groups = [(name,) for name in args.pairs.split(",")]
            shares = exact_shares(exact_groups(pool, args, groups, priors), groups)
        new_rows = _gathered(pool, new_jobs, "new members", started)
        unlike_rows = _gathered(pool, unlike_jobs, "unlike the population", started)
    report = summarize(args, game, train, test, unlike, new_rows, unlike_rows)
    report["exact_cfr"] = exact
    report["exact_shares"] = shares
    report["seconds"] = round(time.time() - started)
    print_report(report, game.rate_unit.name)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


def summarize(
    args: argparse.Namespace,
    game: LimitGame,
    train: list[tuple],
    test: list[tuple],
    unlike: list[str],
    new_rows: list[dict],
    unlike_rows: list[dict],
) -> dict:
    """The per-opponent rows and the paired summaries."""
    rows = [
        {"opponent": f"{style}@{share:.2f}", **row}
        for (style, share), row in zip(test, new_rows, strict=True)
    ]
    inf_early = mean_se([r["informed"][0] for r in rows])
    summary = {
        "informed_early": inf_early,
        "informed_full": mean_se([r["informed"][1] for r in rows]),
    }
    for prior in ("population", "types"):  # the population's keys unprefixed (earlier reports)
        key = "" if prior == "population" else "types_"
        own_early = mean_se([r[prior][0] for r in rows])
        summary |= {
            f"{prior}_early": own_early,
            f"{key}early_gain": mean_se([r[prior][0] - r["informed"][0] for r in rows]),
            f"{key}early_gain_share": (own_early[0] - inf_early[0]) / inf_early[0],
            f"{prior}_full": mean_se([r[prior][1] for r in rows]),
            f"{key}full_gain": mean_se([r[prior][1] - r["informed"][1] for r in rows]),
        }
    unlike_summary = {}
    for u, name in enumerate(unlike):
        chunk = unlike_rows[u * args.unlike_decks : (u + 1) * args.unlike_decks]
        unlike_summary[name] = {
            f"{prior}_full": mean_se([r[prior][1] for r in chunk])
            for prior in ("informed", "population", "types")
        } | {
            "cost": mean_se([r["informed"][1] - r["population"][1] for r in chunk]),
            "types_cost": mean_se([r["informed"][1] - r["types"][1] for r in chunk]),
        }
    return {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "unit": game.rate_unit.name,
        "train": [f"{s}@{x:.2f}" for s, x in train],
        "rows": rows,
        "summary": summary,
        "unlike": unlike_summary,
    }


def print_report(report: dict, unit: str) -> None:
    """The table of the new members and the summaries, as RESULTS.md shows them."""
    early = report["args"]["early"]
    print(f"| new opponent | first {early}: informed / Polya / types | "
          f"all: informed / Polya / types |")  # fmt: skip
    print("|---|---|---|")
    for r in report["rows"]:
        inf, pop, typ = r["informed"], r["population"], r["types"]
        cells = [" / ".join(f"{p[k]:+.1f}" for p in (inf, pop, typ)) for k in (0, 1)]
        print(f"| {r['opponent']} | {cells[0]} | {cells[1]} |")
    s = report["summary"]
    print(f"first {early}: informed {s['informed_early'][0]:+.1f} ± {s['informed_early'][1]:.1f}, "
          f"population {s['population_early'][0]:+.1f} ± {s['population_early'][1]:.1f} {unit}; "
          f"paired gain {s['early_gain'][0]:+.1f} ± {s['early_gain'][1]:.1f} "
          f"({100 * s['early_gain_share']:+.1f}%)")  # fmt: skip
    print(f"first {early}: types {s['types_early'][0]:+.1f} ± {s['types_early'][1]:.1f}; paired "
          f"gain {s['types_early_gain'][0]:+.1f} ± {s['types_early_gain'][1]:.1f} "
          f"({100 * s['types_early_gain_share']:+.1f}%)")  # fmt: skip
    print(f"all hands: informed {s['informed_full'][0]:+.1f}, population "
          f"{s['population_full'][0]:+.1f}; paired gain {s['full_gain'][0]:+.1f} ± "
          f"{s['full_gain'][1]:.1f}; types {s['types_full'][0]:+.1f}, paired gain "
          f"{s['types_full_gain'][0]:+.1f} ± {s['types_full_gain'][1]:.1f}")  # fmt: skip
    for name, u in report["unlike"].items():
        cost, se = u["cost"]
        print(f"unlike ({name}): informed {u['informed_full'][0]:+.1f}, population "
              f"{u['population_full'][0]:+.1f}; cost {cost:+.1f} ± {se:.1f}; types "
              f"{u['types_full'][0]:+.1f}, cost {u['types_cost'][0]:+.1f} ± "
              f"{u['types_cost'][1]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
