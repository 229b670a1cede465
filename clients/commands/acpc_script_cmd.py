"""``oppmodel acpc-agent-script``: write an ``exe HOST PORT`` wrapper for the project's ACPC agent.

ACPC tooling (the reference ``play_match.pl``, competition harnesses) starts each agent as
``exe HOST PORT``. The generated POSIX shell script fixes the game, strategy and seed, and runs
the agent with this Python (where oppmodel is installed), so it works from any directory.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from oppmodel.clients.acpc.agent import make_policy, policy_names
from oppmodel.clients.commands._types import seed
from oppmodel.clients.commands.acpc_agent_cmd import add_service_wait
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.bundled import game_path
from oppmodel.modeling.games.acpc.gamedef import read_game_def


def script_text(
    *,
    gamefile: Path,
    agent: str,
    seed: int,
    python: str,
    service: str | None = None,
    service_wait: float | None = None,
) -> str:
    """The wrapper script's text (``service``: play MBBR through the service at that address,
    waiting ``service_wait`` seconds for it at the start if given, else the agent's default)."""
    command = " ".join(
        shlex.quote(part)
        for part in (
            python,
            "-m",
            "oppmodel.clients.commands.acpc_agent_cmd",
            str(gamefile.resolve()),
        )
    )
    return (
        "#!/bin/sh\n"
        f"# oppmodel ACPC agent {agent!r} (seed {seed}); usage: $0 HOST PORT\n"
        f'exec {command} "$1" "$2" --agent {shlex.quote(agent)} --seed {seed}'
        + (f" --service {shlex.quote(service)}" if service else "")
        + (f" --service-wait {service_wait:g}" if service and service_wait is not None else "")
        + "\n"
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``acpc-agent-script`` subcommand."""
    parser = subparsers.add_parser(
        "acpc-agent-script",
        help="write an `exe HOST PORT` wrapper script for the ACPC agent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  oppmodel acpc-agent-script n1.sh kuhn3p --agent n1\n"
        "  ./n1.sh 127.0.0.1 18791\n"
        "  oppmodel acpc-agent-script mbbr.sh kuhn3p --agent mbbr "
        "--service 127.0.0.1:50051",
    )
    parser.add_argument("out", metavar="FILE", type=Path, help="script to write (made executable)")
    parser.add_argument(
        "gamefile", metavar="GAMEFILE", help="ACPC game file, or a bundled game's name"
    )
    parser.add_argument(
        "--agent", default="n1", metavar="NAME", help=f"strategy: {', '.join(policy_names())}"
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help="seed of the agent's action draws (default 0)"
    )
    parser.add_argument("--python", default=sys.executable, help="interpreter (default: this one)")
    parser.add_argument(
        "--service", metavar="ADDR", help="play MBBR through the oppmodel service at HOST:PORT"
    )
    add_service_wait(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the game and agent, then write the script."""
    if args.service and args.agent != "mbbr":
        raise InvalidArgumentError("agent", "--service plays mbbr only (--agent mbbr)")
    gamefile = game_path(args.gamefile)
    make_policy(args.agent, read_game_def(gamefile), args.seed)
    args.out.write_text(
        script_text(
            gamefile=gamefile,
            agent=args.agent,
            seed=args.seed,
            python=args.python,
            service=args.service,
            service_wait=args.service_wait,
        )
    )
    args.out.chmod(0o755)
    print(f"wrote {args.out}: run it as `{shell_path(args.out)} HOST PORT`", file=sys.stderr)
    return 0


def shell_path(path: Path) -> str:
    """``path`` as a shell runs it: a bare name gets ``./`` (the shell seeks those on PATH)."""
    text = str(path)
    return shlex.quote(text if "/" in text else f"./{text}")
