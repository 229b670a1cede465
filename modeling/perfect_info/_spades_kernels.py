"""Numba kernels for 3-player perfect-information Spades search (see ``spades_search.py``).

Plain arrays in, preallocated arrays out; the validating Python API lives in
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
* **Transposition table** at trick boundaries, keyed by the three rank-compressed hands (only the
  order of the cards still in play matters), the leader and the tricks each player has taken (the
  subtree value depends on all of them and on nothing else once the search parameters are fixed).
  Entries carry a generation number, so a table is reused across searches with the same parameters
  (one hand of play) and invalidated in O(1) otherwise.

Prob-max^n follows ``oppmodel.modeling.perfect_info.search.probmaxn`` (the project's statement of
the rules): children within the absolute tolerance ``TIE_TOL`` of a model's best are tied, because
merged and unmerged trees sum the same products in different orders.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from oppmodel.modeling.games.spades._rules_kernels import (
    ONE,
    bit_index,
    last_trick_winner,
    legal_mask,
    trick_winner,
)
from oppmodel.modeling.games.spades.cards import N_RANKS

TIE_TOL = 1e-9

_H1 = np.uint64(0x9E3779B97F4A7C15)
_H2 = np.uint64(0xC2B2AE3D27D4EB4F)
_H3 = np.uint64(0x165667B19E3779F9)
_H4 = np.uint64(0xD6E8FEB86659FD93)

# stats slots
ST_NODES = 0
ST_TT_HITS = 1
ST_TT_STORES = 2
ST_LEAVES = 3

# search modes
MODE_PROBMAXN = 0
MODE_MAXN = 1
MODE_SOFTMAXN = 2
_LOW32 = np.uint64(0xFFFFFFFF)

# columns of the per-depth integer frame
_TURN = 0
_LEADER = 1
_NTRICK = 2
_NCHILD = 3
_IDX = 4
_SLOT = 5
_WIN = 6
FRAME_COLS = 7


@njit(cache=True)
def gen_moves(
    hands: np.ndarray,
    trick: np.ndarray,
    turn: int,
    leader: int,
    ntrick: int,
    cards_out: np.ndarray,
    mult_out: np.ndarray,
    row: int,
) -> tuple[int, int]:
    """Write merged moves (lowest card, multiplicity) to ``cards_out[row]``, ``mult_out[row]``,
    in ascending card order (rows, not slices: slicing costs reference counting per node).

    Returns (number of merged moves, number of legal cards).
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
            mult_out[row, nchild - 1] += 1
        else:
            cards_out[row, nchild] = c
            mult_out[row, nchild] = 1
            nchild += 1
        prev = c
        prev_low = low
    return nchild, ncards


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
def _meta(tricks: np.ndarray, leader: int) -> np.uint64:
    return np.uint64(leader + 4 * tricks[0] + 128 * tricks[1] + 4096 * tricks[2])


@njit(cache=True)
def _tt_find(k0, k1, k2, meta, tt_keys, tt_gen, gen) -> tuple[int, bool]:
    """Slot of the (canonical) key and whether it holds this key in this generation."""
    h = k0 * _H1 ^ k1 * _H2 ^ k2 * _H3 ^ meta * _H4
    h ^= h >> np.uint64(29)
    slot = np.int64(h & np.uint64(tt_gen.shape[0] - 1))
    hit = (
        tt_gen[slot] == gen
        and tt_keys[slot, 0] == k0
        and tt_keys[slot, 1] == k1
        and tt_keys[slot, 2] == k2
        and tt_keys[slot, 3] == meta
    )
    return slot, hit


@njit(cache=True)
def _tt_claim(slot, keys, d, tt_keys, tt_gen, gen) -> None:
    for j in range(4):
        tt_keys[slot, j] = keys[d, j]
    tt_gen[slot] = gen


