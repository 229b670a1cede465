"""Paper 003's field experiment in 3-player Kuhn poker (Tables 1 and 6), and MBBR head to head.

The field: MBBR (paper settings: epsilon 0.05, k 10, H 100, eta 4, N1 default, N3 prior mean), the
robust equilibria N1, N2, N3, and eight exploitable styles: five fixed (always-bet, calling-station,
tight-passive, maniac, bluffer) and three that change during a match (switcher, exploiter, tilter;
``modeling.adaptive``). They stand in for the paper's ten class-project agents, which are not
available.

For every group of 3 agents: duplicate matches over the 6 seatings, ``--hands`` hands each,
``--reps`` repetitions (paper: 3000 and 10). Each agent's score is its mean mbb/h over all the
groups it played in, with the standard error of that mean (``modeling.tournament``): Table 1.
Table 6 replays every group containing MBBR with its uninformed prior (Dirichlet(2) everywhere)
on the same cards. Head to head: MBBR against every pair of equilibrium agents (including two copies
of one), with the exact best-response ceiling of each pair (what a perfect exploiter would win).

    python benchmarks/kuhn3p_field.py [--quick] [--json] [--workers N] [--backend local|ray
                                      --address ADDR] [--hands H] [--reps R]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.sweep import RESULTS_DIR, add_runner_args, machine, run_jobs  # noqa: E402
from modeling.kuhn import kuhn_game  # noqa: E402
from modeling.mbbr import MBBRConfig  # noqa: E402
from modeling.panel import named_profile  # noqa: E402
from modeling.tournament import (  # noqa: E402
    AgentSpec,
    Estimate,
    MatchJob,
    average_estimates,
    mean_estimate,
    response_ceiling,
)

FIELD = (
    "mbbr",
    "n1",
    "n2",
    "n3",
    "always-bet",
    "calling-station",
    "tight-passive",
    "maniac",
    "bluffer",
    "switcher",
    "exploiter",
    "tilter",
)
EQUILIBRIA = ("n1", "n2", "n3")
PAPER_TABLE1 = {"mbbr": 48, "n1": 37, "n3": 35, "n2": 30}
PAPER_TABLE6 = {"mbbr": -54, "n1": 47, "n3": 44, "n2": 40}
H2H_STREAM = 1_000_000  # streams of the head-to-head groups that are not field groups


def spec(name: str, prior: str) -> AgentSpec:
    if name == "mbbr":
        return AgentSpec("mbbr", MBBRConfig(prior=prior))
    return AgentSpec(name)


def field_groups() -> list[tuple[str, str, str]]:
    return list(itertools.combinations(FIELD, 3))


def h2h_pairs() -> list[tuple[str, str]]:
    return list(itertools.combinations_with_replacement(EQUILIBRIA, 2))


def build_jobs(hands: int, reps: int) -> tuple[list[MatchJob], dict]:
    """Every job, and where each table's jobs are: index[(table, group)] = [job ids]."""
    jobs: list[MatchJob] = []
    index: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    groups = field_groups()

    def add(table: str, group: tuple[str, ...], prior: str, stream0: int) -> None:
        ids = []
        for r in range(reps):
            agents = tuple(spec(name, prior) for name in group)
            jobs.append(MatchJob(len(jobs), stream0 + r, agents, hands))
            ids.append(len(jobs) - 1)
        index[(table, group)] = ids

    for g, group in enumerate(groups):
        add("informed", group, "informed", 1000 * g)
        add("uninformed", group, "uninformed", 1000 * g)  # same cards; identical if no MBBR
    for i, (a, b) in enumerate(h2h_pairs()):
        group = ("mbbr", a, b)
        stream0 = 1000 * groups.index(group) if group in groups else H2H_STREAM + 1000 * i
        add("h2h", group, "informed", stream0)
    return jobs, index


def ranking(results, index, table: str) -> list[tuple[str, Estimate]]:
    """Each agent's mean over the groups it played in, best first."""
    per_agent: dict[str, list[Estimate]] = {name: [] for name in FIELD}
    for group in field_groups():
        ids = index[(table, group)]
        for j, name in enumerate(group):
            per_agent[name].append(mean_estimate([results[i].mbb[j] for i in ids]))
    rows = [(name, average_estimates(ests)) for name, ests in per_agent.items()]
    return sorted(rows, key=lambda row: -row[1].mean)


def group_estimates(results, index, table: str, group) -> list[Estimate]:
    ids = index[(table, group)]
    return [mean_estimate([results[i].mbb[j] for i in ids]) for j in range(3)]


def fmt(e: Estimate) -> str:
    return f"{e.mean:+.1f} ± {e.se:.1f}" if e.se is not None else f"{e.mean:+.1f}"


def ranking_markdown(rows, paper: dict[str, int]) -> str:
    lines = ["| rank | agent | mbb/h ± SE | paper |", "|---|---|---|---|"]
    for rank, (name, e) in enumerate(rows, start=1):
        lines.append(f"| {rank} | {name} | {fmt(e)} | {paper.get(name, '')} |")
    return "\n".join(lines)


