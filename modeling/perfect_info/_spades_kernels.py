"""Numba kernels for 3-player perfect-information Spades search (see ``spades_search.py``).

Plain arrays in, preallocated arrays out, handed to ``search`` bundled by role in ``NamedTuple``s
(which numba compiles and caches like plain arguments): the root (``SearchRoot``), the search
parameters (``SearchParams``), the per-depth work buffers (``SearchBuffers``) and the
transposition table (``_transposition_kernels.TableArrays``). The validating Python API lives in
``oppmodel.modeling.perfect_info.spades_search``; the rules (follow suit, trick winner) are the
game's, ``oppmodel.modeling.games.spades._rules_kernels``.

One driver, ``search``, walks the game tree depth-first with an explicit stack (numba cannot cache
recursive functions reliably) and computes max^n, soft-max^n (sets of final trick vectors) or
prob-max^n values, with two exact reductions:

* **Move merging.** Two legal cards of one suit with no card still in play (in a hand or on the
  table) between them lead to isomorphic subtrees, so only the lowest is searched. The merged move
  carries its *multiplicity* (number of cards it stands for); prob-max^n spreads its epsilon mass
  and its ties per card, so values equal those of the unmerged tree (where equivalent cards are
  separate, tied children). Max^n breaks ties to the first child in ascending card order, which is
  the lowest card of a merged group, so it is unchanged too.
* **Transposition table** at trick boundaries (``_transposition_kernels``).

Prob-max^n follows ``oppmodel.modeling.perfect_info.search.probmaxn`` (the project's statement of
the rules): children within the absolute tolerance ``TIE_TOL`` of a model's best are tied, because
merged and unmerged trees sum the same products in different orders.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import numpy as np
from numba import njit

from oppmodel.modeling.games.spades._rules_kernels import (
    ONE,
    bit_index,
    last_trick_winner,
    legal_mask,
    trick_winner,
)
from oppmodel.modeling.games.spades.cards import N_PLAYERS, N_RANKS
from oppmodel.modeling.perfect_info import _transposition_kernels as tt
from oppmodel.modeling.perfect_info._transposition_kernels import KEY_WORDS, TableArrays

TIE_TOL = 1e-9
_LOW32 = np.uint64(0xFFFFFFFF)


class SearchMode(IntEnum):
    """What ``search`` computes."""

    PROBMAXN = 0
    MAXN = 1
    SOFTMAXN = 2


class SearchStat(IntEnum):
    """Slots of ``SearchBuffers.stats``."""

    NODES = 0
    TT_HITS = 1
    TT_STORES = 2
    LEAVES = 3


class _Frame(IntEnum):
    """Columns of the per-depth integer frame."""

    TURN = 0
    LEADER = 1
    NTRICK = 2
    NCHILD = 3
    IDX = 4
    SLOT = 5
    WIN = 6


class SearchRoot(NamedTuple):
    """The position searched: ``hands`` (uint64 masks), ``trick`` (card per seat or -1),
    ``tricks`` (taken so far) are changed during the search and restored on return."""

    hands: np.ndarray
    trick: np.ndarray
    tricks: np.ndarray
    turn: int
    leader: int


class SearchParams(NamedTuple):
    """What to compute (``search``'s docstring says how ``util``, ``pmodel``, ``utrue`` read)."""

    mode: int  # a SearchMode
    me: int
    eps: float
    util: np.ndarray
    pmodel: np.ndarray
    utrue: np.ndarray


class SearchBuffers(NamedTuple):
    """Per-depth work arrays; row 0 holds the root's children and value on return.

    ``cards[d, i]``, ``mult[d, i]``: merged move i at depth d and its multiplicity; ``ncards[d]``:
    legal cards there; ``cu[d, i, p, m]``, ``ct[d, i]``: the child's values; ``pc[d, i]``:
    probChoice; ``res_u[d]``, ``res_t[d]``: the node's value; ``frame``, ``saved``, ``keys``: the
    explicit stack (``_Frame`` columns, the completed trick, the table key); ``stats``:
    ``SearchStat`` counters.
    """

    cards: np.ndarray
    mult: np.ndarray
    ncards: np.ndarray
    cu: np.ndarray
    ct: np.ndarray
    pc: np.ndarray
    res_u: np.ndarray
    res_t: np.ndarray
    frame: np.ndarray
    saved: np.ndarray
    keys: np.ndarray
    stats: np.ndarray


def make_buffers(depth: int, width: int, n_models: int) -> SearchBuffers:
    """Zeroed buffers for ``depth`` levels (cards left + 1) of at most ``width`` merged moves."""
    return SearchBuffers(
        cards=np.zeros((depth, width), dtype=np.int64),
        mult=np.zeros((depth, width), dtype=np.int64),
        ncards=np.zeros(depth, dtype=np.int64),
        cu=np.zeros((depth, width, N_PLAYERS, n_models)),
        ct=np.zeros((depth, width)),
        pc=np.zeros((depth, width)),
        res_u=np.zeros((depth + 1, N_PLAYERS, n_models)),
        res_t=np.zeros(depth + 1),
        frame=np.zeros((depth + 1, len(_Frame)), dtype=np.int64),
        saved=np.zeros((depth, N_PLAYERS), dtype=np.int64),
        keys=np.zeros((depth, KEY_WORDS), dtype=np.uint64),
        stats=np.zeros(len(SearchStat), dtype=np.int64),
    )


@njit(cache=True)
def gen_moves(
    hands: np.ndarray,
    trick: np.ndarray,
    turn: int,
    leader: int,
    ntrick: int,
    cards: np.ndarray,
    mult: np.ndarray,
    ncards_at: np.ndarray,
    d: int,
) -> int:
    """Write merged moves (lowest card, multiplicity) to ``cards[d]``, ``mult[d]``, in ascending
    card order (rows, not slices: slicing costs reference counting per node), and the number of
    legal cards to ``ncards_at[d]``. Returns the number of merged moves.
    """
    hand = hands[turn]
    lead_suit = -1
    inplay = hands[0] | hands[1] | hands[2]
    if ntrick > 0:
        lead_suit = trick[leader] // N_RANKS
        for p in range(3):
            if trick[p] >= 0:
                inplay |= ONE << np.uint64(trick[p])
    legal = legal_mask(hand, lead_suit)
    nchild = 0
    ncards = 0
    prev_low = np.uint64(0)
    prev = -1
    while legal != 0:
        low = legal & (~legal + ONE)
        legal ^= low
        c = bit_index(low)
        ncards += 1
        between = (low - ONE) & ~((prev_low << ONE) - ONE)
        if prev >= 0 and c // N_RANKS == prev // N_RANKS and (inplay & between) == 0:
            mult[d, nchild - 1] += 1
        else:
            cards[d, nchild] = c
            mult[d, nchild] = 1
            nchild += 1
        prev = c
        prev_low = low
    ncards_at[d] = ncards
    return nchild


@njit(cache=True)
def _leaf(
    d: int,
    tricks: np.ndarray,
    me: int,
    util: np.ndarray,
    utrue: np.ndarray,
    res_u: np.ndarray,
    res_t: np.ndarray,
    is_soft: bool,
) -> None:
    if is_soft:
        k = util.shape[2]  # hand size + 1
        _pack(np.uint64(1) << np.uint64(tricks[0] * k + tricks[1]), res_u, d)
        res_t[d] = 0.0
        return
    for p in range(3):
        for m in range(util.shape[1]):
            res_u[d, p, m] = util[p, m, tricks[p]]
    res_t[d] = utrue[tricks[me]]


@njit(cache=True)
def _pack(mask: np.uint64, res_u: np.ndarray, d: int) -> None:
    """Soft-max^n: store a 64-bit outcome set exactly as two 32-bit halves in float64 slots, so the
    driver's value plumbing (children, transposition table) carries it unchanged."""
    res_u[d, 0, 0] = float(mask & _LOW32)
    res_u[d, 0, 1] = float(mask >> np.uint64(32))


@njit(cache=True)
def unpack_set(lo: float, hi: float) -> np.uint64:
    """Inverse of ``_pack``: outcome-set mask from its two float halves."""
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
def _combine_softmaxn(
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
    _pack(union, res_u, d)
    res_t[d] = 0.0


@njit(cache=True)
def _combine_probmaxn(
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
def _combine_maxn(
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


@njit(cache=True)
def search(root: SearchRoot, params: SearchParams, buf: SearchBuffers, table: TableArrays) -> None:
    """Max^n, soft-max^n or prob-max^n (``params.mode``) value of ``root``, in ``buf.res_u[0]``,
    ``buf.res_t[0]``.

    ``util[p, m, t]``: utility to player p under model m of t tricks in total (max^n: m = 0 only,
    the utility the searcher attributes to p); ``pmodel[p, m]``: prob-max^n weight of model m for
    player p (for ``me``, the opponents' belief about the searcher); ``utrue[t]``: the searcher's
    true utility. The root's children are left in row 0 of ``cards``, ``mult``, ``cu``, ``ct``,
    ``pc`` (probChoice; one-hot for max^n) and ``ncards``. Buffers are ``(depth, width, ...)``
    with depth >= cards left + 1 and width >= the mover's hand size (``make_buffers``).
    Soft-max^n (hand size <= 7): ``util[p, 0, t]`` is player p's order level for t tricks
    (``util`` has 2 model slots); a value is the set of final trick vectors ``(t0, t1, t2)`` as bit
    ``t0 * (hand size + 1) + t1`` of a 64-bit mask, packed by ``_pack``.
    """
    # Unpacked once: handing a bundle on to the per-node helpers would copy all its arrays'
    # descriptors per call (measured 25-40% slower than passing each helper the arrays it reads).
    hands, trick, tricks, turn0, leader0 = root
    mode, me, eps, util, pmodel, utrue = params
    cards, mult, ncards_at, cu, ct, pc, res_u, res_t, frame, saved, keys, stats = buf
    tt_keys, tt_gen, tt_u, tt_t, gen = table
    n_models = cu.shape[3]
    is_soft = mode == SearchMode.SOFTMAXN
    ntrick0 = 0
    for p in range(3):
        if trick[p] >= 0:
            ntrick0 += 1
    frame[0, _Frame.TURN] = turn0
    frame[0, _Frame.LEADER] = leader0
    frame[0, _Frame.NTRICK] = ntrick0
    d = 0
    entering = True
    while True:
        turn = frame[d, _Frame.TURN]
        leader = frame[d, _Frame.LEADER]
        ntrick = frame[d, _Frame.NTRICK]
        done = False
        if entering:
            stats[SearchStat.NODES] += 1
            frame[d, _Frame.SLOT] = -1
            if ntrick == 0:
                w = -1
                if hands[0] == 0 and hands[1] == 0 and hands[2] == 0:
                    done = True
                elif d > 0:
                    w = last_trick_winner(hands, leader)
                    done = w >= 0
                if done:
                    stats[SearchStat.LEAVES] += 1
                    if w >= 0:
                        tricks[w] += 1
                    _leaf(d, tricks, me, util, utrue, res_u, res_t, is_soft)
                    if w >= 0:
                        tricks[w] -= 1
                elif d > 0:
                    k0, k1, k2 = tt.canonical_hands(hands)
                    meta = tt.trick_meta(tricks, leader)
                    slot, hit = tt.find(k0, k1, k2, meta, tt_keys, tt_gen, gen)
                    if hit:
                        stats[SearchStat.TT_HITS] += 1
                        tt.copy_value(tt_u, tt_t, slot, res_u, res_t, d)
                        done = True
                    else:
                        frame[d, _Frame.SLOT] = slot
                        keys[d, 0] = k0
                        keys[d, 1] = k1
                        keys[d, 2] = k2
                        keys[d, 3] = meta
            if not done:
                frame[d, _Frame.NCHILD] = gen_moves(
                    hands, trick, turn, leader, ntrick, cards, mult, ncards_at, d
                )
                frame[d, _Frame.IDX] = 0
        else:
            # back from child d + 1: undo its move and record its value
            i = frame[d, _Frame.IDX]
            w = frame[d, _Frame.WIN]
            if w >= 0:
                tricks[w] -= 1
                for p in range(3):
                    trick[p] = saved[d, p]
            trick[turn] = -1
            hands[turn] ^= ONE << np.uint64(cards[d, i])
            for p in range(3):
                for m in range(n_models):
                    cu[d, i, p, m] = res_u[d + 1, p, m]
            ct[d, i] = res_t[d + 1]
            frame[d, _Frame.IDX] = i + 1

        if not done:
            i = frame[d, _Frame.IDX]
            nchild = frame[d, _Frame.NCHILD]
            if i < nchild:
                c = cards[d, i]
                hands[turn] ^= ONE << np.uint64(c)
                trick[turn] = c
                if ntrick == 2:
                    w = trick_winner(trick, leader)
                    for p in range(3):
                        saved[d, p] = trick[p]
                        trick[p] = -1
                    tricks[w] += 1
                    frame[d, _Frame.WIN] = w
                    frame[d + 1, _Frame.TURN] = w
                    frame[d + 1, _Frame.LEADER] = w
                    frame[d + 1, _Frame.NTRICK] = 0
                else:
                    frame[d, _Frame.WIN] = -1
                    frame[d + 1, _Frame.TURN] = (turn + 1) % 3
                    frame[d + 1, _Frame.LEADER] = leader
                    frame[d + 1, _Frame.NTRICK] = ntrick + 1
                d += 1
                entering = True
                continue
            if mode == SearchMode.MAXN:
                _combine_maxn(d, turn, nchild, cu, pc, res_u, res_t)
            elif is_soft:
                _combine_softmaxn(d, turn, nchild, util, cu, pc, res_u, res_t)
            else:
                _combine_probmaxn(
                    d, turn, nchild, ncards_at[d], me, eps, pmodel, mult, cu, ct, pc, res_u, res_t
                )
            slot = frame[d, _Frame.SLOT]
            if slot >= 0:
                stats[SearchStat.TT_STORES] += 1
                tt.claim(slot, keys, d, tt_keys, tt_gen, gen)
                tt.copy_value(res_u, res_t, d, tt_u, tt_t, slot)
        if d == 0:
            return
        d -= 1
        entering = False
