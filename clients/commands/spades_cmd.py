"""``oppmodel spades-match``: Sturtevant et al. 2006's 3-player Spades experiments."""

from __future__ import annotations

import argparse
import json
import time

from oppmodel.clients.commands._types import float_in, int_in, positive_int, processes, runs, seed
from oppmodel.clients.progress import Progress
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.spades.cards import MAX_HAND_SIZE
from oppmodel.modeling.perfect_info import spades_match as M
from oppmodel.modeling.perfect_info.spades_agents import MAXN_TYPES, PLAYER_TYPES, SOFT_TYPES

_DESCRIPTION = """\
Play the Spades protocol of Sturtevant et al. 2006: each deal sequence (7-card perfect-information
hands, games to 300) is played six times, once per seating of the two player types A and B (their
Table 3), for every candidate A against every opponent B. Prints, per experiment, each type's mean
final score and A's share of wins (50 = equal strength) with 95% confidence intervals over deal
sequences, and for learning candidates how often the final posterior leaned to the max^n
opponent's true utility.

player types (X_Y: own utility X, opponents assumed to have utility Y):
  MT_MT MT_mOT mOT_MT mOT_mOT   max^n with fixed models
  mOT_p MT_p                    prob-max^n, models {MT, mOT} weighted 1/2 each, epsilon-greedy
  mOT_pl MT_pl                  prob-max^n learning weights by Gibbs sampling after every hand
  mOT_g MT_g                    soft-max^n, generic opponent model (only "made beats missed")

With the max^n baselines mOT_MT and mOT_mOT among the candidates, %Gain (candidate minus max^n
with the wrong opponent model, their Table 4) and %Loss (max^n with the correct model minus
candidate) are shown; with mOT_g too, "%Gain v soft" (prob-max^n minus soft-max^n, Table 5's
%Gain). All are paired differences on the same deals, in percentage points of A's win share.
Everything is seeded; --jobs does not change results.
"""

_EXAMPLES = """\
examples:
  oppmodel spades-match --deal-sequences 20               # mOT_p v. the four max^n types
  oppmodel spades-match --candidates mOT_p,mOT_pl,mOT_MT,mOT_mOT --jobs 2
  oppmodel spades-match --candidates mOT_g,mOT_p,mOT_pl,mOT_MT,mOT_mOT --jobs 2  # all tables
  oppmodel spades-match --deal-sequences 100 --json       # paper size (600 games per row)
"""

Pair = tuple[str, str]  # (type A, type B) of an experiment

# what each column of the text table means (the printed legend)
LEGEND = {
    "Score A": "type A's mean final score per game",
    "Score B": "type B's mean final score per game",
    "%Win A": "A's share of the wins, in % (a tie for the lead splits the win; 50 = even)",
    "hands": "mean hands per game",
    "%Gain": "A's %Win minus that of max^n with A's utility and the wrong model of B",
    "%Loss": "the %Win of max^n with A's utility and the correct model of B minus A's",
    "%Gain v soft": "A's %Win minus that of soft-max^n with A's utility (the generic model)",
    "leaned true": "learners' final posteriors putting more than 1/2 on a max^n opponent's "
    "true utility, in % of (learner, opponent) pairs",
    "far off": 'those putting less than 0.3 on it (the paper\'s "far off")',
}


