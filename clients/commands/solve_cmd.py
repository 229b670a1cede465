"""``oppmodel solve``: an equilibrium (2 players) or CFR average strategy (3+) of a limit game."""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from oppmodel.clients.commands._types import iterations, non_negative_int
from oppmodel.clients.interrupt import noting
from oppmodel.clients.progress import Progress
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import save_profile
from oppmodel.modeling.solve.cfr import (
    DEFAULT_DELAY,
    Algorithm,
    CFRSolver,
    SolverConfig,
    strategy_label,
)

CHECKPOINTS = 50  # progress-bar updates (with nash_conv) and state saves per run

_DESCRIPTION = f"""\
Solve a limit poker game with counterfactual regret minimisation over the whole game tree
(every deal, no sampling) and write the average strategy as a JSON strategy file keyed by
information-state strings ("Ks/Qh:rc/cr", see modeling/games/acpc/limit_game.py): the format every
command reads (eval --profile, a match agent, acpc-agent --strategy, --mbbr-prior-strategy).

GAME is a bundled game ({", ".join(BUNDLED_GAMES)}) or an ACPC game definition file of any
small limit game. --algorithm cfr+ (default): CFR+ with alternating updates and linear
averaging after a delay of --delay iterations; dcfr: discounted CFR (alpha 1.5, beta 0,
gamma 2). In a 2-player game the average strategy approaches a Nash equilibrium (nash_conv,
printed at the end, goes to 0); with 3 or more players it is a CFR average strategy with no
equilibrium guarantee, and the file says so.

--iterations is the total: with --resume STATE the run starts from the saved state (if the
file exists) and writes it back at every checkpoint and at the end, so that running the same
command again with a larger --iterations continues where it stopped. Ctrl-C saves too, and says
so. A progress bar with the current nash_conv is drawn when stderr is a terminal; off a
terminal a long run prints a progress line now and then.
"""

_EXAMPLES = """\
examples:
  oppmodel solve leduc2p --iterations 2000 --out leduc2p.json          # nash_conv ~1e-4
  oppmodel solve kuhn3p --iterations 2000 --out mine.json   # then: eval --profile mine.json
  oppmodel solve leduc3p --iterations 5000 --out l3.json --resume l3.npz
  oppmodel solve mygame.game --iterations 1000 --algorithm dcfr --out s.json --json
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``solve`` subcommand."""
    parser = subparsers.add_parser(
        "solve",
        help="CFR+ or discounted CFR on a limit game: a strategy file and its nash_conv",
        description=_DESCRIPTION,
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("game", metavar="GAME", help="a bundled game's short name or a game file")
    parser.add_argument(
        "--iterations", type=iterations, required=True, help="total iterations to reach"
    )
    parser.add_argument(
        "--algorithm",
        choices=Algorithm.names(),
        help="cfr+ (default) or dcfr; a resumed state keeps its own (another is refused)",
    )
    parser.add_argument(
        "--delay",
        type=non_negative_int,
        help=f"CFR+: iterations before averaging starts (default {DEFAULT_DELAY})",
    )
    parser.add_argument("--out", type=Path, required=True, help="the strategy file to write")
    parser.add_argument(
        "--resume", type=Path, metavar="STATE", help="solver state to start from and save to"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(func=run)


def _solver(args: argparse.Namespace, game: LimitGame) -> CFRSolver:
    if args.resume is not None and args.resume.exists():
        solver = CFRSolver.load(game, args.resume)
        asked = {"algorithm": args.algorithm, "delay": args.delay}
        for field, value in asked.items():
            saved = getattr(solver.config, field)
            if value is not None and value != saved:
                message = f"{args.resume} was run with {saved}, not {value}"
                raise InvalidArgumentError(field, message)
        return solver
    config = SolverConfig(
        algorithm=args.algorithm or Algorithm.CFR_PLUS,
        delay=DEFAULT_DELAY if args.delay is None else args.delay,
    )
    return CFRSolver(game, config)


def run(args: argparse.Namespace) -> int:
    """Solve, write the strategy (and the state), print the summary."""
    game = limit_game(args.game)
    solver = _solver(args, game)
    start, started = solver.iteration, time.perf_counter()
    remaining = max(args.iterations - start, 0)
    desc = f"oppmodel solve {game.name} {solver.config.algorithm}"

    def checkpoint(s: CFRSolver) -> None:
        if args.resume is not None:
            s.save(args.resume)
        bar.postfix(lambda: f"nash_conv {s.nash_conv():.3g}")

    def kept() -> str:
        if args.resume is None:
            return "nothing kept (with --resume STATE the solver's state is kept to resume from)"
        solver.save(args.resume)
        return f"state saved to {args.resume} (the same command resumes from it)"

    with (
        noting(progress=lambda: f"at iteration {solver.iteration} of {args.iterations}", kept=kept),
        Progress(args.iterations, desc=desc, unit="iteration") as bar,
    ):
        bar.update(start)
        solver.run(
            remaining,
            every=max(1, math.ceil(remaining / CHECKPOINTS)),
            callback=checkpoint,
            progress=bar.update,
        )
    seconds = time.perf_counter() - started
    if args.resume is not None:
        solver.save(args.resume)
    value = solver.nash_conv()
    label = strategy_label(game, solver.config)
    summary = {
        "game": game.name,
        "players": game.num_players,
        "algorithm": solver.config.algorithm,
        "iterations": solver.iteration,
        "nash_conv": value,
        "strategy": label,
        "command": f"oppmodel solve {args.game} --iterations {solver.iteration} "
        f"--algorithm {solver.config.algorithm}",
    }
    save_profile(game, solver.average_profile(), args.out, solver=summary)
    summary |= {"out": str(args.out), "state": None if args.resume is None else str(args.resume)}
    summary["seconds"] = seconds
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"{game.name}: {solver.config.algorithm} {solver.iteration} iterations "
        f"({solver.iteration - start} in {seconds:.1f} s), nash_conv {value:.3g}"
    )
    print(f"{label}; written to {args.out}")
    return 0
