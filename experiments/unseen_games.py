"""MBBR with a solved prior in limit games no bundle holds: duplicate matches against the panel.

Two unseen ACPC limit games (:data:`GAMES`, defined here as text), each different from every
bundled game in its blinds (blinds 1/2, not antes), raise sizes (2 then 6) and deck (three suits
of three ranks): ``unseen2p`` (heads-up, the small blind acts first) and ``unseen3p`` (the
player after the big blind acts first; one raise in round 1, two in round 2). Nothing here
solves them: MBBR at its defaults, the ``cfr`` agent and ``STYLE@S`` get each game's solved
strategy as they get it for any game file without a bundled one (``games/acpc/solved.py``:
CFR+ until nash_conv is at most 1 mbb/h or 1000 iterations, cached; in three players a CFR
average strategy, with no equilibrium guarantee: its nash_conv is reported).

For every opponent of the panel (2 players: the styles plain and diluted with the solved
strategy, ``STYLE@S``; 3 players, where a duplicate costs ~6 times as much: the solved strategy
``cfr`` beside each plain style) and every duplicate, two duplicate matches on the same cards
(every seating, the same deals and the same opponent seeds): MBBR at its defaults
(``MBBRConfig()``: prior mean and default strategy the solved strategy) in seat 0, then the
solved strategy (``cfr``) in seat 0. Per opponent: both win rates, their paired
difference with its standard error over the duplicates, the exact best-response ceiling against
the opponents under the duplicate protocol and the exact value of ``cfr`` in MBBR's seat
(``modeling/play/tournament.py``), and the share of the gap MBBR captures:

    share = (MBBR - cfr, paired) / (BR ceiling - cfr, exact)

Units: each game's (``game.rate_unit``): both have blinds 1/2, so milli-big-blinds per hand
(1000 x chips / 2).

    python experiments/unseen_games.py [--games unseen2p,unseen3p] [--hands 3000]
                                      [--duplicates 2] [--duplicates-3p 2] [--seed 29]
                                      [--styles always-bet,...] [--styles-3p ...]
                                      [--workers 2] [--quick]
                                      [--journal FILE] [--report] [--mbbr-safety-budget 0.5]
                                      [--mbbr-hands-default 100] [--mbbr-eta 4]
                                      [--mbbr-prior eta-mixture]
                                      [--out FILE] [--json]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from oppmodel.clients.lab.journal import Journal  # noqa: E402
from oppmodel.clients.lab.reports import emit_report, machine  # noqa: E402
from oppmodel.clients.lab.runner import add_field_args, run_all  # noqa: E402
from oppmodel.clients.progress import run_progress  # noqa: E402
from oppmodel.modeling.evaluation.limit import nash_conv  # noqa: E402
from oppmodel.modeling.games.acpc.compiler import compile_limit_game  # noqa: E402
from oppmodel.modeling.games.acpc.gamedef import parse_game_def  # noqa: E402
from oppmodel.modeling.games.acpc.limit_game import LimitGame  # noqa: E402
from oppmodel.modeling.games.acpc.solved import solved_profile  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior  # noqa: E402
from oppmodel.modeling.play.agents import mbbr_factory  # noqa: E402
from oppmodel.modeling.play.diluted import fixed_profile  # noqa: E402
from oppmodel.modeling.play.fields import PLAIN, STYLES, labels  # noqa: E402
from oppmodel.modeling.play.match import fixed_strategy_factory, play_duplicate  # noqa: E402
from oppmodel.modeling.play.panel import CFR  # noqa: E402
from oppmodel.modeling.play.tournament import fixed_value, response_ceiling  # noqa: E402

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
QUICK_STYLES = "maniac,calling-station@0.35"


@functools.cache
def unseen_game(name: str) -> LimitGame:
    """The compiled unseen game ``name`` (a key of :data:`GAMES`)."""
    return compile_limit_game(parse_game_def(GAMES[name]), name)


def solved_nash_conv(game: LimitGame) -> float:
    """nash_conv of the game's solved strategy (what MBBR's defaults and ``cfr`` play: solved on
    first use and cached, ``games/acpc/solved.py``), in the game's unit."""
    return game.rate_unit.rate(nash_conv(game, solved_profile(game)))


