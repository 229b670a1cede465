"""``oppmodel match``: duplicate matches between MBBR and named strategies, win rates in the game's
unit (milli-antes or milli-big-blinds per hand)."""

from __future__ import annotations

import argparse
import json
import textwrap
import time
from pathlib import Path

import numpy as np

from oppmodel.clients.commands._games import GAME_HELP, resolve_game
from oppmodel.clients.commands._mbbr_options import (
    add_mbbr_arguments,
    mbbr_config,
    mbbr_population,
    prior_strategy_json,
    prior_strategy_profile,
)
from oppmodel.clients.commands._types import hands, runs, seed
from oppmodel.clients.progress import Progress, counted
from oppmodel.modeling.errors import InvalidArgumentError, NotFoundError
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import is_strategy_file
from oppmodel.modeling.games.interface import MatchGame
from oppmodel.modeling.holdem.match import HoldemGame, is_holdem
from oppmodel.modeling.holdem.styles import policy_factory
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play.adaptive import adaptive_names
from oppmodel.modeling.play.agents import mbbr_factory
from oppmodel.modeling.play.fields import labels
from oppmodel.modeling.play.match import AgentFactory, MatchFactory, run_duplicate, seatings
from oppmodel.modeling.play.panel import panel_names
from oppmodel.modeling.play.tournament import AgentSpec, agent_factory
from oppmodel.modeling.population import Population

_DESCRIPTION = """\
Play duplicate matches of repeated Kuhn poker, Leduc hold'em or any small ACPC limit game (--game)
between n agents (3 for kuhn3p and leduc3p), the protocol of Ganzfried et al. 2024: every one of
the n! seatings of the agents plays the same cards (hole and board cards from a seeded deck per
duplicate), --hands hands per match, positions rotating every hand as the ACPC dealer rotates them.
Each agent's result is its win rate, averaged over the seatings, with the standard error over the
--duplicates independent duplicates. Rates are in the game's unit: milli-antes per hand
(mA/h: 1000 x chips won per hand / the ante) when every player antes the same, as in Kuhn and
Leduc, else milli-big-blinds per hand (mbb/h: 1000 x chips won per hand / the largest blind).
Agents are built fresh for every match, and everything is seeded by --seed: the same command
prints the same table.

Agents: "mbbr" (multiplayer Bayesian best response, Ganzfried et al. 2024; configured by the
--mbbr-* options; it plays N1 for the first --mbbr-hands-default hands, then best-responds to its
posterior over the opponents, who are modelled per position around the prior mean N3; in other
games both are the game's solved strategy; the posterior is a Dirichlet per information set unless
--mbbr-posterior samples asks for the paper's k samples), or a fixed strategy from the panel:
%s
or an adaptive agent that changes its play during the match (see modeling/play/adaptive.py):
%s
Any of these as STYLE@S plays STYLE at a share S of its decisions and the equilibrium N2 (the
solved strategy in games other than 3-player Kuhn) at the rest, e.g. maniac@0.3: the competent
field (see modeling/play/diluted.py).
An agent may also be a strategy file (FILE.json, as `oppmodel solve` writes them, or keyed by
OpenSpiel's Kuhn strings): it plays that file's strategy for its seat.

In a limit game (leduc2p, leduc3p, a game file) the agents are "cfr" (the game's solved
strategy: bundled, else cached, else solved with CFR+ on first use and cached), uniform and the
styles above, defined from hand strength (the nuts: a hand no opponent's cards beat, e.g. a pair
with the board; the worst: one none loses to), STYLE@S diluted with the solved strategy, and
"mbbr" (its default strategy and prior mean are the solved strategy). The equilibria n1-n3 play
3-player Kuhn only, the adaptive agents Kuhn only (kuhn2p, kuhn3p, kuhn4p: bundled game files
like Leduc's).
--mbbr-prior-strategy FILE makes a strategy file MBBR's prior mean and default strategy.

Limit Texas hold'em (holdem2p, holdem3p: the ACPC competitions' games, or any limit game file with
the 52-card deck and two hole cards) is far too big to compile: its deals
are sampled (a seeded shuffle per hand, the same for every seating of a duplicate) and played by
the dealer's rules. Its agents are uniform, always-call and the styles, defined by HS, the share
of an opponent's hands beaten now (preflop: by E[HS^2]): the top quarter plays as the nuts, the
bottom 30%% as the worst (modeling/holdem/styles.py); in holdem2p "cfr" is the bundled blueprint
(STYLE@S mixes with it); a strategy file `oppmodel solve holdem2p` wrote plays as the blueprint it
holds.
"""

