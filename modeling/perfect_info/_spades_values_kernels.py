"""Numba kernels of the Spades searches' values (see ``_spades_kernels``, the driver): a leaf's
value, and a node's from its children's by the rule of each search (COMBINE): max^n, soft-max^n
(sets of final trick vectors, packed in two float slots) and prob-max^n.

Prob-max^n follows ``oppmodel.modeling.perfect_info.search.probmaxn`` (the project's statement of
the rules): children within the absolute tolerance ``TIE_TOL`` of a model's best are tied, because
merged and unmerged trees sum the same products in different orders.
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.games.spades._rules_kernels import ONE, bit_index
from oppmodel.modeling.kernel_cache import njit

TIE_TOL = 1e-9
_LOW32 = np.uint64(0xFFFFFFFF)


@njit(cache=True)
def leaf_value(
    d: int,
    tricks: np.ndarray,
    me: int,
    util: np.ndarray,
    utrue: np.ndarray,
    res_u: np.ndarray,
    res_t: np.ndarray,
    is_soft: bool,
) -> None:
    """A leaf's value in ``res_u[d]``, ``res_t[d]`` from the tricks taken: each player's utility
    under each model and the searcher's true one, or soft-max^n's set of this one outcome."""
    if is_soft:
        k = util.shape[2]  # hand size + 1
        pack_set(np.uint64(1) << np.uint64(tricks[0] * k + tricks[1]), res_u, d)
        res_t[d] = 0.0
        return
    for p in range(3):
        for m in range(util.shape[1]):
            res_u[d, p, m] = util[p, m, tricks[p]]
    res_t[d] = utrue[tricks[me]]


@njit(cache=True)
def pack_set(mask: np.uint64, res_u: np.ndarray, d: int) -> None:
    """Soft-max^n: store a 64-bit outcome set exactly as two 32-bit halves in float64 slots, so the
    driver's value plumbing (children, transposition table) carries it unchanged."""
    res_u[d, 0, 0] = float(mask & _LOW32)
    res_u[d, 0, 1] = float(mask >> np.uint64(32))


@njit(cache=True)
def unpack_set(lo: float, hi: float) -> np.uint64:
    """Inverse of ``pack_set``: outcome-set mask from its two float halves."""
    return np.uint64(lo) | (np.uint64(hi) << np.uint64(32))


@njit(cache=True)
def _level_range(mask: np.uint64, mover: int, util: np.ndarray) -> tuple[float, float]:
    """Min and max of the mover's order level ``util[mover, 0, t]`` over an outcome set."""
    k = util.shape[2]
    n = k - 1
    lo = np.inf
    hi = -np.inf
    while mask != 0:
        low = mask & (~mask + ONE)
        mask ^= low
        idx = bit_index(low)
        t0 = idx // k
        t1 = idx % k
        t = t0 if mover == 0 else t1 if mover == 1 else n - t0 - t1
        v = util[mover, 0, t]
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


@njit(cache=True)
def combine_softmaxn(
    d: int,
    turn: int,
    nchild: int,
    util: np.ndarray,
    cu: np.ndarray,
    pc: np.ndarray,
    res_u: np.ndarray,
    res_t: np.ndarray,
) -> None:
    """Soft-max^n: union of the outcome sets of the children no other child dominates.

    The mover's strict preference is ``level(v) > level(w)`` with ``level = util[mover, 0, t]``
    (a strict weak order), so set S dominates T iff ``min_S >= max_T`` and ``max_S > min_T``.
    ``pc[d, i]`` is 1 for the undominated children (the mover's possible choices), else 0.
    Player 1's slots of ``cu`` hold each child's level range (unused otherwise in this mode).
    """
    for i in range(nchild):
        lo, hi = _level_range(unpack_set(cu[d, i, 0, 0], cu[d, i, 0, 1]), turn, util)
        cu[d, i, 1, 0] = lo
        cu[d, i, 1, 1] = hi
    union = np.uint64(0)
    for i in range(nchild):
        dominated = False
        for j in range(nchild):
            if j != i and cu[d, j, 1, 0] >= cu[d, i, 1, 1] and cu[d, j, 1, 1] > cu[d, i, 1, 0]:
                dominated = True
                break
        pc[d, i] = 0.0 if dominated else 1.0
        if not dominated:
            union |= unpack_set(cu[d, i, 0, 0], cu[d, i, 0, 1])
    pack_set(union, res_u, d)
    res_t[d] = 0.0


@njit(cache=True)
def combine_probmaxn(
    d: int,
    turn: int,
    nchild: int,
    ncards: int,
    me: int,
    eps: float,
    pmodel: np.ndarray,
    mult: np.ndarray,
    cu: np.ndarray,
    ct: np.ndarray,
    pc: np.ndarray,
    res_u: np.ndarray,
    res_t: np.ndarray,
) -> None:
    """Sturtevant, Zinkevich & Bowling (2006) Table 2 (COMBINE) plus u_true, with merged moves
    weighted by multiplicity."""
    n_models = cu.shape[3]
    for i in range(nchild):
        pc[d, i] = 0.0
    base = eps / ncards
    for m in range(n_models):
        w = pmodel[turn, m]
        if w == 0.0:
            continue
        best = cu[d, 0, turn, m]
        for i in range(1, nchild):
            if cu[d, i, turn, m] > best:
                best = cu[d, i, turn, m]
        thr = best - TIE_TOL
        nbest = 0
        for i in range(nchild):
            if cu[d, i, turn, m] >= thr:
                nbest += mult[d, i]
        top = (1.0 - eps) / nbest
        for i in range(nchild):
            p_card = base
            if cu[d, i, turn, m] >= thr:
                p_card += top
            pc[d, i] += w * mult[d, i] * p_card
    for p in range(3):
        for m in range(n_models):
            acc = 0.0
            for i in range(nchild):
                acc += pc[d, i] * cu[d, i, p, m]
            res_u[d, p, m] = acc
    if turn == me:
        bt = ct[d, 0]
        for i in range(1, nchild):
            if ct[d, i] > bt:
                bt = ct[d, i]
        res_t[d] = bt
    else:
        acc = 0.0
        for i in range(nchild):
            acc += pc[d, i] * ct[d, i]
        res_t[d] = acc


@njit(cache=True)
def combine_maxn(
    d: int,
    turn: int,
    nchild: int,
    cu: np.ndarray,
    pc: np.ndarray,
    res_u: np.ndarray,
    res_t: np.ndarray,
) -> None:
    """Max^n: the child maximal in the mover's component, ties to the first; probChoice one-hot."""
    best = 0
    for i in range(nchild):
        pc[d, i] = 0.0
        if cu[d, i, turn, 0] > cu[d, best, turn, 0]:
            best = i
    pc[d, best] = 1.0
    for p in range(3):
        res_u[d, p, 0] = cu[d, best, p, 0]
    res_t[d] = 0.0
