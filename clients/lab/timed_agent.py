"""An agent of the match engine whose hand cycle is timed: what the hold'em field
(``experiments/holdem_field.py``) and the cycle benchmark (``benchmarks/posterior.py --game
holdem2p``) both measure MBBR's cost by, so that their figures are the same quantity."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any


class TimedAgent:
    """Wraps an agent (``act``, ``end_hand``, ``begin_match``, ``name``), adding the time of
    every decision and of every hand's end (the model's update, and whatever solve it runs) to
    ``act_seconds`` and ``end_seconds``, in the process's CPU time by default; ``hands`` counts
    the hands ended."""

    def __init__(self, agent: Any, clock: Callable[[], float] = time.process_time) -> None:
        self.agent = agent
        self.name = agent.name
        self.clock = clock
        self.act_seconds = 0.0
        self.end_seconds = 0.0
        self.hands = 0

    @property
    def seconds(self) -> float:
        """The hand cycle's time so far: every decision and every hand's end."""
        return self.act_seconds + self.end_seconds

    def begin_match(self, game: Any, seat: int, names: Sequence[str]) -> None:
        self.agent.begin_match(game, seat, names)

    def act(self, *args: Any) -> int:
        start = self.clock()
        try:
            return self.agent.act(*args)
        finally:
            self.act_seconds += self.clock() - start

    def end_hand(self, obs: Any) -> None:
        start = self.clock()
        try:
            self.agent.end_hand(obs)
        finally:
            self.end_seconds += self.clock() - start
            self.hands += 1
