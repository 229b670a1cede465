"""The ``oppmodel`` command: one entry point, one subcommand per job.

Each subcommand lives in ``clients/commands/<name>.py`` and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` to a callable taking the parsed arguments and
returning an exit status.

Mistakes end the same way in every subcommand: one line ``oppmodel CMD: error: MESSAGE`` on
stderr and exit status 2. argparse reports usage errors so (a number out of range included: see
``commands/_types.py``); :func:`run_command` reports the rest, the project's own errors
(``oppmodel.modeling.errors``: a bad value, an unknown name, a refused request) and the operating
system's (a missing file, a port in use), raised by the command before it leaves anything behind.
Anything else is a bug and keeps its traceback. Status 1 is kept for a run that started and then
failed (an ACPC match aborted by a timeout or a crashed agent), as the reference dealer does.
Ctrl-C ends every subcommand with one line too, ``oppmodel CMD: interrupted ...; ...`` saying
how far it got and what it kept, and status 130 (see ``interrupt.py``), in its start-up as well
(seconds of imports: "interrupted while starting").
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

from oppmodel.clients.interrupt import INTERRUPTED_STATUS, annotated, interrupted_line
from oppmodel.modeling.errors import OppModelError

USER_ERRORS = (OppModelError, OSError)
USAGE_ERROR_STATUS = 2  # argparse's status for a usage error, used for every mistake

# Order here is the order shown by ``oppmodel --help``.
COMMAND_MODULES = (
    # the service
    "oppmodel.clients.commands.demo_cmd",
    "oppmodel.clients.commands.serve_cmd",
    "oppmodel.clients.commands.ui_cmd",
    # Kuhn poker in-process
    "oppmodel.clients.commands.eval_cmd",
    "oppmodel.clients.commands.match_cmd",
    # limit games (Kuhn, Leduc, any small ACPC limit game)
    "oppmodel.clients.commands.solve_cmd",
    # the ACPC protocol
    "oppmodel.clients.commands.dealer_cmd",
    "oppmodel.clients.commands.acpc_agent_cmd",
    "oppmodel.clients.commands.acpc_script_cmd",
    "oppmodel.clients.commands.tournament_cmd",
    "oppmodel.clients.commands.replay_cmd",
    "oppmodel.clients.commands.population_cmd",
    # perfect information and move prediction
    "oppmodel.clients.commands.spades_cmd",
    "oppmodel.clients.commands.movepred_cmd",
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


def error_message(exc: BaseException) -> str:
    """One line naming the problem: the file and the reason for an OSError about a file."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def run_command(
    prog: str, func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace
) -> int:
    """Run a subcommand; a user error becomes ``PROG: error: MESSAGE`` on stderr and status 2,
    Ctrl-C ``PROG: interrupted ...; WHAT WAS KEPT`` and status 130 (``clients/interrupt.py``)."""
    try:
        return int(func(args) or 0)
    except USER_ERRORS as exc:
        print(f"{prog}: error: {error_message(exc)}", file=sys.stderr)
        return USAGE_ERROR_STATUS
    except KeyboardInterrupt as exc:
        return _interrupted(prog, exc)
    except SystemError as exc:  # Ctrl-C inside a compiled call: numba reports it as its cause
        if not isinstance(exc.__cause__, KeyboardInterrupt):
            raise
        return _interrupted(prog, exc.__cause__)


def _interrupted(prog: str, exc: KeyboardInterrupt) -> int:
    """Say what Ctrl-C interrupted, in one line; the status for it."""
    print(interrupted_line(prog, exc), file=sys.stderr, flush=True)
    return INTERRUPTED_STATUS


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    try:  # seconds of imports (every command's modules), where Ctrl-C may come too
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt as exc:
        words = [word for word in (sys.argv[1:] if argv is None else argv)[:1] if word[:1] != "-"]
        starting = annotated(exc, progress="while starting")
        return _interrupted(" ".join(["oppmodel", *words]), starting)
    if not getattr(args, "func", None):
        parser.print_help()
        return USAGE_ERROR_STATUS
    return run_command(f"{parser.prog} {args.command}", args.func, args)


if __name__ == "__main__":
    sys.exit(main())
