"""MBBR in limit hold'em, 2 or 3 players, against the styles and the blueprint: duplicate
matches on the same cards as ``oppmodel match --game GAME`` with the same seed, each seating
played again with the bundled blueprint (``cfr``) in MBBR's seat on the same cards and the same
opponents' seeds (the paired baseline), and the CPU time of MBBR's hand cycle.

In 2 players (``--game holdem2p``) MBBR is modeling/holdem/posterior.py's posterior over the
bundled blueprint's abstraction and modeling/holdem/response.py's response (a best response in
the abstract game every ``--refresh`` hands, its share of the hands kept within ``--budget``
mbb/h against the blueprint's play, measured on an independent sample of ``--check-deals``
deals). In 3 players (``--game holdem3p``, the ACPC game) the posterior lives on sets numbered
as met and the response is made at each decision (modeling/holdem/decision.py), its deviations
paid from the same budget while the blueprint is not ruled out. An opponent is a style in 2
players and a pair ``A+B`` in 3 (MBBR and the pair over the 6 seatings of a duplicate).

    python experiments/holdem_field.py [--game holdem2p|holdem3p] [--opponents cfr,...]
        [--hands 3000] [--duplicates 2] [--from-duplicate 0] [--seed 34] [--block 30]
        [--refresh 100] [--budget 10] [--journal PATH] [--seatings 0,3] [--json]

``--from-duplicate K`` plays duplicates K .. duplicates - 1 only (the earlier ones ran before: a
second duplicate beside a recorded first gives a row its standard error). ``--journal PATH``
appends each finished seating (both lines) to PATH as a JSON line and skips the seatings found
there, so that a stopped run resumes where it stopped. ``--seatings J,...`` plays only those
seatings (the others are read from the journal): a row's seatings split over processes, their
journals concatenated, and the row read back from them; a row some of whose seatings are neither
played nor journaled is reported as the seatings it has (``partial``). A row's ``paired`` is
MBBR's rate less the blueprint's on the same cards, its ``paired_standard_error`` over the
blocks of ``--block`` hands of every duplicate (each block summed over the seatings: one sample
per block of deals), and ``curve`` the paired rate per block (the learning curve, averaged over
the duplicates).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import json
import math
import time
from pathlib import Path

import numpy as np

from oppmodel.clients.lab.journal import Journal
from oppmodel.clients.lab.timed_agent import TimedAgent
from oppmodel.modeling.games.acpc.bundled import game_path
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.holdem_abstract import abstract_game
from oppmodel.modeling.holdem.blueprint import abstract_profile
from oppmodel.modeling.holdem.match import HoldemGame
from oppmodel.modeling.holdem.posterior import AbstractSpots, HoldemPosterior
from oppmodel.modeling.holdem.response import BUDGET, REFRESH, HoldemMBBR, HoldemMBBRAgent
from oppmodel.modeling.holdem.served import lazy_holdem_mbbr
from oppmodel.modeling.holdem.styles import bundled_blueprint, policy_factory
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play.match import agent_seed, deck_seed, seatings, summarize

STYLES = ["always-bet", "calling-station", "tight-passive", "maniac", "bluffer"]
OPPONENTS = {
    "holdem2p": ",".join(["cfr", *STYLES]),
    "holdem3p": ",".join(
        ["cfr+cfr", *("+".join(p) for p in itertools.combinations(["cfr", *STYLES], 2))]
    ),
}
BLUEPRINT = "cfr"  # the paired baseline, in MBBR's seat


@functools.cache
def _parts(check_deals: int) -> tuple:
    """The bundled 2-player blueprint's abstract game, its profile there, and the check game
    (the same abstraction on an independent sample): built once, shared read-only by every
    model."""
    blueprint = bundled_blueprint("holdem2p")
    game = abstract_game("holdem2p", blueprint.config)
    check_config = dataclasses.replace(
        blueprint.config, deals=check_deals, seed=blueprint.config.seed + 1
    )
    check = abstract_game("holdem2p", check_config)
    spots = AbstractSpots(game, blueprint.config, blueprint.cards, blueprint.flops)
    return spots, abstract_profile(game, blueprint.positions), check


def build_model(args: argparse.Namespace) -> HoldemMBBR:
    """A fresh MBBR model of the bundled blueprint's abstraction: in 3 players on sets numbered
    as met (their own, as the model grows them), responding at each decision."""
    config = MBBRConfig(hands_default=args.hands_default)
    if args.game == "holdem3p":
        return lazy_holdem_mbbr("holdem3p", config, budget=args.budget)
    spots, profile, check = _parts(args.check_deals)
    posterior = HoldemPosterior(spots, profile, config)
    return HoldemMBBR(posterior, check, config, refresh=args.refresh, budget=args.budget)


def _mbbr(args: argparse.Namespace, timed: list[TimedAgent], game: HoldemGame, seed: int):
    """The match engine's factory of MBBR: a fresh model for each seating, its hand cycle
    (every decision and the hand's update, the solves included) timed in CPU time."""
    timed.append(TimedAgent(HoldemMBBRAgent("mbbr", build_model(args), seed)))
    return timed[-1]


def play_seating(
    game: HoldemGame,
    factories,
    deals: np.ndarray,
    *,
    seed: int,
    duplicate: int,
    seating: int,
    block: int,
) -> np.ndarray:
    """Seating number ``seating`` of a duplicate (``play_duplicate``'s agents, seeds and cards)
    played in blocks of ``block`` hands: (blocks, n) chips won per agent index. ``block`` is a
    multiple of the players, so the positions rotate as in one match."""
    order = seatings(game.num_players)[seating]
    agents = [factories[i](game, agent_seed(seed, duplicate, seating, i)) for i in order]
    won = []
    for start in range(0, len(deals), block):
        chips = game.play_hands(agents, deals[start : start + block])
        won.append([chips[order.index(i)] for i in range(game.num_players)])
    return np.array(won)


def play_opponent(args: argparse.Namespace, spec: str) -> dict:
    """One row: MBBR and the blueprint in its seat against ``spec``'s agents over every
    seating of duplicates ``from_duplicate`` .. ``duplicates`` - 1 (the journal's seatings
    read, the others played and appended to it)."""
    gamedef = read_game_def(str(game_path(args.game)))
    game = HoldemGame(args.game, gamedef)
    n = game.num_players
    others = spec.split("+")
    if len(others) != n - 1:
        raise SystemExit(f"{args.game} plays MBBR against {n - 1} agents, got {spec!r}")
    if args.block % n or args.hands % args.block:
        raise SystemExit(f"--block must be a multiple of {n} dividing --hands")
    others_f = [policy_factory(name, gamedef) for name in others]
    baseline = [policy_factory(BLUEPRINT, gamedef), *others_f]
    settings = [
        args.game,
        spec,
        args.hands,
        args.seed,
        args.block,
        args.refresh,
        args.budget,
        args.hands_default,
        args.check_deals,
    ]
    journal = Journal(Path(args.journal) if args.journal else None, {"settings": settings})
    done = journal.entries()
    played = range(args.from_duplicate, args.duplicates)
    lines = {"mbbr": [], "cfr": []}  # (duplicates, seatings, blocks, n) chips
    cost = {
        "cpu_s": 0.0,
        "cycle_s": 0.0,
        "cycled": 0,
        "responded": 0,
        "deviations": 0,
        "refused": 0,
        "booked": 0.0,
    }
    for d in played:
        deals = game.deal_sequence(args.hands, deck_seed(args.seed, d))
        for line in lines.values():
            line.append([])
        for j in range(len(seatings(n))):
            if (d, j) not in done and (not args.seatings or j in args.seatings):
                start, timed = time.process_time(), []
                mbbr_f = [functools.partial(_mbbr, args, timed), *others_f]
                entry = {}
                for name, factories in (("mbbr", mbbr_f), ("cfr", baseline)):
                    kw = dict(seed=args.seed, duplicate=d, seating=j, block=args.block)
                    entry[name] = play_seating(game, factories, deals, **kw).tolist()
                model = timed[0].agent.model
                seconds = time.process_time() - start
                entry["cost"] = {
                    "cpu_s": seconds,
                    "cycle_s": timed[0].seconds,
                    "cycled": timed[0].hands,
                    "responded": timed[0].agent.responded,
                    "deviations": model.deviations,
                    "refused": model.refused,
                    "booked": model.booked,
                }
                journal.record((d, j), entry, seconds)
                done[d, j] = {"value": entry}
            if (d, j) not in done:
                continue
            entry = done[d, j]["value"]
            for name, line in lines.items():
                line[-1].append(entry[name])
            for k in cost:
                cost[k] += entry["cost"][k]
    have = sorted(key for key in done if key[0] in played)
    if len(have) < len(played) * len(seatings(n)):
        return {"opponent": spec, "partial": True, "seatings": have}
    return _row(game, spec, args, {k: np.array(v) for k, v in lines.items()}, cost, played)


def _row(game: HoldemGame, spec: str, args, lines: dict, cost: dict, played: range) -> dict:
    """A row's figures from the chips of both lines."""
    unit, seated = game.rate_unit, len(seatings(game.num_players))
    per = {
        name: unit.rate(chips.sum(axis=(1, 2)), args.hands * seated)
        for name, chips in lines.items()
    }
    names = ["mbbr", *spec.split("+")]
    result = summarize(game, names, per["mbbr"], hands=args.hands, seed=args.seed)
    blueprint = summarize(game, names, per["cfr"], hands=args.hands, seed=args.seed).agents[0]
    mbbr = result.agents[0]
    # one sample per block of deals: MBBR's chips less the blueprint's, summed over the seatings
    diff = (lines["mbbr"][..., 0] - lines["cfr"][..., 0]).sum(axis=1)  # (duplicates, blocks)
    rates = unit.rate(diff, args.block * seated)
    error = float(rates.std(ddof=1) / math.sqrt(rates.size)) if rates.size > 1 else None
    return {
        "opponent": spec,
        "unit": unit.key,
        unit.key: mbbr.rate,
        "standard_error": mbbr.standard_error,
        "per_duplicate": dict(zip(played, mbbr.per_duplicate, strict=True)),
        "blueprint": blueprint.rate,
        "paired": float(rates.mean()),
        "paired_standard_error": error,
        "curve": rates.mean(axis=0).tolist(),
        "block": args.block,
        "cpu_s": cost["cpu_s"],  # both lines'
        "hands": args.hands * len(played) * seated,
        "cycle_cpu_ms_per_hand": 1000 * cost["cycle_s"] / cost["cycled"],
        # of the hands, the first H included (2 players)
        "response_share": cost["responded"] / cost["cycled"],
        "deviations": cost["deviations"],  # 3 players: decisions off the blueprint,
        "refused": cost["refused"],  # those the bank refused, and the chips it booked
        "booked": cost["booked"],
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=sorted(OPPONENTS), default="holdem2p")
    parser.add_argument("--opponents", help="styles (2 players) or pairs A+B (3): all of them")
    parser.add_argument("--hands", type=int, default=3000, help="hands a match (default 3000)")
    parser.add_argument("--duplicates", type=int, default=2, help="(default 2)")
    parser.add_argument("--from-duplicate", type=int, default=0, help="the first played (0)")
    parser.add_argument("--seed", type=int, default=34, help="(default 34: RESULTS' cfr rows)")
    parser.add_argument("--block", type=int, default=30, help="hands a curve's point (30)")
    parser.add_argument("--refresh", type=int, default=REFRESH, help="hands between solves")
    parser.add_argument("--budget", type=float, default=BUDGET, help="mbb/h against cfr")
    parser.add_argument("--hands-default", type=int, default=100, help="H (default 100)")
    parser.add_argument("--check-deals", type=int, default=500, help="(default 500)")
    parser.add_argument("--journal", help="a JSON-lines file of finished seatings (resumes)")
    parser.add_argument("--seatings", help="play only these seatings, e.g. 0,3 (all)")
    parser.add_argument("--json", action="store_true", help="print a JSON line per opponent")
    args = parser.parse_args(argv)
    if args.seatings:
        args.seatings = [int(j) for j in args.seatings.split(",")]
    if args.game == "holdem2p":
        _parts(args.check_deals)  # built before the clock starts
    if args.json:
        print(json.dumps(vars(args)), flush=True)
    rows = []
    for spec in (args.opponents or OPPONENTS[args.game]).split(","):
        rows.append(row := play_opponent(args, spec))
        if args.json:  # a line per opponent as it ends: a long run's rows survive its stop
            print(json.dumps(row), flush=True)
        elif row.get("partial"):
            print(f"mbbr vs {spec:<24} partial: seatings {row['seatings']} journaled", flush=True)
        else:
            error = row["paired_standard_error"]
            print(
                f"mbbr vs {spec:<24} {row[row['unit']]:>+9.1f}, blueprint "
                f"{row['blueprint']:>+9.1f}, paired {row['paired']:>+8.1f} ± "
                f"{'n/a' if error is None else f'{error:.1f}'} ({row['hands']} hands, "
                f"{row['cpu_s']:.0f} s CPU; MBBR's cycle {row['cycle_cpu_ms_per_hand']:.2f} ms "
                "CPU a hand)",
                flush=True,
            )
    return rows


if __name__ == "__main__":
    main()
