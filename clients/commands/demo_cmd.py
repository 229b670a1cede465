"""``oppmodel demo``: the service end to end on this machine, in well under a minute.

Starts the gRPC server in-process on a free loopback port with a SQLite file, plays duplicate
matches (``oppmodel.modeling.play.match.run_duplicate``: every seating on the same cards) in
which an MBBR agent asks the service for every decision and streams every hand back, against
fixed opponents: 3-player Kuhn by default (the bundled game file, compiled), or Leduc hold'em
(``--game leduc3p`` / ``leduc2p``) or any small ACPC limit game file (``--game FILE``); MBBR asks
at the MATCHSTATE line an ACPC agent sees. Prints the result table (win rates in the game's unit
with standard errors over the duplicates), what the model learned of each opponent, and where the
data lives.
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
from oppmodel.clients.commands._mbbr_options import add_prior_strategy_argument, prior_strategy_json
from oppmodel.clients.commands._types import hands, non_negative_int, positive_int, runs, seed
from oppmodel.clients.interrupt import noting
from oppmodel.clients.progress import Progress, counted
from oppmodel.clients.service_agent import service_mbbr_factory
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Response
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.match import fixed_strategy_factory, run_duplicate, seatings
from oppmodel.modeling.play.panel import panel_names
from oppmodel.server.app import BackgroundServer, ServerConfig

# the deadline of the demo's calls to its own server: a bound on a hang. The first call for a
# game builds it in the server and its model in the model worker (~1 s of CPU), and at load 30
# the first CreateSession of `demo --game leduc3p` ran past the client's default 30 s
CALL_SECONDS = 600.0

# per game: (its title, the default opponents, hands per match, duplicates); a game file takes
# those of the Leduc game of its player count
GAMES = {
    "kuhn3p": ("3-player Kuhn", "bluffer,calling-station", 400, 3),
    "leduc3p": ("3-player Leduc hold'em", "cfr,maniac", 150, 2),
    "leduc2p": ("2-player Leduc hold'em", "calling-station", 300, 2),
}

_EPILOG = """\
The agent's sessions stay in the SQLite file afterwards; inspect them with any SQLite client, or
serve them with `oppmodel serve --db FILE` and query them (GetModel, GetResponse) with grpcurl.

