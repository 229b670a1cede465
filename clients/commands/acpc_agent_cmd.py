"""``oppmodel acpc-agent``: play in an ACPC match (any dealer speaking protocol 2.0.0)."""

from __future__ import annotations

import argparse
import json
import sys

from clients.acpc.agent import connect, make_policy, play_match, policy_names
from clients.acpc.gamedef import read_game_def
from modeling.errors import InvalidArgumentError

EPILOG = """\
The agent connects to HOST PORT, sends VERSION:2.0.0, answers every MATCHSTATE where it is to act
and plays until the dealer closes the connection. Comments and unexpected lines are ignored.
At the end it prints a one-line tally on stderr (or JSON on stdout with --json).

examples:
  oppmodel acpc-agent kuhn.limit.3p.game 127.0.0.1 18791 --agent n1 --seed 7
  oppmodel acpc-agent-script n1.sh kuhn.limit.3p.game --agent n1   # an `exe HOST PORT` wrapper
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The agent's arguments (shared with the stand-alone entry point :func:`main`)."""
    parser.add_argument("gamefile", metavar="GAMEFILE", help="ACPC game definition file")
    parser.add_argument("host", metavar="HOST", help="dealer host")
    parser.add_argument("port", metavar="PORT", type=int, help="this seat's dealer port")
    parser.add_argument(
        "--agent",
        default="n1",
        metavar="NAME",
        help=f"strategy to play (default %(default)s): {', '.join(policy_names())}",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the agent's action draws")
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=10.0,
        metavar="SEC",
        help="keep retrying the connection this long (default %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print the tally as JSON on stdout")
    parser.set_defaults(func=run)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``acpc-agent`` subcommand."""
    parser = subparsers.add_parser(
        "acpc-agent",
        help="play as an agent in an ACPC match",
        description="Connect to an ACPC dealer and play one seat of a match.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Play the match; 1 if the game, agent or connection is bad."""
    try:
        game = read_game_def(args.gamefile)
        policy = make_policy(args.agent, game, args.seed)
        sock = connect(args.host, args.port, args.connect_timeout)
    except (InvalidArgumentError, OSError) as exc:
        print(f"acpc-agent: {exc}", file=sys.stderr)
        return 1
    result = play_match(game, sock, policy)
    if args.json:
        print(json.dumps({"agent": args.agent, **result.__dict__}))
    else:
        rate = 1000 * result.total / result.hands if result.hands else 0.0
        print(
            f"acpc-agent {args.agent}: {result.hands} hands, {result.total:+g} chips "
            f"({rate:+.1f} mbb/h), {result.actions} actions, {result.ignored_lines} lines ignored",
            file=sys.stderr,
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point, used by generated wrapper scripts (starts faster than the CLI)."""
    parser = argparse.ArgumentParser(prog="oppmodel acpc-agent", epilog=EPILOG)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
