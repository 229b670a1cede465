"""The field experiment of Ganzfried et al. 2024 (Tables 1 and 6), and MBBR head to head.

The field: MBBR (paper settings: epsilon 0.05, k 10, H 100, eta 4, N1 default, N3 prior mean; its
posterior is the paper's k samples or, with ``--mbbr-posterior dirichlet``, the Dirichlet posterior
of ``oppmodel.modeling.mbbr.dirichlet``), the robust equilibria N1, N2, N3, and eight exploitable
styles: five fixed (always-bet, calling-station, tight-passive, maniac, bluffer) and three that
change during a match (switcher, exploiter, tilter; ``oppmodel.modeling.play.adaptive``). They stand
in for the paper's ten class-project agents, which are not available. ``--field competent`` dilutes
every style with N2 to ``--share`` of its decisions (``oppmodel.modeling.play.diluted``): a field as
hard as the paper's.

For every group of 3 agents: duplicate matches over the 6 seatings, ``--hands`` hands each,
``--reps`` repetitions (paper: 3000 and 10). Each agent's score is its mean mA/h over all the
groups it played in, with the standard error of that mean (``oppmodel.modeling.play.tournament``):
Table 1. Table 6 replays every group containing MBBR with its uninformed prior (Dirichlet(2)
everywhere) on the same cards. Head to head: MBBR's paired margin over each agent in the groups both
played, and MBBR against every pair of equilibrium agents (including two copies of one) with the
exact best-response ceiling of each pair (what a perfect exploiter would win).

    python experiments/kuhn3p_field.py [--quick] [--json] [--workers N] [--backend local|ray
                                      --address ADDR] [--hands H] [--reps R] [--field F]
                                      [--mbbr-posterior P] [--mbbr-safety-budget B]
                                      [--mbbr-change-hazard H] [--journal FILE]
                                      [--from-json FILE]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

from oppmodel.clients.lab.reports import machine, output_dir, report_written  # noqa: E402
from oppmodel.clients.lab.runner import add_runner_args, run_jobs_with_args  # noqa: E402
from oppmodel.modeling.errors import InvalidArgumentError  # noqa: E402
from oppmodel.modeling.games.acpc.compiler import limit_game  # noqa: E402
from oppmodel.modeling.mbbr.config import Posterior, Prior, Response  # noqa: E402
from oppmodel.modeling.play.fields import (  # noqa: E402
    DEFAULT_SHARE,
    EQUILIBRIA,
    FIELD,
    PAPER_MBBR,
    build_jobs,
    competent_field,
    field_groups,
    h2h_pairs,
)
from oppmodel.modeling.play.panel import named_profile  # noqa: E402
from oppmodel.modeling.play.tournament import (  # noqa: E402
    Estimate,
    average_estimates,
    mean_estimate,
    response_ceiling,
)

# milli-antes per hand: the paper's figures (it says mbb/h)
UNIT = limit_game("kuhn3p").rate_unit.label
RESULTS_DIR = Path(__file__).resolve().parent / "results"
PAPER_TABLE1 = {"mbbr": 48, "n1": 37, "n3": 35, "n2": 30}
PAPER_TABLE6 = {"mbbr": -54, "n1": 47, "n3": 44, "n2": 40}


def ranking(results, index, table: str, field: Sequence[str]) -> list[tuple[str, Estimate]]:
    """Each agent's mean over the groups it played in, best first."""
    per_agent: dict[str, list[Estimate]] = {name: [] for name in field}
    for group in field_groups(field):
        if (table, group) not in index:  # --mbbr-only: the groups MBBR did not sit in
            continue
        ids = index[(table, group)]
        for j, name in enumerate(group):
            per_agent[name].append(mean_estimate([results[i].rate[j] for i in ids]))
    rows = [(name, average_estimates(ests)) for name, ests in per_agent.items()]
    return sorted(rows, key=lambda row: -row[1].mean)