def group_agents(game: LimitGame, opponent: str) -> list[str]:
    """MBBR and its opponents: ``opponent`` (2 players), ``cfr`` and ``opponent`` (3)."""
    return ["mbbr", opponent] if game.num_players == 2 else ["mbbr", CFR, opponent]


def play_job(job: tuple) -> tuple:
    """One duplicate of one opponent group, twice on the same cards: MBBR in seat 0, then the
    solved strategy in seat 0. (key, [MBBR's row, cfr's row] in the game's unit, seconds)."""
    key, game_name, hands, seed, config = job
    game = unseen_game(game_name)
    agents = group_agents(game, key[1])
    others = [
        fixed_strategy_factory(label, fixed_profile(game, name))
        for label, name in zip(labels(agents)[1:], agents[1:], strict=True)
    ]
    start = time.perf_counter()
    rows = [
        play_duplicate(game, [first, *others], hands=hands, seed=seed, duplicate=key[2])
        for first in (mbbr_factory(config), fixed_strategy_factory(CFR, solved_profile(game)))
    ]
    return key, [row.tolist() for row in rows], time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default=",".join(GAMES), help="(%(default)s)")
    parser.add_argument("--hands", type=int, default=None, help="hands per match (3000)")
    parser.add_argument(
        "--duplicates", type=int, default=None, help="per opponent, 2-player game (2)"
    )
    parser.add_argument(
        "--duplicates-3p", type=int, default=None, help="per opponent, 3-player game (2)"
    )
    parser.add_argument("--seed", type=int, default=29, help="series seed (%(default)s)")
    parser.add_argument("--styles", default=None, help=f"the panel ({STYLES})")
    parser.add_argument(
        "--styles-3p",
        default=None,
        help=f"the 3-player game's panel (--styles if given, else {','.join(PLAIN)})",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"40 hands, 2 duplicates, {QUICK_STYLES}",
    )
    parser.add_argument(
        "--mbbr-hands-default",
        type=int,
        default=MBBRConfig().hands_default,
        help="MBBR's hands of default play H (%(default)s)",
    )
    parser.add_argument(
        "--mbbr-prior",
        choices=Prior.names(),
        default=MBBRConfig().prior,
        help="MBBR's prior (%(default)s)",
    )
    parser.add_argument("--workers", type=int, default=1, help="(%(default)s)")
    add_field_args(parser)
    args = parser.parse_args(argv)
    hands = args.hands or (40 if args.quick else 3000)
    duplicates = {
        2: args.duplicates or 2,
        3: args.duplicates_3p or 2,
    }
    styles = args.styles if args.styles is not None else QUICK_STYLES if args.quick else STYLES
    config = MBBRConfig(
        safety_budget=args.mbbr_safety_budget,
        hands_default=args.mbbr_hands_default,
        eta=args.mbbr_eta,
        prior=args.mbbr_prior,
    )
    config.validate()
    game_names = [g for g in args.games.split(",") if g]
    unknown = [g for g in game_names if g not in GAMES]
    if unknown:
        parser.error(f"--games: unknown {', '.join(unknown)}; known: {', '.join(GAMES)}")
    panels = {
        players: [s for s in text.split(",") if s]
        for players, text in (
            (2, styles),
            (3, args.styles_3p or (styles if args.styles or args.quick else ",".join(PLAIN))),
        )
    }
    # solved (or read from the cache) here, once, before the workers read it
    nash_convs = {name: solved_nash_conv(unseen_game(name)) for name in game_names}
    # duplicate d of every group before d + 1, the 3-player games' (longer) jobs first
    order = sorted(game_names, key=lambda g: -unseen_game(g).num_players)
    jobs = [
        ((name, style, d), name, hands, args.seed, config)
        for d in range(max(duplicates.values()))
        for name in order
        if d < duplicates[unseen_game(name).num_players]
        for style in panels[unseen_game(name).num_players]
    ]
    budget = None if math.isinf(config.safety_budget) else config.safety_budget
    run = {"hands": hands, "seed": args.seed, "safety_budget": budget, "budget_in": "rate_unit"}
    mbbr = {"hands_default": config.hands_default, "eta": config.eta, "prior": config.prior.value}
    # entries without an eta were played before it was a setting, at the eta of the time, 4;
    # entries without budget_in when B was milli-chips in every game (B = 0.5: 0.25 mbb/h here);
    # entries without a prior with the informed one (the eta mixture's weak_eta: the default)
    journal = Journal(
        args.journal,
        {**run, **mbbr},
        defaults={"eta": 4.0, "budget_in": "milli-chips", "prior": Prior.INFORMED.value},
    )
    results = {key: entry for key, entry in journal.entries().items()}
    todo = [] if args.report else [job for job in jobs if job[0] not in results]
    bar = run_progress(len(todo), desc="unseen-game jobs")
    for key, value, took in run_all(play_job, todo, args.workers):
        results[key] = {"value": value, "seconds": took}
        journal.record(key, value, took)
        bar.update()
    bar.close()
    report = build_report(results, game_names, panels, duplicates)
    report.update(
        hands=hands,
        seed=args.seed,
        solved_nash_conv=nash_convs,
        mbbr={
            "posterior": config.posterior,
            "prior": config.prior,
            "response": config.response,
            "hands_default": config.hands_default,
            "eta": config.eta,
            "weak_eta": config.weak_eta,
            "safety_budget": budget,
            "change_hazard": config.change_hazard,
            "default_strategy_and_prior_mean": "the solved strategy",
        },
        load_average=os.getloadavg(),
        machine=machine(),
        command="python experiments/unseen_games.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
    )
    if emit_report(report, args.out, args.json):
        return 0
    print(markdown(report))
    return 0