def _types(text: str) -> list[str]:
    out = [t.strip() for t in text.split(",") if t.strip()]
    for t in out:
        if t not in PLAYER_TYPES:
            raise argparse.ArgumentTypeError(
                f"unknown player type {t!r}; choose from {', '.join(PLAYER_TYPES)}"
            )
    return out


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``spades-match`` subcommand."""
    parser = subparsers.add_parser(
        "spades-match",
        help="3-player Spades: prob-max^n and max^n players, Sturtevant et al. 2006's tables",
        description=_DESCRIPTION,
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--candidates",
        type=_types,
        default=["mOT_p"],
        help="comma-separated player types A (default mOT_p)",
    )
    parser.add_argument(
        "--opponents",
        type=_types,
        default=list(MAXN_TYPES),
        help="comma-separated player types B (default: the four max^n types)",
    )
    parser.add_argument(
        "--deal-sequences",
        type=runs,
        default=20,
        help="deal sequences (paper: 100; default 20)",
    )
    parser.add_argument("--seed", type=seed, default=2007, help="seed of the deals (default 2007)")
    parser.add_argument(
        "--eps", type=float_in(0.0, 1.0), default=0.1, help="prob-max^n epsilon (default 0.1)"
    )
    parser.add_argument(
        "--hand-size",
        type=int_in(1, MAX_HAND_SIZE),
        default=7,
        help="cards per player (default 7)",
    )
    parser.add_argument(
        "--target", type=positive_int, default=300, help="points that end a game (300)"
    )
    parser.add_argument("--jobs", type=processes, default=1, help="worker processes (default 1)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=run)


def _row(summary: M.ExperimentSummary) -> dict:
    return {
        "a": summary.type_a,
        "b": summary.type_b,
        "sequences": summary.sequences,
        "games": summary.games,
        "score_a": [summary.score_a.mean, summary.score_a.half_width],
        "score_b": [summary.score_b.mean, summary.score_b.half_width],
        "win_pct_a": [summary.win_pct_a.mean, summary.win_pct_a.half_width],
        "mean_hands_per_game": summary.mean_hands,
        "posterior_leaned_true_pct": summary.leaned_true,
        "posterior_far_off_pct": summary.far_off,
        "learned_pairs": summary.learned_pairs,
    }


def run(args: argparse.Namespace) -> int:
    """Play the match and print the tables."""
    pairs = [(a, b) for a in args.candidates for b in args.opponents if a != b]
    if not pairs:
        raise InvalidArgumentError("candidates", "no pair of distinct types A, B")
    t0 = time.perf_counter()
    total = len(pairs) * args.deal_sequences
    with Progress(total, desc="oppmodel spades-match", unit="deal sequence") as bar:
        result = M.run_match(
            pairs,
            sequences=args.deal_sequences,
            seed=args.seed,
            eps=args.eps,
            hand_size=args.hand_size,
            target=args.target,
            jobs=args.jobs,
            progress=bar.update,
        )
    elapsed = time.perf_counter() - t0
    summaries = {p: result.summary(*p) for p in pairs}
    gains = _paired_gains(result, pairs, args.opponents)
    if args.json:
        _print_json(args, summaries, gains, elapsed)
    else:
        _print_table(args, summaries, gains, elapsed)
    return 0


def _paired_gains(
    result: M.MatchResult, pairs: list[Pair], opponents: list[str]
) -> dict[Pair, dict[str, M.Estimate]]:
    """Per (candidate, max^n opponent) pair, the paired win-share differences the match allows:
    %Gain over max^n with the wrong model, %Loss to it with the correct one, %Gain over
    soft-max^n (keys gain, loss, gain_vs_soft)."""
    have = set(result.games) | {(b, b) for b in opponents}  # A v. A is 50% by symmetry
    gains: dict[Pair, dict[str, M.Estimate]] = {}
    for a, b in pairs:
        if a in MAXN_TYPES or b not in MAXN_TYPES:
            continue
        own = a.split("_")[0]
        wrong, correct = M.wrong_and_correct_maxn(b, own=own)
        row: dict[str, M.Estimate] = {}
        if (wrong, b) in have:
            row["gain"] = result.win_difference((a, b), (wrong, b))
        if (correct, b) in have:
            row["loss"] = result.win_difference((correct, b), (a, b))
        if a not in SOFT_TYPES and (f"{own}_g", b) in have:
            row["gain_vs_soft"] = result.win_difference((a, b), (f"{own}_g", b))
        if row:
            gains[(a, b)] = row
    return gains


def _print_json(
    args: argparse.Namespace,
    summaries: dict[Pair, M.ExperimentSummary],
    gains: dict[Pair, dict[str, M.Estimate]],
    elapsed: float,
) -> None:
    """The settings and a row per experiment, the paired gains included, as JSON."""
    rows = []
    for p, s in summaries.items():
        summary_row = _row(s)
        for name, est in gains.get(p, {}).items():
            summary_row[f"{name}_pct"] = [est.mean, est.half_width]
        rows.append(summary_row)
    out = {
        "seed": args.seed,
        "eps": args.eps,
        "hand_size": args.hand_size,
        "target": args.target,
        "deal_sequences": args.deal_sequences,
        "seconds": elapsed,
        "experiments": rows,
    }
    print(json.dumps(out, indent=2))


def _print_table(
    args: argparse.Namespace,
    summaries: dict[Pair, M.ExperimentSummary],
    gains: dict[Pair, dict[str, M.Estimate]],
    elapsed: float,
) -> None:
    """The text table: a row per experiment, the gain columns the match allows, and a legend of
    the columns shown."""
    print(
        f"{args.deal_sequences} deal sequences x 6 seatings per row, games to {args.target}, "
        f"{args.hand_size} cards, eps {args.eps}, seed {args.seed} ({elapsed:.0f} s)"
    )
    head = f"{'A v. B':<18}{'Score A':>14}{'Score B':>14}{'%Win A':>14}{'hands':>7}"
    gain_cols = [c for c in ("gain", "loss", "gain_vs_soft") if any(c in g for g in gains.values())]
    titles = {"gain": "%Gain", "loss": "%Loss", "gain_vs_soft": "%Gain v soft"}
    head += "".join(f"{titles[c]:>14}" for c in gain_cols)
    shown = ["Score A", "Score B", "%Win A", "hands", *(titles[c] for c in gain_cols)]
    if any(s.learned_pairs for s in summaries.values()):
        head += f"{'leaned true':>13}{'far off':>9}"
        shown += ["leaned true", "far off"]
    print(
        "95% confidence intervals over deal sequences (mean ± half-width); differences are "
        "paired, on the same deals, in percentage points; the columns:"
    )
    for title in shown:
        print(f"  {title + ':':<14}{LEGEND[title]}")
    print(head)
    for p, s in summaries.items():
        line = (
            f"{s.type_a + ' v. ' + s.type_b:<18}{s.score_a!s:>14}{s.score_b!s:>14}"
            f"{s.win_pct_a!s:>14}{s.mean_hands:>7.1f}"
        )
        g = gains.get(p, {})
        line += "".join(f"{g[c]!s:>14}" if c in g else f"{'':>14}" for c in gain_cols)
        if s.learned_pairs:
            line += f"{s.leaned_true:>12.1f}%{s.far_off:>8.1f}%"
        print(line)
