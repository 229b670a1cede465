"""Max^n, soft-max^n and prob-max^n search over one hand of 3-player perfect-information Spades.

The game (cards, state, bidding, scoring and the MT / mOT utilities) is
``oppmodel.modeling.games.spades``; the searches are those of Sturtevant, Zinkevich & Bowling (2006)
and Sturtevant (2004); see ``_spades_kernels`` for the exact reductions used:

* ``maxn_search``: max^n with one fixed utility per player (the searcher's own, and the model it
  assumes for each opponent); ties go to the first child in ascending card order.
* ``probmaxn_search``: prob-max^n with two epsilon-greedy models (MT, mOT) per player, weights
  ``probModel[p, m]``; the row of the searcher is the opponents' belief about the searcher; the
  searcher's true utility ``u_true`` is maximised at its own nodes and the move maximises it at the
  root (ties to the first child). ``oppmodel.modeling.perfect_info.search.probmaxn`` states the
  rules; on the unmerged tree the numbers agree to 1e-9.
* ``softmaxn_search``: soft-max^n: values are max^n sets of final trick vectors; the searcher
  orders outcomes by its true utility, opponents by the generic MT-or-mOT order (``generic_level``).

All three search a whole 7-card hand to the end (about 5-10 ms of CPU for a first move, see
``benchmarks/spades.py``), from any state, mid-trick included, through a ``SearchTable``
(``transposition.py``) that one hand's searches can share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.spades.cards import MAX_HAND_SIZE, N_PLAYERS
from oppmodel.modeling.games.spades.scoring import UtilityModel, utility_table
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.modeling.perfect_info import _spades_kernels as K
from oppmodel.modeling.perfect_info._spades_kernels import SearchMode, SearchStat
from oppmodel.modeling.perfect_info._spades_values_kernels import TIE_TOL, unpack_set
from oppmodel.modeling.perfect_info.model_weights import choice_likelihood
from oppmodel.modeling.perfect_info.transposition import SearchTable


@dataclass(frozen=True, eq=False)
class MaxnResult:
    """Max^n at a state: chosen card, root value vector, and each merged move's value."""

    move: int
    value: np.ndarray
    moves: tuple[int, ...]
    multiplicities: tuple[int, ...]
    child_values: np.ndarray
    nodes: int
    tt_hits: int


@dataclass(frozen=True, eq=False)
class ProbMaxnResult:
    """Prob-max^n at a state (``oppmodel.modeling.perfect_info.search.probmaxn`` states the
    rules).

    ``move``: the searcher's choice (``None`` when another seat moves at the root);
    ``u[p, m]``: utility matrix of the root; ``u_true``: the searcher's expected true utility;
    ``moves[i]``: lowest card of a merged group of ``multiplicities[i]`` cards; ``prob_choice[i]``:
    probability the mover plays some card of group i; ``child_u[i]``, ``child_true[i]``: the
    group's values; ``n_cards``: number of legal cards (the epsilon-greedy denominator).
    """

    mover: int
    move: int | None
    u: np.ndarray
    u_true: float
    moves: tuple[int, ...]
    multiplicities: tuple[int, ...]
    prob_choice: np.ndarray
    child_u: np.ndarray
    child_true: np.ndarray
    n_cards: int
    eps: float
    nodes: int
    tt_hits: int

    def choice_likelihood(self, card: int) -> np.ndarray:
        """``L[m] = P(mover plays card | mover is epsilon-greedy model m)`` at this root.

        The likelihood vector of an observed choice, for learning model weights (Sturtevant,
        Zinkevich & Bowling 2006, "Learning in Prob-Max^n";
        ``oppmodel.modeling.perfect_info.model_weights.choice_likelihood`` on the unmerged
        children, each merged move repeated once per card it stands for).
        """
        i = _group_of(self.moves, card)
        per_card = np.repeat(self.child_u[:, self.mover, :], self.multiplicities, axis=0)
        chosen = sum(self.multiplicities[:i])
        return choice_likelihood(per_card, chosen, self.eps, tie_tol=TIE_TOL)


def first_best(values: Sequence[float] | np.ndarray) -> int:
    """Index of the first value within ``TIE_TOL`` of the maximum (ties to the first)."""
    v = np.asarray(values, dtype=np.float64)
    return int(np.argmax(v >= v.max() - TIE_TOL))


def _group_of(moves: Sequence[int], card: int) -> int:
    i = int(np.searchsorted(np.asarray(moves), card, side="right")) - 1
    if i < 0 or moves[i] // 13 != card // 13:
        raise IllegalActionError("card", f"{card} is not among the legal moves")
    return i


def _prepare(state: SpadesState, bids_: Sequence[int]) -> int:
    """Validate a search root; returns the hand size (most tricks anyone can take)."""
    state.validate()
    if state.is_terminal:
        raise InvalidArgumentError("position", "the hand is over; there is nothing to search")
    if len(bids_) != N_PLAYERS or any(not 0 <= b <= MAX_HAND_SIZE for b in bids_):
        raise InvalidArgumentError("bids", f"must be three integers in 0..{MAX_HAND_SIZE}")
    return sum(state.tricks) + state.hands[state.turn].bit_count()