def build_report(results, game_names, panels, duplicates) -> dict:
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
            opponents = [fixed_profile(game, a) for a in group_agents(game, style)[1:]]
            ceiling = response_ceiling(game, *opponents)
            cfr_exact = fixed_value(game, solved_profile(game), *opponents)
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
        errors = [row["share_se"] for row in rows]
        games.append(
            {
                "game": name,
                "definition": GAMES[name],
                "players": game.num_players,
                "seatings": math.factorial(game.num_players),
                "unit": game.rate_unit.name,
                "unit_label": game.rate_unit.label,
                "unit_legend": game.rate_unit.legend,
                "rows": rows,
                "mean_share": float(np.mean(shares)) if shares else None,
                "mean_share_se": (
                    math.sqrt(sum(e**2 for e in errors)) / len(errors)
                    if errors and None not in errors
                    else None
                ),
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
    """The report as the tables of experiments/RESULTS.md."""
    lines = []
    for game in report["games"]:
        lines += [
            f"{game['game']}: duplicates x {game['seatings']} seatings x {report['hands']} hands, "
            f"seed {report['seed']}; {game['unit_legend']} ± standard error over the duplicates; "
            f"cfr (the solved strategy): nash_conv {report['solved_nash_conv'][game['game']]:.2f} "
            f"{game['unit_label']}",
            "",
            "| opponents | dup. | MBBR | cfr in MBBR's seat | MBBR − cfr (paired) | "
            "BR ceiling | cfr exact | share of the gap |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in game["rows"]:
            share = f"{100 * row['share']:.0f}%"
            if row["share_se"] is not None:
                share += f" ± {100 * row['share_se']:.1f}"
            lines.append(
                f"| {row['opponents']} | {row['duplicates']} | {_pm(row['mbbr'])} | "
                f"{_pm(row['cfr'])} | {_pm(row['difference'])} | {row['ceiling']:+.1f} | "
                f"{row['cfr_exact']:+.1f} | {share} |"
            )
        if game["mean_share"] is not None:
            mean = f"{100 * game['mean_share']:.1f}%"
            if game["mean_share_se"] is not None:
                mean += f" ± {100 * game['mean_share_se']:.1f}"
            lines += ["", f"mean share over the panel: {mean}"]
        lines += ["checks: " + ", ".join(f"{k} {v}" for k, v in game["checks"].items()), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
