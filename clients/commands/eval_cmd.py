"""``oppmodel eval``: exact value of every position, best responses and nash_conv of a profile
of any compiled limit game (Kuhn, Leduc, a game file)."""

from __future__ import annotations

import argparse
import json
from fractions import Fraction

import numpy as np

from oppmodel.clients.commands._games import GAME_HELP, resolve_game
from oppmodel.modeling.evaluation.limit import best_response, expected_values
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import is_strategy_file, load_profile
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.panel import panel_names

MAX_DENOMINATOR = 10_000
FRACTION_TOLERANCE = 1e-12
FLOAT_NOISE = 1e-12  # a gain smaller than this is 0 printed in rounding error

_DESCRIPTION = """\
Evaluate a strategy profile of n-player Kuhn poker, Leduc hold'em or any small ACPC limit game
exactly (every deal and betting sequence is enumerated; no sampling). For each position it prints
the profile's expected value in chips per hand, the value of an exact best response of that
position against the others, and the gain (how much that position could win by deviating).
nash_conv is the sum of the gains: 0 exactly at a Nash equilibrium, positive otherwise
(OpenSpiel's definition).

--profile takes a panel name (n1, n2, n3 are the robust 3-player Kuhn equilibria of Szafron,
Gibson & Sturtevant; cfr is a limit game's solved strategy; uniform; the exploitable styles,
defined from hand strength in every game), STYLE@S (STYLE at a share S of the decisions, the
equilibrium N2 or the solved cfr strategy at the rest), one JSON file holding all positions, or
one JSON file per position: strategy files as `oppmodel solve` writes them, keyed by the game's
information-state strings ("Js:" in Kuhn, "Ks/Qh:rc/cr" in Leduc; modeling/games/acpc/strategy.py),
the one format every command reads; Kuhn also reads files keyed by OpenSpiel's strings such as
"2ppb" (modeling/strategy.py), converted exactly. Values that equal a fraction with a small
denominator are also shown exactly, e.g. -1/48.
"""

_EXAMPLES = """\
examples:
  oppmodel eval --profile N2                     # 3p Kuhn: -1/32, -1/48, +5/96, nash_conv 0
  oppmodel eval --game kuhn2p --profile uniform  # nash_conv 11/12
  oppmodel solve kuhn3p --iterations 2000 --out mine.json  # write a strategy file
  oppmodel eval --profile mine.json --json       # a file holding every position
  oppmodel eval --game leduc3p --profile maniac  # Leduc hold'em, 3 players
  oppmodel eval --game leduc2p --profile cfr     # the bundled CFR strategy: nash_conv 1.3e-6
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``eval`` subcommand."""
    parser = subparsers.add_parser(
        "eval",
        help="exact values, best responses and nash_conv of a Kuhn or Leduc profile",
        description=_DESCRIPTION,
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--game", default="kuhn3p", help=GAME_HELP)
    parser.add_argument(
        "--profile",
        nargs="+",
        required=True,
        metavar="NAME_OR_FILE",
        help=f"a panel name ({', '.join(panel_names())}), STYLE@S, or JSON files",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run)


def exact_fraction(value: float) -> Fraction | None:
    """The fraction with denominator <= 10,000 within 1e-12 of ``value``, if there is one."""
    frac = Fraction(value).limit_denominator(MAX_DENOMINATOR)
    return frac if abs(float(frac) - value) <= FRACTION_TOLERANCE else None


def load(game: LimitGame, specs: list[str]) -> np.ndarray:
    """A profile from a panel name, ``STYLE@S``, or strategy files (either key style)."""
    if len(specs) == 1 and not is_strategy_file(specs[0]):
        return fixed_profile(game, specs[0])
    return load_profile(game, *specs)


def evaluate(game: LimitGame, profile: np.ndarray) -> dict:
    """The JSON-ready evaluation of ``profile``."""
    values = expected_values(game, profile)
    positions = []
    gains = []
    for p in range(game.num_players):
        br_value = best_response(game, profile, p)[1]
        gains.append(_denoised(br_value - float(values[p])))
        positions.append(
            {
                "position": p,
                "value": float(values[p]),
                "value_exact": _text(exact_fraction(float(values[p]))),
                "best_response_value": br_value,
                "gain": gains[-1],
            }
        )
    total = _denoised(float(sum(gains)))  # = evaluation.nash_conv
    return {
        "positions": positions,
        "nash_conv": total,
        "nash_conv_exact": _text(exact_fraction(total)),
    }


def _denoised(gain: float) -> float:
    """A gain within floating-point noise of 0 (a best response's value minus the same value
    summed in another order) is 0: "7.29e-17" would read as a real, tiny gain."""
    return 0.0 if abs(gain) < FLOAT_NOISE else gain


def _text(frac: Fraction | None) -> str | None:
    return None if frac is None else str(frac)


def run(args: argparse.Namespace) -> int:
    """Evaluate and print."""
    game = resolve_game(args.game)
    result = {
        "game": game.name,
        "profile": args.profile,
        **evaluate(game, load(game, args.profile)),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{game.name}, profile {' '.join(args.profile)}")
    print(f"{'position':>8}  {'value':>12}  {'exact':>8}  {'best response':>13}  {'gain':>10}")
    for entry in result["positions"]:
        print(
            f"{entry['position']:>8}  {entry['value']:>+12.6f}  {entry['value_exact'] or '':>8}  "
            f"{entry['best_response_value']:>+13.6f}  {entry['gain']:>10.3g}"
        )
    exact = f" (= {result['nash_conv_exact']})" if result["nash_conv_exact"] else ""
    print(f"nash_conv {result['nash_conv']:.3g}{exact}")
    return 0
