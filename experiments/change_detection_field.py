"""What change detection costs or gains MBBR in the competent field, paired on the same cards.

MBBR's Table 1 matches (``kuhn3p_field.py --field competent --mbbr-posterior dirichlet
--mbbr-safety-budget B``: the same groups, streams, seeds and seatings, so repetition r of a group
deals the cards of Table 1's repetition r) are played twice, MBBR without change detection
(hazard 0) and with it (``--change-hazard``), both within the safety budget
``--mbbr-safety-budget`` (default: MBBRConfig's); the other agents' groups do not involve MBBR and
are skipped. Both agents draw the same actions until change detection first moves to a later run,
so the difference is paired: MBBR's score with detection minus without, per group the mean over
repetitions, then the mean over groups with SE sqrt(sum se^2) / G, as the field's ranking averages.
With ``--journal`` (``oppmodel.clients.lab.journal``) the matches ``kuhn3p_field.py`` journalled
with the same settings are not played again.

    python experiments/change_detection_field.py [--reps 10] [--hands 3000] [--change-hazard H]
                                                [--mbbr-safety-budget B] [--workers 2]
                                                [--journal FILE] [--json] [--out FILE]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from oppmodel.clients.lab.reports import emit_report, machine  # noqa: E402
from oppmodel.clients.lab.runner import add_runner_args, run_jobs_with_args  # noqa: E402
from oppmodel.modeling.games.kuhn import kuhn_game  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig  # noqa: E402
from oppmodel.modeling.play.fields import (  # noqa: E402
    DEFAULT_SHARE,
    PAPER_MBBR,
    build_jobs,
    competent_field,
    field_groups,
)
from oppmodel.modeling.play.tournament import (  # noqa: E402
    Estimate,
    average_estimates,
    mean_estimate,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=3000, help="hands per match (%(default)s)")
    parser.add_argument("--reps", type=int, default=10, help="repetitions per group (%(default)s)")
    parser.add_argument(
        "--change-hazard",
        type=float,
        default=MBBRConfig.change_hazard,
        help="MBBR's change_hazard with detection (default: MBBRConfig's, %(default)s)",
    )
    parser.add_argument(
        "--mbbr-safety-budget",
        type=float,
        default=MBBRConfig.safety_budget,
        help="MBBR's safety budget B in both settings, mA/h; 'inf': none (%(default)s)",
    )
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    add_runner_args(parser)
    args = parser.parse_args(argv)
    field = competent_field(DEFAULT_SHARE)
    groups = [g for g in field_groups(field) if "mbbr" in g]
    jobs, ids = [], {}
    for kind, hazard in (("without", 0.0), ("with", args.change_hazard)):
        config = dataclasses.replace(
            PAPER_MBBR,
            posterior="dirichlet",
            change_hazard=hazard,
            safety_budget=args.mbbr_safety_budget,
        )
        config.validate()
        table, index = build_jobs(args.hands, args.reps, mbbr=config, uninformed=False, field=field)
        for group in groups:
            ids[(kind, group)] = []
            for i in index[("informed", group)]:
                ids[(kind, group)].append(len(jobs))
                jobs.append(dataclasses.replace(table[i], job_id=len(jobs)))
    results, seconds = run_jobs_with_args(jobs, args)

    def mbbr_score(kind: str, group: tuple[str, ...]) -> list[float]:
        return [results[i].rate[group.index("mbbr")] for i in ids[(kind, group)]]

    scores = {
        kind: average_estimates([mean_estimate(mbbr_score(kind, g)) for g in groups])
        for kind in ("without", "with")
    }

    def differences(group: tuple[str, ...]) -> list[float]:
        pairs = zip(mbbr_score("with", group), mbbr_score("without", group), strict=True)
        return [w - o for w, o in pairs]

    difference = average_estimates([mean_estimate(differences(g)) for g in groups])
    by_group = {
        "+".join(x for x in g if x != "mbbr"): mean_estimate(differences(g)).mean for g in groups
    }
    report = {
        "benchmark": "mbbr_change_detection_competent_field",
        "hands": args.hands,
        "reps": args.reps,
        "seed": args.seed,
        "change_hazard": args.change_hazard,
        "safety_budget": args.mbbr_safety_budget,
        "seconds": seconds,
        "machine": machine(),
        "mbbr_without": dataclasses.asdict(scores["without"]),
        "mbbr_with": dataclasses.asdict(scores["with"]),
        "difference": dataclasses.asdict(difference),
        "difference_by_group": by_group,
    }
    if emit_report(report, args.out, args.json):
        return 0
    unit = kuhn_game(3).rate_unit.label
    print(f"MBBR in the competent field, {args.hands} hands x {args.reps} repetitions per group")
    for kind in ("without", "with"):
        print(f"  {kind} change detection: {_pm(scores[kind])} {unit}")
    print(f"  paired difference: {_pm(difference)} {unit}")
    moved = {k: round(v, 2) for k, v in by_group.items() if v != 0.0}
    print(f"  groups where it differs: {moved or 'none'}")
    return 0


def _pm(estimate: Estimate) -> str:
    """mean ± SE (the mean alone with one repetition: no SE)."""
    se = "" if estimate.se is None else f" ± {estimate.se:.2f}"
    return f"{estimate.mean:+.2f}{se}"


if __name__ == "__main__":
    sys.exit(main())
