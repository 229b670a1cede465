"""Hicks-Wright & Schkufza 2006, Figure 5: top-N curves of predicting a minimax player's moves.

Trains the naive Bayes move model (``oppmodel.modeling.movepred.naive_bayes``) on the minimax
player's positions in games against a random player (100 training games, 10 test games per
replication, as in the paper; the replications are pooled so that the curves are not decided by ~35
test positions) and prints the three top-N curves of ``oppmodel.modeling.movepred.tictactoe``:
``state``, ``state+legal`` and ``legal-only``, with top-1 and top-3 called out, the check that
ranking among legal moves beats state-only ranking at every N, a sweep over the number of
chi-squared-selected features, the same with a minimax player that breaks ties at random, and the
speed of fitting and ranking (medians).

Usage: ``python experiments/movepred.py [--json] [--quick] [--plot FILE.png]``. The plot needs
matplotlib (``pip install ".[plot]"``); without ``--plot`` it is never imported.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from oppmodel.clients.progress import progress_bar
from oppmodel.modeling.movepred.naive_bayes import move_ranks, train_move_model
from oppmodel.modeling.movepred.tictactoe import (
    CELLS,
    ENCODINGS,
    TopNResult,
    legal_mask,
    log_games,
    minimax_examples,
    run_topn_experiment,
    state_features,
)


def _experiment(args: argparse.Namespace, desc: str, **overrides: object) -> TopNResult:
    kwargs = {
        "train_games": args.train_games,
        "test_games": args.test_games,
        "repeats": args.repeats,
        "seed": args.seed,
    } | overrides
    with progress_bar(args.repeats, desc=desc) as bar:
        return run_topn_experiment(progress=bar.update, **kwargs)


def _comparison(result: TopNResult) -> dict[str, object]:
    """Where legal-only ranking is strictly above, equal to, or below state-only ranking."""
    legal = np.array(result.curves["legal-only"])
    state = np.array(result.curves["state"])
    return {
        "strictly_better_at_n": [int(n) + 1 for n in np.flatnonzero(legal > state)],
        "equal_at_n": [int(n) + 1 for n in np.flatnonzero(legal == state)],
        "worse_at_n": [int(n) + 1 for n in np.flatnonzero(legal < state)],
        "never_worse": bool(np.all(legal >= state)),
        "strictly_better_wherever_state_below_1": bool(np.all((legal > state) | (state == 1.0))),
    }


def _timing(args: argparse.Namespace) -> dict[str, float]:
    """Median wall time of one fit on 100 games and of ranking one test position."""
    train = minimax_examples(log_games(args.train_games, seed=args.seed))
    test = minimax_examples(log_games(200, seed=args.seed + 1))
    x_train, x_test = state_features(train.boards), state_features(test.boards)
    legal = legal_mask(test.boards)
    model = train_move_model(x_train, train.moves, n_moves=CELLS)  # warm-up
    move_ranks(model, x_test, test.moves, legal=legal)
    fit, rank = [], []
    for _ in range(args.timing_reps):
        t0 = time.perf_counter()
        model = train_move_model(x_train, train.moves, n_moves=CELLS)
        t1 = time.perf_counter()
        move_ranks(model, x_test, test.moves, legal=legal)
        t2 = time.perf_counter()
        fit.append(t1 - t0)
        rank.append((t2 - t1) / test.moves.size)
    return {
        "fit_ms_median": 1e3 * statistics.median(fit),
        "train_positions": int(train.moves.size),
        "rank_us_per_position_median": 1e6 * statistics.median(rank),
        "batch_positions": int(test.moves.size),
        "reps": args.timing_reps,
    }


def _plot(result: TopNResult, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit('--plot needs matplotlib: pip install ".[plot]"')
    n = np.arange(1, CELLS + 1)
    styles = {"state": "tab:blue", "state+legal": "tab:pink", "legal-only": "maroon"}
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for name in ENCODINGS:
        ax.plot(n, 100 * np.array(result.curves[name]), "o-", color=styles[name], label=name)
    ax.plot(n, 100 * np.array(result.chance_legal), ":", color="gray", label="chance (legal)")
    ax.set_xlabel("N")
    ax.set_ylabel("actual move ranked in top N (%)")
    ax.set_title(
        f"Tic-tac-toe, minimax opponent: {result.n_test_positions} test positions "
        f"({result.config['repeats']} x {result.config['test_games']} games)",
        fontsize=9,
    )
    ax.set_xticks(n)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--quick", action="store_true", help="3 replications, fewer timing reps")
    parser.add_argument("--plot", metavar="FILE.png", help="write the three curves as a PNG")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-games", type=int, default=100)
    parser.add_argument("--test-games", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=None, help="default 30 (quick: 3)")
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 3 if args.quick else 30
    args.timing_reps = 5 if args.quick else 25

    main_result = _experiment(args, "figure 5")
    sweep = {}
    for k in (3, 5, 10, 20, None):
        res = _experiment(args, f"k={k}", k_features=k)
        sweep["all" if k is None else str(k)] = {
            e: {"top1": res.top(e, 1), "top3": res.top(e, 3)} for e in ENCODINGS
        }
    random_ties = _experiment(args, "random ties", tie_break="random")
    report = {
        "figure5": main_result.to_json(),
        "legal_only_vs_state": _comparison(main_result),
        "k_features_sweep": sweep,
        "random_tie_break": random_ties.to_json() | {"comparison": _comparison(random_ties)},
        "timing": _timing(args),
    }
    if args.plot:
        _plot(main_result, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
        report["plot"] = args.plot
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    fig = report["figure5"]
    print(f"positions: {fig['n_test_positions']} test, {fig['n_train_positions']} training")
    print("N            " + "".join(f"{n:>7}" for n in range(1, CELLS + 1)))
    for name, curve in (*fig["curves"].items(), ("chance", fig["chance_legal"])):
        print(f"{name:<13}" + "".join(f"{v:7.3f}" for v in curve))
    for name in ENCODINGS:
        print(f"{name:<13} top-1 {fig['top1'][name]:.3f}  top-3 {fig['top3'][name]:.3f}")
    print("legal-only vs state:", json.dumps(report["legal_only_vs_state"]))
    print("timing:", json.dumps(report["timing"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