def head_to_head(results, index, table: str, field: Sequence[str]) -> list[tuple[str, Estimate]]:
    """MBBR's margin over each other agent: the mean, over the groups where both sat, of MBBR's
    mA/h minus theirs (paired per repetition: same cards, same seatings)."""
    rows = []
    for other in field[1:]:
        margins = []
        for group in field_groups(field):
            if "mbbr" in group and other in group:
                ids, i, j = index[(table, group)], group.index("mbbr"), group.index(other)
                margins.append(
                    mean_estimate([results[r].rate[i] - results[r].rate[j] for r in ids])
                )
        rows.append((other, average_estimates(margins)))
    return rows


def group_estimates(results, index, table: str, group) -> list[Estimate]:
    ids = index[(table, group)]
    return [mean_estimate([results[i].rate[j] for i in ids]) for j in range(3)]


def fmt(mean: float, se: float | None) -> str:
    return f"{mean:+.1f} ± {se:.1f}" if se is not None else f"{mean:+.1f}"


def ranking_markdown(rows: list[dict], paper: dict[str, int]) -> str:
    lines = [f"| rank | agent | {UNIT} ± SE | paper |", "|---|---|---|---|"]
    for rank, row in enumerate(rows, start=1):
        name = row["agent"]
        lines.append(f"| {rank} | {name} | {fmt(row['mbb'], row['se'])} | {paper.get(name, '')} |")
    return "\n".join(lines)


def head_to_head_markdown(rows: list[dict]) -> str:
    lines = [f"| against | MBBR's margin, {UNIT} ± SE | groups |", "|---|---|---|"]
    lines += [f"| {r['agent']} | {fmt(r['margin'], r['se'])} | {r['groups']} |" for r in rows]
    return "\n".join(lines)


def h2h_rows(results, index) -> list[dict]:
    game = limit_game("kuhn3p")
    rows = []
    for a, b in h2h_pairs():
        ests = group_estimates(results, index, "h2h", ("mbbr", a, b))
        ceiling = response_ceiling(game, named_profile(game, a), named_profile(game, b))
        rows.append(
            {"pair": [a, b], "ceiling": ceiling, "mbb": [dataclasses.asdict(e) for e in ests]}
        )
    return rows


