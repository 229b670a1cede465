"""MBBR in Leduc duplicate matches (2 and 3 players), with the exact references beside the results.

The field: MBBR (the Dirichlet posterior at its defaults), the ``cfr`` agent (the bundled CFR
strategy) and the panel's exploitable styles, plain and diluted with the CFR strategy
(``STYLE@S``: the style at share S of its decisions). ``leduc2p``: MBBR against each of them, both
seatings. ``leduc3p``: MBBR with one ``cfr`` agent and each style, and with two ``cfr`` agents.
Each group plays ``--duplicates`` duplicates x every seating (2 or 6) x ``--hands`` hands
(duplicate cards: every seating plays the same hole and board cards); each duplicate runs on its
own process and the group's result is exactly what

    oppmodel match --game leduc3p --agents mbbr,cfr,STYLE --hands H --duplicates D --seed S
    oppmodel match --game leduc2p --agents mbbr,STYLE --hands H --duplicates D --seed S

prints. Per group: every agent's win rate with its standard error over the duplicates, MBBR's margin
over the runner-up with the standard error of the per-duplicate differences (paired: the same
cards), the exact best-response ceiling against the opponents under the duplicate protocol
(:func:`oppmodel.modeling.play.tournament.response_ceiling`: the most any agent can win), and the
exact value of playing ``cfr`` in MBBR's seat. The field ranking: every agent's mean rate over
the groups it played (two ``cfr`` agents' group apart), with the standard error of that mean, as
``kuhn3p_field.py`` ranks its field. In ``leduc3p`` against two ``cfr`` agents also MBBR's exact
learning cost: the exact expected value of the policy MBBR plays hand by hand
(``experiments/learning_cost.py``'s trajectories, no card luck) over ``--cost-seeds`` seeds (both
seat orders of two cfr agents are one), and the ceiling minus it.

Units: Leduc's (``game.rate_unit``), milli-antes per hand (mA/h: the ante is 1 chip, so these are
milli-chips, the figures earlier reports printed as mbb/h); the report's keys keep the name
``mbb_per_hand`` so that it compares with the reports in ``experiments/results/``.

    python experiments/leduc_field.py [--game leduc3p|leduc2p] [--hands 3000] [--duplicates 12]
                                     [--seed 15] [--styles always-bet,...] [--cost-seeds 4]
                                     [--workers 2] [--quick] [--journal FILE] [--report]
                                     [--without-cfr] [--mbbr-safety-budget 0.5]
                                     [--mbbr-prior informed] [--mbbr-eta 4]
                                     [--out FILE] [--json]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from oppmodel.clients.commands._games import resolve_game  # noqa: E402
from oppmodel.clients.lab.journal import Journal  # noqa: E402
from oppmodel.clients.lab.reports import emit_report, machine  # noqa: E402
from oppmodel.clients.lab.runner import add_field_args, run_all  # noqa: E402
from oppmodel.clients.progress import run_progress  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior  # noqa: E402
from oppmodel.modeling.play.diluted import fixed_profile  # noqa: E402
from oppmodel.modeling.play.fields import STYLES, labels  # noqa: E402
from oppmodel.modeling.play.learning_cost import trajectory  # noqa: E402
from oppmodel.modeling.play.match import play_duplicate, summarize  # noqa: E402
from oppmodel.modeling.play.tournament import (  # noqa: E402
    AgentSpec,
    Estimate,
    agent_factory,
    average_estimates,
    fixed_value,
    response_ceiling,
)

GAMES = ("leduc3p", "leduc2p")


def group_agents(game: str, opponent: str) -> list[str]:
    """The agents of a group, as ``oppmodel match --agents`` takes them: MBBR against
    ``opponent`` (2 players) or against a ``cfr`` agent and ``opponent`` (3 players)."""
    return ["mbbr", opponent] if game == "leduc2p" else ["mbbr", "cfr", opponent]


def group_label(game: str, opponent: str) -> str:
    """A group's row label: its opponents."""
    return opponent if game == "leduc2p" else f"cfr+{opponent}"


