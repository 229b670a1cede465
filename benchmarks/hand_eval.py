"""Seven-card hand evaluation, ours against eval7, phevaluator and pokerkit in one run, and the full
enumeration of all 133,784,560 seven-card hands with its category counts checked.

- **Per hand.** The same seeded random 7-card hands for everyone. Ours: ``rank_hands`` (one kernel
  call for the whole batch, the way abstraction and sampling call it; time / hands), and, for
  reference, ``hand_strength`` (one Python call per hand on card strings, as the dealer's payoffs
  call it). Peers have no batch API, so each is timed one Python call per hand on arguments built
  beforehand (not charged): ``eval7.evaluate(cards)`` (Cython), phevaluator's public
  ``evaluate_cards(*ids)`` and its native ``_pheval.evaluate_7cards(*ids)`` (C), pokerkit's
  ``StandardHighHand.from_game(hole, board)`` (pure Python, on fewer hands). Repeats are
  interleaved so that load hits all alike; per-hand medians over the repeats, ratio = peer / ours
  (above 1: ours is faster). Times are the process's CPU time, which a busy machine disturbs
  less than the wall clock (every evaluator runs on this one thread). Every evaluator's order of
  the hands must equal ours (ties included).
- **Full enumeration.** ``category_counts(7)``: every seven-card hand evaluated in one numba call
  (one core), timed in CPU seconds and wall seconds; its counts must equal the known table.

Goals (issue 34): per hand at least as fast as the fastest peer; the enumeration under 5 s on one
core. Run: ``python benchmarks/hand_eval.py [--quick] [--json] [--out FILE]``; the peers come with
``pip install -e ".[bench]"``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Callable

import numpy as np

from oppmodel.clients.lab.reports import emit_report, machine, report_arguments
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS
from oppmodel.modeling.games.acpc.hand_rank import category_counts, hand_strength, rank_hands

ENUMERATION_GOAL_SECONDS = 5.0
# The known counts of the 133,784,560 seven-card hands, high card .. straight flush (the tests
# check the enumeration against this table too).
SEVEN_CARD_COUNTS = [
    23_294_460,
    58_627_800,
    31_433_400,
    6_461_620,
    6_180_020,
    4_047_644,
    3_473_184,
    224_848,
    41_584,
]


def random_hands(count: int, seed: int) -> np.ndarray:
    """``count`` seeded 7-card hands as card indices 4 * rank + suit (distinct within a row)."""
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((count, 52)), axis=1)[:, :7]


def _names(hand: np.ndarray) -> list[str]:
    return [RANK_CHARS[c // 4] + SUIT_CHARS[c % 4] for c in hand]


def peer_calls(hands: np.ndarray) -> dict[str, tuple[Callable, list]]:
    """Each evaluator's call and its prebuilt argument per hand, higher-is-better values out."""
    import eval7  # the peers: pyproject's [bench] extra, imported only to run
    import phevaluator
    from phevaluator import _pheval
    from pokerkit import Card, StandardHighHand

    names = [_names(h) for h in hands]
    return {
        "ours_hand_strength": (hand_strength, names),
        "eval7": (eval7.evaluate, [[eval7.Card(c) for c in n] for n in names]),
        "phevaluator": (
            lambda ids: -phevaluator.evaluate_cards(*ids),
            [h.tolist() for h in hands],  # phevaluator's ids are ours: 4 * rank + suit
        ),
        "phevaluator_native": (
            lambda ids: -_pheval.evaluate_7cards(*ids),
            [h.tolist() for h in hands],
        ),
        "pokerkit": (
            lambda cards: StandardHighHand.from_game(cards[:2], cards[2:]),
            [list(Card.parse("".join(n))) for n in names],
        ),
    }


def same_order(ours: np.ndarray, theirs: list) -> bool:
    """Whether two evaluations order the hands alike, ties included."""
    order = np.argsort(ours, kind="stable")
    for a, b in itertools.pairwise(order):
        if (ours[a] == ours[b]) != (theirs[a] == theirs[b]) or theirs[a] > theirs[b]:
            return False
    return True


