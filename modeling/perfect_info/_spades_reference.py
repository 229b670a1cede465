"""Plain game-tree twin of the Spades search kernels, used only by tests as an exact oracle.

Written independently of ``_spades_kernels``: hands are Python sets of card ints and the rules are
restated here (follow suit; the highest spade wins, else the highest card of the led suit). The
whole tree below a position is built as an explicit ``oppmodel.modeling.perfect_info.search.tree``
tree with every legal card its own child, in ascending card order (no move merging, no transposition
table), so the project's reference max^n and prob-max^n (``oppmodel.modeling.perfect_info.search``)
can be run on it and compared with the kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from oppmodel.modeling.perfect_info.search.tree import Leaf, Node, Tree


def _suit(card: int) -> int:
    return card // 13


def legal(hand: set[int], lead_suit: int) -> list[int]:
    """Cards that may be played from ``hand`` (-1: leading), ascending."""
    follow = sorted(c for c in hand if _suit(c) == lead_suit)
    return follow if follow else sorted(hand)


def winner(played: Sequence[tuple[int, int]]) -> int:
    """Seat winning a complete trick given ``[(seat, card), ...]`` in play order."""
    spades = [(c, p) for p, c in played if _suit(c) == 3]
    if spades:
        return max(spades)[1]
    led = _suit(played[0][1])
    return max((c, p) for p, c in played if _suit(c) == led)[1]


def build_tree(
    hands: Sequence[set[int]],
    played: Sequence[tuple[int, int]],
    leader: int,
    turn: int,
    tricks: Sequence[int],
    make_leaf: Callable[[tuple[int, ...]], Leaf],
) -> tuple[Tree, list[int]]:
    """Full game tree below a position, and the root's child cards.

    ``played`` lists the current trick's ``(seat, card)`` in play order; ``make_leaf`` turns the
    final trick counts into a leaf.
    """
    if not any(hands) and not played:
        return make_leaf(tuple(tricks)), []
    lead_suit = _suit(played[0][1]) if played else -1
    cards = legal(hands[turn], lead_suit)
    children = []
    for c in cards:
        nh = [set(h) for h in hands]
        nh[turn].discard(c)
        now = [*played, (turn, c)]
        if len(now) == 3:
            w = winner(now)
            nt = list(tricks)
            nt[w] += 1
            child, _ = build_tree(nh, [], w, w, nt, make_leaf)
        else:
            child, _ = build_tree(nh, now, leader, (turn + 1) % 3, tricks, make_leaf)
        children.append(child)
    return Node(player=turn, children=tuple(children)), cards
