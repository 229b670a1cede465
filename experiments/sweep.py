"""MBBR's parameter sweeps, on all local cores or on a Ray cluster.

The jobs run through :mod:`oppmodel.clients.lab.runner`, seeded per job, so the local and the Ray
backend give identical tables.

Sweeps (Ganzfried et al. 2024, Figures 1-4, the ``mean`` against ``bayes`` response, the posterior
and the prior). One MBBR parameter
varies from the paper's setting (epsilon 0.05, k 10, H 100, eta 4, informed prior, mean response);
MBBR plays duplicate matches against a fixed set of opponent pairs (``SWEEP_PAIRS``: three
equilibrium pairs, one of them two copies of N2, against which no agent can win in expectation; an
equilibrium agent beside an exploitable one; an exploitable pair; an adaptive pair), so both how
much it exploits and how little it gives away against equilibria show. A point's value is MBBR's
mA/h averaged over the pairs, with its standard error; every point uses the same cards for the
same (pair, repetition), so neighbouring points differ by the parameter more than by luck.

    python experiments/sweep.py [--params k,epsilon,H,eta,response] [--quick] [--json]
                               [--workers N] [--backend local|ray --address ADDR]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread per worker: the workers are the parallelism

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

from oppmodel.clients.lab.reports import machine, output_dir, report_written  # noqa: E402
from oppmodel.clients.lab.runner import add_runner_args, run_jobs_with_args  # noqa: E402
from oppmodel.modeling.games.kuhn import kuhn_game  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior  # noqa: E402
from oppmodel.modeling.play.fields import PAPER_MBBR  # noqa: E402
from oppmodel.modeling.play.tournament import (  # noqa: E402
    AgentSpec,
    Estimate,
    JobResult,
    MatchJob,
    average_estimates,
    mean_estimate,
)

UNIT = kuhn_game(3).rate_unit.label  # every job's rates: milli-antes per hand
RESULTS_DIR = Path(__file__).resolve().parent / "results"


# epsilon 0.05, k 10, H 100, eta 4, k samples; no safety budget, opponents never change
PAPER = PAPER_MBBR

SWEEP_PAIRS: tuple[tuple[str, str], ...] = (
    ("n1", "n3"),
    ("n2", "n3"),
    ("n2", "n2"),
    ("n1", "maniac"),
    ("calling-station", "bluffer"),
    ("switcher", "exploiter"),
)

# Parameter -> (MBBRConfig field, values, quick values, x-axis scale)
SWEEPS: dict[str, tuple[str, tuple, tuple, str]] = {
    "epsilon": ("epsilon", (0.01, 0.05, 0.1, 0.2, 0.4), (0.01, 0.05, 0.3), "linear"),
    "H": ("hands_default", (0, 100, 300, 1000, 2000), (0, 100, 1000), "linear"),
    "eta": ("eta", (1.0, 2.0, 4.0, 8.0, 16.0), (1.0, 4.0, 16.0), "log"),
    "k": ("k", (1, 3, 10, 30, 100, 300, 1000), (1, 10, 100), "log"),
    "response": (
        "response",
        ("mean@10", "bayes@10", "mean@100", "bayes@100"),
        ("mean@10", "bayes@10"),
        "category",
    ),
    # The k-sample posterior against its limit: the Dirichlet (variational Bayes) posterior is
    # the same Bayesian model without sampling, about where k -> infinity leads.
    "posterior": (
        "posterior",
        ("samples@10", "samples@100", "samples@1000", "dirichlet"),
        ("samples@10", "dirichlet"),
        "category",
    ),
    # The prior under the Dirichlet posterior (the typed prior has no sample form): the informed
    # prior's epsilon floor against the typed prior's per-opponent hypothesis, and uninformed.
    "prior": (
        "prior",
        ("informed", "typed", "uninformed"),
        ("informed", "typed"),
        "category",
    ),
}


K_LIMIT = ("dirichlet",)  # drawn with the k sweep: what k -> infinity approaches

# --- the runner ----------------------------------------------------------------------------------


# --- sweeps --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepPoint:
    """MBBR's result at one parameter value: the mean over the pairs and each pair's estimate."""

    value: object
    config: MBBRConfig
    overall: Estimate
    pairs: tuple[Estimate, ...]


def point_config(param: str, value: object, base: MBBRConfig = PAPER) -> MBBRConfig:
    """The MBBR config of one sweep point (``response`` values read ``KIND@K``, ``posterior``
    values ``samples@K`` or ``dirichlet``; ``prior`` points use the Dirichlet posterior)."""
    field = SWEEPS[param][0]
    if param == "response":
        kind, k = str(value).split("@")
        return dataclasses.replace(base, response=kind, k=int(k))
    if param == "posterior":
        kind, _, k = str(value).partition("@")
        return dataclasses.replace(base, posterior=kind, k=int(k) if k else base.k)
    if param == "prior":
        return dataclasses.replace(base, prior=str(value), posterior="dirichlet")
    return dataclasses.replace(base, **{field: value})


def sweep_jobs(
    param: str,
    values: Sequence[object],
    *,
    hands: int,
    reps: int,
    pairs: Sequence[tuple[str, str]] = SWEEP_PAIRS,
    first_id: int = 0,
    base: MBBRConfig = PAPER,
) -> list[MatchJob]:
    """Jobs of one sweep, point-major; the stream of (pair i, rep r) is the same at every point."""
    jobs = []
    for value in values:
        config = point_config(param, value, base)
        config.validate()
        mbbr = AgentSpec("mbbr", config)
        for i, (a, b) in enumerate(pairs):
            for r in range(reps):
                agents = (mbbr, AgentSpec(a), AgentSpec(b))
                jobs.append(MatchJob(first_id + len(jobs), 1000 * i + r, agents, hands))
    return jobs


def sweep_points(
    param: str,
    values: Sequence[object],
    results: Sequence[JobResult],
    *,
    reps: int,
    pairs: Sequence[tuple[str, str]] = SWEEP_PAIRS,
    base: MBBRConfig = PAPER,
) -> list[SweepPoint]:
    """Fold a sweep's results (in :func:`sweep_jobs` order) into one point per value."""
    points, it = [], iter(results)
    for value in values:
        per_pair = []
        for _ in pairs:
            per_pair.append(mean_estimate([next(it).rate[0] for _ in range(reps)]))
        config = point_config(param, value, base)
        points.append(SweepPoint(value, config, average_estimates(per_pair), tuple(per_pair)))
    return points


