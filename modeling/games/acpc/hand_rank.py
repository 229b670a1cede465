"""Poker hand strength as the ACPC reference dealer scores a showdown.

A player's hand is its hole cards plus every board card dealt, and its strength is the best poker
hand that can be made from those cards (at most five of them count): straight flush, four of a
kind, full house, flush, straight, three of a kind, two pair, one pair, high card; within a
category the ranks that make the hand and then the highest remaining cards (kickers) decide, up
to five cards in all. Suits never order hands. Flushes and straights need five cards (the ace
also plays low in 5-4-3-2-A), so a game whose players hold four cards or fewer only ever sees
quads, trips, two pairs, pairs and high cards (Leduc: a pair with the board, else the higher
card). Players whose strengths are equal split the pot.

Cards are written as in ACPC files: rank ``23456789TJQKA`` then suit ``cdhs``. Strength is a
tuple ``(category, ranks...)``, compared lexicographically; the game compiler turns the tuples
into small integers. Reference: the dealer's ``rankCardset`` (evalHandTables) in
project_acpc_server 1.0.42.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS

HIGH_CARD, PAIR, TWO_PAIR, TRIPS, STRAIGHT, FLUSH, FULL_HOUSE, QUADS, STRAIGHT_FLUSH = range(9)
HAND_SIZE = 5
ACE = len(RANK_CHARS) - 1


def card_rank_suit(card: str) -> tuple[int, int]:
    """(rank 0..12 for 2..A, suit 0..3 for c d h s) of a two-character card."""
    if (
        not isinstance(card, str)
        or len(card) != 2
        or card[0] not in RANK_CHARS
        or card[1] not in SUIT_CHARS
    ):
        raise InvalidArgumentError("card", f"bad card {card!r} (rank {RANK_CHARS}, suit cdhs)")
    return RANK_CHARS.index(card[0]), SUIT_CHARS.index(card[1])


def _straight_top(ranks: set[int]) -> int:
    """Top rank of the best five-card straight among ``ranks``, or -1 (5-4-3-2-A tops at 5)."""
    for top in range(ACE, 3, -1):
        if all(r in ranks for r in range(top - 4, top + 1)):
            return top
    wheel = {ACE, 0, 1, 2, 3}
    return 3 if wheel <= ranks else -1


def hand_strength(cards: Sequence[str]) -> tuple[int, ...]:
    """Strength of the best hand in ``cards`` (distinct cards, any number from 1 to 7)."""
    parsed = [card_rank_suit(c) for c in cards]
    if not parsed or len(set(parsed)) != len(parsed):
        raise InvalidArgumentError("cards", f"need distinct cards, got {list(cards)}")
    if len(parsed) == 1:  # a lone card (Kuhn): its rank, without the search below
        return (HIGH_CARD, parsed[0][0])
    ranks = sorted((r for r, _ in parsed), reverse=True)
    by_suit: dict[int, list[int]] = {}
    for r, s in parsed:
        by_suit.setdefault(s, []).append(r)
    suited = [sorted(rs, reverse=True) for rs in by_suit.values() if len(rs) >= HAND_SIZE]

    straight_flush = max((_straight_top(set(rs)) for rs in suited), default=-1)
    if straight_flush >= 0:
        return (STRAIGHT_FLUSH, straight_flush)
    counts = Counter(ranks)
    # ranks grouped by multiplicity, most cards first, then higher rank first
    groups = sorted(counts, key=lambda r: (counts[r], r), reverse=True)
    top = groups[0]

    def kickers(used: Sequence[int], k: int) -> tuple[int, ...]:
        rest = [r for r in ranks if r not in used]
        return tuple(rest[:k])

    if counts[top] == 4:
        return (QUADS, top, *kickers([top], 1))
    if counts[top] == 3:
        pairs = [r for r in groups[1:] if counts[r] >= 2]
        if pairs:
            return (FULL_HOUSE, top, max(pairs))
    if suited:
        return (FLUSH, *max(rs[:HAND_SIZE] for rs in suited))
    straight = _straight_top(set(ranks))
    if straight >= 0:
        return (STRAIGHT, straight)
    if counts[top] == 3:
        return (TRIPS, top, *kickers([top], 2))
    if counts[top] == 2:
        second = groups[1] if len(groups) > 1 and counts[groups[1]] == 2 else None
        if second is not None:
            return (TWO_PAIR, top, second, *kickers([top, second], 1))
        return (PAIR, top, *kickers([top], 3))
    return (HIGH_CARD, *ranks[:HAND_SIZE])
