"""``oppmodel demo``: the service end to end on this machine, in well under a minute.

Starts the gRPC server in-process on a free loopback port with a SQLite file, plays 3-player
Kuhn duplicate matches (``oppmodel.modeling.play.match.run_duplicate``: every seating on the same
cards) in which an MBBR agent asks the service for every decision and streams every hand back,
against two fixed opponents; prints the result table (mbb/h with standard errors over the
duplicates) and where the data lives.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.commands._types import non_negative_int, positive_int, seed
from oppmodel.clients.progress import progress_bar
from oppmodel.clients.service_agent import service_mbbr_factory
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.kuhn import KuhnGame, kuhn_game
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Response
from oppmodel.modeling.play.match import fixed_strategy_factory, run_duplicate, seatings
from oppmodel.modeling.play.panel import named_profile, panel_names
from oppmodel.server.app import BackgroundServer, ServerConfig

_EPILOG = """\
The agent's sessions stay in the SQLite file afterwards; inspect them with any SQLite client, or
serve them with `oppmodel serve --db FILE` and query them (GetModel, GetResponse) with grpcurl.

examples:
  oppmodel demo
  oppmodel demo --opponents n1,n3 --hands 1000 --duplicates 1
  oppmodel demo --data-dir ~/.local/share/oppmodel --json
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="start the service in-process and play a duplicate match through it",
        description=(
            "Start the gRPC service in-process (free loopback port, SQLite file), play a 3-player "
            "Kuhn duplicate match in which an MBBR agent asks the service for every decision "
            "against two fixed opponents, and print mbb/h with standard errors."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--opponents",
        default="bluffer,calling-station",
        help=f"two opponent strategies, comma-separated (from: {', '.join(panel_names())})",
    )
    parser.add_argument(
        "--hands", type=positive_int, default=400, help="hands per match (default 400)"
    )
    parser.add_argument(
        "--duplicates",
        type=positive_int,
        default=3,
        help="independent duplicates, each playing all 6 seatings (default 3)",
    )
    parser.add_argument(
        "--posterior",
        choices=Posterior.names(),
        default=MBBRConfig().posterior,
        help="MBBR's posterior: dirichlet (one Dirichlet per information set, variational Bayes) "
        "or samples (Ganzfried et al. 2024's k importance-weighted samples) (default %(default)s)",
    )
    parser.add_argument(
        "--k", type=positive_int, default=10, help="MBBR samples per model, samples posterior only"
    )
    parser.add_argument(
        "--H",
        type=non_negative_int,
        default=100,
        dest="hands_default",
        help="hands MBBR plays its default strategy (N1) before best-responding (default 100)",
    )
    parser.add_argument(
        "--response",
        choices=Response.names(),
        default=Response.MEAN,
        help="best response to the posterior-mean models (Ganzfried et al. 2024) or the exact "
        "Bayesian one",
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help="deals, opponents and MBBR samples (default 0)"
    )
    parser.add_argument(
        "--data-dir", help="where the SQLite file goes (default: a new temporary folder)"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo; returns 0. Everything is checked before the data folder is made, and a
    folder the demo made is removed again if the demo fails."""
    game = kuhn_game(3)
    opponents = [name.strip() for name in args.opponents.split(",")]
    if len(opponents) != 2:
        raise InvalidArgumentError("opponents", f"needs exactly two names, got {args.opponents!r}")
    profiles = [named_profile(game, name) for name in opponents]
    config = MBBRConfig(
        k=args.k,
        hands_default=args.hands_default,
        response=args.response,
        posterior=args.posterior,
        seed=args.seed,
    )
    config.validate()
    data_dir = Path(args.data_dir).expanduser() if args.data_dir else None
    made = data_dir is None or not data_dir.exists()
    if data_dir is None:
        data_dir = Path(tempfile.mkdtemp(prefix="oppmodel-demo-"))
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        summary = _play(args, game=game, opponents=opponents, profiles=profiles, config=config,
                       db_path=data_dir / "oppmodel.sqlite")  # fmt: skip
    except BaseException:
        if made:
            shutil.rmtree(data_dir, ignore_errors=True)
        raise
    print(summary)
    return 0


def _play(
    args: argparse.Namespace,
    *,
    game: KuhnGame,
    opponents: list[str],
    profiles: list[np.ndarray],
    config: MBBRConfig,
    db_path: Path,
) -> str:
    """Serve, play the duplicate match through the service and return the text to print."""
    start = time.perf_counter()
    with (
        BackgroundServer(ServerConfig(db_path=str(db_path), port=0)) as port,
        OpponentModelClient(f"127.0.0.1:{port}") as client,
    ):
        sessions: list[str] = []
        names = ["mbbr (service)", *opponents]
        factories = [
            service_mbbr_factory(
                client, name=names[0], opponent_labels=opponents, config=config, sessions=sessions
            ),
            fixed_strategy_factory(opponents[0], profiles[0]),
            fixed_strategy_factory(opponents[1], profiles[1]),
        ]
        total = len(seatings(3)) * args.hands * args.duplicates
        with progress_bar(total, unit="hand", show=not args.json) as bar:
            result = run_duplicate(
                game,
                names,
                factories,
                hands=args.hands,
                duplicates=args.duplicates,
                seed=args.seed,
                progress=bar.update,
            )
    seconds = time.perf_counter() - start
    if args.json:
        return json.dumps(
            {
                "results": [dataclasses.asdict(r) for r in result.agents],
                "hands": total,
                "seconds": seconds,
                "db": str(db_path),
                "sessions": sessions,
                "posterior": config.posterior,
            }
        )
    lines = [
        f"3-player Kuhn duplicate match: {total} hands "
        f"({args.duplicates} duplicates x 6 seatings x {args.hands} hands)",
        f"{'agent':<18}{'mbb/h':>10}{'s.e.':>9}",
    ]
    for r in result.ranking():
        error = "-" if r.standard_error is None else f"{r.standard_error:.1f}"
        lines.append(f"{r.name:<18}{r.mbb_per_hand:>10.1f}{error:>9}")
    lines += [
        "",
        MBB_PER_HAND,
        f"{seconds:.1f} s; every MBBR decision was a GetAction call to the service "
        f"({config.posterior} posterior).",
        f"data: {db_path} ({len(sessions)} sessions, {os.path.getsize(db_path)} bytes)",
    ]
    return "\n".join(lines)


MBB_PER_HAND = (
    "mbb/h: milli-chips won per hand (1000 x chips per hand; each player antes 1 chip), "
    "averaged over the seatings;\ns.e.: its standard error over the duplicates."
)
