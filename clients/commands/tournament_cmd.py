"""``oppmodel tournament``: duplicate ACPC matches between project agents and external agents."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from oppmodel.clients.acpc.agent import policy_names
from oppmodel.clients.acpc.tournament import (
    AgentSpec,
    TournamentConfig,
    format_table,
    results_json,
    run_tournament,
)
from oppmodel.clients.commands._mbbr_options import add_prior_strategy_argument, prior_strategy_json
from oppmodel.clients.commands._types import hands, int_in, positive_int, runs
from oppmodel.clients.interrupt import noting
from oppmodel.clients.progress import Progress
from oppmodel.modeling.errors import FailedPreconditionError
from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES, game_path
from oppmodel.modeling.games.acpc.compiler import limit_game_of
from oppmodel.modeling.games.acpc.gamedef import read_game_def

EPILOG = f"""\
Each --agent is NAME=COMMAND. COMMAND `builtin:POLICY` plays the project's agent in-process,
POLICY one of: {", ".join(policy_names())}.
mbbr, uniform, the styles and cfr (the game's solved strategy: bundled, cached or solved on first
use) play every limit game, n1-n3 3-player Kuhn; STYLE@S dilutes a style with the equilibrium
(N2 in 3-player Kuhn, cfr elsewhere). Any other COMMAND is an ACPC agent executable, started as
`COMMAND HOST PORT` for every match (for instance `oppmodel acpc-agent leduc3p --strategy
my.json`). There must be one agent per player. --game is any limit game (Kuhn, Leduc, an ACPC
game file).
--mbbr-prior-strategy FILE gives builtin:mbbr a strategy file as its prior mean and its default
strategy.
Every duplicate set plays all seatings (6 for 3 players) with the same cards (card seed SEED + set
number), through the project's dealer over loopback TCP. Results: each agent's mean win rate over
the duplicate hands with its standard error, then every match's, in the game's unit: milli-antes
per hand (mA/h) when every player antes the same (Kuhn, Leduc), else milli-big-blinds (mbb/h).
Logs (MATCH.log, dealer MATCH.err, external agents' output) are kept in --out. Exit status 1
means a match was aborted (an agent failed), 2 a mistake in the command.

examples:
  oppmodel tournament --agent n1=builtin:n1 --agent n3=builtin:n3 \\
      --agent ext=./my_agent.sh --hands 3000 --duplicates 2 --seed 42 --out results/
  oppmodel tournament --game leduc3p --agent a=builtin:cfr --agent b=builtin:cfr \\
      --agent ext=./my_agent.sh --hands 3000 --seed 42 --out leduc-results/
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``tournament`` subcommand."""
    parser = subparsers.add_parser(
        "tournament",
        help="duplicate ACPC matches between project and external agents",
        description="Run duplicate sets of all seatings through the project's ACPC dealer.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--agent",
        dest="agents",
        action="append",
        required=True,
        metavar="NAME=COMMAND",
        help="an agent (repeat once per player)",
    )
    parser.add_argument(
        "--game",
        default="kuhn3p",
        help=f"ACPC game file or a bundled game ({', '.join(BUNDLED_GAMES)}; default %(default)s)",
    )
    parser.add_argument("--hands", type=hands, default=3000, help="hands per match (default 3000)")
    parser.add_argument("--duplicates", type=runs, default=1, help="duplicate sets (default 1)")
    parser.add_argument(
        "--seed",
        type=int_in(0, 2**32 - 1),
        default=0,
        help="card seed of the first set (default 0; set i uses seed + i)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("acpc-tournament"), help="folder for the logs"
    )
    parser.add_argument(
        "--t_response",
        type=positive_int,
        default=60_000,
        metavar="MS",
        help="abort a match if an agent takes longer to reply (default %(default)s)",
    )
    parser.add_argument(
        "--start_timeout",
        type=positive_int,
        default=120_000,
        metavar="MS",
        help="abort a match if a running agent has not connected by then; one that exits "
        "aborts it at once (default %(default)s)",
    )
    add_prior_strategy_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Play the tournament and print the table (or JSON); 1 if a match was aborted."""
    game = game_path(args.game)
    gamedef = read_game_def(game)
    config = TournamentConfig(
        game=gamedef,
        game_file=game.name,
        agents=tuple(AgentSpec.parse(a) for a in args.agents),
        hands=args.hands,
        duplicates=args.duplicates,
        seed=args.seed,
        out_dir=args.out,
        t_response_ms=args.t_response,
        start_timeout_ms=args.start_timeout,
        mbbr_prior_strategy=prior_strategy_json(args, limit_game_of(gamedef)),
    )
    config.validate()
    total = args.hands * args.duplicates * math.factorial(config.game.num_players)
    with (
        noting(kept=lambda: f"the logs of the matches played are in {args.out}/"),
        Progress(total, desc="oppmodel tournament", unit="hand") as bar,
    ):
        try:
            records = run_tournament(config, on_hand=lambda _hand: bar.update())
        except FailedPreconditionError as exc:  # a match aborted: the run failed, not the command
            print(f"oppmodel tournament: error: {exc}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps(results_json(config, records), indent=2))
    else:
        print(format_table(config, records))
        print(f"\nlogs in {args.out}/")
    return 0