def h2h_markdown(rows: list[dict]) -> str:
    lines = [
        f"| opponents | MBBR {UNIT} ± SE | opponent 1 | opponent 2 | exact BR ceiling |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        (a, b), (m, x, y) = row["pair"], (fmt(e["mean"], e["se"]) for e in row["mbb"])
        lines.append(f"| {a} + {b} | {m} | {a}: {x} | {b}: {y} | {row['ceiling']:+.1f} |")
    return "\n".join(lines)


def checks(report: dict) -> dict[str, bool]:
    """The issue's done-when targets, evaluated on a report's numbers."""
    table1, table6, h2h = report["table1"], report.get("table6"), report["h2h"]
    first, second = table1[0], table1[1]
    out = {
        "mbbr_first_by_more_than_its_se": first["agent"] == "mbbr"
        and first["mbb"] - second["mbb"] > (first["se"] or float("inf"))
    }
    margins = {row["agent"]: row for row in report.get("head_to_head", [])}
    for n in EQUILIBRIA:  # over the field groups holding both, MBBR ahead by more than a SE
        if n in margins:  # (reports written before the margins were kept do not have them)
            row = margins[n]
            out[f"mbbr_beats_{n}_head_to_head"] = row["margin"] > (row["se"] or float("inf"))
    out["mbbr_never_below_minus_one_se_vs_an_equilibrium_pair"] = all(
        row["mbb"][0]["mean"] + (row["mbb"][0]["se"] or 0.0) >= 0.0 for row in h2h
    )
    if table6:
        uninformed = next(r["mbb"] for r in table6 if r["agent"] == "mbbr")
        out["uninformed_mbbr_below_every_equilibrium_agent"] = all(
            uninformed < r["mbb"] for r in table6 if r["agent"] in EQUILIBRIA
        )
    return out


def render(report: dict) -> str:
    """The report as markdown: Table 1, Table 6, head to head, and the checks."""
    size = (
        f"{report['hands']} hands x 6 seatings x {report['reps']} reps per group, "
        f"{report['groups']} groups"
    )
    mbbr = report.get("mbbr", dataclasses.asdict(PAPER_MBBR))
    posterior = mbbr.get("posterior", "samples")
    keys = ("k",) * (posterior == "samples") + ("epsilon", "hands_default", "eta")
    setting = ", ".join(f"{key} {mbbr[key]}" for key in keys)
    budget = mbbr.get("safety_budget")  # none in reports from before the budget
    budget = (
        "no safety budget" if budget is None or math.isinf(budget) else f"safety budget {budget}"
    )
    prior = mbbr.get("prior", "informed")
    parts = [
        f"MBBR: {posterior} posterior, {prior} prior, {setting}, "
        f"{mbbr['response']} response, {budget}, change hazard {mbbr.get('change_hazard', 0)}.\n",
        f"## Field, MBBR with the {prior} prior (paper Table 1; {size}"
        f"{'; only the groups MBBR sat in' if report.get('mbbr_only') else ''})\n",
        ranking_markdown(report["table1"], PAPER_TABLE1),
    ]
    if report.get("table6"):
        rank6 = [r["agent"] for r in report["table6"]].index("mbbr") + 1
        parts += [
            f"\n## Field, MBBR with the uninformed prior (paper Table 6; {size})\n",
            ranking_markdown(report["table6"], PAPER_TABLE6),
            f"\nUninformed MBBR ranks {rank6} of {len(report['table6'])} (paper: 13 of 14).",
        ]
    if report.get("head_to_head"):
        parts += [
            "\n## Head to head: MBBR's margin over each agent in the groups both played\n",
            head_to_head_markdown(report["head_to_head"]),
        ]
    parts += [
        "\n## MBBR against pairs of equilibrium agents\n",
        h2h_markdown(report["h2h"]),
        "\n## Checks (the issue's done-when targets)\n",
        *[f"- {name}: {'yes' if ok else 'NO'}" for name, ok in checks(report).items()],
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(
            "The field experiment of Ganzfried et al. 2024: every group of 3 agents from MBBR, "
            "N1-N3 and eight exploitable styles (three adaptive) plays duplicate matches; prints "
            "the ranking with MBBR's informed prior (Table 1) and uninformed prior (Table 6), and "
            "MBBR against every pair of equilibrium agents."
        )
    )
    parser.add_argument("--hands", type=int, default=None, help="hands per match (default 3000)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per group (default 10)")
    parser.add_argument("--quick", action="store_true", help="300 hands, 2 repetitions")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON file to write (default experiments/results/field.json; --quick: field_quick.json"
        " in a new temporary folder)",
    )
    parser.add_argument(
        "--from-json", type=Path, default=None, help="print the tables of a saved report; no play"
    )
    parser.add_argument(
        "--mbbr-k", type=int, default=PAPER_MBBR.k, help="MBBR's samples per model (paper 10)"
    )
    parser.add_argument(
        "--mbbr-response",
        choices=Response.names(),
        default=PAPER_MBBR.response,
        help="MBBR's response (paper: mean)",
    )
    parser.add_argument(
        "--mbbr-posterior",
        choices=Posterior.names(),
        default=PAPER_MBBR.posterior,
        help="MBBR's posterior: the paper's k importance-weighted samples, or the Dirichlet "
        "(variational Bayes) posterior",
    )
    parser.add_argument(
        "--mbbr-prior",
        choices=(Prior.INFORMED.value, Prior.TYPED.value, Prior.ETA_MIXTURE.value),
        default=PAPER_MBBR.prior,
        help="MBBR's prior in Table 1 (paper: informed; typed needs the dirichlet posterior; "
        "eta-mixture is the library's default); Table 6 is the uninformed one",
    )
    parser.add_argument(
        "--field",
        choices=("panel", "competent"),
        default="panel",
        help="panel: the eight styles as they are; competent: each diluted with N2 to --share "
        "of its decisions, a field as hard as the paper's class agents",
    )
    parser.add_argument(
        "--share",
        type=float,
        default=DEFAULT_SHARE,
        help="share of its decisions a style plays in the competent field (%(default)s)",
    )
    parser.add_argument(
        "--no-uninformed", action="store_true", help="skip Table 6 (the uninformed prior)"
    )
    parser.add_argument(
        "--mbbr-safety-budget",
        type=float,
        default=math.inf,
        help="MBBR's safety budget, mA/h (oppmodel.modeling.mbbr.safety; paper: inf, none)",
    )
    parser.add_argument(
        "--mbbr-eta",
        type=float,
        default=PAPER_MBBR.eta,
        help="MBBR's prior strength eta, pseudo-counts per information set (paper 4)",
    )
    parser.add_argument(
        "--mbbr-change-hazard",
        type=float,
        default=PAPER_MBBR.change_hazard,
        help="MBBR's change-detection hazard per hand (oppmodel.modeling.mbbr.change; paper: 0, "
        "opponents never change)",
    )
    parser.add_argument(
        "--mbbr-only",
        action="store_true",
        help="play only the groups MBBR sits in: MBBR's figures are those of the full run (same "
        "cards), the other agents' are over those groups only",
    )
    add_runner_args(parser)
    args = parser.parse_args(argv)
    if args.from_json:
        report = json.loads(args.from_json.read_text())
        report["checks"] = checks(report)
        print(json.dumps(report, indent=1) if args.json else render(report))
        return 0
    hands = args.hands or (300 if args.quick else 3000)
    reps = args.reps or (2 if args.quick else 10)
    mbbr = dataclasses.replace(
        PAPER_MBBR,
        k=args.mbbr_k,
        response=args.mbbr_response,
        posterior=args.mbbr_posterior,
        prior=args.mbbr_prior,
        eta=args.mbbr_eta,
        safety_budget=args.mbbr_safety_budget,
        change_hazard=args.mbbr_change_hazard,
    )
    try:
        mbbr.validate()
    except InvalidArgumentError as exc:
        parser.error(f"MBBR {exc}")
    field = FIELD if args.field == "panel" else competent_field(args.share)
    jobs, index = build_jobs(
        hands,
        reps,
        mbbr=mbbr,
        uninformed=not args.no_uninformed,
        field=field,
        mbbr_only=args.mbbr_only,
    )
    results, seconds = run_jobs_with_args(jobs, args)

    def ranking_json(rows):
        return [{"agent": n, "mbb": e.mean, "se": e.se} for n, e in rows]

    mbbr_groups = [g for g in field_groups(field) if "mbbr" in g]
    report = {
        "hands": hands,
        "reps": reps,
        "seed": args.seed,
        "field": list(field),
        "groups": len(field_groups(field)),
        "mbbr_only": args.mbbr_only,
        "jobs": len(jobs),
        "backend": args.backend,
        "seconds": seconds,
        "machine": machine(),
        "table1": ranking_json(ranking(results, index, "informed", field)),
        "mbbr": dataclasses.asdict(mbbr),
        "table6": (
            ranking_json(ranking(results, index, "uninformed", field))
            if not args.no_uninformed
            else None
        ),
        "paper_table1": PAPER_TABLE1,
        "paper_table6": PAPER_TABLE6,
        "head_to_head": [
            {
                "agent": name,
                "margin": e.mean,
                "se": e.se,
                "groups": sum("mbbr" in g and name in g for g in field_groups(field)),
            }
            for name, e in head_to_head(results, index, "informed", field)
        ],
        "h2h": h2h_rows(results, index),
        "mbbr_by_group": {
            table: {
                "+".join(g[1:]): dataclasses.asdict(group_estimates(results, index, table, g)[0])
                for g in mbbr_groups
            }
            for table in ("informed", "uninformed")
            if table != "uninformed" or not args.no_uninformed
        },
    }
    report["checks"] = checks(report)
    out = args.out or output_dir(None, args.quick, RESULTS_DIR) / (
        "field_quick.json" if args.quick else "field.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    report_written(out)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(render(report))
    print(f"\n{len(jobs)} jobs in {seconds:.0f} s on {args.backend}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
