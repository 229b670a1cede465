"""MBBR with a solved prior in limit games no bundle holds: duplicate matches against the panel.

Two unseen ACPC limit games (:data:`GAMES`, defined here as text), each different from every
bundled game in its blinds (blinds 1/2, not antes), raise sizes (2 then 6) and deck (three suits
of three ranks): ``unseen2p`` (heads-up, the small blind acts first) and ``unseen3p`` (the
player after the big blind acts first; one raise in round 1, two in round 2). Each is solved with
the project's CFR+ (``modeling/solve/cfr.py``) as MBBR's defaults solve a game without a bundled
strategy: steps of :data:`CHECK_EVERY` iterations until the average strategy's nash_conv is at
most :data:`NASH_CONV_BOUND` big blinds per hand, or :data:`MAX_ITERATIONS` iterations (three
players: CFR has no equilibrium guarantee there, the result is a CFR average strategy and its
nash_conv is reported).

For every opponent of the panel (its styles plain and diluted with the solved strategy,
``STYLE@S``; three players: the solved strategy ``cfr`` beside each style) and every duplicate,
two duplicate matches on the same cards (every seating, the same deals and the same opponent
seeds): MBBR at its defaults (prior mean and default strategy: the solved strategy) in seat 0,
then the solved strategy (``cfr``) in seat 0. Per opponent: both win rates, their paired
difference with its standard error over the duplicates, the exact best-response ceiling against
the opponents under the duplicate protocol and the exact value of ``cfr`` in MBBR's seat
(``modeling/play/tournament.py``), and the share of the gap MBBR captures:

    share = (MBBR - cfr, paired) / (BR ceiling - cfr, exact)

Units: milli-big-blinds per hand (both games have a big blind of 2 chips: 1000 x chips / 2).

    python benchmarks/unseen_games.py [--games unseen2p,unseen3p] [--hands 3000]
                                      [--duplicates 8] [--duplicates-3p 3] [--seed 29]
                                      [--styles always-bet,...] [--styles-3p ...]
                                      [--workers 2] [--quick]
                                      [--journal FILE] [--report] [--mbbr-safety-budget 0.5]
                                      [--mbbr-hands-default 100] [--mbbr-eta 4]
                                      [--out FILE] [--json]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

if not __package__:  # run as a script: make benchmarks.* importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.journal import Journal  # noqa: E402
from benchmarks.leduc_field import STYLES, labels  # noqa: E402
from benchmarks.sweep import emit_report, machine  # noqa: E402
from oppmodel.clients.progress import run_progress  # noqa: E402
from oppmodel.modeling.games.acpc.compiler import compile_limit_game  # noqa: E402
from oppmodel.modeling.games.acpc.gamedef import parse_game_def  # noqa: E402
from oppmodel.modeling.games.acpc.limit_game import LimitGame  # noqa: E402
from oppmodel.modeling.mbbr.config import SAFETY_BUDGET, MBBRConfig  # noqa: E402
from oppmodel.modeling.play.agents import mbbr_factory  # noqa: E402
from oppmodel.modeling.play.diluted import is_diluted, parse_diluted  # noqa: E402
from oppmodel.modeling.play.match import fixed_strategy_factory, play_duplicate  # noqa: E402
from oppmodel.modeling.play.panel import CFR, named_profile  # noqa: E402
from oppmodel.modeling.play.tournament import fixed_value, response_ceiling  # noqa: E402
from oppmodel.modeling.solve.cfr import CFRSolver, strategy_label  # noqa: E402

_COMMON = """\
numRounds = 2
raiseSize = 2 6
numSuits = 3
numRanks = 3
numHoleCards = 1
numBoardCards = 0 1
END GAMEDEF
"""
GAMES: dict[str, str] = {
    "unseen2p": "GAMEDEF\nlimit\nnumPlayers = 2\nblind = 2 1\nfirstPlayer = 2 1\n"
    "maxRaises = 2 2\n" + _COMMON,
    "unseen3p": "GAMEDEF\nlimit\nnumPlayers = 3\nblind = 1 2 0\nfirstPlayer = 3 1\n"
    "maxRaises = 1 2\n" + _COMMON,
}
NASH_CONV_BOUND = 1e-3  # big blinds per hand (1 mbb/h)
MAX_ITERATIONS = 1000
CHECK_EVERY = 50
QUICK_ITERATIONS = 100
QUICK_STYLES = "maniac,calling-station@0.35"


@functools.cache
def unseen_game(name: str) -> LimitGame:
    """The compiled unseen game ``name`` (a key of :data:`GAMES`)."""
    return compile_limit_game(parse_game_def(GAMES[name]), name)


def big_blind(game: LimitGame) -> int:
    """The game's big blind in chips: its largest blind."""
    return max(game.gamedef.blind)