def play_job(job: tuple) -> tuple:
    """One duplicate of one group: (key, per-agent rates in the game's unit, seconds)."""
    key, game_name, agents, hands, seed, duplicate, config = job
    game = resolve_game(game_name)
    factories = [agent_factory(AgentSpec(a, config if a == "mbbr" else None)) for a in agents]
    start = time.perf_counter()
    row = play_duplicate(game, factories, hands=hands, seed=seed, duplicate=duplicate)
    return key, row, time.perf_counter() - start


def cost_job(job: tuple) -> tuple:
    """One exact learning-cost trajectory against cfr + cfr (3 players): (key, mean rate,
    seconds)."""
    key, game_name, config, seed, hands = job
    start = time.perf_counter()
    values = trajectory(("cfr", "cfr", config, seed, hands, False, game_name))[0]
    return key, float(values.mean()), time.perf_counter() - start


def run_job(job: tuple) -> tuple:
    return play_job(job[1:]) if job[0] == "play" else cost_job(job[1:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=GAMES, default=GAMES[0], help="(%(default)s)")
    parser.add_argument("--hands", type=int, default=None, help="hands per match (3000)")
    parser.add_argument("--duplicates", type=int, default=None, help="per group (12)")
    parser.add_argument("--seed", type=int, default=15, help="series seed (%(default)s)")
    parser.add_argument("--styles", default=STYLES, help="exploitable styles (%(default)s)")
    parser.add_argument(
        "--cost-seeds", type=int, default=None, help="learning-cost seeds (4; leduc3p only)"
    )
    parser.add_argument("--quick", action="store_true", help="300 hands, 2 duplicates, 1 seed")
    parser.add_argument(
        "--mbbr-prior",
        choices=Prior.names(),
        default=MBBRConfig().prior,
        help="MBBR's prior (%(default)s)",
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--without-cfr",
        action="store_true",
        help="leave out the group against cfr (two cfr agents in leduc3p) and the learning cost",
    )
    add_field_args(parser)
    args = parser.parse_args(argv)
    hands = args.hands or (300 if args.quick else 3000)
    duplicates = args.duplicates or (2 if args.quick else 12)
    cost_seeds = args.cost_seeds if args.cost_seeds is not None else (1 if args.quick else 4)
    if args.game == "leduc2p" or args.without_cfr:
        cost_seeds = 0  # the exact learning cost is measured against two cfr agents
    config = MBBRConfig(
        safety_budget=args.mbbr_safety_budget, prior=args.mbbr_prior, eta=args.mbbr_eta
    )
    config.validate()
    game = args.game
    groups = [*filter(None, args.styles.split(","))]  # --styles "": the two-cfr group alone
    groups += [] if args.without_cfr else ["cfr"]
    # one learning-cost trajectory first, then duplicate d of every group before d + 1, so an
    # interrupted run leaves every group with its first duplicates
    jobs = [("cost", ("cost", 0), game, config, 0, hands)] if cost_seeds > 0 else []
    jobs += [
        ("play", (style, d), game, group_agents(game, style), hands, args.seed, d, config)
        for d in range(duplicates)
        for style in groups
    ]
    jobs += [("cost", ("cost", s), game, config, s, hands) for s in range(1, cost_seeds)]
    budget = None if math.isinf(config.safety_budget) else config.safety_budget
    # entries without a game are leduc3p's, the only game of the first journals; entries without
    # a budget were played before limit games had a bankroll: none; entries without a prior were
    # played with the informed one, entries without an eta with the eta of the time, 4
    run = {"game": game, "hands": hands, "seed": args.seed, "safety_budget": budget}
    journal = Journal(
        args.journal,
        {**run, "prior": config.prior.value, "eta": config.eta},
        defaults={"game": "leduc3p", "prior": Prior.INFORMED.value, "eta": 4.0},
    )
    results, seconds = _journalled(journal)
    todo = [] if args.report else [job for job in jobs if job[1] not in results]
    bar = run_progress(len(todo), desc=f"{args.game} jobs")
    for key, value, took in run_all(run_job, todo, args.workers):
        results[key] = value
        seconds["cost" if key[0] == "cost" else "play"].append(took)
        journal.record(key, np.asarray(value).tolist(), took)
        bar.update()
    bar.close()
    report = build_report(results, seconds, game, groups, hands, duplicates, cost_seeds, args.seed)
    report["mbbr"] = {
        "posterior": config.posterior,
        "prior": config.prior,
        "response": config.response,
        "hands_default": config.hands_default,
        "eta": config.eta,
        "safety_budget": budget,
    }
    if emit_report(report, args.out, args.json):
        return 0
    print(markdown(report))
    return 0


def _journalled(journal: Journal) -> tuple[dict, dict]:
    """The results (and seconds) of the jobs the journal holds for this run."""
    results: dict = {}
    seconds: dict = {"play": [], "cost": []}
    for key, entry in journal.entries().items():
        results[key] = entry["value"] if key[0] == "cost" else np.array(entry["value"])
        seconds["cost" if key[0] == "cost" else "play"].append(entry["seconds"])
    return results, seconds


def _prefix(results: dict, name: str, count: int) -> int:
    """How many of keys (name, 0), (name, 1), ... are in ``results`` without a gap."""
    k = 0
    while k < count and (name, k) in results:
        k += 1
    return k


def build_report(results, seconds, game_name, groups, hands, duplicates, cost_seeds, seed) -> dict:
    """Rows for every group with at least one duplicate (a group's rows use its first k
    duplicates without a gap, so ``oppmodel match --duplicates k`` prints the same), the field
    ranking over them and the checks of the issue's targets."""
    game = resolve_game(game_name)
    cfr = fixed_profile(game, "cfr")
    rows = []
    for style in groups:
        played = _prefix(results, style, duplicates)
        if played == 0:
            continue
        agents = group_agents(game_name, style)
        per_dup = [results[(style, d)] for d in range(played)]
        series = summarize(game, labels(agents), per_dup, hands=hands, seed=seed)
        mbbr = np.array([r[0] for r in per_dup])
        others = range(1, len(agents))
        runner_up = max(others, key=lambda i: series.agents[i].rate)
        margin = mbbr - np.array([r[runner_up] for r in per_dup])
        opponents = [fixed_profile(game, a) for a in agents[1:]]
        row = {
            "opponents": group_label(game_name, style),
            "duplicates": played,
            "agents": [
                {"name": a.name, "mbb_per_hand": a.rate, "se": a.standard_error}
                for a in series.agents
            ],
            "ranking": [a.name for a in series.ranking()],
            "mbbr_margin_over_runner_up": float(margin.mean()),
            "margin_se": _se(margin),
            "ceiling": response_ceiling(game, *opponents),
            "cfr_in_mbbr_seat": fixed_value(game, cfr, *opponents),
            "per_duplicate_mbbr": [float(x) for x in mbbr],
            "command": f"oppmodel match --game {game_name} --agents {','.join(agents)} "
            f"--hands {hands} --duplicates {played} --seed {seed}",
        }
        traced = _prefix(results, "cost", cost_seeds)
        if style == "cfr" and traced > 0:
            cost = np.array([results[("cost", s)] for s in range(traced)])
            row["learning"] = {
                "mbbr_exact_mbb_per_hand": float(cost.mean()),
                "se": _se(cost),
                "seeds": traced,
                "learning_cost": row["ceiling"] - float(cost.mean()),
                "command": f"python experiments/learning_cost.py --game {game_name} "
                f"--pairs cfr+cfr --priors informed --hands {hands} --seeds {traced}",
            }
        rows.append(row)
    field = field_ranking(rows, game_name)
    return {
        "benchmark": f"{game_name}_field",
        "game": game_name,
        "hands": hands,
        "duplicates_asked": duplicates,
        "seatings": math.factorial(game.num_players),
        "seed": seed,
        "unit": game.rate_unit.name,
        "seconds_per_duplicate_median": (
            float(np.median(seconds["play"])) if seconds["play"] else None
        ),
        "seconds_per_cost_trajectory_median": (
            float(np.median(seconds["cost"])) if seconds["cost"] else None
        ),
        "load_average": os.getloadavg(),
        "machine": machine(),
        "rows": rows,
        "field": field,
        "checks": checks(rows, field, game_name),
    }


def field_ranking(rows: list[dict], game_name: str) -> list[dict]:
    """Every agent's mean rate over the groups it played, with the standard error of that mean
    (``kuhn3p_field.py``'s ranking); in 3 players the group with two cfr agents is apart (it is
    MBBR's head-to-head against the pair, where the pair's two seats would count cfr twice)."""
    per_agent: dict[str, list[Estimate]] = {}
    for row in rows:
        if game_name == "leduc3p" and row["opponents"] == "cfr+cfr":
            continue
        for agent in row["agents"]:
            estimate = Estimate(agent["mbb_per_hand"], agent["se"], row["duplicates"])
            per_agent.setdefault(agent["name"], []).append(estimate)
    ranked = [
        {"name": name, "mbb_per_hand": e.mean, "se": e.se, "groups": len(estimates)}
        for name, estimates in per_agent.items()
        for e in [average_estimates(estimates)]
    ]
    return sorted(ranked, key=lambda r: -r["mbb_per_hand"])


def checks(rows: list[dict], field: list[dict], game_name: str) -> dict:
    """The issue's targets on what was played: MBBR first in the field by more than its
    standard error, first in every group, and against cfr (two cfr agents in 3 players) not
    below even by more than two standard errors."""
    out: dict = {}
    if len(field) > 1 and field[0]["name"] == "mbbr" and field[0]["se"] is not None:
        out["mbbr_first_in_field_by_more_than_its_se"] = bool(
            field[0]["mbb_per_hand"] - field[1]["mbb_per_hand"] > field[0]["se"]
        )
    elif field:
        out["mbbr_first_in_field_by_more_than_its_se"] = False
    out["mbbr_first_in_every_group"] = all(row["ranking"][0] == "mbbr" for row in rows)
    against_cfr = "cfr+cfr" if game_name == "leduc3p" else "cfr"
    for row in rows:
        mbbr = row["agents"][0]
        if row["opponents"] == against_cfr and mbbr["se"] is not None:
            out["mbbr_against_cfr_not_below_even_by_2_se"] = bool(
                mbbr["mbb_per_hand"] >= -2 * mbbr["se"]
            )
    return out


def _se(values: np.ndarray) -> float | None:
    return float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else None


def _pm(mean: float, se: float | None) -> str:
    return f"{mean:+.1f}" + (f" ± {se:.1f}" if se is not None else "")


def markdown(report: dict) -> str:
    """The report as the tables of experiments/RESULTS.md."""
    two = report["game"] == "leduc2p"
    unit = resolve_game(report["game"]).rate_unit.label
    columns = (
        "| opponent | duplicates | MBBR | opponent |"
        if two
        else ("| opponents | duplicates | MBBR | cfr | style |")
    )
    lines = [
        f"{report['game']}: duplicates x {report['seatings']} seatings x {report['hands']} hands, "
        f"seed {report['seed']}; {unit} ± standard error over the duplicates",
        "",
        columns + " MBBR − runner-up | ranking | BR ceiling | cfr in MBBR's seat |",
        "|---" * (8 if two else 9) + "|",
    ]
    for row in report["rows"]:
        cells = [_pm(a["mbb_per_hand"], a["se"]) for a in row["agents"]]
        lines.append(
            f"| {row['opponents']} | {row['duplicates']} | {' | '.join(cells)} | "
            f"{_pm(row['mbbr_margin_over_runner_up'], row['margin_se'])} | "
            f"{' > '.join(row['ranking'])} | {row['ceiling']:+.1f} | "
            f"{row['cfr_in_mbbr_seat']:+.1f} |"
        )
    if report["field"]:
        lines += ["", f"| field rank | agent | groups | {unit} |", "|---|---|---|---|"]
        for rank, agent in enumerate(report["field"], start=1):
            lines.append(
                f"| {rank} | {agent['name']} | {agent['groups']} | "
                f"{_pm(agent['mbb_per_hand'], agent['se'])} |"
            )
    for row in report["rows"]:
        if "learning" in row:
            learning = row["learning"]
            lines += [
                "",
                f"Against cfr+cfr: BR ceiling {row['ceiling']:+.2f} {unit}; MBBR's policy is worth "
                f"{_pm(learning['mbbr_exact_mbb_per_hand'], learning['se'])} {unit} exactly "
                f"({learning['seeds']} seeds), a learning cost of "
                f"{learning['learning_cost']:.2f} {unit}.",
            ]
    if report["checks"]:
        lines += ["", "checks: " + ", ".join(f"{k} {v}" for k, v in report["checks"].items())]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