_EXAMPLES = """\
examples:
  oppmodel match --agents mbbr,n1,n3 --hands 3000 --duplicates 10 --seed 7
  oppmodel match --agents mbbr,maniac,calling-station --hands 1000 --duplicates 5
  oppmodel match --agents mbbr,n1,n3 --mbbr-posterior samples --mbbr-prior uninformed  # Table 6
  oppmodel match --agents mbbr,n2,maniac@0.3 --mbbr-prior typed
  oppmodel match --agents mbbr,n1,n3 --mbbr-posterior samples --mbbr-k 100 --mbbr-response bayes
  oppmodel match --game leduc3p --agents mbbr,cfr,maniac@0.35 --hands 3000 --duplicates 10
  oppmodel match --game leduc2p --agents cfr,calling-station --duplicates 20 --json
  oppmodel match --agents mbbr,mine.json,n3   # mine.json: oppmodel solve kuhn3p --out mine.json
  oppmodel match --game holdem2p --agents maniac,tight-passive --hands 3000 --duplicates 10
  oppmodel match --game holdem2p --agents cfr,maniac --hands 3000   # the bundled blueprint
  oppmodel match --game holdem2p --agents blueprint.json,maniac   # oppmodel solve holdem2p
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``match`` subcommand."""
    parser = subparsers.add_parser(
        "match",
        help="duplicate matches between MBBR and panel strategies (win rates, standard errors)",
        description=_DESCRIPTION
        % (
            textwrap.fill(
                ", ".join(panel_names()) + " (bluffer:B bluffs the worst card with probability B).",
                width=100,
                initial_indent="  ",
                subsequent_indent="  ",
            ),
            "  " + ", ".join(adaptive_names()) + " (switcher:N switches style every N hands).",
        ),
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--agents",
        required=True,
        help="comma-separated agent names, one per player, e.g. mbbr,n1,n3",
    )
    parser.add_argument("--game", default="kuhn3p", help=GAME_HELP)
    parser.add_argument("--hands", type=hands, default=3000, help="hands per match (default 3000)")
    parser.add_argument(
        "--duplicates",
        type=runs,
        default=10,
        help="independent duplicates, each playing every seating (default 10)",
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help="seed of everything random (default 0)"
    )
    add_mbbr_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run)


def build_agents(
    game: LimitGame,
    spec: str,
    config: MBBRConfig,
    prior_strategy: np.ndarray | None = None,
    population: Population | None = None,
) -> tuple[list[str], list[AgentFactory]]:
    """Labels (repeated names get #2, #3, ...) and factories for a comma-separated agent list;
    ``prior_strategy``: MBBR's prior mean and default strategy (None: the game's defaults);
    ``population``: MBBR's fitted population prior (``--mbbr-population``)."""
    names = _agent_names(game, spec)
    factories = [
        mbbr_factory(
            config,
            prior_mean=prior_strategy,
            default_strategy=prior_strategy,
            population=population,
        )
        if name == "mbbr"
        else agent_factory(AgentSpec(name))
        for name in names
    ]
    return labels(names), factories


def _agent_names(game: MatchGame, spec: str) -> list[str]:
    """The names of a comma-separated agent list, one per player (case-insensitive; a strategy
    file's path is kept as given)."""
    names = [name.strip() for name in spec.split(",")]
    names = [name if is_strategy_file(name) else name.lower() for name in names]
    if len(names) != game.num_players:
        raise InvalidArgumentError(
            "agents", f"{game.name} needs {game.num_players} agents, got {len(names)}: {spec!r}"
        )
    return names


