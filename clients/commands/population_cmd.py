"""``oppmodel population``: fit a population prior from dealer logs (one opponent per seat of each
log), for ``match --mbbr-population`` (``oppmodel.modeling.population``, ``population_types``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from oppmodel.clients.acpc.log import read_log
from oppmodel.clients.acpc.replay import seat_offsets
from oppmodel.clients.acpc.replay_games import ReplayGame
from oppmodel.clients.commands.replay_cmd import add_log_arguments, logged_game
from oppmodel.clients.progress import Progress
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.solved import default_profile
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.population_types import PopulationKind, fit_kind

EPILOG = """\
Each log is one match seen from NAME's seat: its hands feed a fresh MBBR model (the Dirichlet
posterior, the informed prior, as the service's sessions), and each of NAME's opponents in it
is one member of the population, with the expected counts of its moves at every information
set (exact where its cards were shown, split over the unseen cards elsewhere). The population
prior is the Dirichlet per information set of maximum marginal likelihood of those counts
(docs/modeling.md); sets met by fewer than 3 opponents, and every set with fewer than 3
opponents in all, keep the informed prior. With --kind types (the default) it also holds a
mixture over the opponents as types (clustered beyond 16): a new opponent is taken for one of
them, or for an informed player, by the exact probability of every hand it plays; --kind
dirichlet fits the Dirichlet alone (cheaper to play: a 3-player Leduc hand ~20x less CPU).
The file is what --mbbr-population reads, where MBBR plays in this process: match, acpc-agent
with --in-process and replay with --local.

examples:
  oppmodel population tests/data/acpc/leduc2p-seed42-example-players.log --as Alice --out p.npz
  oppmodel match --game leduc2p --agents mbbr,maniac@0.5 --mbbr-population p.npz --hands 500
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``population`` subcommand."""
    parser = subparsers.add_parser(
        "population",
        help="fit a population prior from dealer logs",
        description="Fit MBBR's population prior, a Dirichlet per information set and a "
        "mixture over types, to the opponents of one player in dealer logs, and write it to a "
        "file.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_log_arguments(parser, logs_help="dealer log files, one match each")
    parser.add_argument("--out", required=True, type=Path, metavar="FILE", help="where to write")
    parser.add_argument(
        "--kind",
        choices=[kind.value for kind in PopulationKind],
        default=PopulationKind.TYPES.value,
        help="types (default): the Dirichlet and a mixture over the opponents as types; "
        "dirichlet: the Dirichlet per information set alone",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Fit and write."""
    logs = [read_log(path) for path in args.logs]
    first = next((log.hands for log in logs if log.hands), ())
    if not first:
        raise InvalidArgumentError("log", "no STATE lines")
    game = limit_game(args.game or logged_game(logs[0], len(first[0].names)))
    rules = ReplayGame(game)
    played = [[hand for hand in log.hands if args.name in hand.names] for log in logs]
    counts = []
    # the hands feed the models for minutes with many logs: counted (progress lines off a
    # terminal, and how far Ctrl-C got)
    with Progress(sum(map(len, played)), desc="oppmodel population", unit="hand") as bar:
        for hands in filter(None, played):
            seat_offsets(hands, args.name)  # one seat order per log: one opponent per offset
            model = build_model(game, MBBRConfig(change_hazard=0.0))
            for hand in hands:
                model.observe(rules.observation(hand, hand.names.index(args.name)))
                bar.update()
            counts.append(model.opponent_counts())
    if not counts:
        raise InvalidArgumentError("--as", f"{args.name!r} played no hand in these logs")
    seen = np.concatenate(counts)
    mean = default_profile(game, "prior_mean")
    population = fit_kind(game, seen, args.kind, prior_mean=mean)
    args.out.write_bytes(population.to_bytes())
    types = "" if population.types is None else f", {max(len(population.types) - 2, 0)} types"
    print(
        f"{population.opponents} opponents from {len(counts)} logs of {game.name}: "
        f"{int(population.fitted.sum())} information sets fitted, the rest informed{types}; "
        f"written to {args.out}"
    )
    return 0
