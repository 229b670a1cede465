"""``oppmodel replay``: feed dealer logs to MBBR from one seat and score the models (any limit game,
Kuhn, Leduc and others, through the service or the library)."""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import SupportsFloat

from oppmodel.clients.acpc.log import DealerLog, LoggedHand, read_log
from oppmodel.clients.acpc.replay import LocalModels, ModelSource, ServiceModels, replay
from oppmodel.clients.acpc.replay_holdem import holdem_replay_parts
from oppmodel.clients.acpc.replay_report import (
    ReplayReport,
    check_plot_path,
    format_report,
    plot_curves,
)
from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.commands._mbbr_options import (
    POPULATION,
    add_mbbr_arguments,
    mbbr_config,
    mbbr_population,
    prior_strategy_json,
)
from oppmodel.clients.commands._types import seed
from oppmodel.clients.progress import Progress
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.bundled import (
    BUNDLED_GAMES,
    HOLDEM_GAMES,
    game_path,
    short_name,
)
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.gamedef import kuhn_unsupported, read_game_def
from oppmodel.modeling.holdem.match import is_holdem
from oppmodel.modeling.mbbr.config import Prior
from oppmodel.server.app import BackgroundServer, ServerConfig

# MBBR's prior in a limit game unless --mbbr-prior says otherwise: in Leduc most information
# sets are predicted at their first visit, where the informed prior's guess is the CFR strategy
# whatever the player; the mixture lets the revealed moves say how far to trust it
LIMIT_PRIOR = Prior.MIXTURE

EPILOG = """\
Each logged hand NAME played becomes the observation NAME's live agent would have made (cards
the dealer hid from NAME, folded ones and all cards when everyone else folded, stay hidden), fed
in log order to MBBR. Before each hand, every opponent action in it is predicted by the prior
alone, Laplace-smoothed counts per information state, the naive Bayes move model (Kuhn) and
MBBR's current model; mean log-loss (nats) and accuracy are reported per opponent and position
and, in games of several betting rounds (Leduc), per round. An opponent's cards are known only
at a showdown it reached, so only those actions can be scored by every predictor (counts and
naive Bayes learn only from them; MBBR learns from every hand), a sample that never holds a
fold; the prior, counts and MBBR are also scored on the others, by their marginal over the
cards never shown, on every decision together, and over the log's last third (what the models
know by its end). MBBR uses the Dirichlet posterior unless --mbbr-posterior samples asks for
the paper's k samples; its prior is MBBR's default (the tilted prior; the eta mixture with the
samples) in Kuhn and, in a limit game, the mixture prior (informed, uninformed or card-blind
players, weighed by their revealed moves) unless --mbbr-prior says otherwise. The report names
the posterior and explains every column (a legend in the text, "columns" in the JSON).

The game: --game, else the game file the log's header names when it is a bundled one
(leduc.limit.3p.game is leduc3p, holdem.limit.2p.reverse_blinds.game holdem2p), else n-player
Kuhn. Limit hold'em (2 and 3 players) replays with the model MBBR plays (the hold'em posterior
around the bundled blueprint, over its abstraction, its prior refitted when MBBR's solve refits
it: a session's in 2 players, in 3 the one responding at each decision), in this process: a
hidden decision is predicted by summing over every hole pair the opponent may hold (in 3
players, with the other opponent's earlier actions over the pairs it may hold beside it); the
prior column is the blueprint clipped to [epsilon, 1 - epsilon];
the report adds each hand's summed log-loss and MBBR's paired difference to the prior.
--in-process starts the service in this process (a free loopback port, a temporary SQLite file);
--service uses a running one; --local skips gRPC and uses the modeling library directly. All three
give the same report (the session runs the replay's MBBR parameters, defaults included). The default
is the service in Kuhn and --local in limit games: through the service every hand asks GetModel for
each opponent's every information state (8600 in Leduc 3p: 0.1 to 0.2 s per opponent and hand; the
3000-hand Leduc 3p log took 19 minutes that way against 96 s with the library).

examples (the reference dealer's seed-42 logs of its example players are in the repository's
tests/data/acpc/):
  oppmodel replay kuhn3p-seed42-example-players.log --as Alice
  oppmodel replay leduc3p-seed42-example-players.log --as Alice --plot alice.png
  oppmodel replay leduc2p-seed42-example-players.log --as Bob --game leduc2p --json
  oppmodel replay match.log --as Bob --json --plot bob.png
  oppmodel replay match.log --as Bob --mbbr-posterior samples --mbbr-k 20  # as published
  oppmodel replay a.log b.log --as Carol --service 127.0.0.1:50051
  oppmodel replay leduc2p-seed42-example-players.log --as Alice --service 127.0.0.1:50051
  oppmodel replay leduc3p-seed42-example-players.log --as Alice --in-process  # via the service
  oppmodel replay holdem2p-seed42-example-players.log --as p1 --plot p1.png  # hold'em
  oppmodel replay holdem3p-seed42-example-players.log --as p1 --json  # 3-player hold'em
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``replay`` subcommand."""
    parser = subparsers.add_parser(
        "replay",
        help="replay dealer logs from one seat and score the opponent models",
        description="Replay ACPC dealer logs from one player's seat through the service and "
        "report how well the opponent models predicted each next opponent action.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_log_arguments(parser, logs_help="dealer log files, in order")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--service", metavar="ADDR", help="a running service at HOST:PORT")
    where.add_argument(
        "--in-process",
        action="store_true",
        help="start the service in this process on a free loopback port (the default in Kuhn)",
    )
    where.add_argument(
        "--local",
        action="store_true",
        help="no service: the library in-process (the default in limit games)",
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help="MBBR's seed: its samples' draws (default 0)"
    )
    add_mbbr_arguments(parser, limit_prior=LIMIT_PRIOR)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--plot", metavar="FILE.png", help="draw the curves (needs matplotlib)")
    parser.set_defaults(func=run)


