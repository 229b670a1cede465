"""The state of one hand of 3-player perfect-information Spades, and its rules of play.

The rules (Sturtevant, Zinkevich & Bowling 2006; Sturtevant 2004): all hands are visible (perfect
information). The leader of a trick plays any card; the others, in seat order ``(leader + 1) % 3``,
``(leader + 2) % 3``, must follow the led suit if they can, else play any card. The highest spade
wins the trick if any spade was played, else the highest card of the led suit; the winner leads
next. In a game the first trick of hand ``h`` (0-based) is led by seat ``h % 3`` (the deal
rotates).

State changes come as a trio: ``verify_play`` (raises naming the problem), ``can_play`` (bool) and
``play`` (the next state).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.spades import _rules_kernels as rules
from oppmodel.modeling.games.spades.cards import (
    MAX_HAND_SIZE,
    N_CARDS,
    N_PLAYERS,
    NO_CARD,
    SUITS,
    card_str,
    cards_to_mask,
    mask_to_cards,
)


def trick_winner(trick: Sequence[int], leader: int) -> int:
    """Seat that wins a complete trick (``trick[p]`` is seat p's card)."""
    if len(trick) != N_PLAYERS or any(not 0 <= c < N_CARDS for c in trick):
        raise InvalidArgumentError("trick", "must hold one card 0..51 per seat")
    if not 0 <= leader < N_PLAYERS:
        raise InvalidArgumentError("leader", f"must be 0, 1 or 2, got {leader}")
    return int(rules.trick_winner(np.asarray(trick, dtype=np.int64), leader))


@dataclass(frozen=True)
class SpadesState:
    """A state within one hand.

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
    def start(hands: Sequence[int], leader: int = 0) -> SpadesState:
        """State before the first card of a hand, checked for consistency."""
        state = SpadesState(hands=tuple(int(h) for h in hands), leader=leader, turn=leader)  # type: ignore[arg-type]
        state.validate()
        return state

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
        """Raise ``InvalidArgumentError`` naming the field if the state is inconsistent."""
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
        return mask_to_cards(
            int(rules.legal_mask(np.uint64(self.hands[self.turn]), self.lead_suit))
        )

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

    def play(self, card: int) -> SpadesState:
        """State after the player to move plays ``card``; completes and scores the trick."""
        self.verify_play(card)
        hands = list(self.hands)
        hands[self.turn] &= ~(1 << card)
        trick = list(self.trick)
        trick[self.turn] = card
        if self.n_in_trick + 1 < N_PLAYERS:
            return SpadesState(
                hands=tuple(hands),  # type: ignore[arg-type]
                trick=tuple(trick),  # type: ignore[arg-type]
                leader=self.leader,
                turn=(self.turn + 1) % N_PLAYERS,
                tricks=self.tricks,
            )
        w = trick_winner(trick, self.leader)
        tricks = list(self.tricks)
        tricks[w] += 1
        return SpadesState(
            hands=tuple(hands),  # type: ignore[arg-type]
            leader=w,
            turn=w,
            tricks=tuple(tricks),  # type: ignore[arg-type]
        )
