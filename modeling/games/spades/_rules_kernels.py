"""Numba kernels of the Spades rules on card bitmasks, shared by the game state and the searches.

Card ``c`` in 0..51 is suit ``c // 13`` (0 clubs, 1 diamonds, 2 hearts, 3 spades = trump) and rank
``c % 13`` (0 = two ... 12 = ace); a hand is a ``uint64`` with bit ``c`` set for each card held.
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.games.spades.cards import N_RANKS, SPADES
from oppmodel.modeling.kernel_cache import njit

ONE = np.uint64(1)
SUIT_MASK = np.array([((1 << 13) - 1) << (13 * s) for s in range(4)], dtype=np.uint64)

_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_DEBRUIJN_INDEX = np.zeros(64, dtype=np.int64)
for _i in range(64):
    _DEBRUIJN_INDEX[((1 << _i) * 0x03F79D71B4CB0A89 & (2**64 - 1)) >> 58] = _i


@njit(cache=True)
def beats(c: int, best: int) -> bool:
    """Whether card ``c`` beats the trick's best card so far (same suit and higher, or a trump)."""
    cs = c // N_RANKS
    bs = best // N_RANKS
    return (cs == bs and c > best) or (cs == SPADES and bs != SPADES)


@njit(cache=True)
def trick_winner(trick: np.ndarray, leader: int) -> int:
    """Seat that wins a complete trick: highest spade if any, else highest card of the led suit."""
    best = leader
    bc = trick[leader]
    for k in range(1, 3):
        p = (leader + k) % 3
        c = trick[p]
        if beats(c, bc):
            best = p
            bc = c
    return best


@njit(cache=True)
def legal_mask(hand: np.uint64, lead_suit: int) -> np.uint64:
    """Cards of ``hand`` that may be played: the led suit if held (follow suit), else any card."""
    if lead_suit < 0:
        return hand
    s = hand & SUIT_MASK[lead_suit]
    if s != np.uint64(0):
        return s
    return hand


@njit(cache=True)
def bit_index(low: np.uint64) -> int:
    """Index of the single set bit of ``low`` (de Bruijn multiplication)."""
    return _DEBRUIJN_INDEX[(low * _DEBRUIJN) >> np.uint64(58)]


@njit(cache=True)
def lowest_card(h: np.uint64) -> int:
    """Lowest card of a non-empty hand."""
    return bit_index(h & (~h + ONE))


@njit(cache=True)
def last_trick_winner(hands: np.ndarray, leader: int) -> int:
    """Winner of the last trick when every hand holds exactly one card, else -1.

    Playing it out is forced, so the searches resolve it directly instead of expanding 3 nodes.
    """
    for p in range(3):
        h = hands[p]
        if h == 0 or (h & (h - ONE)) != 0:
            return -1
    best = leader
    bc = lowest_card(hands[leader])
    for k in range(1, 3):
        p = (leader + k) % 3
        c = lowest_card(hands[p])
        if beats(c, bc):
            best = p
            bc = c
    return best