In Leduc the opponents are the bundled `cfr` agent (the game's CFR strategy, also MBBR's default
strategy and prior mean) and the panel's styles, plain or diluted with cfr (`maniac@0.35`). A game
file no bundle holds is solved on first use (the service keeps its solution in the SQLite file,
this command in the user's cache folder for `cfr`): docs/modeling.md, "A solved prior for every
game".

examples:
  oppmodel demo
  oppmodel demo --opponents n1,n3 --hands 1000 --duplicates 1
  oppmodel demo --game leduc3p
  oppmodel demo --game leduc2p --opponents bluffer --hands 500
  oppmodel demo --game mygame.game --hands 100
  oppmodel demo --data-dir ~/.local/share/oppmodel --json
  oppmodel demo --game leduc2p --mbbr-prior-strategy leduc2p.json  # oppmodel solve leduc2p ...
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="start the service in-process and play a duplicate match through it",
        description=(
            "Start the gRPC service in-process (free loopback port, SQLite file), play a duplicate "
            "match (3-player Kuhn, or Leduc hold'em with --game) in which an MBBR agent asks the "
            "service for every decision against fixed opponents, and print win rates with standard "
            "errors."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--game",
        default="kuhn3p",
        help=f"the game: {', '.join(GAMES)} (3-player Kuhn, Leduc hold'em for 3 or 2 players) or "
        "an ACPC limit game file, played as the Leduc game of its player count (default kuhn3p)",
    )
    parser.add_argument(
        "--opponents",
        help="the other players' strategies, comma-separated: two in 3 players, one in 2 "
        f"(from: {', '.join(panel_names())}; n1-n3 are 3-player Kuhn's; default: "
        + "; ".join(f"{game} {spec[1]}" for game, spec in GAMES.items())
        + ")",
    )
    parser.add_argument(
        "--hands",
        type=hands,
        help="hands per match (default: "
        + ", ".join(f"{game} {spec[2]}" for game, spec in GAMES.items())
        + ")",
    )
    parser.add_argument(
        "--duplicates",
        type=runs,
        help="independent duplicates, each playing every seating (6 in 3 players, 2 in 2; "
        "default: " + ", ".join(f"{game} {spec[3]}" for game, spec in GAMES.items()) + ")",
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
        help="hands MBBR plays its default strategy (N1; Leduc: cfr) before best-responding "
        "(default 100)",
    )
    parser.add_argument(
        "--response",
        choices=Response.names(),
        default=Response.MEAN,
        help="best response to the posterior-mean models (Ganzfried et al. 2024) or the exact "
        "Bayesian one",
    )
    add_prior_strategy_argument(parser)
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
    game = limit_game(args.game)
    _, default_opponents, default_hands, default_duplicates = _defaults(args.game, game)
    args.hands = args.hands or default_hands
    args.duplicates = args.duplicates or default_duplicates
    text = args.opponents or default_opponents
    opponents = [name.strip() for name in text.split(",")]
    if len(opponents) != game.num_players - 1:
        wanted = {2: "exactly two names", 1: "exactly one name"}[game.num_players - 1]
        raise InvalidArgumentError("opponents", f"needs {wanted} in {args.game}, got {text!r}")
    profiles = [fixed_profile(game, name) for name in opponents]
    config = MBBRConfig(
        k=args.k,
        hands_default=args.hands_default,
        response=args.response,
        posterior=args.posterior,
        seed=args.seed,
    )
    config.validate()
    prior = prior_strategy_json(args, game)
    data_dir = Path(args.data_dir).expanduser() if args.data_dir else None
    made = data_dir is None or not data_dir.exists()
    if data_dir is None:
        data_dir = Path(tempfile.mkdtemp(prefix="oppmodel-demo-"))
    db_path = data_dir / "oppmodel.sqlite"
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with noting(kept=lambda: "" if made else f"the sessions played so far are in {db_path}"):
            summary = _play(args, game=game, opponents=opponents, profiles=profiles,
                            config=config, prior=prior, db_path=db_path)  # fmt: skip
    except BaseException:
        if made:
            shutil.rmtree(data_dir, ignore_errors=True)
        raise
    print(summary)
    return 0


def _defaults(name: str, game: LimitGame) -> tuple[str, str, int, int]:
    """A game's title and defaults (``GAMES``); a game file: those of Leduc for its players."""
    if name in GAMES:
        return GAMES[name]
    leduc = GAMES["leduc2p" if game.num_players == 2 else "leduc3p"]
    return (f"{game.num_players}-player {game.name}", *leduc[1:])


def _play(
    args: argparse.Namespace,
    *,
    game: LimitGame,
    opponents: list[str],
    profiles: list[np.ndarray],
    config: MBBRConfig,
    prior: str | None,
    db_path: Path,
) -> str:
    """Serve, play the duplicate match through the service and return the text to print."""
    start = time.perf_counter()
    with (
        BackgroundServer(ServerConfig(db_path=str(db_path), port=0)) as port,
        OpponentModelClient(f"127.0.0.1:{port}", timeout=CALL_SECONDS) as client,
    ):
        sessions: list[str] = []
        labels = _labels(opponents)
        names = ["mbbr (service)", *labels]
        factories = [
            service_mbbr_factory(
                client, name=names[0], config=config, sessions=sessions, prior_strategy=prior
            ),
            *(fixed_strategy_factory(*pair) for pair in zip(labels, profiles, strict=True)),
        ]
        n = game.num_players
        total = len(seatings(n)) * args.hands * args.duplicates
        with Progress(total, desc="oppmodel demo", unit="hand", show=not args.json) as bar:
            result = run_duplicate(
                game,
                names,
                factories,
                hands=args.hands,
                duplicates=args.duplicates,
                seed=args.seed,
                progress=bar.update,
            )
        learned = _learned(client, sessions[-1], game, labels, profiles)
    seconds = time.perf_counter() - start
    if args.json:
        return json.dumps(
            {
                "unit": result.unit.name,
                "results": [result.result_json(r) for r in result.agents],
                "hands": total,
                "seconds": seconds,
                "db": str(db_path),
                "sessions": sessions,
                "posterior": config.posterior,
                "game": args.game,
                "learned": [dataclasses.asdict(row) for row in learned],
            }
        )
    lines = [
        f"{_defaults(args.game, game)[0]} duplicate match: {total} hands "
        f"({counted(args.duplicates, 'duplicate')} x {len(seatings(n))} seatings x "
        f"{counted(args.hands, 'hand')})",
        f"{'agent':<18}{result.unit.label:>10}{'s.e.':>9}",
    ]
    for r in result.ranking():
        error = "-" if r.standard_error is None else f"{r.standard_error:.1f}"
        lines.append(f"{r.name:<18}{r.rate:>10.1f}{error:>9}")
    if learned:
        lines += ["", LEARNED, f"{'opponent':<18}{'hole':<6}{'model f/c/r':<18}actual f/c/r"]
        for row in learned:
            lines.append(f"{row.opponent:<18}{row.hole:<6}{_fcr(row.model):<18}{_fcr(row.actual)}")
    lines += [
        "",
        f"{result.unit.legend}, averaged over the seatings;",
        "s.e.: its standard error over the duplicates.",
        f"{seconds:.1f} s; every MBBR decision was a GetAction call to the service "
        f"({config.posterior} posterior).",
        f"data: {db_path} ({len(sessions)} sessions, {os.path.getsize(db_path)} bytes)",
    ]
    return "\n".join(lines)


LEARNED = (
    "What MBBR's model learned (the last match's session, GetModel): each opponent first to act "
    "in the first round,\nby hole card, beside the strategy it actually plays."
)


@dataclasses.dataclass(frozen=True)
class Learned:
    """One row of what the model learned: an opponent's fold/call/raise at one information set,
    modelled and actual."""

    opponent: str
    hole: str
    model: tuple[float, ...]
    actual: tuple[float, ...]


def _learned(
    client: OpponentModelClient,
    session_id: str,
    game: LimitGame,
    labels: list[str],
    profiles: list[np.ndarray],
) -> list[Learned]:
    """Each opponent's model (GetModel) in the position first to act, at the first decision of
    the hand, for one hole card of each rank, beside its actual strategy there."""
    rows = []
    first = game.gamedef.first_player[0]
    holes = [game.view_strings[0][v] for v in range(len(game.view_strings[0]))]
    one_per_rank = list({hole[0]: hole for hole in holes}.values())  # deck order
    for label, profile in zip(labels, profiles, strict=True):
        model = client.model(session_id, label, first).strategy.as_dict()
        for hole in one_per_rank:
            key = f"{hole}:"
            actual = profile[first, game.infoset_from_string(first, key)]
            rows.append(Learned(label, hole, tuple(model[key]), tuple(map(float, actual))))
    return rows


def _fcr(probabilities: tuple[float, ...]) -> str:
    return "/".join(f"{p:.2f}" for p in probabilities)


def _labels(names: list[str]) -> list[str]:
    """Distinct labels: a repeated name gets #2, #3, ..."""
    return [
        n if names[:i].count(n) == 0 else f"{n}#{names[:i].count(n) + 1}"
        for i, n in enumerate(names)
    ]
