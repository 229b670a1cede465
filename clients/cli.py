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

from oppmodel.clients.interrupt import (
    INTERRUPTED_STATUS,
    Interrupted,
    annotated,
    interrupt_in,
    interrupted_line,
    sigint_handled,
)
from oppmodel.modeling.errors import OppModelError

USER_ERRORS = (OppModelError, OSError)
USAGE_ERROR_STATUS = 2  # argparse's status for a usage error, used for every mistake

# Each command and its module (``oppmodel.clients.commands.<module>``); the order here is the
# order shown by ``oppmodel --help``.
COMMAND_MODULES = {
    # the service
    "demo": "demo_cmd",
    "serve": "serve_cmd",
    "ui": "ui_cmd",
    # Kuhn poker in-process
    "eval": "eval_cmd",
    "match": "match_cmd",
    # limit games (Kuhn, Leduc, any small ACPC limit game)
    "solve": "solve_cmd",
    # the ACPC protocol
    "dealer": "dealer_cmd",
    "acpc-agent": "acpc_agent_cmd",
    "acpc-agent-script": "acpc_script_cmd",
    "tournament": "tournament_cmd",
    "replay": "replay_cmd",
    "population": "population_cmd",
    # perfect information and move prediction
    "spades-match": "spades_cmd",
    "movepred": "movepred_cmd",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Build the top-level parser with every registered subcommand, or with ``command`` only
    (one of COMMAND_MODULES; what ``main`` runs imports only its own modules: importing every
    command's took an ACPC agent 2.3 s of CPU before it connected, its own 0.9 s, and at load
    40 a hold'em agent missed a dealer's 60 s start timeout)."""
    parser = argparse.ArgumentParser(
        prog="oppmodel",
        description=(
            "Bayesian opponent modeling for multiplayer games. "
            "Run `oppmodel demo` for a first look, `oppmodel COMMAND --help` for details."
        ),
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMAND_MODULES.items():
        if command in (None, name):
            importlib.import_module(f"oppmodel.clients.commands.{module}").register(subparsers)
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
    except SystemError as exc:  # Ctrl-C inside a compiled call (interrupt_in)
        interrupt = interrupt_in(exc)
        if interrupt is None:
            raise
        return _interrupted(prog, interrupt)


def _interrupted(prog: str, exc: KeyboardInterrupt) -> int:
    """Say what Ctrl-C interrupted, in one line; the status for it."""
    print(interrupted_line(prog, exc), file=sys.stderr, flush=True)
    return INTERRUPTED_STATUS


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    words = [word for word in (sys.argv[1:] if argv is None else argv)[:1] if word[:1] != "-"]
    starting = " ".join(["oppmodel", *words])
    with sigint_handled() as sigint:
        try:  # seconds of imports (every command's modules), where Ctrl-C may come too
            parser = build_parser(words[0] if words and words[0] in COMMAND_MODULES else None)
            if sigint:  # noted, and the import it hit went on as without an optional module
                return _interrupted(starting, Interrupted("while starting"))
            args = parser.parse_args(argv)
        except KeyboardInterrupt as exc:
            return _interrupted(starting, annotated(exc, progress="while starting"))
        except Exception:  # Ctrl-C inside C code importing, which raised its own error for it
            if not sigint:
                raise
            return _interrupted(starting, Interrupted("while starting"))
        if not getattr(args, "func", None):
            parser.print_help()
            return USAGE_ERROR_STATUS
        return run_command(f"{parser.prog} {args.command}", args.func, args)


if __name__ == "__main__":
    sys.exit(main())