def solve(game: LimitGame, max_iterations: int = MAX_ITERATIONS) -> tuple[np.ndarray, dict]:
    """CFR+'s average strategy, run in steps of :data:`CHECK_EVERY` iterations until its
    nash_conv is at most :data:`NASH_CONV_BOUND` big blinds per hand or ``max_iterations``;
    and what it reached."""
    solver = CFRSolver(game)
    bound = NASH_CONV_BOUND * big_blind(game)
    value = math.inf
    start = time.perf_counter()
    while solver.iteration < max_iterations and value > bound:
        solver.run(min(CHECK_EVERY, max_iterations - solver.iteration))
        value = solver.nash_conv()
    info = {
        "label": strategy_label(game, solver.config),
        "iterations": solver.iteration,
        "nash_conv_mbb_per_hand": 1000.0 * value / big_blind(game),
        "bound_mbb_per_hand": 1000.0 * NASH_CONV_BOUND,
        "seconds": time.perf_counter() - start,
    }
    return solver.average_profile(), info


def opponent_profile(game: LimitGame, name: str, solved: np.ndarray) -> np.ndarray:
    """The fixed profile of an opponent name: ``cfr`` (the solved strategy), a panel style, or
    ``STYLE@S`` (the style at share S, the solved strategy at the rest)."""
    if is_diluted(name):
        style, share = parse_diluted(name)
        return share * opponent_profile(game, style, solved) + (1.0 - share) * solved
    return solved.copy() if name.lower() == CFR else named_profile(game, name)


def group_agents(game: LimitGame, opponent: str) -> list[str]:
    """MBBR and its opponents: ``opponent`` (2 players), ``cfr`` and ``opponent`` (3)."""
    return ["mbbr", opponent] if game.num_players == 2 else ["mbbr", CFR, opponent]


def play_job(job: tuple) -> tuple:
    """One duplicate of one opponent group, twice on the same cards: MBBR in seat 0, then the
    solved strategy in seat 0. (key, [MBBR's row, cfr's row] in mbb/h, seconds)."""
    key, game_name, hands, seed, config, solved, opponents = job
    game = unseen_game(game_name)
    names = labels(group_agents(game, key[1]))[1:]
    others = [fixed_strategy_factory(n, p) for n, p in zip(names, opponents, strict=True)]
    start = time.perf_counter()
    rows = [
        play_duplicate(game, [first, *others], hands=hands, seed=seed, duplicate=key[2])
        for first in (
            mbbr_factory(config, default_strategy=solved, prior_mean=solved),
            fixed_strategy_factory(CFR, solved),
        )
    ]
    to_bb = 1.0 / big_blind(game)
    return key, [(row * to_bb).tolist() for row in rows], time.perf_counter() - start


