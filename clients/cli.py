"""The ``oppmodel`` command: one entry point, one subcommand per job.

Each subcommand lives in ``clients/commands/<name>.py`` and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` to a callable taking the parsed arguments and
returning an exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Order here is the order shown by ``oppmodel --help``.
COMMAND_MODULES = (
    # the service
    "clients.commands.demo_cmd",
    "clients.commands.serve_cmd",
    # Kuhn poker in-process
    "clients.commands.eval_cmd",
    "clients.commands.match_cmd",
    # the ACPC protocol
    "clients.commands.dealer_cmd",
    "clients.commands.acpc_agent_cmd",
    "clients.commands.acpc_script_cmd",
    "clients.commands.tournament_cmd",
    "clients.commands.replay_cmd",
    # perfect information and move prediction
    "clients.commands.spades_cmd",
    "clients.commands.movepred_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="oppmodel",
        description=(
            "Bayesian opponent modeling for multiplayer games. "
            "Run `oppmodel demo` for a first look, `oppmodel COMMAND --help` for details."
        ),
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
