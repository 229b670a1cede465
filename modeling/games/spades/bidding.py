"""The fixed bidding rule of 3-player perfect-information Spades.

One rule for every agent, as Sturtevant, Zinkevich & Bowling (2006) fix bids outside the search. The
rule sees all hands, since they are public. In each suit, rank the cards still in play from the top
(k = 1 for the highest). A player's card of rank k is a *likely winner* if the player holds at least
k cards of that suit (the k - 1 others guard it against higher cards). In spades (trump) the count
is the larger of the likely winners and the player's spade length minus the longest opposing spade
length (long trumps). In another suit the likely winners are capped by the shorter opponent's
length in it (beyond that an opponent can trump). The bid is the sum over suits, at least 1. On
seeded 7-card deals the bids sum to about 6 of 7 tricks, and a bid is made in about 3 of 4 hands
under trick-maximising play.
"""

from __future__ import annotations

from collections.abc import Sequence

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.spades.cards import N_PLAYERS, SPADES, mask_to_cards


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
