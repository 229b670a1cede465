"""``oppmodel movepred``: the tic-tac-toe move prediction of Hicks-Wright & Schkufza 2006."""

from __future__ import annotations

import argparse
import json

from oppmodel.clients.commands._types import positive_float, positive_int, runs, seed
from oppmodel.clients.progress import Progress
from oppmodel.modeling.movepred.tictactoe import (
    ENCODINGS,
    MinimaxRole,
    TieBreak,
    run_topn_experiment,
)

_DESCRIPTION = """\
Learn to predict a minimax tic-tac-toe player's moves from logged games against a random player
(Hicks-Wright & Schkufza 2006, Figure 5). A naive Bayes model with chi-squared feature selection is
trained on the minimax player's positions in --games games and ranks its moves in --test-games fresh
games; the output is the top-N curve (how often the move actually played is among the first N
ranked) for three set-ups:

  state        board facts only, all 9 cells ranked as if every move were legal
  state+legal  board facts plus legal-move facts, all 9 cells ranked
  legal-only   board facts, only the legal (empty) cells ranked

Ranking among legal moves can only move the actual move up, so legal-only is never below state.
Everything is seeded: the same --seed gives the same numbers.
"""

_EXAMPLES = """\
examples:
  oppmodel movepred                          # paper's sizes: 100 training, 10 test games
  oppmodel movepred --repeats 20 --json      # pool 20 replications, machine-readable
  oppmodel movepred --tie-break random       # minimax picks uniformly among its best moves
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``movepred`` subcommand."""
    parser = subparsers.add_parser(
        "movepred",
        help="tic-tac-toe move prediction from logged play (Hicks-Wright & Schkufza 2006)",
        description=_DESCRIPTION,
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--games", type=runs, default=100, help="training games (default 100)")
    parser.add_argument("--test-games", type=runs, default=10, help="test games (default 10)")
    parser.add_argument(
        "--repeats",
        type=runs,
        default=1,
        help="independent replications pooled (default 1)",
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help="seed of everything random (default 0)"
    )
    parser.add_argument(
        "--k-features",
        type=positive_int,
        default=None,
        help="keep this many features by chi-squared score (default: all)",
    )
    parser.add_argument(
        "--alpha",
        type=positive_float,
        default=1.0,
        help="Laplace smoothing pseudo-count (default 1)",
    )
    parser.add_argument(
        "--tie-break",
        choices=TieBreak.names(),
        default=TieBreak.FIRST,
        help="minimax's choice among equally good moves: lowest cell, or seeded uniform",
    )
    parser.add_argument(
        "--minimax-role",
        choices=MinimaxRole.names(),
        default=MinimaxRole.ALTERNATE,
        help="which side the minimax player takes (default: X and O in turn)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the experiment and print the curves."""
    with Progress(args.repeats, desc="oppmodel movepred", unit="replication") as bar:
        result = run_topn_experiment(
            train_games=args.games,
            test_games=args.test_games,
            repeats=args.repeats,
            seed=args.seed,
            k_features=args.k_features,
            alpha=args.alpha,
            minimax_role=args.minimax_role,
            tie_break=args.tie_break,
            progress=bar.update,
        )
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
        return 0
    print(
        f"{result.n_train_positions} training and {result.n_test_positions} test positions "
        f"of the minimax player; top-N accuracy:"
    )
    print("N            " + "".join(f"{n:>7}" for n in range(1, 10)))
    for name in (*ENCODINGS, "chance"):
        curve = result.chance_legal if name == "chance" else result.curves[name]
        print(f"{name:<13}" + "".join(f"{v:7.3f}" for v in curve))
    print("(chance: the legal moves in uniformly random order)")
    return 0
