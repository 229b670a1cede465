"""The unit a game's win rates are stated in, as the poker literature states them.

A win rate is thousandths of a unit won per hand, and the unit follows the game's forced bets:

* every position posts the same positive blind: an **ante** game (Kuhn, Leduc, every bundled game),
  rates in milli-antes per hand (``mA/h``). With antes of 1 chip these are milli-chips, so the
  figures of the Kuhn and Leduc papers read unchanged;
* blinds that differ (say 1/2): the **big blind** is the largest, rates in milli-big-blinds per
  hand (``mbb/h``, the figure the field quotes for hold'em): 1000 x chips / 2 with blinds 1/2;
* no positive blind at all: the first round's **small bet** (its raise size), rates in
  milli-small-bets per hand (``msb/h``); failing that (a no-limit game without blinds) plain
  milli-chips (``mc/h``).

A game gives its unit (``game.rate_unit``: a :class:`GameDef`'s from its blinds, every compiled game
from its rules); every tally, table header and JSON key names it from there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

MILLI = 1000.0
Chips = TypeVar("Chips", float, np.ndarray)  # one amount, or an array of them


@dataclass(frozen=True)
class RateUnit:
    """A win-rate unit: ``chips`` chips make one unit; a rate is milli-units per hand."""

    label: str  # for table headers: "mbb/h"
    name: str  # spelled out, the ``"unit"`` of a JSON output: "milli-big-blinds per hand"
    key: str  # the JSON key of a rate: "mbb_per_hand"
    base: str  # what one unit is: "big blind"
    chips: int

    def rate(self, chips: Chips, hands: int = 1) -> Chips:
        """Milli-units won per hand by winning ``chips`` chips over ``hands`` hands (element by
        element for an array of them)."""
        return MILLI * chips / (hands * self.chips)

    def to_chips(self, rate: float) -> float:
        """Chips per hand that a rate of ``rate`` milli-units per hand is (the inverse of
        :meth:`rate`): what a budget stated in the game's unit, such as MBBR's safety budget,
        is worth in chips."""
        return rate * self.chips / MILLI

    @property
    def legend(self) -> str:
        """The label defined, for the foot of a table: ``mbb/h: milli-big-blinds per hand (1000 x
        chips won per hand / the big blind of 2 chips)``."""
        chips = "1 chip" if self.chips == 1 else f"{self.chips} chips"
        return f"{self.label}: {self.name} (1000 x chips won per hand / the {self.base} of {chips})"


def ante_unit(chips: int) -> RateUnit:
    """Milli-antes per hand, an ante of ``chips`` chips."""
    return RateUnit("mA/h", "milli-antes per hand", "milli_antes_per_hand", "ante", chips)


def blinds_unit(blinds: Sequence[int], small_bet: int | None) -> RateUnit:
    """The unit of a game posting ``blinds`` (one per position) whose first round bets
    ``small_bet`` chips (None in a no-limit game): see the module docstring."""
    big = max(blinds, default=0)
    if big > 0 and all(b == big for b in blinds):
        return ante_unit(big)
    if big > 0:
        return RateUnit("mbb/h", "milli-big-blinds per hand", "mbb_per_hand", "big blind", big)
    if small_bet:
        return RateUnit(
            "msb/h",
            "milli-small-bets per hand",
            "milli_small_bets_per_hand",
            "small bet",
            small_bet,
        )
    return RateUnit("mc/h", "milli-chips per hand", "milli_chips_per_hand", "chip", 1)
