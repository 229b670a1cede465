"""Three-player perfect-information Spades, and max^n / prob-max^n search over one hand.

The game (papers 000 and 002, Sturtevant & Bowling / Sturtevant):

* **Deal.** A 52-card deck; each of the 3 players gets ``hand_size`` cards (7 by default, as in
  paper 000); the other cards are out of play. All hands are visible (perfect information).
* **Play.** The leader of a trick plays any card; the others, in seat order ``(leader + 1) % 3``,
  ``(leader + 2) % 3``, must follow the led suit if they can, else play any card. The highest
  spade wins the trick if any spade was played, else the highest card of the led suit; the winner
  leads next.
  In a game the first trick of hand ``h`` (0-based) is led by seat ``h % 3`` (the deal rotates).
* **Bidding** (one fixed rule for every agent, as the papers fix bids outside the search). The rule
  sees all hands, since they are public. In each suit, rank the cards still in play from the top
  (k = 1 for the highest). A player's card of rank k is a *likely winner* if the player holds at
  least k cards of that suit (the k - 1 others guard it against higher cards). In spades (trump)
  the count is the larger of the likely winners and the player's spade length minus the longest
  opposing spade length (long trumps). In another suit the likely winners are capped by the
  shorter opponent's length in it (beyond that an opponent can trump). The bid is the sum over
  suits, at least 1. On seeded 7-card deals the bids sum to about 6 of 7 tricks, and a bid is
  made in about 3 of 4 hands under trick-maximising play.
* **Scoring a hand.** With bid ``b`` and ``t`` tricks: ``t >= b`` scores ``10 b + (t - b)`` (one
  point per overtrick), ``t < b`` scores ``-10 b``. Overtricks accumulate as *bags*; whenever a
  player's bags reach 10, it loses 100 points and 10 bags.
* **A game** is a sequence of hands that ends after the first hand at whose end some player has at
  least 300 points (or after ``max_hands`` hands, a guard that real play never reaches). The highest
  score wins; players tied for the highest score share the win equally (each gets ``1/k`` of it).

Utilities of one hand's outcome (paper 000, "Example" and Figure 4):

* **MT** (maximise tricks) is the hand's payoff itself: ``10 b + (t - b)`` if made, ``-10 b``
  if not.
* **mOT** (minimise overtricks) subtracts each overtrick instead of adding it: ``10 b - (t - b)``
  if made, ``-10 b`` if not. Figure 4: bid 3 with 4 tricks pays 31, worth 31 to MT and
  ``31 - 2 = 29`` to mOT; making the bid exactly (30) is mOT's best outcome. (The paper's words,
  "subtracts the number of overtricks from a player's score", read with score = ``10 b``.)

Neither utility looks at the running score or bags: the papers define them per hand.

Search (papers 000 and 002; see ``_spades_kernels`` for the exact reductions used):

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
``benchmarks/spades.py``), from any position, mid-trick included.

Cards are ints ``13 * suit + rank`` (suits C, D, H, S; ranks 2..A as 0..12); hands are bitmasks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.perfect_info import _spades_kernels as K
from oppmodel.modeling.perfect_info.model_weights import choice_likelihood

N_PLAYERS = 3
N_CARDS = 52
SUITS = "CDHS"
RANKS = "23456789TJQKA"
SPADES = K.SPADES
MODELS = ("MT", "mOT")
MT = 0
MOT = 1
DEFAULT_HAND_SIZE = 7
MAX_HAND_SIZE = 17  # 3 * 17 = 51 <= 52
NO_CARD = -1


# --------------------------------------------------------------------------- cards


def card_str(card: int) -> str:
    """Two-character name of a card, e.g. ``"AS"`` for the ace of spades."""
    if not 0 <= card < N_CARDS:
        raise InvalidArgumentError("card", f"must be in 0..51, got {card}")
    return RANKS[card % 13] + SUITS[card // 13]


def parse_card(text: str) -> int:
    """Inverse of ``card_str`` (case-insensitive, ``10`` accepted for ``T``)."""
    t = text.strip().upper().replace("10", "T")
    if len(t) != 2 or t[0] not in RANKS or t[1] not in SUITS:
        raise InvalidArgumentError("card", f"cannot parse {text!r}; expected e.g. 'AS', 'TH', '2C'")
    return SUITS.index(t[1]) * 13 + RANKS.index(t[0])


def cards_to_mask(cards: Iterable[int]) -> int:
    """Bitmask with bit ``c`` set for each card."""
    mask = 0
    for c in cards:
        if not 0 <= c < N_CARDS:
            raise InvalidArgumentError("card", f"must be in 0..51, got {c}")
        mask |= 1 << c
    return mask


def mask_to_cards(mask: int) -> list[int]:
    """Cards of a bitmask in ascending order."""
    return [c for c in range(N_CARDS) if (mask >> c) & 1]


def parse_hand(text: str) -> int:
    """Bitmask of a space-separated card list, e.g. ``"AS KH 2C"``."""
    return cards_to_mask(parse_card(t) for t in text.split())


def hand_str(mask: int) -> str:
    """Space-separated card names of a bitmask, ascending."""
    return " ".join(card_str(c) for c in mask_to_cards(mask))


def deal(rng: np.random.Generator, hand_size: int = DEFAULT_HAND_SIZE) -> tuple[int, int, int]:
    """Deal ``hand_size`` cards to each of the three players from a shuffled deck."""
    _check_hand_size(hand_size)
    perm = rng.permutation(N_CARDS)
    return tuple(  # type: ignore[return-value]
        cards_to_mask(int(c) for c in perm[p * hand_size : (p + 1) * hand_size])
        for p in range(N_PLAYERS)
    )


def _check_hand_size(hand_size: int) -> None:
    if not 1 <= hand_size <= MAX_HAND_SIZE:
        raise InvalidArgumentError("hand_size", f"must be in 1..{MAX_HAND_SIZE}, got {hand_size}")


# --------------------------------------------------------------------------- rules


def trick_winner(trick: Sequence[int], leader: int) -> int:
    """Seat that wins a complete trick (``trick[p]`` is seat p's card)."""
    if len(trick) != N_PLAYERS or any(not 0 <= c < N_CARDS for c in trick):
        raise InvalidArgumentError("trick", "must hold one card 0..51 per seat")
    if not 0 <= leader < N_PLAYERS:
        raise InvalidArgumentError("leader", f"must be 0, 1 or 2, got {leader}")
    return int(K.trick_winner(np.asarray(trick, dtype=np.int64), leader))


@dataclass(frozen=True)
class Position:
    """A position within one hand.

    ``hands[p]``: bitmask of seat p's remaining cards; ``trick[p]``: the card seat p has played to
    the current trick, or ``NO_CARD``; ``leader``: who led (or leads) the current trick; ``turn``:
    who plays next; ``tricks[p]``: tricks seat p has taken so far in this hand.
    """

    hands: tuple[int, int, int]
    trick: tuple[int, int, int] = (NO_CARD, NO_CARD, NO_CARD)
    leader: int = 0
    turn: int = 0
    tricks: tuple[int, int, int] = (0, 0, 0)

    @staticmethod
    def start(hands: Sequence[int], leader: int = 0) -> Position:
        """Position before the first card of a hand, checked for consistency."""
        pos = Position(hands=tuple(int(h) for h in hands), leader=leader, turn=leader)  # type: ignore[arg-type]
        pos.validate()
        return pos

    @property
    def n_in_trick(self) -> int:
        """Cards already played to the current trick."""
        return sum(c != NO_CARD for c in self.trick)

    @property
    def is_terminal(self) -> bool:
        """True when every card has been played."""
        return self.hands == (0, 0, 0) and self.n_in_trick == 0

    @property
    def lead_suit(self) -> int:
        """Suit led to the current trick, or -1 before the lead."""
        return -1 if self.n_in_trick == 0 else self.trick[self.leader] // 13

    def validate(self) -> None:
        """Raise ``InvalidArgumentError`` naming the field if the position is inconsistent."""
        if len(self.hands) != N_PLAYERS or any(not 0 <= h < (1 << N_CARDS) for h in self.hands):
            raise InvalidArgumentError("hands", "must be three 52-bit card masks")
        if (
            self.hands[0] & self.hands[1]
            or self.hands[0] & self.hands[2]
            or (self.hands[1] & self.hands[2])
        ):
            raise InvalidArgumentError("hands", "a card is held by two players")
        for name, v in (("leader", self.leader), ("turn", self.turn)):
            if not 0 <= v < N_PLAYERS:
                raise InvalidArgumentError(name, f"must be 0, 1 or 2, got {v}")
        if len(self.trick) != N_PLAYERS or any(
            c != NO_CARD and not 0 <= c < N_CARDS for c in self.trick
        ):
            raise InvalidArgumentError("trick", "must hold a card 0..51 or -1 per seat")
        n = self.n_in_trick
        if n == N_PLAYERS:
            raise InvalidArgumentError("trick", "a complete trick must be resolved, not stored")
        order = [(self.leader + k) % N_PLAYERS for k in range(N_PLAYERS)]
        if any(self.trick[p] == NO_CARD for p in order[:n]) or any(
            self.trick[p] != NO_CARD for p in order[n:]
        ):
            raise InvalidArgumentError(
                "trick", "cards must be played in seat order from the leader"
            )
        if self.turn != order[n]:
            raise InvalidArgumentError("turn", f"seat {order[n]} is to play, not {self.turn}")
        table = cards_to_mask(c for c in self.trick if c != NO_CARD)
        if table & (self.hands[0] | self.hands[1] | self.hands[2]):
            raise InvalidArgumentError("trick", "a card on the table is also in a hand")
        sizes = [h.bit_count() + (self.trick[p] != NO_CARD) for p, h in enumerate(self.hands)]
        if len(set(sizes)) != 1:
            raise InvalidArgumentError("hands", f"card counts are inconsistent: {sizes}")
        if len(self.tricks) != N_PLAYERS or any(t < 0 for t in self.tricks):
            raise InvalidArgumentError("tricks", "must be three non-negative counts")
        if sizes[0] + sum(self.tricks) > MAX_HAND_SIZE:
            raise InvalidArgumentError("hands", f"more than {MAX_HAND_SIZE} cards per player")

    def legal_moves(self) -> list[int]:
        """Cards the player to move may play, ascending (follow suit when possible)."""
        return mask_to_cards(int(K.legal_mask(np.uint64(self.hands[self.turn]), self.lead_suit)))

    def verify_play(self, card: int) -> None:
        """Raise ``IllegalActionError`` unless ``card`` is a legal play here."""
        if self.is_terminal:
            raise IllegalActionError("card", "the hand is over")
        if not 0 <= card < N_CARDS or not (self.hands[self.turn] >> card) & 1:
            raise IllegalActionError("card", f"seat {self.turn} does not hold card {card}")
        if card not in self.legal_moves():
            raise IllegalActionError(
                "card", f"{card_str(card)} does not follow the led suit {SUITS[self.lead_suit]}"
            )

    def can_play(self, card: int) -> bool:
        """Whether ``card`` is a legal play here."""
        try:
            self.verify_play(card)
        except IllegalActionError:
            return False
        return True

    def play(self, card: int) -> Position:
        """Position after the player to move plays ``card``; completes and scores the trick."""
        self.verify_play(card)
        hands = list(self.hands)
        hands[self.turn] &= ~(1 << card)
        trick = list(self.trick)
        trick[self.turn] = card
        if self.n_in_trick + 1 < N_PLAYERS:
            return Position(
                hands=tuple(hands),  # type: ignore[arg-type]
                trick=tuple(trick),  # type: ignore[arg-type]
                leader=self.leader,
                turn=(self.turn + 1) % N_PLAYERS,
                tricks=self.tricks,
            )
        w = trick_winner(trick, self.leader)
        tricks = list(self.tricks)
        tricks[w] += 1
        return Position(
            hands=tuple(hands),  # type: ignore[arg-type]
            leader=w,
            turn=w,
            tricks=tuple(tricks),  # type: ignore[arg-type]
        )


# --------------------------------------------------------------------------- bidding and scoring


def bid(hands: Sequence[int], player: int) -> int:
    """The fixed bidding rule (module docstring): likely winners of ``player``, at least 1."""
    if not 0 <= player < N_PLAYERS:
        raise InvalidArgumentError("player", f"must be 0, 1 or 2, got {player}")
    mine = hands[player]
    others = [hands[q] for q in range(N_PLAYERS) if q != player]
    in_play = hands[0] | hands[1] | hands[2]
    total = 0
    for s in range(4):
        suit_mask = ((1 << 13) - 1) << (13 * s)
        ranked = mask_to_cards(in_play & suit_mask)[::-1]  # highest first
        length = (mine & suit_mask).bit_count()
        likely = sum(1 for k, c in enumerate(ranked, start=1) if (mine >> c) & 1 and length >= k)
        opp_lengths = [(o & suit_mask).bit_count() for o in others]
        if s == SPADES:
            total += max(likely, length - max(opp_lengths))
        else:
            total += min(likely, *opp_lengths)
    return max(1, total)


def bids(hands: Sequence[int]) -> tuple[int, int, int]:
    """Every player's bid under the fixed rule."""
    return tuple(bid(hands, p) for p in range(N_PLAYERS))  # type: ignore[return-value]


def hand_score(bid_: int, tricks: int) -> int:
    """Points for one hand: ``10 b + overtricks`` if the bid is made, ``-10 b`` if not."""
    return 10 * bid_ + (tricks - bid_) if tricks >= bid_ else -10 * bid_


def utility(model: int | str, bid_: int, tricks: int) -> int:
    """Utility of taking ``tricks`` with bid ``bid_`` under model MT or mOT (module docstring)."""
    m = _model_index(model)
    if tricks < bid_:
        return -10 * bid_
    return 10 * bid_ + (tricks - bid_) * (1 if m == MT else -1)


def _model_index(model: int | str) -> int:
    if isinstance(model, str):
        if model not in MODELS:
            raise InvalidArgumentError("model", f"must be one of {MODELS}, got {model!r}")
        return MODELS.index(model)
    if model not in (MT, MOT):
        raise InvalidArgumentError("model", f"must be 0 (MT) or 1 (mOT), got {model}")
    return int(model)


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


# --------------------------------------------------------------------------- search


class SearchTable:
    """Transposition table reusable across searches that share all parameters.

    A search bumps the generation (invalidating every entry in O(1)) whenever its parameters differ
    from the previous search's, so reuse is always safe; within one hand of play the parameters are
    fixed and later searches hit the entries of earlier ones.
    """

    def __init__(self, size_log2: int = 17) -> None:
        if not 8 <= size_log2 <= 26:
            raise InvalidArgumentError("size_log2", f"must be in 8..26, got {size_log2}")
        n = 1 << size_log2
        self.keys = np.zeros((n, 4), dtype=np.uint64)
        self.gen = np.zeros(n, dtype=np.int64)
        self._values: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._generation = 0
        self._params: object = None

    def generation_for(self, params: object) -> int:
        """Generation number to use for a search with ``params`` (hashable)."""
        if params != self._params:
            self._generation += 1
            self._params = params
        return self._generation

    def clear(self) -> None:
        """Invalidate every entry (the next search starts cold)."""
        self._generation += 1
        self._params = None

    def values(self, kind: str, n_models: int) -> tuple[np.ndarray, np.ndarray]:
        """Value arrays (utility matrices, true utilities) of one search kind, made on first use."""
        n = self.gen.shape[0]
        if kind not in self._values:
            self._values[kind] = (np.zeros((n, N_PLAYERS, n_models)), np.zeros(n))
        return self._values[kind]  # type: ignore[return-value]


@dataclass(frozen=True, eq=False)
class MaxnResult:
    """Max^n at a position: chosen card, root value vector, and each merged move's value."""

    move: int
    value: np.ndarray
    moves: tuple[int, ...]
    multiplicities: tuple[int, ...]
    child_values: np.ndarray
    nodes: int
    tt_hits: int


@dataclass(frozen=True, eq=False)
class ProbMaxnResult:
    """Prob-max^n at a position (``oppmodel.modeling.perfect_info.search.probmaxn`` states the
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

        The likelihood vector of an observed choice, for learning model weights (paper 000,
        "Learning in Prob-Max^n"; ``oppmodel.modeling.perfect_info.model_weights.choice_likelihood``
        on the unmerged children, each merged move repeated once per card it stands for).
        """
        i = _group_of(self.moves, card)
        per_card = np.repeat(self.child_u[:, self.mover, :], self.multiplicities, axis=0)
        chosen = sum(self.multiplicities[:i])
        return choice_likelihood(per_card, chosen, self.eps, tie_tol=K.TIE_TOL)


def first_best(values: Sequence[float] | np.ndarray) -> int:
    """Index of the first value within ``TIE_TOL`` of the maximum (ties to the first)."""
    v = np.asarray(values, dtype=np.float64)
    return int(np.argmax(v >= v.max() - K.TIE_TOL))


def _group_of(moves: Sequence[int], card: int) -> int:
    i = int(np.searchsorted(np.asarray(moves), card, side="right")) - 1
    if i < 0 or moves[i] // 13 != card // 13:
        raise IllegalActionError("card", f"{card} is not among the legal moves")
    return i


def _prepare(pos: Position, bids_: Sequence[int]) -> int:
    """Validate a search root; returns the hand size (most tricks anyone can take)."""
    pos.validate()
    if pos.is_terminal:
        raise InvalidArgumentError("position", "the hand is over; there is nothing to search")
    if len(bids_) != N_PLAYERS or any(not 0 <= b <= MAX_HAND_SIZE for b in bids_):
        raise InvalidArgumentError("bids", f"must be three integers in 0..{MAX_HAND_SIZE}")
    return sum(pos.tricks) + pos.hands[pos.turn].bit_count()


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
    mode: int,
    pos: Position,
    *,
    me: int,
    eps: float,
    util: np.ndarray,
    pmodel: np.ndarray,
    utrue: np.ndarray,
    table: SearchTable,
    gen: int,
) -> _RootOutput:
    """Allocate the per-depth buffers, run the kernel, and copy out the root's children."""
    n_models = util.shape[1]
    depth = sum(h.bit_count() for h in pos.hands) + 1
    width = max(1, pos.hands[pos.turn].bit_count())
    tt_u, tt_t = table.values("maxn" if mode == K.MODE_MAXN else "probmaxn", n_models)
    cards = np.zeros((depth, width), dtype=np.int64)
    mult = np.zeros((depth, width), dtype=np.int64)
    ncards_at = np.zeros(depth, dtype=np.int64)
    cu = np.zeros((depth, width, N_PLAYERS, n_models))
    ct = np.zeros((depth, width))
    pc = np.zeros((depth, width))
    res_u = np.zeros((depth + 1, N_PLAYERS, n_models))
    res_t = np.zeros(depth + 1)
    stats = np.zeros(4, dtype=np.int64)
    K.search(
        mode, np.array(pos.hands, dtype=np.uint64), np.array(pos.trick, dtype=np.int64),
        np.array(pos.tricks, dtype=np.int64), pos.turn, pos.leader, me, float(eps),
        util, pmodel, utrue, cards, mult, ncards_at, cu, ct, pc, res_u, res_t,
        np.zeros((depth + 1, K.FRAME_COLS), dtype=np.int64),
        np.zeros((depth, N_PLAYERS), dtype=np.int64),
        np.zeros((depth, 4), dtype=np.uint64),
        table.keys, table.gen, tt_u, tt_t, gen, stats,
    )  # fmt: skip
    n = int(np.count_nonzero(mult[0]))
    return _RootOutput(
        moves=tuple(int(c) for c in cards[0, :n]),
        multiplicities=tuple(int(k) for k in mult[0, :n]),
        n_cards=int(ncards_at[0]),
        u=res_u[0].copy(),
        u_true=float(res_t[0]),
        child_u=cu[0, :n].copy(),
        child_true=ct[0, :n].copy(),
        prob_choice=pc[0, :n].copy(),
        nodes=int(stats[K.ST_NODES]),
        tt_hits=int(stats[K.ST_TT_HITS]),
    )


