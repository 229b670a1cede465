"""Hold'em through the match engine: a sampled game for games too big to compile.

:mod:`oppmodel.modeling.play.match` plays a compiled game by deal index over its enumerated
deals; a hold'em game (2-player: about 3.2e14 information sets) cannot be compiled, so
:class:`HoldemGame` samples its deals instead (each hand: a seeded shuffle of the 52 cards, every
position's hole cards, then every round's board) and plays them with the one implementation of the
betting rules (:class:`~oppmodel.modeling.games.acpc.betting.HandState`) and of the showdown. The
duplicate protocol, seeds, seatings and results are the engine's own (``run_duplicate``): every
seating of a duplicate plays the same sampled cards.

Agents are :class:`PolicyAgent`: a hold'em policy (:mod:`oppmodel.modeling.holdem.policy`) and a
seeded generator; one uniform per decision picks fold below P(fold), call below P(fold) + P(call),
else raise, as the compiled engine's agents pick.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import ACTION_LETTERS, CALL, RAISE, HandState
from oppmodel.modeling.games.acpc.gamedef import LIMIT, GameDef
from oppmodel.modeling.games.units import RateUnit
from oppmodel.modeling.holdem.policy import (
    CARD_NAMES,
    DECK_SIZE,
    HOLE_CARDS,
    HoldemPolicy,
    Spot,
    action_row,
    board_texts,
)
from oppmodel.modeling.observation import LimitObservation


def is_holdem(gamedef: GameDef) -> bool:
    """Whether a game is limit hold'em as the hold'em policies play it: limit betting, the whole
    52-card deck, two hole cards each."""
    return (
        gamedef.betting == LIMIT
        and gamedef.num_suits * gamedef.num_ranks == DECK_SIZE
        and gamedef.num_hole_cards == HOLE_CARDS
    )


@dataclass(frozen=True)
class HoldemGame:
    """A hold'em game of the match engine (see the module's text)."""

    name: str
    gamedef: GameDef

    def __post_init__(self) -> None:
        if not is_holdem(self.gamedef):
            raise InvalidArgumentError(
                "game", f"{self.name} is not limit hold'em (a 52-card deck, 2 hole cards each)"
            )
        HandState(self.gamedef)  # refuses rules the betting does not play (small stacks)

    @property
    def num_players(self) -> int:
        return self.gamedef.num_players

    @property
    def rate_unit(self) -> RateUnit:
        return self.gamedef.rate_unit

    @functools.cached_property
    def board_ends(self) -> tuple[int, ...]:
        """Per round, how many board cards have been dealt by then."""
        return tuple(np.cumsum(self.gamedef.num_board_cards).tolist())

    def deal_sequence(self, hands: int, seed: int) -> np.ndarray:
        """(hands, n * 2 + board cards) card integers: each row the top of a seeded shuffle,
        every position's two hole cards, then the board of every round."""
        width = HOLE_CARDS * self.num_players + self.board_ends[-1]
        shuffled = np.argsort(np.random.default_rng(seed).random((hands, DECK_SIZE)), axis=1)
        return shuffled[:, :width].astype(np.int64)

    def play_hands(self, agents: Sequence[PolicyAgent], deals: np.ndarray) -> np.ndarray:
        """Play one hand per row of ``deals`` (``MatchGame``): :func:`play_holdem_match`."""
        return play_holdem_match(self, agents, deals)


def drawn_action(row: np.ndarray, spot: Spot, rng: np.random.Generator) -> int:
    """0 fold, 1 call, 2 raise: drawn from ``row`` with one uniform of ``rng`` (a raise the
    betting no longer allows is a call)."""
    u = rng.random()
    action = 0 if u < row[0] else 1 if u < row[0] + row[1] else 2
    return CALL if action == RAISE and not spot.legal()[RAISE] else action


class PolicyAgent:
    """A hold'em policy played with a seeded generator (one uniform per decision)."""

    def __init__(self, name: str, policy: HoldemPolicy, seed: int) -> None:
        self.name = name
        self.policy = policy
        self.rng = np.random.default_rng(seed)

    def begin_match(self, game: HoldemGame, seat: int, names: Sequence[str]) -> None:
        """A fixed policy needs nothing from the seating."""

    def act(self, spot: Spot, hole: Sequence[int]) -> int:
        """0 fold, 1 call, 2 raise: drawn from the policy's row for ``hole`` at ``spot``."""
        return drawn_action(action_row(self.policy, spot, hole), spot, self.rng)

    def end_hand(self, obs: LimitObservation) -> None:
        """A fixed policy learns nothing."""


def play_holdem_match(
    game: HoldemGame, agents: Sequence[PolicyAgent], deals: np.ndarray
) -> np.ndarray:
    """Play one hand per row of ``deals`` (:meth:`HoldemGame.deal_sequence`), positions rotating
    as the ACPC dealer rotates them; chips won per seat."""
    n = game.num_players
    names = tuple(agent.name for agent in agents)
    for seat, agent in enumerate(agents):
        agent.begin_match(game, seat, names)
    chips = np.zeros(n)
    holes_end = HOLE_CARDS * n
    for h, deal in enumerate(np.asarray(deals).tolist()):
        holes = [deal[HOLE_CARDS * p : HOLE_CARDS * (p + 1)] for p in range(n)]
        board = deal[holes_end:]
        hand = HandState(game.gamedef)
        while not hand.finished:
            p = hand.current
            spot = Spot(game.gamedef, tuple(board[: game.board_ends[hand.round]]), hand.state)
            agent = agents[(p + h) % n]
            action = agent.act(spot, holes[p])
            if not isinstance(action, (int, np.integer)) or not hand.is_valid(
                ACTION_LETTERS[action] if 0 <= action < 3 else ""
            ):
                raise IllegalActionError(
                    "action", f"agent {agent.name} returned {action!r} after {hand.betting!r}"
                )
            hand.apply(ACTION_LETTERS[action])
        hole_texts = tuple("".join(CARD_NAMES[c] for c in cards) for cards in holes)
        shown = board_texts(game.gamedef, board, hand.round + 1)
        payoffs = hand.payoffs(hole_texts, shown)
        for p in range(n):
            seat = (p + h) % n
            chips[seat] += payoffs[p]
            seen = tuple(cards or None for cards in hand.visible_hole(hole_texts, p))
            agents[seat].end_hand(LimitObservation(p, hand.betting, seen, shown))
    return chips
