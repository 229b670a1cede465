"""Cards of 3-player Spades: the codec, hands as bitmasks, and the deal.

Cards are ints ``13 * suit + rank`` (suits C, D, H, S; ranks 2..A as 0..12); a hand is a bitmask
with bit ``c`` set for each card held. The deck has 52 cards; each of the 3 players is dealt
``hand_size`` of them (7 by default, as in Sturtevant, Zinkevich & Bowling 2006) and the rest are
out of play.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError

N_PLAYERS = 3
N_CARDS = 52
N_RANKS = 13
SUITS = "CDHS"
RANKS = "23456789TJQKA"
SPADES = SUITS.index("S")  # the trump suit
DEFAULT_HAND_SIZE = 7
MAX_HAND_SIZE = 17  # 3 * 17 = 51 <= 52
NO_CARD = -1


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