@dataclass(frozen=True, eq=False)
class _RootOutput:
    moves: tuple[int, ...]
    multiplicities: tuple[int, ...]
    n_cards: int
    u: np.ndarray
    u_true: float
    child_u: np.ndarray
    child_true: np.ndarray
    prob_choice: np.ndarray
    nodes: int
    tt_hits: int


def _run(
    state: SpadesState, params: K.SearchParams, *, table: SearchTable, generation: int
) -> _RootOutput:
    """Allocate the per-depth buffers, run the kernel, and copy out the root's children."""
    n_models = params.util.shape[1]
    depth = sum(h.bit_count() for h in state.hands) + 1
    width = max(1, state.hands[state.turn].bit_count())
    kind = "maxn" if params.mode == SearchMode.MAXN else "probmaxn"
    root = K.SearchRoot(
        hands=np.array(state.hands, dtype=np.uint64),
        trick=np.array(state.trick, dtype=np.int64),
        tricks=np.array(state.tricks, dtype=np.int64),
        turn=state.turn,
        leader=state.leader,
    )
    buf = K.make_buffers(depth, width, n_models)
    K.search(root, params, buf, table.arrays(kind, n_models, generation))
    n = int(np.count_nonzero(buf.mult[0]))
    return _RootOutput(
        moves=tuple(int(c) for c in buf.cards[0, :n]),
        multiplicities=tuple(int(k) for k in buf.mult[0, :n]),
        n_cards=int(buf.ncards[0]),
        u=buf.res_u[0].copy(),
        u_true=float(buf.res_t[0]),
        child_u=buf.cu[0, :n].copy(),
        child_true=buf.ct[0, :n].copy(),
        prob_choice=buf.pc[0, :n].copy(),
        nodes=int(buf.stats[SearchStat.NODES]),
        tt_hits=int(buf.stats[SearchStat.TT_HITS]),
    )


def maxn_search(
    state: SpadesState,
    bids_: Sequence[int],
    models: Sequence[int | str],
    table: SearchTable | None = None,
) -> MaxnResult:
    """Max^n from ``state``; ``models[p]`` is the utility (MT or mOT) the searcher gives seat p."""
    if len(models) != N_PLAYERS:
        raise InvalidArgumentError("models", "must give one model per seat")
    max_tricks = _prepare(state, bids_)
    util = np.stack([utility_table(m, b, max_tricks) for m, b in zip(models, bids_, strict=True)])
    util = util[:, None, :].copy()
    table = table or SearchTable(14)
    params = K.SearchParams(
        mode=int(SearchMode.MAXN),
        me=state.turn,
        eps=0.0,
        util=util,
        pmodel=np.ones((N_PLAYERS, 1)),
        utrue=np.zeros(max_tricks + 1),
    )
    out = _run(
        state, params, table=table, generation=table.generation_for(("maxn", util.tobytes()))
    )
    return MaxnResult(
        move=out.moves[int(np.argmax(out.prob_choice))],
        value=out.u[:, 0].copy(),
        moves=out.moves,
        multiplicities=out.multiplicities,
        child_values=out.child_u[:, :, 0].copy(),
        nodes=out.nodes,
        tt_hits=out.tt_hits,
    )


@dataclass(frozen=True, eq=False)
class SoftMaxnResult:
    """Soft-max^n at a state.

    ``value``: the max^n set, as sorted final trick vectors; ``moves``/``multiplicities`` as for
    prob-max^n; ``child_sets[i]``: the set of merged move i; ``choices``: the merged moves the
    mover might make (not dominated under its order); ``move``: the searcher's pick when it moves
    at the root: the best worst-case true utility over the child's set, then the best best-case,
    then the first (Sturtevant, Zinkevich & Bowling 2006 leave this choice open; this is our
    rule).
    """

    move: int | None
    value: tuple[tuple[int, int, int], ...]
    moves: tuple[int, ...]
    multiplicities: tuple[int, ...]
    child_sets: tuple[tuple[tuple[int, int, int], ...], ...]
    choices: tuple[int, ...]
    nodes: int
    tt_hits: int