def holdem_agents(game: HoldemGame, spec: str) -> tuple[list[str], list[MatchFactory]]:
    """Labels and factories of a hold'em series: the hold'em styles (modeling/holdem/styles.py);
    InvalidArgumentError naming the agent the sampled game cannot play."""
    names = _agent_names(game, spec)
    try:
        factories = [policy_factory(name, game.gamedef) for name in names]
    except NotFoundError as exc:
        raise InvalidArgumentError("agents", str(exc)) from None
    return labels(names), factories


def _series(
    args: argparse.Namespace, config: MBBRConfig
) -> tuple[MatchGame, MBBRConfig, list[str], list[MatchFactory]]:
    """The game ``--game`` names, the MBBR configuration played and the agents: a limit hold'em
    game (its rules say so: ``is_holdem``) is too big to compile, so its deals are sampled and the
    hold'em styles play it; any other game is compiled and played by MBBR and the panel (the
    population flag changes the prior: the JSON reports the configuration returned)."""
    gamedef = read_game_def(args.game)
    if is_holdem(gamedef):
        holdem = HoldemGame(Path(args.game).name, gamedef)
        return holdem, config, *holdem_agents(holdem, args.agents)
    game = resolve_game(args.game)
    config, population = mbbr_population(args, game, config)
    return game, config, *_limit_agents(game, args, config, population)


def run(args: argparse.Namespace) -> int:
    """Play the series and print the ranking."""
    game, config, labels_, factories = _series(args, mbbr_config(args))
    total = args.hands * args.duplicates * len(seatings(game.num_players))
    start = time.perf_counter()
    with Progress(total, desc="oppmodel match", unit="hand") as bar:
        result = run_duplicate(
            game,
            labels_,
            factories,
            hands=args.hands,
            duplicates=args.duplicates,
            seed=args.seed,
            progress=bar.update,
        )
    elapsed = time.perf_counter() - start
    ranking = result.ranking()
    if args.json:
        doc = {
            "game": result.game,
            "hands": result.hands,
            "duplicates": result.duplicates,
            "seatings": len(seatings(game.num_players)),
            "seed": result.seed,
            "unit": result.unit.name,
            "mbbr": {
                "k": config.k,
                "response": config.response,
                "prior": config.prior,
                "epsilon": config.epsilon,
                "eta": config.eta,
                "mixture_eta": config.mixture_eta,
                "weak_eta": config.weak_eta,
                "hands_default": config.hands_default,
                "posterior": config.posterior,
                "safety_budget": config.safety_budget,
                "change_hazard": config.change_hazard,
                "prior_strategy": args.mbbr_prior_strategy,
            }
            if "mbbr" in labels_
            else None,
            "ranking": [result.result_json(r) for r in ranking],
        }
        print(json.dumps(doc, indent=2))
        return 0
    matches = result.duplicates * len(seatings(game.num_players))
    print(
        f"{result.game}: {counted(matches, 'match', 'matches')} of {counted(result.hands, 'hand')} "
        f"({counted(result.duplicates, 'duplicate')} x {matches // result.duplicates} seatings), "
        f"seed {result.seed}, {elapsed:.1f} s"
    )
    print(f"{'rank':>4}  {'agent':<20}  {result.unit.label:>9}  {'std err':>8}")
    for i, r in enumerate(ranking, start=1):
        error = "n/a" if r.standard_error is None else f"{r.standard_error:.1f}"
        print(f"{i:>4}  {r.name:<20}  {r.rate:>+9.1f}  {error:>8}")
    print(result.unit.legend)
    return 0


def _limit_agents(
    game: LimitGame,
    args: argparse.Namespace,
    config: MBBRConfig,
    population: Population | None,
) -> tuple[list[str], list[AgentFactory]]:
    """Labels and factories of a compiled game's series, MBBR's prior strategy from the flags."""
    prior = prior_strategy_profile(game, prior_strategy_json(args, game))
    return build_agents(game, args.agents, config, prior, population)