def format_se(e: Estimate) -> str:
    return f"{e.mean:8.1f} ± {e.se:4.1f}" if e.se is not None else f"{e.mean:8.1f}"


def sweep_markdown(param: str, points: Sequence[SweepPoint], pairs=SWEEP_PAIRS) -> str:
    """A markdown table: one row per value, MBBR's mean over pairs then per pair (mA/h ± SE)."""
    head = ["**mean**", *[f"{a}+{b}" for a, b in pairs]]
    lines = [
        f"| {param} | " + " | ".join(head) + " |",
        "|---" * (len(head) + 1) + "|",
    ]
    for p in points:
        cells = [format_se(p.overall), *[format_se(e) for e in p.pairs]]
        lines.append(f"| {p.value} | " + " | ".join(c.strip() for c in cells) + " |")
    return "\n".join(lines)


def plot_sweep(
    param: str,
    points: Sequence[SweepPoint],
    path: Path,
    *,
    note: str = "",
    limit: SweepPoint | None = None,
) -> None:
    """A PNG of MBBR's win rate (mean over the pairs, ± 1 SE) against the parameter; ``limit``, if
    given, is drawn as a horizontal band (the k sweep's Dirichlet-posterior limit)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scale = SWEEPS[param][3]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    ys = [p.overall.mean for p in points]
    errs = [p.overall.se or 0.0 for p in points]
    if scale == "category":
        xs = list(range(len(points)))
        ax.set_xticks(xs, [str(p.value) for p in points])
    else:
        xs = [float(p.value) for p in points]
        if scale == "log":
            ax.set_xscale("log")
    ax.errorbar(xs, ys, yerr=errs, fmt="o-", capsize=4, color="tab:blue", label="MBBR")
    if limit is not None:
        se = limit.overall.se or 0.0
        ax.axhline(limit.overall.mean, color="tab:green", ls="--", label=f"{limit.value} posterior")
        ax.axhspan(limit.overall.mean - se, limit.overall.mean + se, color="tab:green", alpha=0.15)
        ax.legend(loc="lower right")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xlabel(param)
    ax.set_ylabel(f"MBBR winrate ({UNIT}), mean over pairs ± SE")
    ax.set_title(f"MBBR against the sweep field, by {param}" + (f"\n{note}" if note else ""))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    report_written(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(
            "Sweep one MBBR parameter at a time (Ganzfried et al. 2024, Figures 1-4) against a "
            "fixed field of opponent pairs; writes a table and a PNG per parameter under "
            "experiments/results/ (a --quick run: under a new temporary folder)."
        )
    )
    parser.add_argument(
        "--params",
        default=",".join(SWEEPS),
        help=f"comma-separated sweeps to run, from {', '.join(SWEEPS)} (default all)",
    )
    parser.add_argument("--hands", type=int, default=None, help="hands per match (default 3000)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per pair (default 3)")
    parser.add_argument("--quick", action="store_true", help="few values, 300 hands, 2 reps")
    parser.add_argument(
        "--values",
        default=None,
        help="comma-separated values instead of the sweep's own (one sweep)",
    )
    parser.add_argument(
        "--pairs", default=None, help="opponent pairs instead of SWEEP_PAIRS, e.g. n1+n1,n2+maniac"
    )
    parser.add_argument(
        "--posterior",
        choices=Posterior.names(),
        default=PAPER.posterior,
        help="MBBR's posterior at every point that does not set it (default: the paper's samples)",
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=None,
        help="where PNG/JSON go (default experiments/results/; --quick: a new temporary folder)",
    )
    parser.add_argument(
        "--suffix", default=None, help="added to the output file names (default: _quick or none)"
    )
    add_runner_args(parser)
    args = parser.parse_args(argv)
    params = [p.strip() for p in args.params.split(",") if p.strip()]
    unknown = [p for p in params if p not in SWEEPS]
    if unknown:
        parser.error(f"unknown sweep {unknown}; known: {', '.join(SWEEPS)}")
    if args.values and len(params) != 1:
        parser.error("--values needs exactly one sweep in --params")
    pairs = SWEEP_PAIRS
    if args.pairs:
        pairs = tuple(tuple(p.split("+", 1)) for p in args.pairs.split(","))
        if any(len(p) != 2 for p in pairs):
            parser.error("--pairs: write each pair as A+B")
    hands = args.hands or (300 if args.quick else 3000)
    reps = args.reps or (2 if args.quick else 3)
    base = dataclasses.replace(PAPER, posterior=args.posterior)
    jobs, spans = [], {}
    for param in params:
        values = SWEEPS[param][2 if args.quick else 1]
        if args.values:
            kind = type(values[0])
            values = tuple(kind(v) for v in args.values.split(","))
        start = len(jobs)
        jobs += sweep_jobs(
            param, values, hands=hands, reps=reps, pairs=pairs, first_id=start, base=base
        )
        spans[param] = (values, start, len(jobs))
    limit_span = None
    if "k" in spans:  # the k sweep's limit, on the same cards: the Dirichlet posterior
        start = len(jobs)
        jobs += sweep_jobs(
            "posterior", K_LIMIT, hands=hands, reps=reps, pairs=pairs, first_id=start
        )
        limit_span = (start, len(jobs))
    results, seconds = run_jobs_with_args(jobs, args)
    report = {
        "hands": hands,
        "reps": reps,
        "seed": args.seed,
        "pairs": [list(p) for p in pairs],
        "posterior": args.posterior,
        "backend": args.backend,
        "seconds": seconds,
        "machine": machine(),
        "sweeps": {},
    }
    suffix = args.suffix if args.suffix is not None else ("_quick" if args.quick else "")
    out_dir = output_dir(args.out_dir, args.quick, RESULTS_DIR)
    for param, (values, lo, hi) in spans.items():
        points = sweep_points(param, values, results[lo:hi], reps=reps, pairs=pairs, base=base)
        limit = None
        if param == "k" and limit_span is not None:
            lo, hi = limit_span
            (limit,) = sweep_points("posterior", K_LIMIT, results[lo:hi], reps=reps, pairs=pairs)
        note = f"{hands} hands x 6 seatings x {reps} reps per pair, {len(pairs)} pairs"
        path = out_dir / f"sweep_{param}{suffix}.png"
        plot_sweep(param, points, path, note=note, limit=limit)
        report["sweeps"][param] = [
            {
                "value": p.value,
                "mbb": p.overall.mean,
                "se": p.overall.se,
                "pairs": [{"mbb": e.mean, "se": e.se} for e in p.pairs],
            }
            for p in (*points, *([limit] if limit else []))
        ]
        if not args.json:
            print(f"\n## {param} ({note})\n")
            print(sweep_markdown(param, [*points, *([limit] if limit else [])], pairs))
        single = {key: value for key, value in report.items() if key != "sweeps"}
        single["sweep"] = {param: report["sweeps"][param]}
        written = out_dir / f"sweep_{param}{suffix}.json"
        written.write_text(json.dumps(single, indent=1))
        report_written(written)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"\n{len(jobs)} jobs in {seconds:.0f} s on {args.backend}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
