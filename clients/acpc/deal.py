"""The reference dealer's card deals: MT19937 seeded by ``init_genrand(seed)``, one draw per card.

``init_genrand`` sets ``mt[0] = seed`` and ``mt[i] = 1812433253 * (mt[i-1] ^ (mt[i-1] >> 30)) + i``
(mod 2^32) for i = 1..623. Python's ``random.Random`` is the same MT19937 generator, so loading
that state through ``setstate`` (with the position at 624, "regenerate before the next draw") makes
``getrandbits(32)`` return exactly the reference's ``genrand_int32()`` sequence.

Every hand starts from the fresh deck (:attr:`GameDef.deck`) and deals hole cards to positions 0,
1, ... in order, then the board cards round by round; each card is ``deck[i]`` with
``i = genrand_int32() % remaining`` and the deck's last card moves into the hole (reference
``dealCard``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.gamedef import GameDef

MT_N = 624


def init_genrand(seed: int) -> random.Random:
    """A ``random.Random`` in the state the reference's ``init_genrand(seed)`` leaves MT19937 in."""
    if not 0 <= seed <= 0xFFFFFFFF:
        raise InvalidArgumentError("seed", f"{seed} is outside 0..4294967295")
    mt = [seed]
    for i in range(1, MT_N):
        prev = mt[-1]
        mt.append((1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF)
    rng = random.Random()
    rng.setstate((3, (*mt, MT_N), None))
    return rng


@dataclass(frozen=True)
class Deal:
    """The cards of one hand: hole cards per position (each a concatenation) and board per round."""

    hole: tuple[str, ...]
    board: tuple[str, ...]


class CardDealer:
    """Deals hand after hand from one seeded MT19937 stream, exactly as the reference dealer."""

    def __init__(self, game: GameDef, seed: int) -> None:
        self.game = game
        self.rng = init_genrand(seed)
        self._deck = game.deck

    def _card(self, deck: list[str]) -> str:
        i = self.rng.getrandbits(32) % len(deck)
        card = deck[i]
        deck[i] = deck[-1]
        deck.pop()
        return card

    def deal(self) -> Deal:
        """The next hand's cards."""
        game, deck = self.game, list(self._deck)
        hole = tuple(
            "".join(self._card(deck) for _ in range(game.num_hole_cards))
            for _ in range(game.num_players)
        )
        board = tuple("".join(self._card(deck) for _ in range(k)) for k in game.num_board_cards)
        return Deal(hole, board)