def maxn_search(
    pos: Position,
    bids_: Sequence[int],
    models: Sequence[int | str],
    table: SearchTable | None = None,
) -> MaxnResult:
    """Max^n from ``pos``; ``models[p]`` is the utility (MT or mOT) the searcher gives seat p."""
    if len(models) != N_PLAYERS:
        raise InvalidArgumentError("models", "must give one model per seat")
    max_tricks = _prepare(pos, bids_)
    util = np.stack([utility_table(m, b, max_tricks) for m, b in zip(models, bids_, strict=True)])
    util = util[:, None, :].copy()
    table = table or SearchTable(14)
    out = _run(
        K.MODE_MAXN,
        pos,
        me=pos.turn,
        eps=0.0,
        util=util,
        pmodel=np.ones((N_PLAYERS, 1)),
        utrue=np.zeros(max_tricks + 1),
        table=table,
        gen=table.generation_for(("maxn", util.tobytes())),
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
    """Soft-max^n at a position.

    ``value``: the max^n set, as sorted final trick vectors; ``moves``/``multiplicities`` as for
    prob-max^n; ``child_sets[i]``: the set of merged move i; ``choices``: the merged moves the
    mover might make (not dominated under its order); ``move``: the searcher's pick when it moves
    at the root: the best worst-case true utility over the child's set, then the best best-case,
    then the first (paper 000 leaves this choice open; this is our rule).
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
    mask = int(K.unpack_set(lo, hi))
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
    pos: Position,
    bids_: Sequence[int],
    *,
    me: int,
    true_model: int | str,
    table: SearchTable | None = None,
) -> SoftMaxnResult:
    """Soft-max^n from ``pos`` (paper 000; ``oppmodel.modeling.perfect_info.search.maxn.softmaxn``
    states the rules).

    The searcher orders outcomes by its true utility; each opponent by ``generic_level`` (the
    generic model of a player that is MT or mOT). Hands of at most 7 cards (sets are 64-bit).
    """
    max_tricks = _prepare(pos, bids_)
    if max_tricks > 7:
        raise InvalidArgumentError("hand_size", "soft-max^n supports hands of at most 7 cards")
    if not 0 <= me < N_PLAYERS:
        raise InvalidArgumentError("me", f"must be 0, 1 or 2, got {me}")
    own = utility_table(true_model, bids_[me], max_tricks)
    util = np.zeros((N_PLAYERS, 2, max_tricks + 1))
    for p in range(N_PLAYERS):
        util[p, 0] = own if p == me else generic_level(bids_[p], max_tricks)
    table = table or SearchTable(14)
    out = _run(
        K.MODE_SOFTMAXN,
        pos,
        me=me,
        eps=0.0,
        util=util,
        pmodel=np.full((N_PLAYERS, 2), 0.5),
        utrue=np.zeros(max_tricks + 1),
        table=table,
        gen=table.generation_for(("softmaxn", util.tobytes())),
    )
    sets = tuple(_decode_set(u[0, 0], u[0, 1], max_tricks) for u in out.child_u)
    move = None
    if pos.turn == me:
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
    pos: Position,
    bids_: Sequence[int],
    *,
    me: int,
    true_model: int | str,
    weights: np.ndarray | Sequence[Sequence[float]],
    eps: float = 0.1,
    table: SearchTable | None = None,
) -> ProbMaxnResult:
    """Prob-max^n from ``pos`` for searcher ``me`` (paper 000, Tables 1-2; the rules are stated in
    ``oppmodel.modeling.perfect_info.search.probmaxn``, whose numbers this reproduces on the
    unmerged tree).

    ``weights[p]`` = (P(MT), P(mOT)) for seat p; ``weights[me]`` is the opponents' belief about the
    searcher. ``true_model`` is the searcher's own utility (u_true). The move maximises u_true.
    """
    max_tricks = _prepare(pos, bids_)
    if not 0 <= me < N_PLAYERS:
        raise InvalidArgumentError("me", f"must be 0, 1 or 2, got {me}")
    if not 0.0 <= eps <= 1.0:
        raise InvalidArgumentError("eps", f"must be in [0, 1], got {eps}")
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (N_PLAYERS, len(MODELS)):
        raise InvalidArgumentError("weights", f"must have shape (3, 2), got {w.shape}")
    if np.any(w < 0) or not np.allclose(w.sum(axis=1), 1.0):
        raise InvalidArgumentError("weights", "each row must be non-negative and sum to 1")
    util = np.stack([np.stack([utility_table(m, b, max_tricks) for m in (MT, MOT)]) for b in bids_])
    utrue = utility_table(true_model, bids_[me], max_tricks)
    table = table or SearchTable(14)
    gen = table.generation_for(
        ("probmaxn", me, float(eps), util.tobytes(), w.tobytes(), utrue.tobytes())
    )
    out = _run(
        K.MODE_PROBMAXN, pos, me=me, eps=eps, util=util, pmodel=w, utrue=utrue, table=table, gen=gen
    )
    return ProbMaxnResult(
        mover=pos.turn,
        move=out.moves[first_best(out.child_true)] if pos.turn == me else None,
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