def _run_all(jobs: list, workers: int):
    """Every job's result, as they finish (in this process when ``workers`` is 1)."""
    if workers <= 1:
        yield from map(play_job, jobs)
        return
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        yield from pool.imap_unordered(play_job, jobs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default=",".join(GAMES), help="(%(default)s)")
    parser.add_argument("--hands", type=int, default=None, help="hands per match (3000)")
    parser.add_argument(
        "--duplicates", type=int, default=None, help="per opponent, 2-player game (8)"
    )
    parser.add_argument(
        "--duplicates-3p", type=int, default=None, help="per opponent, 3-player game (3)"
    )
    parser.add_argument("--seed", type=int, default=29, help="series seed (%(default)s)")
    parser.add_argument("--styles", default=None, help=f"the panel ({STYLES})")
    parser.add_argument(
        "--styles-3p", default=None, help="the 3-player game's panel (the same as --styles)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"40 hands, 2 duplicates, {QUICK_STYLES}, {QUICK_ITERATIONS} CFR+ iterations at most",
    )
    parser.add_argument(
        "--mbbr-safety-budget",
        type=float,
        default=SAFETY_BUDGET,
        help="MBBR's safety budget B, mbb/h; 'inf' plays without the bankroll (%(default)s)",
    )
    parser.add_argument(
        "--mbbr-hands-default",
        type=int,
        default=MBBRConfig().hands_default,
        help="MBBR's hands of default play H (%(default)s)",
    )
    parser.add_argument(
        "--mbbr-eta",
        type=float,
        default=MBBRConfig().eta,
        help="MBBR's prior strength eta (%(default)s)",
    )
    parser.add_argument("--workers", type=int, default=1, help="(%(default)s)")
    parser.add_argument(
        "--journal",
        type=Path,
        default=None,
        help="append each finished job here and skip the jobs it already holds (resumable)",
    )
    parser.add_argument(
        "--report", action="store_true", help="play nothing: report what the journal holds"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON only")
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    hands = args.hands or (40 if args.quick else 3000)
    duplicates = {
        2: args.duplicates or (2 if args.quick else 8),
        3: args.duplicates_3p or (2 if args.quick else 3),
    }
    styles = args.styles if args.styles is not None else QUICK_STYLES if args.quick else STYLES
    iterations = QUICK_ITERATIONS if args.quick else MAX_ITERATIONS
    config = MBBRConfig(
        safety_budget=args.mbbr_safety_budget,
        hands_default=args.mbbr_hands_default,
        eta=args.mbbr_eta,
    )
    config.validate()
    game_names = [g for g in args.games.split(",") if g]
    unknown = [g for g in game_names if g not in GAMES]
    if unknown:
        parser.error(f"--games: unknown {', '.join(unknown)}; known: {', '.join(GAMES)}")
    panels = {
        players: [s for s in text.split(",") if s]
        for players, text in ((2, styles), (3, args.styles_3p or styles))
    }
    solved, profiles, solves = {}, {}, {}
    for name in game_names:
        game = unseen_game(name)
        solved[name], solves[name] = solve(game, iterations)
        for style in panels[game.num_players]:
            agents = group_agents(game, style)[1:]
            profiles[name, style] = [opponent_profile(game, a, solved[name]) for a in agents]
    # duplicate d of every group before d + 1, the 3-player games' (longer) jobs first
    order = sorted(game_names, key=lambda g: -unseen_game(g).num_players)
    jobs = [
        ((name, style, d), name, hands, args.seed, config, solved[name], profiles[name, style])
        for d in range(max(duplicates.values()))
        for name in order
        if d < duplicates[unseen_game(name).num_players]
        for style in panels[unseen_game(name).num_players]
    ]
    budget = None if math.isinf(config.safety_budget) else config.safety_budget
    run = {"hands": hands, "seed": args.seed, "safety_budget": budget, "iterations": iterations}
    mbbr = {"hands_default": config.hands_default, "eta": config.eta}
    journal = Journal(args.journal, {**run, **mbbr}, defaults={"eta": MBBRConfig().eta})
    results = {key: entry for key, entry in journal.entries().items()}
    todo = [] if args.report else [job for job in jobs if job[0] not in results]
    bar = run_progress(len(todo), desc="unseen-game jobs")
    for key, value, took in _run_all(todo, args.workers):
        results[key] = {"value": value, "seconds": took}
        journal.record(key, value, took)
        bar.update()
    bar.close()
    report = build_report(results, game_names, panels, duplicates, solved, profiles)
    report.update(
        hands=hands,
        seed=args.seed,
        solves=solves,
        mbbr={
            "posterior": config.posterior,
            "prior": config.prior,
            "response": config.response,
            "hands_default": config.hands_default,
            "eta": config.eta,
            "safety_budget": budget,
            "change_hazard": config.change_hazard,
            "default_strategy_and_prior_mean": "the solved strategy",
        },
        load_average=os.getloadavg(),
        machine=machine(),
        command="python benchmarks/unseen_games.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
    )
    if emit_report(report, args.out, args.json):
        return 0
    print(markdown(report))
    return 0


def build_report(results, game_names, panels, duplicates, solved, profiles) -> dict:
    """Per game, a row per opponent with at least one duplicate (its first duplicates without a
    gap), the mean share over the panel and the checks of issue 29's targets."""
    games = []
    seconds = [entry["seconds"] for entry in results.values()]
    for name in game_names:
        game = unseen_game(name)
        rows = []
        for style in panels[game.num_players]:
            played = 0
            while played < duplicates[game.num_players] and (name, style, played) in results:
                played += 1
            if played == 0:
                continue
            pairs = np.array([results[name, style, d]["value"] for d in range(played)])
            mbbr, cfr = pairs[:, 0, 0], pairs[:, 1, 0]
            difference = mbbr - cfr
            scale = 1.0 / big_blind(game)
            ceiling = scale * response_ceiling(game, *profiles[name, style])
            cfr_exact = scale * fixed_value(game, solved[name], *profiles[name, style])
            gap = ceiling - cfr_exact
            rows.append(
                {
                    "opponents": style if game.num_players == 2 else f"cfr+{style}",
                    "duplicates": played,
                    "mbbr": _estimate(mbbr),
                    "cfr": _estimate(cfr),
                    "difference": _estimate(difference),
                    "ceiling": ceiling,
                    "cfr_exact": cfr_exact,
                    "gap": gap,
                    "share": float(difference.mean() / gap),
                    "share_se": _se(difference) / gap if played > 1 else None,
                    "per_duplicate_mbbr": mbbr.tolist(),
                    "per_duplicate_cfr": cfr.tolist(),
                }
            )
        shares = [row["share"] for row in rows]
        games.append(
            {
                "game": name,
                "definition": GAMES[name],
                "players": game.num_players,
                "seatings": math.factorial(game.num_players),
                "big_blind": big_blind(game),
                "rows": rows,
                "mean_share": float(np.mean(shares)) if shares else None,
                "checks": {
                    "mbbr_at_or_above_cfr_against_every_opponent": all(
                        row["difference"]["mean"] >= 0 for row in rows
                    ),
                    "mean_share_at_least_0.6": bool(shares) and float(np.mean(shares)) >= 0.6,
                },
            }
        )
    return {
        "benchmark": "unseen_games",
        "unit": "mbb/h (milli-big-blinds per hand)",
        "seconds_per_job_median": float(np.median(seconds)) if seconds else None,
        "games": games,
    }


def _estimate(values: np.ndarray) -> dict:
    return {"mean": float(values.mean()), "se": _se(values) if len(values) > 1 else None}


def _se(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / math.sqrt(len(values)))


def _pm(estimate: dict) -> str:
    se = estimate["se"]
    return f"{estimate['mean']:+.1f}" + (f" ± {se:.1f}" if se is not None else "")


def markdown(report: dict) -> str:
    """The report as the tables of benchmarks/RESULTS.md."""
    lines = []
    for game in report["games"]:
        solve_info = report["solves"][game["game"]]
        lines += [
            f"{game['game']}: duplicates x {game['seatings']} seatings x {report['hands']} hands, "
            f"seed {report['seed']}; mbb/h (milli-big-blinds per hand, big blind "
            f"{game['big_blind']} chips) ± standard error over the duplicates; cfr: "
            f"{solve_info['iterations']} CFR+ iterations, nash_conv "
            f"{solve_info['nash_conv_mbb_per_hand']:.2f} mbb/h",
            "",
            "| opponents | dup. | MBBR | cfr in MBBR's seat | MBBR − cfr (paired) | "
            "BR ceiling | cfr exact | share of the gap |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in game["rows"]:
            share = f"{100 * row['share']:.0f}%"
            if row["share_se"] is not None:
                share += f" ± {100 * row['share_se']:.0f}"
            lines.append(
                f"| {row['opponents']} | {row['duplicates']} | {_pm(row['mbbr'])} | "
                f"{_pm(row['cfr'])} | {_pm(row['difference'])} | {row['ceiling']:+.1f} | "
                f"{row['cfr_exact']:+.1f} | {share} |"
            )
        if game["mean_share"] is not None:
            lines += ["", f"mean share over the panel: {100 * game['mean_share']:.0f}%"]
        lines += ["checks: " + ", ".join(f"{k} {v}" for k, v in game["checks"].items()), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
