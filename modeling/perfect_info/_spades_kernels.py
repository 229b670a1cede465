"""Numba kernels for 3-player perfect-information Spades search (see ``spades_search.py``).

Plain arrays in, preallocated arrays out, handed to ``search`` bundled by role in ``NamedTuple``s
(which numba compiles and caches like plain arguments): the root (``SearchRoot``), the search
parameters (``SearchParams``), the per-depth work buffers (``SearchBuffers``) and the
transposition table (``_transposition_kernels.TableArrays``). The validating Python API lives in
``oppmodel.modeling.perfect_info.spades_search``; the rules (follow suit, trick winner) are the
game's, ``oppmodel.modeling.games.spades._rules_kernels``.

One driver, ``search``, walks the game tree depth-first with an explicit stack (numba cannot cache
recursive functions reliably) and computes max^n, soft-max^n (sets of final trick vectors) or
prob-max^n values (the children's values combined by ``_spades_values_kernels``), with two
exact reductions:

* **Move merging.** Two legal cards of one suit with no card still in play (in a hand or on the
  table) between them lead to isomorphic subtrees, so only the lowest is searched. The merged move
  carries its *multiplicity* (number of cards it stands for); prob-max^n spreads its epsilon mass
  and its ties per card, so values equal those of the unmerged tree (where equivalent cards are
  separate, tied children). Max^n breaks ties to the first child in ascending card order, which is
  the lowest card of a merged group, so it is unchanged too.
* **Transposition table** at trick boundaries (``_transposition_kernels``).
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import numpy as np

from oppmodel.modeling.games.spades._rules_kernels import (
    ONE,
    bit_index,
    last_trick_winner,
    legal_mask,
    trick_winner,
)
from oppmodel.modeling.games.spades.cards import N_PLAYERS, N_RANKS
from oppmodel.modeling.kernel_cache import njit
from oppmodel.modeling.perfect_info import _transposition_kernels as tt
from oppmodel.modeling.perfect_info._spades_values_kernels import (
    combine_maxn,
    combine_probmaxn,
    combine_softmaxn,
    leaf_value,
)
from oppmodel.modeling.perfect_info._transposition_kernels import KEY_WORDS, TableArrays


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


@njit(cache=True, inline="always")
def _trick_boundary(
    d: int,
    hands: np.ndarray,
    tricks: np.ndarray,
    leader: int,
    params: SearchParams,
    res_u: np.ndarray,
    res_t: np.ndarray,
    frame: np.ndarray,
    keys: np.ndarray,
    stats: np.ndarray,
    table: TableArrays,
) -> bool:
    """Node d at a trick boundary: True with its value in ``res_u[d]``, ``res_t[d]`` if it is a
    leaf (the last trick scored) or stored in the table; else False, with the table slot and key
    its value is to be stored at in ``frame[d, SLOT]`` and ``keys[d]`` (none for the root)."""
    w = -1
    if hands[0] == 0 and hands[1] == 0 and hands[2] == 0:
        done = True
    elif d > 0:
        w = last_trick_winner(hands, leader)
        done = w >= 0
    else:
        return False
    if done:
        stats[SearchStat.LEAVES] += 1
        if w >= 0:
            tricks[w] += 1
        mode, me, _, util, _, utrue = params
        leaf_value(d, tricks, me, util, utrue, res_u, res_t, mode == SearchMode.SOFTMAXN)
        if w >= 0:
            tricks[w] -= 1
        return True
    tt_keys, tt_gen, tt_u, tt_t, gen = table
    k0, k1, k2 = tt.canonical_hands(hands)
    meta = tt.trick_meta(tricks, leader)
    slot, hit = tt.find(k0, k1, k2, meta, tt_keys, tt_gen, gen)
    if hit:
        stats[SearchStat.TT_HITS] += 1
        tt.copy_value(tt_u, tt_t, slot, res_u, res_t, d)
        return True
    frame[d, _Frame.SLOT] = slot
    keys[d, 0] = k0
    keys[d, 1] = k1
    keys[d, 2] = k2
    keys[d, 3] = meta
    return False


@njit(cache=True, inline="always")
def _open(
    d: int, root: SearchRoot, params: SearchParams, buf: SearchBuffers, table: TableArrays
) -> bool:
    """Enter node d: True with its value if a leaf or stored in the table, else False with its
    merged moves in ``cards[d]``, ``mult[d]`` to search from the first."""
    hands, trick, tricks, _, _ = root
    cards, mult, ncards_at, _, _, _, res_u, res_t, frame, _, keys, stats = buf
    stats[SearchStat.NODES] += 1
    frame[d, _Frame.SLOT] = -1
    turn = frame[d, _Frame.TURN]
    leader = frame[d, _Frame.LEADER]
    ntrick = frame[d, _Frame.NTRICK]
    if ntrick == 0 and _trick_boundary(
        d, hands, tricks, leader, params, res_u, res_t, frame, keys, stats, table
    ):
        return True
    frame[d, _Frame.NCHILD] = gen_moves(
        hands, trick, turn, leader, ntrick, cards, mult, ncards_at, d
    )
    frame[d, _Frame.IDX] = 0
    return False


@njit(cache=True, inline="always")
def _play_next(d: int, root: SearchRoot, buf: SearchBuffers) -> bool:
    """Play node d's next merged move, node d + 1's frame set; False once all are searched."""
    hands, trick, tricks, _, _ = root
    cards, _, _, _, _, _, _, _, frame, saved, _, _ = buf
    i = frame[d, _Frame.IDX]
    if i >= frame[d, _Frame.NCHILD]:
        return False
    turn = frame[d, _Frame.TURN]
    leader = frame[d, _Frame.LEADER]
    ntrick = frame[d, _Frame.NTRICK]
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
    return True


@njit(cache=True, inline="always")
def _take_back(d: int, root: SearchRoot, buf: SearchBuffers) -> None:
    """Back from child d + 1: undo node d's move and record the child's value."""
    hands, trick, tricks, _, _ = root
    cards, _, _, cu, ct, _, res_u, res_t, frame, saved, _, _ = buf
    i = frame[d, _Frame.IDX]
    turn = frame[d, _Frame.TURN]
    w = frame[d, _Frame.WIN]
    if w >= 0:
        tricks[w] -= 1
        for p in range(3):
            trick[p] = saved[d, p]
    trick[turn] = -1
    hands[turn] ^= ONE << np.uint64(cards[d, i])
    for p in range(3):
        for m in range(cu.shape[3]):
            cu[d, i, p, m] = res_u[d + 1, p, m]
    ct[d, i] = res_t[d + 1]
    frame[d, _Frame.IDX] = i + 1


@njit(cache=True, inline="always")
def _close(d: int, params: SearchParams, buf: SearchBuffers, table: TableArrays) -> None:
    """Node d's children all searched: its value from theirs (by ``params.mode``), stored in
    the table where ``_open`` kept it a slot."""
    mode, me, eps, util, pmodel, _ = params
    _, mult, ncards_at, cu, ct, pc, res_u, res_t, frame, _, keys, stats = buf
    turn = frame[d, _Frame.TURN]
    nchild = frame[d, _Frame.NCHILD]
    if mode == SearchMode.MAXN:
        combine_maxn(d, turn, nchild, cu, pc, res_u, res_t)
    elif mode == SearchMode.SOFTMAXN:
        combine_softmaxn(d, turn, nchild, util, cu, pc, res_u, res_t)
    else:
        combine_probmaxn(
            d, turn, nchild, ncards_at[d], me, eps, pmodel, mult, cu, ct, pc, res_u, res_t
        )
    slot = frame[d, _Frame.SLOT]
    if slot >= 0:
        tt_keys, tt_gen, tt_u, tt_t, gen = table
        stats[SearchStat.TT_STORES] += 1
        tt.claim(slot, keys, d, tt_keys, tt_gen, gen)
        tt.copy_value(res_u, res_t, d, tt_u, tt_t, slot)


# Without reference counting (_nrt=False: it allocates nothing) its helpers, inlined into it at
# numba's IR level, cost nothing; with it, each inlined alias of an array is counted per node.
# (The flag is numba's private one, not in its stubs: mypy sees an unknown overload.)
@njit(cache=True, _nrt=False)  # type: ignore[call-overload, untyped-decorator]
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
    ``t0 * (hand size + 1) + t1`` of a 64-bit mask, packed by ``pack_set``.

    Depth first with an explicit stack: open a node (``_open``: a leaf, a stored value, or its
    moves), play its moves one by one into its children (``_play_next``), take each back with the
    child's value (``_take_back``), and close it (``_close``: combine and store).
    """
    trick = root.trick
    frame = buf.frame
    ntrick0 = 0
    for p in range(3):
        if trick[p] >= 0:
            ntrick0 += 1
    frame[0, _Frame.TURN] = root.turn
    frame[0, _Frame.LEADER] = root.leader
    frame[0, _Frame.NTRICK] = ntrick0
    d = 0
    entering = True
    while True:
        if entering:
            done = _open(d, root, params, buf, table)
        else:
            _take_back(d, root, buf)
            done = False
        if not done:
            if _play_next(d, root, buf):
                d += 1
                entering = True
                continue
            _close(d, params, buf, table)
        if d == 0:
            return
        d -= 1
        entering = False