def per_hand(count: int, slow_count: int, repeats: int, seed: int) -> dict:
    hands = random_hands(count, seed)
    ours_values = rank_hands(hands)  # numba compiles
    calls = peer_calls(hands)
    sizes = {name: slow_count if name == "pokerkit" else count for name in calls}
    for name, (call, args) in calls.items():
        values = [call(a) for a in args[: sizes[name]]]
        if not same_order(ours_values[: sizes[name]], values):
            raise AssertionError(f"{name} orders the hands differently from ours")
    seconds: dict[str, list[float]] = {name: [] for name in ["ours", *calls]}
    for _ in range(repeats):
        start = time.process_time()
        rank_hands(hands)
        seconds["ours"].append((time.process_time() - start) / count)
        for name, (call, args) in calls.items():
            start = time.process_time()
            for a in args[: sizes[name]]:
                call(a)
            seconds[name].append((time.process_time() - start) / sizes[name])
    median = {name: float(np.median(s)) for name, s in seconds.items()}
    peers = [name for name in calls if not name.startswith("ours")]
    fastest = min(peers, key=median.__getitem__)
    return {
        "hands": sizes | {"ours": count},
        "repeats": repeats,
        "seconds_per_hand_median": median,
        "ratio_peer_over_ours": {name: median[name] / median["ours"] for name in peers},
        "fastest_peer": fastest,
        "goal_met": median["ours"] <= median[fastest],
    }


def enumeration() -> dict:
    category_counts(5)  # numba compiles
    cpu, wall = time.process_time(), time.perf_counter()
    counts = category_counts(7).tolist()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if counts != SEVEN_CARD_COUNTS:
        raise AssertionError(f"seven-card category counts {counts}, known {SEVEN_CARD_COUNTS}")
    return {
        "hands": sum(counts),
        "counts": counts,
        "cpu_seconds": cpu,
        "wall_seconds": wall,
        "goal_seconds": ENUMERATION_GOAL_SECONDS,
        "goal_met": cpu <= ENUMERATION_GOAL_SECONDS,
    }


def run(quick: bool, seed: int, repeats: int) -> dict:
    load_before = os.getloadavg()
    result = {
        "benchmark": "hand_eval",
        "unit": "seconds",
        "per_hand": per_hand(2_000 if quick else 100_000, 200 if quick else 2_000, repeats, seed),
        "enumeration": enumeration(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "seed": seed,
        "machine": machine(),
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 hands per repeat, not 100,000")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats (default 7)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random hands")
    report_arguments(parser)
    args = parser.parse_args(argv)
    result = run(args.quick, args.seed, args.repeats)
    if emit_report(result, args.out, args.json):
        return 0
    hand = result["per_hand"]
    median = hand["seconds_per_hand_median"]
    print(
        f"per hand (median of {hand['repeats']}): ours (batch kernel) {median['ours'] * 1e9:.1f} ns"
    )
    for name, ratio in hand["ratio_peer_over_ours"].items():
        print(f"  {name}: {median[name] * 1e9:.0f} ns, {ratio:.1f}x ours")
    print(f"  ours, one hand_strength call: {median['ours_hand_strength'] * 1e9:.0f} ns")
    print(f"goal (as fast as {hand['fastest_peer']}): {'met' if hand['goal_met'] else 'NOT met'}")
    enum = result["enumeration"]
    print(
        f"all {enum['hands']:,} seven-card hands: {enum['cpu_seconds']:.2f} s CPU "
        f"({enum['wall_seconds']:.2f} s wall), counts equal the known table; goal "
        f"<= {enum['goal_seconds']:.0f} s: {'met' if enum['goal_met'] else 'NOT met'}"
    )
    before, after = result["load_average_before"][0], result["load_average_after"][0]
    print(f"load average (1 min): {before:.2f} before, {after:.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
