"""``oppmodel acpc-agent``: play in an ACPC match (any dealer speaking protocol 2.0.0)."""

from __future__ import annotations

import argparse
import json
import sys

from clients.acpc.agent import ModelPolicy, connect, make_policy, play_match, policy_names
from clients.acpc.convert import kuhn_for
from clients.acpc.gamedef import BUNDLED_GAMES, read_game_def
from clients.acpc.service_policy import ServicePolicy
from clients.cli import run_command
from clients.commands._mbbr_options import add_mbbr_arguments, mbbr_config
from clients.commands._types import non_negative_float, port, positive_float, seed
from modeling.errors import InvalidArgumentError
from modeling.mbbr import MBBRModel

EPILOG = f"""\
The agent connects to HOST PORT, sends VERSION:2.0.0, answers every MATCHSTATE where it is to act
and plays until the dealer closes the connection. Comments and unexpected lines are ignored.
At the end it prints a one-line tally on stderr (or JSON on stdout with --json).

With --service ADDR the agent is MBBR played by the oppmodel service: it creates a session (the
--mbbr-* parameters, --seed), sends every finished hand as this seat saw it (folded and
uncontested cards stay hidden) and asks GetAction for every decision. Every RPC has a deadline
(--rpc-deadline-ms); if the service is unreachable or fails, the agent says so once on stderr and
plays N1 (MBBR's default strategy) while it reconnects in the background, resending the hands
the service missed; the match never waits for it. --in-process plays the same MBBR model inside
this process instead. GAMEFILE is a path or a bundled game's name ({", ".join(BUNDLED_GAMES)}).

examples:
  oppmodel acpc-agent kuhn3p 127.0.0.1 18791 --agent n1 --seed 7
  oppmodel serve --db oppmodel.sqlite --port 50051 &
  oppmodel acpc-agent kuhn3p 127.0.0.1 18791 --service 127.0.0.1:50051 --seed 7
  oppmodel acpc-agent kuhn3p 127.0.0.1 18791 --in-process --mbbr-posterior samples
  oppmodel acpc-agent-script n1.sh kuhn3p --agent n1   # an `exe HOST PORT` wrapper
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The agent's arguments (shared with the stand-alone entry point :func:`main`)."""
    parser.add_argument(
        "gamefile", metavar="GAMEFILE", help="ACPC game definition file, or a bundled game's name"
    )
    parser.add_argument("host", metavar="HOST", help="dealer host")
    parser.add_argument("port", metavar="PORT", type=port, help="this seat's dealer port")
    parser.add_argument(
        "--agent",
        metavar="NAME",
        help=f"strategy to play: {', '.join(policy_names())} (default: mbbr with --service or "
        "--in-process, n1 otherwise)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--service", metavar="ADDR", help="play MBBR through the oppmodel service at HOST:PORT"
    )
    where.add_argument(
        "--in-process", action="store_true", help="play MBBR in this process (no service)"
    )
    add_mbbr_arguments(parser)
    parser.add_argument(
        "--rpc-deadline-ms",
        type=positive_float,
        default=200.0,
        metavar="MS",
        help="deadline of each service call made while the dealer waits (default %(default)g)",
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help="seed of the agent's action draws (default 0)"
    )
    parser.add_argument(
        "--connect-timeout",
        type=non_negative_float,
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
    """Play the match."""
    modeled = bool(args.service or args.in_process)
    agent = args.agent or ("mbbr" if modeled else "n1")
    if modeled and agent != "mbbr":
        raise InvalidArgumentError("agent", "--service and --in-process play mbbr only")
    game = read_game_def(args.gamefile)
    if args.service:
        policy = ServicePolicy(
            game,
            args.service,
            config=mbbr_config(args, seed=args.seed),
            deadline=args.rpc_deadline_ms / 1000,
        )
    elif agent == "mbbr":
        policy = ModelPolicy(
            game, MBBRModel(kuhn_for(game), mbbr_config(args, seed=args.seed)), args.seed
        )
    else:
        policy = make_policy(agent, game, args.seed)
    try:
        result = play_match(game, connect(args.host, args.port, args.connect_timeout), policy)
    finally:
        if isinstance(policy, ServicePolicy):
            policy.close()
    label = f"{agent} (service)" if args.service else agent
    extra = {}
    if isinstance(policy, ServicePolicy):
        extra = {
            "session_id": policy.session_id,
            "service_decisions": policy.service_decisions,
            "fallback_decisions": policy.fallback_decisions,
        }
    if args.json:
        print(json.dumps({"agent": label, **result.__dict__, **extra}))
    else:
        rate = 1000 * result.total / result.hands if result.hands else 0.0
        print(
            f"acpc-agent {label}: {result.hands} hands, {result.total:+g} chips "
            f"({rate:+.1f} mbb/h), {result.actions} actions, {result.ignored_lines} lines ignored",
            file=sys.stderr,
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point, used by generated wrapper scripts (starts faster than the CLI)."""
    parser = argparse.ArgumentParser(prog="oppmodel acpc-agent", epilog=EPILOG)
    add_arguments(parser)
    return run_command(parser.prog, run, parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
