"""The hand-strength measure hold'em styles are defined on: HS, the share of one opponent's
possible hands that ours beats now, ties counting one half.

On the flop, turn and river, HS compares the best hands of the hole plus the board against every
two-card hand of the cards we do not see (``river_strength`` of the card abstraction, on a board
of three or four cards too). Before the flop no hand is made, so hands are ordered by their
preflop E[HS^2] (the card abstraction's :func:`~oppmodel.modeling.games.acpc.abstraction.strength`
on no board, the same number for every hand of a suit-relabelling class) and HS is the share of
the opponent's hands whose E[HS^2] is lower: the same share-of-hands-beaten, by the preflop order.
So HS is spread over [0, 1] in every round, and a threshold on it means the same fraction of
hands whatever the board (a style's "top quarter" is a top quarter on every street).

Computed for a whole range in one kernel call (the range is what the local best response weighs):
the value of every hand of the deck on the board, then each queried hand against the live hands.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc._hand_rank_kernels import CARD_BITS
from oppmodel.modeling.games.acpc.abstraction import (
    ALL_HOLES,
    HOLE_INDEX,
    AbstractionConfig,
    range_strengths,
    strength,
)
from oppmodel.modeling.holdem import _strength_kernels as kernels
from oppmodel.modeling.holdem.policy import CARD_NAMES


def hole_rows(holes: np.ndarray) -> np.ndarray:
    """The rows of :data:`ALL_HOLES` of a (k, 2) array of two distinct cards each;
    InvalidArgumentError naming the first bad row."""
    holes = np.asarray(holes, dtype=np.int64).reshape(-1, 2)
    rows = kernels.pair_rows(holes, HOLE_INDEX)  # one pass: a posterior update asks per round
    if (rows < 0).any():
        i = int(np.flatnonzero(rows < 0)[0])
        raise InvalidArgumentError("holes", f"row {i} {holes[i].tolist()} is no two-card hand")
    return rows


@functools.cache
def preflop_values() -> np.ndarray:
    """(1326,) the preflop E[HS^2] of every hand of :data:`ALL_HOLES` (the card abstraction's
    default configuration), computed once per process for each of the 169 suit classes."""
    config = AbstractionConfig()
    by_class: dict[tuple[int, int, bool], float] = {}
    out = np.empty(len(ALL_HOLES))
    for h, (a, b) in enumerate(ALL_HOLES.tolist()):
        key = (max(a // 4, b // 4), min(a // 4, b // 4), a % 4 == b % 4)
        if key not in by_class:
            by_class[key] = strength(
                [CARD_NAMES[a], CARD_NAMES[b]], [], rollouts=config.rollouts, seed=config.seed
            )
        out[h] = by_class[key]
    out.setflags(write=False)
    return out


def hand_strength_share(holes: np.ndarray, board: Sequence[int]) -> np.ndarray:
    """(k,) HS of each row of ``holes`` ((k, 2) card integers) on ``board`` (0, 3, 4 or 5 card
    integers, none in any hole): see the module's text."""
    rows = hole_rows(holes)
    if len(board) not in (0, 3, 4, 5):
        raise InvalidArgumentError("board", f"need 0, 3, 4 or 5 cards, got {list(board)}")
    if board:
        cardset = int(np.bitwise_or.reduce(CARD_BITS[list(board)]))
        values = kernels.board_values(ALL_HOLES, np.int64(cardset))
        if (values[rows] < 0).any():
            raise InvalidArgumentError("holes", f"a hole shares a card with the board {board}")
    else:
        values = preflop_values()
    return kernels.beaten_share(ALL_HOLES, values, rows)


def warm_up() -> None:
    """Compute the preflop order and load the kernels now (seconds, once per process), so that
    no timed decision of a match waits for them: the strength kernels, and the card
    abstraction's that bucket a board (a blueprint's first turn would load them)."""
    hand_strength_share(ALL_HOLES[:1], [])
    hand_strength_share(ALL_HOLES[-1:], [0, 1, 2])
    range_strengths((0, 1, 2, 3), rollouts=0, seed=0)