def h2h_rows(results, index) -> list[dict]:
    game = kuhn_game(3)
    rows = []
    for a, b in h2h_pairs():
        ests = group_estimates(results, index, "h2h", ("mbbr", a, b))
        ceiling = response_ceiling(game, named_profile(game, a), named_profile(game, b))
        rows.append({"pair": [a, b], "estimates": ests, "ceiling": ceiling})
    return rows


def h2h_markdown(rows) -> str:
    lines = [
        "| opponents | MBBR mbb/h ± SE | opponent 1 | opponent 2 | exact BR ceiling |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        (a, b), (m, x, y) = row["pair"], row["estimates"]
        lines.append(
            f"| {a} + {b} | {fmt(m)} | {a}: {fmt(x)} | {b}: {fmt(y)} | {row['ceiling']:+.1f} |"
        )
    return "\n".join(lines)


def checks(table1, table6, h2h) -> dict[str, bool]:
    """The issue's done-when targets, evaluated on these numbers."""
    (first, e1), (_, e2) = table1[0], table1[1]
    margin = e1.mean - e2.mean
    beats = {}
    for n in EQUILIBRIA:
        beats[n] = all(
            row["estimates"][0].mean > row["estimates"][j].mean
            for row in h2h
            for j in (1, 2)
            if row["pair"][j - 1] == n
        )
    worst = min(row["estimates"][0].mean + (row["estimates"][0].se or 0.0) for row in h2h)
    rank6 = [name for name, _ in table6].index("mbbr") + 1
    return {
        "mbbr_first_by_more_than_se": first == "mbbr" and margin > (e1.se or float("inf")),
        **{f"mbbr_beats_{n}_in_every_h2h_group": v for n, v in beats.items()},
        "mbbr_never_below_minus_one_se_vs_eq_pair": worst >= 0.0,
        "uninformed_rank_in_bottom_three": rank6 >= len(FIELD) - 2,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(
            "Paper 003's field experiment: every group of 3 agents from MBBR, N1-N3 and eight "
            "exploitable styles (three adaptive) plays duplicate matches; prints the ranking with "
            "MBBR's informed prior (Table 1) and uninformed prior (Table 6), and MBBR against "
            "every pair of equilibrium agents."
        )
    )
    parser.add_argument("--hands", type=int, default=None, help="hands per match (default 3000)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per group (default 10)")
    parser.add_argument("--quick", action="store_true", help="300 hands, 2 repetitions")
    parser.add_argument(
        "--out", type=Path, default=None, help="JSON file to write (default under results/)"
    )
    add_runner_args(parser)
    args = parser.parse_args(argv)
    hands = args.hands or (300 if args.quick else 3000)
    reps = args.reps or (2 if args.quick else 10)
    jobs, index = build_jobs(hands, reps)
    began = time.perf_counter()
    results = run_jobs(
        jobs,
        base_seed=args.seed,
        backend=args.backend,
        workers=args.workers,
        address=args.address,
        progress=not args.no_progress,
    )
    seconds = time.perf_counter() - began
    table1, table6 = ranking(results, index, "informed"), ranking(results, index, "uninformed")
    h2h = h2h_rows(results, index)
    verdict = checks(table1, table6, h2h)

    def ranking_json(rows):
        return [{"agent": n, "mbb": e.mean, "se": e.se} for n, e in rows]

    mbbr_groups = [g for g in field_groups() if "mbbr" in g]
    report = {
        "hands": hands,
        "reps": reps,
        "seed": args.seed,
        "field": list(FIELD),
        "groups": len(field_groups()),
        "jobs": len(jobs),
        "backend": args.backend,
        "seconds": seconds,
        "machine": machine(),
        "table1": ranking_json(table1),
        "table6": ranking_json(table6),
        "paper_table1": PAPER_TABLE1,
        "paper_table6": PAPER_TABLE6,
        "h2h": [
            {
                "pair": row["pair"],
                "ceiling": row["ceiling"],
                "mbb": [dataclasses.asdict(e) for e in row["estimates"]],
            }
            for row in h2h
        ],
        "mbbr_by_group": {
            table: {
                "+".join(g[1:]): dataclasses.asdict(group_estimates(results, index, table, g)[0])
                for g in mbbr_groups
            }
            for table in ("informed", "uninformed")
        },
        "checks": verdict,
    }
    out = args.out or RESULTS_DIR / ("field_quick.json" if args.quick else "field.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    size = f"{hands} hands x 6 seatings x {reps} reps per group, {len(field_groups())} groups"
    print(f"## Field, informed prior (paper Table 1; {size})\n")
    print(ranking_markdown(table1, PAPER_TABLE1))
    print(f"\n## Field, MBBR with the uninformed prior (paper Table 6; {size})\n")
    print(ranking_markdown(table6, PAPER_TABLE6))
    print("\n## MBBR against pairs of equilibrium agents\n")
    print(h2h_markdown(h2h))
    print("\n## Checks\n")
    for name, ok in verdict.items():
        print(f"- {name}: {'yes' if ok else 'NO'}")
    print(f"\n{len(jobs)} jobs in {seconds:.0f} s on {args.backend}; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