def _decode_set(lo: float, hi: float, hand_size: int) -> tuple[tuple[int, int, int], ...]:
    mask = int(unpack_set(lo, hi))
    k = hand_size + 1
    return tuple((i // k, i % k, hand_size - i // k - i % k) for i in range(64) if (mask >> i) & 1)


def generic_level(bid_: int, max_tricks: int) -> np.ndarray:
    """Soft-max^n order level of an opponent of unknown type (MT or mOT): 1 if the bid is made.

    MT and mOT agree exactly on "making the bid beats missing it" and disagree between any two
    made outcomes (more vs fewer overtricks), so the intersection of their orders ranks outcomes
    by this level alone; outcomes of equal level are incomparable (kept together in max^n sets).
    """
    return np.array([1.0 if t >= bid_ else 0.0 for t in range(max_tricks + 1)])


def softmaxn_search(
    state: SpadesState,
    bids_: Sequence[int],
    *,
    me: int,
    true_model: int | str,
    table: SearchTable | None = None,
) -> SoftMaxnResult:
    """Soft-max^n from ``state`` (Sturtevant, Zinkevich & Bowling 2006;
    ``oppmodel.modeling.perfect_info.search.maxn.softmaxn`` states the rules).

    The searcher orders outcomes by its true utility; each opponent by ``generic_level`` (the
    generic model of a player that is MT or mOT). Hands of at most 7 cards (sets are 64-bit).
    """
    max_tricks = _prepare(state, bids_)
    if max_tricks > 7:
        raise InvalidArgumentError("hand_size", "soft-max^n supports hands of at most 7 cards")
    if not 0 <= me < N_PLAYERS:
        raise InvalidArgumentError("me", f"must be 0, 1 or 2, got {me}")
    own = utility_table(true_model, bids_[me], max_tricks)
    util = np.zeros((N_PLAYERS, 2, max_tricks + 1))
    for p in range(N_PLAYERS):
        util[p, 0] = own if p == me else generic_level(bids_[p], max_tricks)
    table = table or SearchTable(14)
    params = K.SearchParams(
        mode=int(SearchMode.SOFTMAXN),
        me=me,
        eps=0.0,
        util=util,
        pmodel=np.full((N_PLAYERS, 2), 0.5),
        utrue=np.zeros(max_tricks + 1),
    )
    out = _run(
        state, params, table=table, generation=table.generation_for(("softmaxn", util.tobytes()))
    )
    sets = tuple(_decode_set(u[0, 0], u[0, 1], max_tricks) for u in out.child_u)
    move = None
    if state.turn == me:
        scores = [(min(own[t[me]] for t in st), max(own[t[me]] for t in st)) for st in sets]
        move = out.moves[max(range(len(sets)), key=lambda i: (*scores[i], -i))]
    return SoftMaxnResult(
        move=move,
        value=_decode_set(out.u[0, 0], out.u[0, 1], max_tricks),
        moves=out.moves,
        multiplicities=out.multiplicities,
        child_sets=sets,
        choices=tuple(m for m, p in zip(out.moves, out.prob_choice, strict=True) if p > 0),
        nodes=out.nodes,
        tt_hits=out.tt_hits,
    )


def probmaxn_search(
    state: SpadesState,
    bids_: Sequence[int],
    *,
    me: int,
    true_model: int | str,
    weights: np.ndarray | Sequence[Sequence[float]],
    eps: float = 0.1,
    table: SearchTable | None = None,
) -> ProbMaxnResult:
    """Prob-max^n from ``state`` for searcher ``me`` (Sturtevant, Zinkevich & Bowling 2006, Tables
    1-2; the rules are stated in ``oppmodel.modeling.perfect_info.search.probmaxn``, whose numbers
    this reproduces on the unmerged tree).

    ``weights[p]`` = (P(MT), P(mOT)) for seat p; ``weights[me]`` is the opponents' belief about the
    searcher. ``true_model`` is the searcher's own utility (u_true). The move maximises u_true.
    """
    max_tricks = _prepare(state, bids_)
    if not 0 <= me < N_PLAYERS:
        raise InvalidArgumentError("me", f"must be 0, 1 or 2, got {me}")
    if not 0.0 <= eps <= 1.0:
        raise InvalidArgumentError("eps", f"must be in [0, 1], got {eps}")
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (N_PLAYERS, len(UtilityModel)):
        raise InvalidArgumentError("weights", f"must have shape (3, 2), got {w.shape}")
    if np.any(w < 0) or not np.allclose(w.sum(axis=1), 1.0):
        raise InvalidArgumentError("weights", "each row must be non-negative and sum to 1")
    util = np.stack(
        [np.stack([utility_table(m, b, max_tricks) for m in UtilityModel]) for b in bids_]
    )
    utrue = utility_table(true_model, bids_[me], max_tricks)
    table = table or SearchTable(14)
    gen = table.generation_for(
        ("probmaxn", me, float(eps), util.tobytes(), w.tobytes(), utrue.tobytes())
    )
    params = K.SearchParams(
        mode=int(SearchMode.PROBMAXN), me=me, eps=float(eps), util=util, pmodel=w, utrue=utrue
    )
    out = _run(state, params, table=table, generation=gen)
    return ProbMaxnResult(
        mover=state.turn,
        move=out.moves[first_best(out.child_true)] if state.turn == me else None,
        u=out.u,
        u_true=out.u_true,
        moves=out.moves,
        multiplicities=out.multiplicities,
        prob_choice=out.prob_choice,
        child_u=out.child_u,
        child_true=out.child_true,
        n_cards=out.n_cards,
        eps=float(eps),
        nodes=out.nodes,
        tt_hits=out.tt_hits,
    )
