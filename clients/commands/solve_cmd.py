"""``oppmodel solve``: an equilibrium (2 players) or CFR average strategy (3+) of a limit game."""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from oppmodel.clients.commands._types import (
    MAX_COUNT,
    float_in,
    int_in,
    iterations,
    non_negative_int,
)
from oppmodel.clients.interrupt import noting
from oppmodel.clients.progress import Progress
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.abstraction import AbstractionConfig, card_abstraction
from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES, HOLDEM_GAMES, game_path
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.acpc.holdem_abstract import (
    RECALLS,
    AbstractGameConfig,
    abstract_game,
    holdem_unsupported,
    lazy_abstract_game,
    needs_lazy,
)
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import save_profile
from oppmodel.modeling.solve.cfr import (
    DEFAULT_DELAY,
    Algorithm,
    CFRSolver,
    SolverConfig,
    strategy_label,
)
from oppmodel.modeling.solve.lazy_mccfr import LazyMCCFRSolver, lazy_label
from oppmodel.modeling.solve.mccfr import MCCFRConfig, MCCFRSolver, mccfr_label

HOLDEM_DEFAULTS = AbstractGameConfig()
MAX_BUCKETS = 10_000
_DEFAULT_BUCKETS = " ".join(map(str, HOLDEM_DEFAULTS.abstraction.buckets))

CHECKPOINTS = 50  # progress-bar updates (with nash_conv) per run
SAVES = 5  # state saves per run with --resume (each tenth checkpoint), besides the end and Ctrl-C

_DESCRIPTION = f"""\
Solve a limit poker game with counterfactual regret minimisation over the whole game tree
(every deal, no sampling) and write the average strategy as a JSON strategy file keyed by
information-state strings ("Ks/Qh:rc/cr", see modeling/games/acpc/limit_game.py): the format every
command reads (eval --profile, a match agent, acpc-agent --strategy, --mbbr-prior-strategy).

GAME is a bundled game ({", ".join(BUNDLED_GAMES)}) or an ACPC game definition file of any
small limit game. Limit hold'em ({", ".join(HOLDEM_GAMES)}, or a file with its cards) is solved
in its abstract game instead (modeling/games/acpc/holdem_abstract.py): exact betting, the cards
seen as E[HS^2] buckets per round (--buckets, --recall), chance drawn from a sample of --deals
deals (bucketed once and cached: minutes for the default), by external-sampling MCCFR seeded
with --seed; the file's keys are "<buckets>:<betting>" and its nash_conv is inside the
abstraction and the sample. 3-player hold'em's betting tree (23.9 million nodes) is too large
for arrays: it is walked by its rules and only the information sets MCCFR visits are kept
(modeling/solve/lazy_mccfr.py); the file lists those the average play reaches (more often than
--min-reach, a share of iterations), its probabilities on a grid of 1/1000 (the rest check or
call; an --out ending in .gz is written compressed), and the run reports the sampled regret
bound (chips a hand, no exact nash_conv for 3 players) instead.

--algorithm cfr+ (default): CFR+ with alternating updates and linear averaging after a delay
of --delay iterations; dcfr: discounted CFR (alpha 1.5, beta 0, gamma 2). In a 2-player game
the average strategy approaches a Nash equilibrium (nash_conv, printed at the end, goes to 0);
with 3 or more players it is a CFR average strategy with no
equilibrium guarantee, and the file says so.

--iterations is the total: with --resume STATE the run starts from the saved state (if the
file exists) and writes it back now and then (five times a run) and at the end, so that running
the same command again with a larger --iterations continues where it stopped. Ctrl-C saves too,
and says so. A progress bar with the current nash_conv is drawn when stderr is a terminal; off a
terminal a long run prints a progress line now and then.
"""