def add_log_arguments(parser: argparse.ArgumentParser, *, logs_help: str) -> None:
    """The logs, whose seat and the game: what every command reading dealer logs takes."""
    parser.add_argument("logs", metavar="LOG", nargs="+", help=logs_help)
    parser.add_argument("--as", dest="name", required=True, metavar="NAME", help="whose seat")
    parser.add_argument(
        "--game",
        metavar="GAMEFILE",
        help=f"game definition file or a bundled game ({', '.join(BUNDLED_GAMES)}; "
        "default: the bundled game the log's header names, else n-player Kuhn)",
    )


def run(args: argparse.Namespace) -> int:
    """Replay and report."""
    start = time.perf_counter()
    if args.plot:
        check_plot_path(args.plot)
    logs = [read_log(path) for path in args.logs]
    hands = [h for log in logs for h in log.hands]
    if not hands:
        raise InvalidArgumentError("log", "no STATE lines")
    name = args.game or logged_game(logs[0], len(hands[0].names))
    if is_holdem(read_game_def(game_path(name))):
        return _report(args, holdem_report(args, name, hands), start)
    game = limit_game(name)
    kuhn = not kuhn_unsupported(game.gamedef)  # Kuhn's defaults: the informed prior, the service
    config = mbbr_config(args, seed=args.seed, limit_prior=None if kuhn else LIMIT_PRIOR)
    prior = prior_strategy_json(args, game)
    local = args.local or not (kuhn or args.service or args.in_process)
    if args.mbbr_population and not local:
        raise InvalidArgumentError(
            POPULATION, "is played by the library in this process: add --local"
        )
    config, population = mbbr_population(args, game, config)
    with ExitStack() as stack:
        if local:

            def source(labels: tuple[str, ...]) -> ModelSource:
                return LocalModels(game, config, prior_strategy=prior, population=population)

        else:
            target = args.service
            if target is None:
                data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="oppmodel-"))
                server = BackgroundServer(
                    ServerConfig(
                        db_path=str(Path(data_dir) / "replay.sqlite"), port=0, synchronous="NORMAL"
                    )
                )
                target = f"127.0.0.1:{stack.enter_context(server)}"
            client = stack.enter_context(OpponentModelClient(target, timeout=30))

            def source(labels: tuple[str, ...]) -> ModelSource:
                return ServiceModels(
                    client,
                    game,
                    config=config,
                    our_label=args.name,
                    opponent_labels=labels,
                    prior_strategy=prior,
                )

        total = sum(args.name in h.names for h in hands)
        with Progress(total, desc="oppmodel replay", unit="hand") as bar:
            report = replay(game, hands, args.name, source, config=config, progress=bar.update)
    return _report(args, report, start)


def holdem_report(args: argparse.Namespace, name: str, hands: list[LoggedHand]) -> ReplayReport:
    """The replay of a hold'em log (``name`` the game argument): the hold'em posterior over the
    bundled blueprint's abstraction, in this process (usage errors naming what it cannot run)."""
    short = short_name(game_path(name))
    if short not in HOLDEM_GAMES:
        raise InvalidArgumentError(
            "game", f"a hold'em replay models on a bundled blueprint: {', '.join(HOLDEM_GAMES)}"
        )
    for flag in ("service", "in_process", "mbbr_population", "mbbr_prior_strategy"):
        if getattr(args, flag, None):
            raise InvalidArgumentError(
                f"--{flag.replace('_', '-')}",
                "a hold'em replay runs the hold'em posterior in this process (--local) only",
            )
    config = mbbr_config(args, seed=args.seed, limit_prior=Prior.INFORMED)
    played = [h.betting for h in hands if args.name in h.names]  # the hands the model is fed
    rules, source = holdem_replay_parts(short, config, played)
    with Progress(len(played), desc="oppmodel replay", unit="hand") as bar:
        return replay(
            None,
            hands,
            args.name,
            lambda labels: source,
            config=config,
            progress=bar.update,
            rules=rules,
        )


def _report(args: argparse.Namespace, report: ReplayReport, start: float) -> int:
    """Print the report (text or JSON) and draw its curves if asked."""
    seconds = time.perf_counter() - start
    if args.plot:
        plot_curves(report, args.plot)
    if args.json:
        data = report.as_json()
        data["seconds"] = seconds
        print(json.dumps(data, default=_json_number))
    else:
        print(format_report(report))
        print(f"\n{seconds:.1f} s" + (f"; curves in {args.plot}" if args.plot else ""))
    return 0


def logged_game(log: DealerLog, players: int) -> str:
    """The game a log was dealt in: the bundled short name of the game file its header names
    (``leduc.limit.3p.game`` is ``leduc3p``), else n-player Kuhn (``kuhn3p``)."""
    if log.header is not None:
        file = Path(log.header.game_file).name
        for name, bundled in (BUNDLED_GAMES | HOLDEM_GAMES).items():
            if bundled == file:
                return name
    return f"kuhn{players}p"


def _json_number(value: SupportsFloat) -> float | None:
    """numpy scalars as Python numbers (NaN, no decisions scored, becomes null)."""
    number = float(value)
    return None if math.isnan(number) else number
