"""Local best response (LBR; Lisý & Bowling 2017, "Equilibrium approximation quality of current
no-limit poker bots"): a lower bound on a 2-player strategy's exploitability in games too big for
an exact best response, such as limit Texas hold'em.

LBR plays against the fixed policy (:mod:`oppmodel.modeling.holdem.policy`) and keeps what a
best response needs and the real game allows: the opponent's *range*, the probability of each
hand it may hold given the cards LBR sees and the actions it took (Bayes: each action multiplies
the weight of every hand by the policy's probability of that action with it). At each of its
decisions LBR looks one action ahead and assumes that, after it, both players only check or call
to the showdown; with ``pot`` the chips in the pot, ``asked`` what LBR must add to call, ``R``
the round's raise, and ``wp`` the probability of winning the showdown against the range over the
board cards still to come (ties one half)::

    U(fold)  = 0                                   (where folding is legal)
    U(call)  = wp * pot - (1 - wp) * asked
    U(raise) = fp * pot + (1 - fp) * (wp' * (pot + R) - (1 - wp') * (asked + R))

``fp`` is the probability the opponent folds to the raise (the range weighed by the policy's fold
probability at the spot after it) and ``wp'`` the win probability against the range of the hands
that do not fold. LBR takes the action of highest utility (ties: call, then raise, then fold).
The paper's no-limit bet sizes become the one raise of a limit round.

Its average winnings against the policy, over both positions, are a lower bound on the policy's
exploitability (the best response's winnings), since LBR is a strategy of the game: it acts on
its own cards, the board and the public betting only. The bound is tight where the assumption
holds: against a policy that only checks and calls, LBR *is* a best response. Measured by sampled
deals (each played in both positions, the opponent's actions drawn from its policy, seeded), in
the game's unit (mbb/hand in hold'em) with the standard error over the deals; in a small game
(Leduc), :func:`exact_lbr_value` takes the expectation over every deal and opponent action.

``wp`` is computed over every board completion when there are at most ``rollouts`` of them (the
turn and the river in hold'em, every Leduc board), else over ``rollouts`` seeded draws.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc._hand_rank_kernels import CARD_BITS
from oppmodel.modeling.games.acpc.betting import (
    CALL,
    FOLD,
    RAISE,
    BettingState,
    HandState,
    after,
    is_legal,
)
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.games.acpc.hand_rank import card_index
from oppmodel.modeling.games.units import RateUnit
from oppmodel.modeling.holdem import _lbr_kernels as kernels
from oppmodel.modeling.holdem.policy import CARD_NAMES, HoldemPolicy, Spot, board_texts

ROLLOUTS = 100
PREFERENCE = (CALL, RAISE, FOLD)  # the order ties are broken in


@dataclass(frozen=True)
class LBRResult:
    """LBR's average winnings against a policy: the lower bound on its exploitability."""

    rate: float  # in the game's unit (milli-big-blinds per hand in hold'em)
    standard_error: float  # over the deals
    deals: int  # each played once in every position
    unit: RateUnit