@njit(cache=True)
def _leaf(d, tricks, me, util, utrue, res_u, res_t, is_soft) -> None:
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
def _combine_softmaxn(d, turn, nchild, util, cu, pc, res_u, res_t):
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
def _combine_probmaxn(d, turn, nchild, ncards, me, eps, pmodel, mult, cu, ct, pc, res_u, res_t):
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
def _combine_maxn(d, turn, nchild, cu, pc, res_u, res_t):
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
def search(
    mode: int,
    hands: np.ndarray,
    trick: np.ndarray,
    tricks: np.ndarray,
    turn0: int,
    leader0: int,
    me: int,
    eps: float,
    util: np.ndarray,
    pmodel: np.ndarray,
    utrue: np.ndarray,
    cards: np.ndarray,
    mult: np.ndarray,
    ncards_at: np.ndarray,
    cu: np.ndarray,
    ct: np.ndarray,
    pc: np.ndarray,
    res_u: np.ndarray,
    res_t: np.ndarray,
    frame: np.ndarray,
    saved: np.ndarray,
    keys: np.ndarray,
    tt_keys: np.ndarray,
    tt_gen: np.ndarray,
    tt_u: np.ndarray,
    tt_t: np.ndarray,
    gen: int,
    stats: np.ndarray,
) -> None:
    """Max^n, soft-max^n or prob-max^n (``mode``) value of a position, in ``res_u[0]``/``res_t[0]``.

    ``util[p, m, t]``: utility to player p under model m of t tricks in total (max^n: m = 0 only,
    the utility the searcher attributes to p); ``pmodel[p, m]``: prob-max^n weight of model m for
    player p (for ``me``, the opponents' belief about the searcher); ``utrue[t]``: the searcher's
    true utility. ``hands``, ``trick`` (card per seat or -1), ``tricks`` describe the root and are
    restored on return. The root's children are left in ``cards[0]``, ``mult[0]``, ``cu[0]``,
    ``ct[0]``, ``pc[0]`` (probChoice; one-hot for max^n) and ``ncards_at[0]``. Buffers are
    ``(depth, width, ...)`` with depth >= cards left + 1 and width >= the mover's hand size.
    Soft-max^n (hand size <= 7): ``util[p, 0, t]`` is player p's order level for t tricks
    (``util`` has 2 model slots); a value is the set of final trick vectors ``(t0, t1, t2)`` as bit
    ``t0 * (hand size + 1) + t1`` of a 64-bit mask, packed by ``_pack``.
    """
    is_maxn = mode == MODE_MAXN
    is_soft = mode == MODE_SOFTMAXN
    n_models = util.shape[1]
    ntrick0 = 0
    for p in range(3):
        if trick[p] >= 0:
            ntrick0 += 1
    frame[0, _TURN] = turn0
    frame[0, _LEADER] = leader0
    frame[0, _NTRICK] = ntrick0
    d = 0
    entering = True
    while True:
        turn = frame[d, _TURN]
        leader = frame[d, _LEADER]
        ntrick = frame[d, _NTRICK]
        done = False
        if entering:
            stats[ST_NODES] += 1
            frame[d, _SLOT] = -1
            if ntrick == 0:
                w = -1
                if hands[0] == 0 and hands[1] == 0 and hands[2] == 0:
                    done = True
                elif d > 0:
                    w = last_trick_winner(hands, leader)
                    done = w >= 0
                if done:
                    stats[ST_LEAVES] += 1
                    if w >= 0:
                        tricks[w] += 1
                    _leaf(d, tricks, me, util, utrue, res_u, res_t, is_soft)
                    if w >= 0:
                        tricks[w] -= 1
                elif d > 0:
                    k0, k1, k2 = canonical_hands(hands)
                    meta = _meta(tricks, leader)
                    slot, hit = _tt_find(k0, k1, k2, meta, tt_keys, tt_gen, gen)
                    if hit:
                        stats[ST_TT_HITS] += 1
                        for p in range(3):
                            for m in range(n_models):
                                res_u[d, p, m] = tt_u[slot, p, m]
                        res_t[d] = tt_t[slot]
                        done = True
                    else:
                        frame[d, _SLOT] = slot
                        keys[d, 0] = k0
                        keys[d, 1] = k1
                        keys[d, 2] = k2
                        keys[d, 3] = meta
            if not done:
                nchild, ncards = gen_moves(hands, trick, turn, leader, ntrick, cards, mult, d)
                frame[d, _NCHILD] = nchild
                frame[d, _IDX] = 0
                ncards_at[d] = ncards
        else:
            # back from child d + 1: undo its move and record its value
            i = frame[d, _IDX]
            w = frame[d, _WIN]
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
            frame[d, _IDX] = i + 1

        if not done:
            i = frame[d, _IDX]
            nchild = frame[d, _NCHILD]
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
                    frame[d, _WIN] = w
                    frame[d + 1, _TURN] = w
                    frame[d + 1, _LEADER] = w
                    frame[d + 1, _NTRICK] = 0
                else:
                    frame[d, _WIN] = -1
                    frame[d + 1, _TURN] = (turn + 1) % 3
                    frame[d + 1, _LEADER] = leader
                    frame[d + 1, _NTRICK] = ntrick + 1
                d += 1
                entering = True
                continue
            if is_maxn:
                _combine_maxn(d, turn, nchild, cu, pc, res_u, res_t)
            elif is_soft:
                _combine_softmaxn(d, turn, nchild, util, cu, pc, res_u, res_t)
            else:
                _combine_probmaxn(
                    d, turn, nchild, ncards_at[d], me, eps, pmodel, mult, cu, ct, pc, res_u, res_t
                )
            slot = frame[d, _SLOT]
            if slot >= 0:
                stats[ST_TT_STORES] += 1
                _tt_claim(slot, keys, d, tt_keys, tt_gen, gen)
                for p in range(3):
                    for m in range(n_models):
                        tt_u[slot, p, m] = res_u[d, p, m]
                tt_t[slot] = res_t[d]
        if d == 0:
            return
        d -= 1
        entering = False
