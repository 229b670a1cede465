"""MBBR against opponents who change style at an unknown hand, in exact expected value.

Each match is played as ``learning_cost.py`` plays it (our position rotating every hand, both seat
orders of the pair, the exact expected value of MBBR's policy computed after every hand, so no card
luck): the pair plays ``before`` until a switch hand drawn per seed, uniformly from
``--switch-range`` (1,000 to 2,000), then ``after`` for 500 hands. ``--game`` is 3-player Kuhn or
3-player Leduc (``leduc3p``: the limit model's change detection, ``change.py``). Beside
MBBR with change detection (``--change-hazard``) and without it (hazard 0; the same cards and
draws, so the two agree until the first detection), the best response that knows the switch
point: per hand, the exact best response to the pair playing then. Reported: the share of that
best response's winnings MBBR earns over the 500 hands after the switch (per seed, both seat
orders, then the mean and its SE over seeds), and per-hand winnings in stretches around the
switch.

    python experiments/change_detection.py [--scenarios maniac+maniac>tight-passive+tight-passive]
                                          [--seeds 24] [--change-hazard H] [--workers 2]
                                          [--game kuhn3p|leduc3p] [--switch-range 1000,2000]
                                          [--json] [--out FILE]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from oppmodel.clients.commands._games import resolve_game  # noqa: E402
from oppmodel.clients.lab.reports import emit_report, machine  # noqa: E402
from oppmodel.clients.lab.runner import run_trajectories  # noqa: E402
from oppmodel.modeling.evaluation.limit import best_response  # noqa: E402
from oppmodel.modeling.games.acpc.limit_game import LimitGame  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig  # noqa: E402
from oppmodel.modeling.play.diluted import fixed_profile  # noqa: E402
from oppmodel.modeling.play.tournament import seated_profile  # noqa: E402

DEFAULT_SCENARIOS = "maniac+maniac>tight-passive+tight-passive,maniac+n2>tight-passive+n2"
SWITCH_RANGE = (1000, 2000)  # inclusive, as the panel's late-switcher draws it
SHARE_HANDS = 500  # the stretch after the switch the share is measured over
BEFORE_SHOWN = 100  # hands before the switch in the per-hand table
STRETCH = 50  # hands per row of the per-hand table


def switch_hand(seed: int, switch_range: tuple[int, int] = SWITCH_RANGE) -> int:
    """The switch hand of ``seed`` (the same in both seat orders and for every configuration)."""
    low, high = switch_range
    return int(np.random.default_rng([seed, 99]).integers(low, high + 1))


def parse_scenario(text: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """``A+B>C+D``: the pair (A, B) until the switch, then (C, D)."""
    before, after = text.split(">", 1)
    first, second = before.split("+", 1)
    third, fourth = after.split("+", 1)
    return (first, second), (third, fourth)


def best_response_values(game: LimitGame, pair: tuple[str, str]) -> np.ndarray:
    """The exact best response's rate (the game's unit), per (seat order, our position), against
    ``pair``."""
    profiles = (fixed_profile(game, pair[0]), fixed_profile(game, pair[1]))
    return np.array(
        [
            [
                game.rate_unit.rate(best_response(game, seated_profile(game, p, None, order), p)[1])
                for p in range(game.num_players)
            ]
            for order in (profiles, profiles[::-1])
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenarios", default=DEFAULT_SCENARIOS, help="A+B>C+D, comma-separated (%(default)s)"
    )
    parser.add_argument("--seeds", type=int, default=24, help="seeds per seat order (%(default)s)")
    parser.add_argument(
        "--change-hazard",
        type=float,
        default=MBBRConfig.change_hazard,
        help="MBBR's change_hazard with detection (default: MBBRConfig's, %(default)s)",
    )
    parser.add_argument("--game", choices=("kuhn3p", "leduc3p"), default="kuhn3p")
    parser.add_argument(
        "--switch-range",
        default=",".join(map(str, SWITCH_RANGE)),
        help="LOW,HIGH: the switch hand is drawn per seed from LOW to HIGH (%(default)s)",
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", action="store_true", help="print the report as JSON only")
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args(argv)
    game = resolve_game(args.game)
    low, high = (int(x) for x in args.switch_range.split(","))
    switch_range = (low, high)
    configs = {
        "without": MBBRConfig(change_hazard=0.0),
        "with": MBBRConfig(change_hazard=args.change_hazard),
    }
    for config in configs.values():
        config.validate()
    scenarios = [parse_scenario(s) for s in args.scenarios.split(",")]
    tasks = []
    for before, after in scenarios:
        for seed in range(args.seeds):
            s = switch_hand(seed, switch_range)
            for flip in (False, True):
                first, second = before[::-1] if flip else before
                third, fourth = after[::-1] if flip else after
                for config in configs.values():
                    switch = (s, third, fourth)
                    tasks.append(
                        (first, second, config, seed, s + SHARE_HANDS, False, args.game, switch)
                    )
    it = iter(run_trajectories(tasks, args.workers))
    rows = []
    offsets = np.arange(-BEFORE_SHOWN, SHARE_HANDS)
    for before, after in scenarios:
        br_before, br_after = best_response_values(game, before), best_response_values(game, after)
        shares = {kind: [] for kind in configs}
        curves = {kind: np.zeros(len(offsets)) for kind in (*configs, "best response")}
        for seed in range(args.seeds):
            s = switch_hand(seed, switch_range)
            hands = np.arange(s - BEFORE_SHOWN, s + SHARE_HANDS)
            brs = [
                np.where(hands < s, br_before[order, hands % 3], br_after[order, hands % 3])
                for order in (0, 1)
            ]
            br_total = sum(float(br[BEFORE_SHOWN:].sum()) for br in brs)
            curves["best response"] += (brs[0] + brs[1]) / (2 * args.seeds)
            values = {kind: [] for kind in configs}
            for _order in (0, 1):
                for kind in configs:
                    values[kind].append(next(it)[0][s - BEFORE_SHOWN :])
            for kind in configs:
                total = sum(float(v[BEFORE_SHOWN:].sum()) for v in values[kind])
                shares[kind].append(total / br_total)
                curves[kind] += (values[kind][0] + values[kind][1]) / (2 * args.seeds)
        row = {
            "scenario": f"{'+'.join(before)}>{'+'.join(after)}",
            "best_response_after": float(curves["best response"][BEFORE_SHOWN:].mean()),
        }
        for kind in configs:
            share = np.array(shares[kind])
            row[f"share_{kind}"] = float(share.mean())
            row[f"share_{kind}_se"] = float(share.std(ddof=1) / np.sqrt(len(share)))
            row[f"mbb_after_{kind}"] = float(curves[kind][BEFORE_SHOWN:].mean())
        row["stretches"] = [
            {
                "from": int(offsets[i]),
                "to": int(offsets[i] + STRETCH),
                **{kind: float(curve[i : i + STRETCH].mean()) for kind, curve in curves.items()},
            }
            for i in range(0, len(offsets), STRETCH)
        ]
        rows.append(row)
    report = {
        "benchmark": "mbbr_change_detection_exact",
        "game": args.game,
        "seeds": args.seeds,
        "switch_range": list(switch_range),
        "share_hands": SHARE_HANDS,
        "change_hazard": args.change_hazard,
        "machine": machine(),
        "rows": rows,
    }
    if emit_report(report, args.out, args.json):
        return 0
    print(
        f"Share of the switch-aware best response's winnings over the {SHARE_HANDS} hands after "
        f"the switch, {args.seeds} seeds x 2 orders, change_hazard {args.change_hazard:g}\n"
    )
    print(f"| scenario | best response, {game.rate_unit.label} | with detection | without |")
    print("|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['scenario']} | {row['best_response_after']:+.1f} "
            f"| {100 * row['share_with']:.1f}% ± {100 * row['share_with_se']:.1f} "
            f"({row['mbb_after_with']:+.1f}) "
            f"| {100 * row['share_without']:.1f}% ± {100 * row['share_without_se']:.1f} "
            f"({row['mbb_after_without']:+.1f}) |"
        )
    for row in rows:
        print(f"\n{row['scenario']}: {game.rate_unit.label} by hands from the switch\n")
        print("| hands | best response | with detection | without |")
        print("|---|---|---|---|")
        for s in row["stretches"]:
            print(
                f"| {s['from']:+d} to {s['to']:+d} | {s['best response']:+.1f} | {s['with']:+.1f} "
                f"| {s['without']:+.1f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
