"""Numba kernels of the Spades searches' transposition table (see ``transposition.py``).

Entries are keyed at trick boundaries by the three rank-compressed hands (only the order of the
cards still in play matters), the leader and the tricks each player has taken: once the search
parameters are fixed, the value of the subtree depends on all of them and on nothing else. Each
entry carries the generation of the search that stored it, so a table is reused across searches
with the same parameters and invalidated in O(1) otherwise.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from oppmodel.modeling.games.spades._rules_kernels import ONE, bit_index
from oppmodel.modeling.games.spades.cards import N_RANKS
from oppmodel.modeling.kernel_cache import njit

KEY_WORDS = 4  # three canonical hands and the (leader, tricks) word

_H1 = np.uint64(0x9E3779B97F4A7C15)
_H2 = np.uint64(0xC2B2AE3D27D4EB4F)
_H3 = np.uint64(0x165667B19E3779F9)
_H4 = np.uint64(0xD6E8FEB86659FD93)


class TableArrays(NamedTuple):
    """The table as the search kernel takes it: ``keys[slot]`` (``KEY_WORDS`` words), the
    generation ``gen[slot]`` that stored the slot, its values ``u[slot, p, m]`` and ``t[slot]``,
    and ``current``, the generation of this search (the kernel unpacks it once: passing a
    ``NamedTuple`` on to per-node helpers copies all its arrays' fields per call)."""

    keys: np.ndarray
    gen: np.ndarray
    u: np.ndarray
    t: np.ndarray
    current: int


@njit(cache=True)
def canonical_hands(hands: np.ndarray) -> tuple[np.uint64, np.uint64, np.uint64]:
    """Rank-compress the hands: within each suit, the k-th lowest card still in play becomes rank k.

    Only the relative order of the cards in play matters for the rest of a hand, so positions with
    equal canonical hands (and equal leader and trick counts) have equal values.
    """
    o0 = np.uint64(0)
    o1 = np.uint64(0)
    o2 = np.uint64(0)
    inplay = hands[0] | hands[1] | hands[2]
    suit = -1
    k = 0
    while inplay != 0:
        low = inplay & (~inplay + ONE)
        inplay ^= low
        c = bit_index(low)
        s = c // N_RANKS
        if s != suit:
            suit = s
            k = s * N_RANKS
        bit = ONE << np.uint64(k)
        k += 1
        if hands[0] & low:
            o0 |= bit
        elif hands[1] & low:
            o1 |= bit
        else:
            o2 |= bit
    return o0, o1, o2


@njit(cache=True)
def trick_meta(tricks: np.ndarray, leader: int) -> np.uint64:
    """The key's fourth word: the leader and the tricks each player has taken."""
    return np.uint64(leader + 4 * tricks[0] + 128 * tricks[1] + 4096 * tricks[2])


@njit(cache=True)
def find(
    k0: np.uint64,
    k1: np.uint64,
    k2: np.uint64,
    meta: np.uint64,
    tt_keys: np.ndarray,
    tt_gen: np.ndarray,
    gen: int,
) -> tuple[int, bool]:
    """Slot of the key ``(k0, k1, k2, meta)`` and whether it holds this key in generation
    ``gen``."""
    h = k0 * _H1 ^ k1 * _H2 ^ k2 * _H3 ^ meta * _H4
    h ^= h >> np.uint64(29)
    slot = int(h & np.uint64(tt_gen.shape[0] - 1))
    hit = (
        tt_gen[slot] == gen
        and tt_keys[slot, 0] == k0
        and tt_keys[slot, 1] == k1
        and tt_keys[slot, 2] == k2
        and tt_keys[slot, 3] == meta
    )
    return slot, hit


@njit(cache=True)
def claim(
    slot: int, keys: np.ndarray, d: int, tt_keys: np.ndarray, tt_gen: np.ndarray, gen: int
) -> None:
    """Give ``slot`` to the key ``keys[d]`` in generation ``gen`` (rows, not slices, here and
    below: slicing costs reference counting per node)."""
    for j in range(KEY_WORDS):
        tt_keys[slot, j] = keys[d, j]
    tt_gen[slot] = gen


@njit(cache=True)
def copy_value(
    src_u: np.ndarray, src_t: np.ndarray, i: int, dst_u: np.ndarray, dst_t: np.ndarray, j: int
) -> None:
    """``dst_u[j], dst_t[j] = src_u[i], src_t[i]``: a value from the table to a depth's result
    row on a hit, and back on a store."""
    for p in range(src_u.shape[1]):
        for m in range(src_u.shape[2]):
            dst_u[j, p, m] = src_u[i, p, m]
    dst_t[j] = src_t[i]