_EXAMPLES = """\
examples:
  oppmodel solve leduc2p --iterations 2000 --out leduc2p.json          # nash_conv ~1e-4
  oppmodel solve kuhn3p --iterations 2000 --out mine.json   # then: eval --profile mine.json
  oppmodel solve leduc3p --iterations 5000 --out l3.json --resume l3.npz
  oppmodel solve mygame.game --iterations 1000 --algorithm dcfr --out s.json --json
  oppmodel solve holdem2p --iterations 100000000 --out blueprint.json --resume bp.npz
  oppmodel solve holdem3p --iterations 50000 --out bp3.json   # ~4M sets, 1 GB
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
    holdem = parser.add_argument_group("hold'em (its abstract game)")
    holdem.add_argument(
        "--buckets",
        type=int_in(1, MAX_BUCKETS),
        nargs=4,
        metavar=("PRE", "FLOP", "TURN", "RIVER"),
        help=f"buckets per round (default {_DEFAULT_BUCKETS})",
    )
    holdem.add_argument(
        "--deals",
        type=int_in(1, MAX_COUNT),
        help=f"deals in the abstract game's sample (default {HOLDEM_DEFAULTS.deals:,})",
    )
    holdem.add_argument("--recall", choices=RECALLS, help="of the buckets (default imperfect)")
    holdem.add_argument(
        "--seed", type=int_in(0, 2**31 - 1), help="of the sample and of MCCFR's draws (default 0)"
    )
    holdem.add_argument(
        "--min-reach",
        type=float_in(0.0, 1.0),
        metavar="SHARE",
        help="3-player: list only the information sets reached in more than this share of the "
        "iterations (default 0: every set the average play reaches)",
    )
    parser.set_defaults(func=run)


def _holdem_config(args: argparse.Namespace) -> AbstractGameConfig | None:
    """The abstract game's configuration when GAME is hold'em, else None (and the hold'em
    options refused)."""
    path = game_path(args.game)
    rules = parse_game_def(path.read_text(encoding="ascii", errors="replace"))
    options = ("buckets", "deals", "recall", "seed", "min_reach")
    given = [f for f in options if getattr(args, f) is not None]
    if holdem_unsupported(rules):
        if given:
            raise InvalidArgumentError(given[0], f"applies to hold'em only, not {args.game}")
        return None
    if args.algorithm is not None or args.delay is not None:
        field = "algorithm" if args.algorithm is not None else "delay"
        raise InvalidArgumentError(field, "hold'em is solved by external-sampling MCCFR")
    cards = HOLDEM_DEFAULTS.abstraction
    if args.buckets is not None:
        cards = AbstractionConfig(tuple(args.buckets), cards.samples, cards.rollouts, cards.seed)
    return AbstractGameConfig(
        cards,
        HOLDEM_DEFAULTS.deals if args.deals is None else args.deals,
        HOLDEM_DEFAULTS.seed if args.seed is None else args.seed,
        args.recall or HOLDEM_DEFAULTS.recall,
    )


def _options(holdem: AbstractGameConfig) -> str:
    """The command-line options of an abstract game's configuration."""
    buckets = " ".join(map(str, holdem.abstraction.buckets))
    return (
        f"--buckets {buckets} --deals {holdem.deals} --recall {holdem.recall} --seed {holdem.seed}"
    )


def _solver(
    args: argparse.Namespace, game: LimitGame, holdem: AbstractGameConfig | None
) -> CFRSolver:
    if holdem is not None:
        if args.resume is not None and args.resume.exists():
            return MCCFRSolver.load(game, args.resume)
        return MCCFRSolver(game, MCCFRConfig(seed=holdem.seed))
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
    holdem = _holdem_config(args)
    if holdem is not None and needs_lazy(args.game):
        return _run_lazy(args, holdem)
    if args.min_reach is not None:
        raise InvalidArgumentError(
            "min_reach", f"applies to 3-player hold'em only, not {args.game}"
        )
    game = limit_game(args.game) if holdem is None else abstract_game(args.game, holdem)
    solver = _solver(args, game, holdem)
    start = solver.iteration
    seconds = _drive(args, solver, game.name, lambda: f"nash_conv {solver.nash_conv():.3g}")
    value = solver.nash_conv()
    label = strategy_label(game, solver.config) if holdem is None else mccfr_label(game)
    summary = {
        "game": game.name,
        "players": game.num_players,
        "algorithm": solver.config.algorithm,
        "iterations": solver.iteration,
        "nash_conv": value,
        "strategy": label,
        "command": f"oppmodel solve {args.game} --iterations {solver.iteration} "
        + (f"--algorithm {solver.config.algorithm}" if holdem is None else _options(holdem)),
    }
    if holdem is not None:
        summary["abstract_game"] = _recorded(holdem)
    save_profile(game, solver.average_profile(), args.out, solver=summary)
    quality = f"nash_conv {value:.3g}"
    return _report(args, summary, seconds, solver.iteration - start, quality)