class LocalBestResponse:
    """LBR against ``policy`` in a 2-player limit game (see the module's text)."""

    def __init__(self, game: GameDef, policy: HoldemPolicy, *, rollouts: int = ROLLOUTS) -> None:
        if game.num_players != 2:
            raise InvalidArgumentError(
                "game", f"local best response needs 2 players, not {game.num_players}"
            )
        HandState(game)  # refuses rules the betting does not play
        self.game = game
        self.policy = policy
        self.rollouts = rollouts
        self.deck = np.array(sorted(card_index(c) for c in game.deck), dtype=np.int64)
        self.holes = np.array(
            list(itertools.combinations(self.deck.tolist(), game.num_hole_cards)),
            dtype=np.int64,
        )
        self.hole_bits = np.bitwise_or.reduce(CARD_BITS[self.holes], axis=1)
        self.board_ends = tuple(np.cumsum(game.num_board_cards).tolist())
        self._index = {tuple(row): i for i, row in enumerate(self.holes.tolist())}

    def deal_size(self) -> int:
        """Cards of one deal: both hole hands, then every round's board."""
        return 2 * self.game.num_hole_cards + self.board_ends[-1]

    def hand_value(
        self, position: int, deal: Sequence[int], rng: np.random.Generator | None = None
    ) -> float:
        """LBR's chips in ``position`` on ``deal`` (card integers, :meth:`deal_size`): the
        opponent's actions drawn with ``rng``, or their expectation when ``rng`` is None."""
        h = self.game.num_hole_cards
        holes = [tuple(sorted(deal[:h])), tuple(sorted(deal[h : 2 * h]))]
        own = int(np.bitwise_or.reduce(CARD_BITS[list(holes[position])]))
        weights = np.where(self.hole_bits & own, 0.0, 1.0)
        opponent = self._index[holes[1 - position]]
        state = HandState(self.game).state
        return self._walk(state, position, holes, list(deal[2 * h :]), weights, opponent, rng)

    def _walk(
        self,
        state: BettingState,
        me: int,
        holes: list[tuple[int, ...]],
        board: list[int],
        weights: np.ndarray,
        opponent: int,
        rng: np.random.Generator | None,
    ) -> float:
        if state.player < 0:
            return self._payoff(state, me, holes, board)
        shown = board[: self.board_ends[state.round]]
        weights = np.where(self.hole_bits & _cardset(shown), 0.0, weights)  # cards now seen
        spot = Spot(self.game, tuple(shown), state)
        if state.player == me:
            action = self._choose(spot, holes[me], weights, rng)
            child = after(self.game, state, action)
            return self._walk(child, me, holes, board, weights, opponent, rng)
        live = np.flatnonzero(weights)
        rows = self.policy.probabilities(spot, self.holes[live])
        real = rows[int(np.searchsorted(live, opponent))]
        if rng is not None:
            actions = [int(rng.choice(3, p=real / real.sum()))]
        else:
            actions = [a for a in range(3) if real[a] > 0]
        total = 0.0
        for a in actions:
            updated = np.zeros_like(weights)
            updated[live] = weights[live] * rows[:, a]
            child = after(self.game, state, a)
            value = self._walk(child, me, holes, board, updated, opponent, rng)
            total += value if rng is not None else real[a] * value
        return total

    def _choose(
        self,
        spot: Spot,
        hole: tuple[int, ...],
        weights: np.ndarray,
        rng: np.random.Generator | None,
    ) -> int:
        """LBR's action: the highest of the utilities in the module's text."""
        state, me = spot.betting, spot.position
        pot = float(sum(state.spent))
        asked = float(max(state.spent) - state.spent[me])
        seed = 0 if rng is None else int(rng.integers(2**31))
        wp = self._win_probability(hole, spot.board, weights, seed)
        utility = {CALL: wp * pot - (1 - wp) * asked}
        if is_legal(self.game, state, FOLD):
            utility[FOLD] = 0.0
        if is_legal(self.game, state, RAISE):
            raised = Spot(self.game, spot.board, after(self.game, state, RAISE))
            live = np.flatnonzero(weights)
            fold = self.policy.probabilities(raised, self.holes[live])[:, FOLD]
            fp = float(weights[live] @ fold / weights[live].sum())
            stay = np.zeros_like(weights)
            stay[live] = weights[live] * (1.0 - fold)
            wp2 = self._win_probability(hole, spot.board, stay, seed) if fp < 1 else 0.0
            bet = self.game.raise_size[state.round]
            utility[RAISE] = fp * pot + (1 - fp) * (wp2 * (pot + bet) - (1 - wp2) * (asked + bet))
        return max((a for a in PREFERENCE if a in utility), key=utility.__getitem__)

    def _win_probability(
        self, hole: tuple[int, ...], board: tuple[int, ...], weights: np.ndarray, seed: int
    ) -> float:
        known = _cardset([*hole, *board])
        free = CARD_BITS[[c for c in self.deck.tolist() if not CARD_BITS[c] & known]]
        return float(
            kernels.win_probability(
                np.int64(_cardset(hole)),
                np.int64(_cardset(board)),
                self.hole_bits,
                weights,
                free,
                self.board_ends[-1] - len(board),
                self.rollouts,
                seed,
            )
        )

    def _payoff(
        self, state: BettingState, me: int, holes: list[tuple[int, ...]], board: list[int]
    ) -> float:
        hand = HandState(self.game)
        hand.state = state
        hole_texts = ["".join(CARD_NAMES[c] for c in cards) for cards in holes]
        return hand.payoffs(hole_texts, board_texts(self.game, board, state.round + 1))[me]


def _cardset(cards: Sequence[int]) -> int:
    return int(np.bitwise_or.reduce(CARD_BITS[list(cards)])) if len(cards) else 0


def local_best_response(
    game: GameDef, policy: HoldemPolicy, *, deals: int, seed: int, rollouts: int = ROLLOUTS
) -> LBRResult:
    """LBR's winnings against ``policy`` over ``deals`` seeded deals, each in both positions
    (see the module's text), in the game's unit with the standard error over the deals."""
    if not isinstance(deals, int) or deals < 2:
        raise InvalidArgumentError("deals", f"need at least 2, got {deals!r}")
    lbr = LocalBestResponse(game, policy, rollouts=rollouts)
    rng = np.random.default_rng(seed)
    values = np.empty(deals)
    for i in range(deals):
        deal = rng.permutation(lbr.deck)[: lbr.deal_size()].tolist()
        values[i] = (lbr.hand_value(0, deal, rng) + lbr.hand_value(1, deal, rng)) / 2
    unit = game.rate_unit
    error = values.std(ddof=1) / math.sqrt(deals)
    return LBRResult(float(unit.rate(values.mean())), float(unit.rate(error)), deals, unit)


def exact_lbr_value(game: GameDef, policy: HoldemPolicy) -> float:
    """LBR's expected chips per hand against ``policy``, averaged over both positions, every deal
    and every action of the policy taken with its probability (every board completion in ``wp``):
    for games small enough to enumerate (Leduc: 120 deals)."""
    lbr = LocalBestResponse(game, policy, rollouts=0)
    total, count = 0.0, 0
    for deal in itertools.permutations(lbr.deck.tolist(), lbr.deal_size()):
        total += lbr.hand_value(0, list(deal)) + lbr.hand_value(1, list(deal))
        count += 2
    return total / count
