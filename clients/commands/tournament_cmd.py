"""``oppmodel tournament``: duplicate ACPC matches between project agents and external agents."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from tqdm import tqdm

from clients.acpc.agent import policy_names
from clients.acpc.gamedef import read_game_def
from clients.acpc.tournament import (
    AgentSpec,
    TournamentConfig,
    format_table,
    results_json,
    run_tournament,
)
from modeling.errors import FailedPreconditionError, InvalidArgumentError

DEFAULT_GAME = Path(__file__).resolve().parent.parent / "acpc" / "games" / "kuhn.limit.3p.game"

EPILOG = f"""\
Each --agent is NAME=COMMAND. COMMAND `builtin:POLICY` plays the project's agent in-process
(POLICY: {", ".join(policy_names())}); any other COMMAND is an ACPC agent
executable, started as `COMMAND HOST PORT` for every match. There must be one agent per player.
Every duplicate set plays all seatings (6 for 3 players) with the same cards (card seed SEED + set
number), through the project's dealer over loopback TCP. Results: each agent's mean in mbb/h
(milli-chips per hand) over the duplicate hands with its standard error, then every match's.
Logs (MATCH.log, dealer MATCH.err, external agents' output) are kept in --out.

example:
  oppmodel tournament --agent n1=builtin:n1 --agent n3=builtin:n3 \\
      --agent ext=./my_agent.sh --hands 3000 --duplicates 2 --seed 42 --out results/
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
        "--game", type=Path, default=DEFAULT_GAME, help="ACPC game file (default: 3p Kuhn)"
    )
    parser.add_argument("--hands", type=int, default=3000, help="hands per match (default 3000)")
    parser.add_argument("--duplicates", type=int, default=1, help="duplicate sets (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="card seed of the first set")
    parser.add_argument(
        "--out", type=Path, default=Path("acpc-tournament"), help="folder for the logs"
    )
    parser.add_argument(
        "--t_response",
        type=int,
        default=60_000,
        metavar="MS",
        help="abort a match if an agent takes longer to reply (default %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Play the tournament and print the table (or JSON)."""
    try:
        config = TournamentConfig(
            game=read_game_def(args.game),
            game_file=args.game.name,
            agents=tuple(AgentSpec.parse(a) for a in args.agents),
            hands=args.hands,
            duplicates=args.duplicates,
            seed=args.seed,
            out_dir=args.out,
            t_response_ms=args.t_response,
        )
        config.validate()
    except InvalidArgumentError as exc:
        print(f"tournament: {exc}", file=sys.stderr)
        return 1
    total = args.hands * args.duplicates * math.factorial(config.game.num_players)
    with tqdm(total=total, unit="hand", desc="tournament", disable=None) as bar:
        try:
            records = run_tournament(config, on_hand=lambda _hand: bar.update())
        except (FailedPreconditionError, OSError) as exc:
            print(f"tournament: {exc}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps(results_json(config, records), indent=2))
    else:
        print(format_table(config, records))
        print(f"\nlogs in {args.out}/")
    return 0
