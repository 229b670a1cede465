"""Benchmark: the CPU time of each of MBBR's decisions on the ACPC 3-player hold'em game, where
the response is made at each decision (``modeling/holdem/decision.py``), and what its bank does.

MBBR at the defaults (``served.lazy_holdem_mbbr``, the model of the cycle benchmark and the
hold'em field: the posterior on sets numbered as met, H = 100) in seat 0 against two seats of
``--opponents`` (a panel style or ``cfr``, the bundled blueprint: against it the guard lives,
and a decision may cost two estimates), over ``--hands`` hands of ``HoldemGame.deal_sequence``
per seed; the decisions from hand H on (those that estimate) are timed in the thread's CPU time.
Printed per seed and pooled: the decisions, the median, p99 and max ms (all, and the median by
round), the decisions over the agent's budget, per seed the five slowest (ms, round, hands seen,
samples drawn), and the bank: deviations, refusals, chips booked, the bank at the end. The same
seeds give the same cards and, on the same code, the same decisions, so two commits compare
decision for decision (run them alternated).

    python benchmarks/holdem_decision.py [--seeds 34,35] [--hands 200] [--opponents cfr] [--json]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core; set before numpy loads BLAS

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from oppmodel.clients.commands.acpc_agent_cmd import default_decision_budget_ms  # noqa: E402
from oppmodel.modeling.games.acpc.gamedef import read_game_def  # noqa: E402
from oppmodel.modeling.holdem.match import HoldemGame, play_holdem_match  # noqa: E402
from oppmodel.modeling.holdem.response import HoldemMBBRAgent  # noqa: E402
from oppmodel.modeling.holdem.served import lazy_holdem_mbbr  # noqa: E402
from oppmodel.modeling.holdem.styles import policy_factory  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig  # noqa: E402

GAME = "holdem3p"
# the ACPC agent's budget a decision on this game, from where the agent takes it: half the
# reference dealer's time a hand over the most decisions of a hand (15 here: 233 ms)
BUDGET_MS = default_decision_budget_ms(read_game_def(GAME))


class _Timed(HoldemMBBRAgent):
    """MBBR's seat timing each decision of ``model.hands >= H`` in the thread's CPU time."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.times: list[tuple[int, float]] = []  # (round, ms)
        self.slowest: list[tuple[float, int, int, int]] = []  # ms, round, hand, samples

    def act(self, spot, hole) -> int:
        drawn = self.model.decisions.drawn
        start = time.thread_time()
        action = super().act(spot, hole)
        ms = 1000 * (time.thread_time() - start)
        if self.model.hands >= self.model.config.hands_default:
            self.times.append((spot.round, ms))
            drawn = self.model.decisions.drawn - drawn
            self.slowest = sorted([*self.slowest, (ms, spot.round, self.model.hands, drawn)])[-5:]
        return action


def _figures(times: list[tuple[int, float]]) -> dict:
    ms = np.array([t for _, t in times])
    rounds = np.array([r for r, _ in times])
    return {
        "decisions": int(ms.size),
        "median_ms": round(float(np.median(ms)), 1),
        "p99_ms": round(float(np.percentile(ms, 99)), 1),
        "max_ms": round(float(ms.max()), 1),
        "median_ms_by_round": [
            round(float(np.median(ms[rounds == r])), 1) if (rounds == r).any() else None
            for r in range(4)
        ],
        "over_budget": int((ms > BUDGET_MS).sum()),
    }


def run(
    seed: int, hands: int, opponents: str, *, warm: bool = False
) -> tuple[dict, list[tuple[int, float]]]:
    """One seeded match: the decisions' figures and the bank's (``warm``: from the first hand,
    to load the kernels; no figures)."""
    game = HoldemGame(GAME, read_game_def(GAME))
    model = lazy_holdem_mbbr(GAME, MBBRConfig(hands_default=0) if warm else MBBRConfig())
    mbbr = _Timed("mbbr", model, seed)
    others = [policy_factory(opponents, game.gamedef)(game, seed + 1 + k) for k in range(2)]
    play_holdem_match(game, [mbbr, *others], game.deal_sequence(hands, seed))
    if warm:
        return {}, []
    row = {"seed": seed, **_figures(mbbr.times)}
    row["slowest_ms_round_hand_samples"] = [[round(ms, 1), *rest] for ms, *rest in mbbr.slowest]
    row.update(
        deviations=model.deviations,
        refused=model.refused,
        booked_chips=round(float(model.booked), 3),
        bank_chips=round(float(model.bank), 3),
        ruled_out=bool(model.ruled_out),
    )
    return row, mbbr.times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="34,35", help="comma-separated match seeds")
    parser.add_argument(
        "--hands", type=int, default=200, help="hands a seed (the first H unprobed)"
    )
    parser.add_argument("--opponents", default="cfr", help="the style in seats 1 and 2")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    args = parser.parse_args()
    run(0, 3, args.opponents, warm=True)  # loads the kernels
    rows, pooled = [], []
    for seed in (int(s) for s in args.seeds.split(",")):
        row, times = run(seed, args.hands, args.opponents)
        rows.append(row)
        pooled += times
        if not args.json:
            print(json.dumps(row))
    report = {
        "benchmark": "holdem3p_decision_cpu",
        "opponents": args.opponents,
        "hands": args.hands,
        "budget_ms": BUDGET_MS,
        "pooled": _figures(pooled),
        "runs": rows,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
    }
    print(json.dumps(report, indent=1 if args.json else None))


if __name__ == "__main__":
    main()
