"""Plain-Python twins of the Spades search kernels, used only by tests as exact oracles.

Written independently of ``_spades_kernels``: hands are Python sets of card ints, every legal card
is its own child (no move merging), there is no transposition table, and the rules are restated here
(follow suit, highest spade else highest card of the led suit). Max^n breaks ties to the first child
in ascending card order; prob-max^n follows paper 000's Tables 1-2 literally, with ties detected at
the same relative tolerance as the kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

TIE_TOL = 1e-9


def _suit(card: int) -> int:
    return card // 13


def _legal(hand: set[int], lead_suit: int) -> list[int]:
    follow = sorted(c for c in hand if _suit(c) == lead_suit)
    return follow if follow else sorted(hand)


def _winner(played: list[tuple[int, int]]) -> int:
    """Seat winning a trick given [(seat, card), ...] in play order."""
    spades = [(c, p) for p, c in played if _suit(c) == 3]
    if spades:
        return max(spades)[1]
    led = _suit(played[0][1])
    return max((c, p) for p, c in played if _suit(c) == led)[1]


def _is_tie(x: float, best: float) -> bool:
    return x >= best - TIE_TOL * max(1.0, abs(best))


@dataclass
class RefNode:
    """Value of a node and, for the root, its children (one per legal card)."""

    value: list  # max^n: [v0, v1, v2]; prob-max^n: [[u[p][m]]], plus true utility in ``true``
    true: float = 0.0
    cards: list | None = None
    child_values: list | None = None
    child_true: list | None = None
    prob_choice: list | None = None


def _children(hands, played, leader, turn, tricks):
    """Yield (card, hands, played, leader, turn, tricks) after each legal card, in card order."""
    lead_suit = _suit(played[0][1]) if played else -1
    for c in _legal(hands[turn], lead_suit):
        nh = [set(h) for h in hands]
        nh[turn].discard(c)
        np_ = [*played, (turn, c)]
        if len(np_) == 3:
            w = _winner(np_)
            nt = list(tricks)
            nt[w] += 1
            yield c, nh, [], w, w, nt
        else:
            yield c, nh, np_, leader, (turn + 1) % 3, list(tricks)


def maxn(hands, played, leader, turn, tricks, util) -> RefNode:
    """Max^n; ``util[p][t]`` utility of seat p for t tricks; ``played`` = [(seat, card), ...]."""
    if not any(hands) and not played:
        return RefNode(value=[util[p][tricks[p]] for p in range(3)])
    cards, vals = [], []
    for c, *child in _children(hands, played, leader, turn, tricks):
        cards.append(c)
        vals.append(maxn(*child, util).value)
    best = 0
    for i, v in enumerate(vals):
        if v[turn] > vals[best][turn]:
            best = i
    return RefNode(value=vals[best], cards=cards, child_values=vals)


def probmaxn(hands, played, leader, turn, tricks, util, pmodel, utrue, me, eps) -> RefNode:
    """Prob-max^n; ``util[p][m][t]``, ``pmodel[p][m]``, ``utrue[t]`` as in the kernel."""
    n_models = len(util[0])
    if not any(hands) and not played:
        return RefNode(
            value=[[util[p][m][tricks[p]] for m in range(n_models)] for p in range(3)],
            true=utrue[tricks[me]],
        )
    cards, vals, trues = [], [], []
    for c, *child in _children(hands, played, leader, turn, tricks):
        r = probmaxn(*child, util, pmodel, utrue, me, eps)
        cards.append(c)
        vals.append(r.value)
        trues.append(r.true)
    n = len(cards)
    prob = [0.0] * n
    for m in range(n_models):
        best = max(v[turn][m] for v in vals)
        in_b = [_is_tie(v[turn][m], best) for v in vals]
        nb = sum(in_b)
        for i in range(n):
            weight = (1.0 - eps) / nb + eps / n if in_b[i] else eps / n
            prob[i] += pmodel[turn][m] * weight
    value = [
        [sum(prob[i] * vals[i][p][m] for i in range(n)) for m in range(n_models)] for p in range(3)
    ]
    true = max(trues) if turn == me else sum(prob[i] * trues[i] for i in range(n))
    return RefNode(
        value=value, true=true, cards=cards, child_values=vals, child_true=trues, prob_choice=prob
    )
