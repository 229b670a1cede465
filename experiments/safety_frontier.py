"""The safety frontier: what bounding the learning cost gives up, per setting of MBBR's safety.

Reads reports of ``learning_cost.py`` (exact learning cost per pair; rows keyed by prior and safety
budget) and of ``kuhn3p_field.py`` (MBBR's competent-field winnings; keyed by its config), and
writes, per setting (prior, budget B): the exact cost against n3+n3, n2+n2 and n1+n1 with its
standard error, the bound B and whether every one of them is within it, the exact winnings against
n2+n3 (the exploitable pair of equilibria), and the field winnings where a field report has that
setting. ``--plot`` draws the frontier: the largest cost against a pair of one equilibrium on the
x axis, winnings against n2+n3 and in the field on the y axes. No play here: it only reads.

    python experiments/safety_frontier.py --learning-cost A.json B.json ... [--field F.json ...]
                                         [--plot frontier.png] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from oppmodel.modeling.games.kuhn import kuhn_game

UNIT = kuhn_game(3).rate_unit.label  # the reports' figures: milli-antes per hand
EQUILIBRIUM_PAIRS = ("n3+n3", "n2+n2", "n1+n1")
EXPLOITABLE_PAIR = "n2+n3"


def _budget(value) -> float:
    """A report's budget: None (or a report from before budgets) means none, infinity."""
    return math.inf if value is None else float(value)


def setting_label(prior: str, budget: float) -> str:
    return f"{prior}, no budget" if math.isinf(budget) else f"{prior}, B = {budget:g}"


def collect(learning_cost: list[dict], fields: list[dict]) -> list[dict]:
    """One row per setting found in the learning-cost reports, the field figure joined on; where
    two reports give the same pair and setting, the one with more seeds is kept."""
    cells: dict[tuple[str, float], dict[str, dict]] = {}
    for report in learning_cost:
        for row in report["rows"]:
            key = (row["prior"], _budget(row.get("safety_budget")))
            pair = row["pair"]
            if pair not in (*EQUILIBRIUM_PAIRS, EXPLOITABLE_PAIR):
                continue
            cell = {"mbb": row["match"], "se": row["se"], "seeds": report["seeds"]}
            kept = cells.setdefault(key, {}).get(pair)
            if kept is None or kept["seeds"] < cell["seeds"]:
                cells[key][pair] = cell
    field = {}
    for report in fields:
        config = report["mbbr"]
        key = (config["prior"], _budget(config.get("safety_budget")))
        mbbr = next(r for r in report["table1"] if r["agent"] == "mbbr")
        field[key] = {"mbb": mbbr["mbb"], "se": mbbr["se"], "reps": report["reps"]}
    rows = []
    for (prior, budget), pairs in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        costs = [-pairs[p]["mbb"] for p in EQUILIBRIUM_PAIRS if p in pairs]
        rows.append(
            {
                "setting": setting_label(prior, budget),
                "prior": prior,
                "safety_budget": None if math.isinf(budget) else budget,
                "pairs": pairs,
                "worst_cost": max(costs) if costs else None,
                "within_bound": None
                if math.isinf(budget) or not costs
                else all(c <= budget + 1e-9 for c in costs),
                "field": field.get((prior, budget)),
            }
        )
    return rows


def _cell(cell: dict | None, digits: int = 2) -> str:
    if cell is None:
        return ""
    se = "" if cell["se"] is None else f" ± {cell['se']:.{digits}f}"
    return f"{cell['mbb']:+.{digits}f}{se}"


def markdown(rows: list[dict]) -> str:
    head = [*EQUILIBRIUM_PAIRS, "bound", "within", EXPLOITABLE_PAIR, "seeds", "competent field"]
    lines = ["| setting | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    for row in rows:
        pairs = row["pairs"]
        bound = "" if row["safety_budget"] is None else f"-{row['safety_budget']:g}"
        within = {None: "", True: "yes", False: "no"}[row["within_bound"]]
        cells = [_cell(pairs.get(p)) for p in EQUILIBRIUM_PAIRS]
        seeds = "/".join(
            str(pairs[p]["seeds"]) for p in (*EQUILIBRIUM_PAIRS, EXPLOITABLE_PAIR) if p in pairs
        )
        cells += [bound, within, _cell(pairs.get(EXPLOITABLE_PAIR)), seeds, _cell(row["field"], 1)]
        lines.append(f"| {row['setting']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    """Two panels sharing the x axis (largest cost against a pair of one equilibrium)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit('--plot needs matplotlib: pip install ".[plot]"')
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = (
        (axes[0], lambda r: r["pairs"].get(EXPLOITABLE_PAIR), f"exact winnings vs n2+n3, {UNIT}"),
        (axes[1], lambda r: r["field"], f"competent-field winnings, {UNIT}"),
    )
    for ax, value, ylabel in panels:
        points = [
            (r, value(r)) for r in rows if value(r) is not None and r["worst_cost"] is not None
        ]
        for prior, marker in (("informed", "o"), ("typed", "s")):
            mine = sorted(
                (
                    (r["worst_cost"], v["mbb"], v["se"] or 0.0, r)
                    for r, v in points
                    if r["prior"] == prior
                ),
                key=lambda t: t[0],
            )
            if not mine:
                continue
            xs, ys, es, rs = zip(*mine, strict=True)
            ax.errorbar(xs, ys, yerr=es, marker=marker, linestyle="-", capsize=3, label=prior)
            for x, y, r in zip(xs, ys, rs, strict=True):
                budget = r["safety_budget"]
                ax.annotate(
                    "none" if budget is None else f"B={budget:g}",
                    (x, y),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize=8,
                )
        ax.set_xlabel(f"largest exact learning cost vs n1+n1, n2+n2, n3+n3, {UNIT}")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("MBBR's safety frontier (3-player Kuhn, 3000-hand matches)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learning-cost", type=Path, nargs="+", required=True)
    parser.add_argument("--field", type=Path, nargs="*", default=[])
    parser.add_argument("--plot", type=Path, default=None, help="PNG file to write")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    rows = collect(
        [json.loads(p.read_text()) for p in args.learning_cost],
        [json.loads(p.read_text()) for p in args.field],
    )
    if args.plot:
        plot(rows, args.plot)
    print(json.dumps(rows, indent=1) if args.json else markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
