"""MBBR in 2-player limit hold'em against the styles and the blueprint: duplicate matches on the
same cards as ``oppmodel match --game holdem2p --agents cfr,STYLE`` with the same seed (the
blueprint's rows of experiments/RESULTS.md), and the CPU time of MBBR's hand cycle.

MBBR here is modeling/holdem/posterior.py's posterior over the bundled blueprint's abstraction
and modeling/holdem/response.py's response (a best response in the abstract game every
``--refresh`` hands, its share of the hands kept within ``--budget`` mbb/h against the
blueprint's play, measured on an independent sample of ``--check-deals`` deals).

    python experiments/holdem_field.py [--opponents cfr,always-bet,...] [--hands 3000]
        [--duplicates 2] [--from-duplicate 0] [--seed 34] [--refresh 100] [--budget 10] [--json]

``--from-duplicate K`` plays duplicates K .. duplicates - 1 only (the earlier ones ran before: a
second duplicate beside a recorded first gives a row its standard error).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import time

from oppmodel.clients.lab.timed_agent import TimedAgent
from oppmodel.modeling.games.acpc.bundled import game_path
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.holdem_abstract import abstract_game
from oppmodel.modeling.holdem.match import HoldemGame
from oppmodel.modeling.holdem.posterior import AbstractSpots, HoldemPosterior, abstract_profile
from oppmodel.modeling.holdem.response import BUDGET, REFRESH, HoldemMBBR, HoldemMBBRAgent
from oppmodel.modeling.holdem.styles import bundled_blueprint, policy_factory
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play.match import play_duplicate, summarize

OPPONENTS = "cfr,always-bet,calling-station,tight-passive,maniac,bluffer"


@functools.cache
def _parts(check_deals: int) -> tuple:
    """The bundled blueprint's abstract game, its profile there, and the check game (the same
    abstraction on an independent sample): built once, shared read-only by every model."""
    blueprint = bundled_blueprint("holdem2p")
    game = abstract_game("holdem2p", blueprint.config)
    check_config = dataclasses.replace(
        blueprint.config, deals=check_deals, seed=blueprint.config.seed + 1
    )
    check = abstract_game("holdem2p", check_config)
    spots = AbstractSpots(game, blueprint.config, blueprint.cards, blueprint.flops)
    return spots, abstract_profile(game, blueprint.positions), check


def build_model(args: argparse.Namespace) -> HoldemMBBR:
    """A fresh MBBR model of the bundled blueprint's abstraction."""
    spots, profile, check = _parts(args.check_deals)
    config = MBBRConfig(hands_default=args.hands_default)
    posterior = HoldemPosterior(spots, profile, config)
    return HoldemMBBR(posterior, check, config, refresh=args.refresh, budget=args.budget)


TIMED: list[TimedAgent] = []  # the MBBR agents of the opponent being played, timed


def _agent(args: argparse.Namespace, game: HoldemGame, seed: int) -> TimedAgent:
    """The match engine's factory of MBBR: a fresh model for each seating, its hand cycle
    (every decision and the hand's update, the solves every ``refresh`` hands included) timed
    in CPU time."""
    TIMED.append(TimedAgent(HoldemMBBRAgent("mbbr", build_model(args), seed)))
    return TIMED[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opponents", default=OPPONENTS, help=f"(default {OPPONENTS})")
    parser.add_argument("--hands", type=int, default=3000, help="hands a match (default 3000)")
    parser.add_argument("--duplicates", type=int, default=2, help="(default 2)")
    parser.add_argument("--from-duplicate", type=int, default=0, help="the first played (0)")
    parser.add_argument("--seed", type=int, default=34, help="(default 34: RESULTS' cfr rows)")
    parser.add_argument("--refresh", type=int, default=REFRESH, help="hands between solves")
    parser.add_argument("--budget", type=float, default=BUDGET, help="mbb/h against cfr")
    parser.add_argument("--hands-default", type=int, default=100, help="H (default 100)")
    parser.add_argument("--check-deals", type=int, default=500, help="(default 500)")
    parser.add_argument("--json", action="store_true", help="print a JSON line per opponent")
    args = parser.parse_args()
    gamedef = read_game_def(str(game_path("holdem2p")))
    game = HoldemGame("holdem2p", gamedef)
    _parts(args.check_deals)  # built before the clock starts
    if args.json:
        print(json.dumps(vars(args)), flush=True)
    rows = []
    for name in args.opponents.split(","):
        start = time.process_time()
        TIMED.clear()
        factories = [functools.partial(_agent, args), policy_factory(name, gamedef)]
        played = range(args.from_duplicate, args.duplicates)
        per_duplicate = [
            play_duplicate(game, factories, hands=args.hands, seed=args.seed, duplicate=d)
            for d in played
        ]
        result = summarize(game, ["mbbr", name], per_duplicate, hands=args.hands, seed=args.seed)
        mbbr = result.agents[0]
        hands = args.hands * len(played) * 2
        cycled = sum(t.hands for t in TIMED)
        rows.append(
            {
                "opponent": name,
                result.unit.key: mbbr.rate,
                "standard_error": mbbr.standard_error,
                "per_duplicate": dict(zip(played, mbbr.per_duplicate, strict=True)),
                "cpu_s": time.process_time() - start,
                "hands": hands,
                "cycle_cpu_ms_per_hand": 1000 * sum(t.seconds for t in TIMED) / cycled,
                # of the hands, the first H included
                "response_share": sum(t.agent.responded for t in TIMED) / cycled,
            }
        )
        if args.json:  # a line per opponent as it ends: a long run's rows survive its stop
            print(json.dumps(rows[-1]), flush=True)
        else:
            row = rows[-1]
            error = "n/a" if mbbr.standard_error is None else f"{mbbr.standard_error:.1f}"
            print(
                f"mbbr vs {name:<16} {mbbr.rate:>+9.1f} ± {error:>6} {result.unit.label}  "
                f"({hands} hands, {row['cpu_s']:.0f} s CPU; MBBR's cycle "
                f"{row['cycle_cpu_ms_per_hand']:.2f} ms CPU a hand)",
                flush=True,
            )


if __name__ == "__main__":
    main()