def _run_lazy(args: argparse.Namespace, holdem: AbstractGameConfig) -> int:
    """Solve a hold'em game too large for a tree of arrays in its lazy abstract game."""
    game = lazy_abstract_game(args.game, holdem)
    if args.resume is not None and args.resume.exists():
        solver = LazyMCCFRSolver.load(game, args.resume)
    else:
        solver = LazyMCCFRSolver(game, MCCFRConfig(seed=holdem.seed))
    start = solver.iteration
    seconds = _drive(args, solver, game.name, lambda: f"regret bound {solver.regret_bound():.3g}")
    bound = solver.regret_bound()
    summary = {
        "game": game.name,
        "players": game.num_players,
        "algorithm": solver.config.algorithm,
        "iterations": solver.iteration,
        "regret_bound": bound,
        "nodes": solver.num_nodes,
        "infosets": solver.num_infosets,
        "megabytes": round(solver.nbytes / 1e6, 1),
        "strategy": lazy_label(game),
        "command": f"oppmodel solve {args.game} --iterations {solver.iteration} "
        + _options(holdem)
        + (f" --min-reach {args.min_reach:g}" if args.min_reach else ""),
        "abstract_game": _recorded(holdem),
    }
    solver.save_strategy(args.out, solver=summary, min_reach=args.min_reach or 0.0)
    quality = (
        f"regret bound {bound:.3g} chips a hand; {solver.num_infosets:,} information sets "
        f"visited, {summary['megabytes']} MB"
    )
    return _report(args, summary, seconds, solver.iteration - start, quality)


def _recorded(holdem: AbstractGameConfig) -> dict:
    """The abstract game a strategy file records: its configuration and the abstraction's cut
    points, so that a blueprint plays without rebuilding them."""
    cuts = [c.tolist() for c in card_abstraction(holdem.abstraction).cuts]
    return asdict(holdem) | {"cuts": cuts}


def _drive(
    args: argparse.Namespace,
    solver: CFRSolver | LazyMCCFRSolver,
    name: str,
    quality: Callable[[], str],
) -> float:
    """Run the solver to ``--iterations`` with a progress bar showing ``quality()`` at each
    checkpoint, the state saved at every SAVES-th of the run, at the end and on Ctrl-C (with
    --resume); the seconds it took."""
    start, started = solver.iteration, time.perf_counter()
    remaining = max(args.iterations - start, 0)
    desc = f"oppmodel solve {name} {solver.config.algorithm}"
    saved = [start]  # the iteration of the last save

    def checkpoint(s: CFRSolver | LazyMCCFRSolver) -> None:
        due = s.iteration - saved[0] >= remaining / SAVES and s.iteration < args.iterations
        if args.resume is not None and due:  # the end saves below
            s.save(args.resume)  # rarely: a 3-player hold'em state is hundreds of megabytes
            saved[0] = s.iteration
        bar.postfix(quality)

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
    return seconds


def _report(args: argparse.Namespace, summary: dict, seconds: float, ran: int, quality: str) -> int:
    """Print the summary (as JSON with --json)."""
    summary |= {"out": str(args.out), "state": None if args.resume is None else str(args.resume)}
    summary["seconds"] = seconds
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"{summary['game']}: {summary['algorithm']} {summary['iterations']} iterations "
        f"({ran} in {seconds:.1f} s), {quality}"
    )
    print(f"{summary['strategy']}; written to {args.out}")
    return 0
