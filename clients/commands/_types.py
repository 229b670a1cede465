"""Argument types with ranges, so a number out of range is a usage error before anything runs.

argparse calls a type with the argument's text and reports an ``ArgumentTypeError`` as
``oppmodel CMD: error: argument --flag: MESSAGE`` with exit status 2, the CLI's convention for
every mistake on the command line. Every numeric option of every subcommand uses one of these
(a test walks the parsers to keep it so), and every integer one has an upper bound.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

MAX_PORT = 65535
MAX_SEED = 2**32 - 1  # numpy's and the ACPC dealer's seeds are 32-bit
# Every count has an upper bound, so that a slip of the keyboard is a usage error, not an
# allocation of terabytes (demo --hands 10^12), an overflow deep in numpy, or a run of centuries.
MAX_COUNT = 2**31 - 1  # any count: a C int, what gRPC, SQLite and the numba kernels take
MAX_HANDS = 10_000_000  # hands per match: a few bytes of arrays per hand, hours of play
MAX_RUNS = 100_000  # duplicates, deal sequences, replications, games: each a match or more
MAX_ITERATIONS = 1_000_000_000  # solve: about a millisecond each in Leduc, so days
MAX_PROCESSES = 256  # worker processes, replicas, model workers
MAX_MESSAGE_KB = MAX_COUNT >> 10  # gRPC's message size limits are C ints of bytes


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An integer type accepting ``low <= value <= high``."""
    span = f"from {low} to {high}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {span}, got {value}")
        return value

    parse.__name__ = f"integer {span}"
    return parse


def float_in(
    low: float, high: float = math.inf, *, low_open: bool = False
) -> Callable[[str], float]:
    """A finite float type accepting ``low <= value <= high`` (``low < value`` if ``low_open``)."""
    span = f"{'above' if low_open else 'at least'} {low:g}"
    if high != math.inf:
        span += f" and at most {high:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        too_low = value <= low if low_open else value < low
        if not math.isfinite(value) or too_low or value > high:
            raise argparse.ArgumentTypeError(f"must be {span}, got {text}")
        return value

    parse.__name__ = f"number {span}"
    return parse


positive_int = int_in(1, MAX_COUNT)
non_negative_int = int_in(0, MAX_COUNT)
hands = int_in(1, MAX_HANDS)
runs = int_in(1, MAX_RUNS)
iterations = int_in(1, MAX_ITERATIONS)
processes = int_in(1, MAX_PROCESSES)
port = int_in(0, MAX_PORT)
seed = int_in(0, MAX_SEED)
positive_float = float_in(0.0, low_open=True)
non_negative_float = float_in(0.0)
