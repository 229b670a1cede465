"""Scoring of 3-player Spades: a hand's points, the running game score, and the MT / mOT utilities.

* **Scoring a hand.** With bid ``b`` and ``t`` tricks: ``t >= b`` scores ``10 b + (t - b)`` (one
  point per overtrick), ``t < b`` scores ``-10 b``. Overtricks accumulate as *bags*; whenever a
  player's bags reach 10, it loses 100 points and 10 bags.
* **A game** is a sequence of hands that ends after the first hand at whose end some player has at
  least 300 points (or after ``max_hands`` hands, a guard that real play never reaches). The highest
  score wins; players tied for the highest score share the win equally (each gets ``1/k`` of it).

Utilities of one hand's outcome (Sturtevant, Zinkevich & Bowling 2006, "Example" and Figure 4):

* **MT** (maximise tricks) is the hand's payoff itself: ``10 b + (t - b)`` if made, ``-10 b``
  if not.
* **mOT** (minimise overtricks) subtracts each overtrick instead of adding it: ``10 b - (t - b)``
  if made, ``-10 b`` if not. Figure 4: bid 3 with 4 tricks pays 31, worth 31 to MT and
  ``31 - 2 = 29`` to mOT; making the bid exactly (30) is mOT's best outcome. (The paper's words,
  "subtracts the number of overtricks from a player's score", read with score = ``10 b``.)

Neither utility looks at the running score or bags: the paper defines them per hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.spades.cards import N_PLAYERS


class UtilityModel(IntEnum):
    """A player type's utility of one hand (module docstring).

    The value indexes the model axis of the searches' arrays; ``label`` is the paper's name, the
    one used on the wire and on the command line.
    """

    MT = 0
    MOT = 1

    @property
    def label(self) -> str:
        """``"MT"`` or ``"mOT"``."""
        return "mOT" if self is UtilityModel.MOT else "MT"

    @classmethod
    def parse(cls, model: int | str) -> UtilityModel:
        """The model named by a label (``"MT"``, ``"mOT"``) or an index (0, 1)."""
        if isinstance(model, str):
            if model not in MODEL_LABELS:
                raise InvalidArgumentError("model", f"must be one of {MODEL_LABELS}, got {model!r}")
            return cls(MODEL_LABELS.index(model))
        if model not in (cls.MT, cls.MOT):
            raise InvalidArgumentError("model", f"must be 0 (MT) or 1 (mOT), got {model}")
        return cls(int(model))


MODEL_LABELS: tuple[str, ...] = tuple(m.label for m in UtilityModel)


def hand_score(bid_: int, tricks: int) -> int:
    """Points for one hand: ``10 b + overtricks`` if the bid is made, ``-10 b`` if not."""
    return 10 * bid_ + (tricks - bid_) if tricks >= bid_ else -10 * bid_


def utility(model: int | str, bid_: int, tricks: int) -> int:
    """Utility of taking ``tricks`` with bid ``bid_`` under model MT or mOT (module docstring)."""
    m = UtilityModel.parse(model)
    if tricks < bid_:
        return -10 * bid_
    return 10 * bid_ + (tricks - bid_) * (1 if m == UtilityModel.MT else -1)


def utility_table(model: int | str, bid_: int, max_tricks: int) -> np.ndarray:
    """``utility(model, bid_, t)`` for ``t = 0..max_tricks``."""
    return np.array([utility(model, bid_, t) for t in range(max_tricks + 1)], dtype=np.float64)


@dataclass(frozen=True)
class Scoreboard:
    """Running game score: points and bags (accumulated overtricks modulo 10) per seat."""

    scores: tuple[int, int, int] = (0, 0, 0)
    bags: tuple[int, int, int] = (0, 0, 0)

    def after_hand(self, bids_: Sequence[int], tricks: Sequence[int]) -> Scoreboard:
        """Add a hand's points; every 10 accumulated overtricks cost 100 points."""
        scores = list(self.scores)
        bags = list(self.bags)
        for p in range(N_PLAYERS):
            scores[p] += hand_score(bids_[p], tricks[p])
            if tricks[p] >= bids_[p]:
                bags[p] += tricks[p] - bids_[p]
                while bags[p] >= 10:
                    scores[p] -= 100
                    bags[p] -= 10
        return Scoreboard(scores=tuple(scores), bags=tuple(bags))  # type: ignore[arg-type]

    def is_over(self, target: int = 300) -> bool:
        """True once some player has at least ``target`` points."""
        return max(self.scores) >= target

    def win_shares(self) -> tuple[float, float, float]:
        """Each seat's share of the win: 1/k for each of the k seats tied for the top score."""
        top = max(self.scores)
        k = sum(s == top for s in self.scores)
        return tuple(1.0 / k if s == top else 0.0 for s in self.scores)  # type: ignore[return-value]
