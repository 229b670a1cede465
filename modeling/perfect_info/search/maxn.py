"""Max^n (Luckhardt & Irani 1986; Sturtevant 2004) and soft-max^n (Sturtevant & Bowling 2006).

Max^n: leaves are n-tuples of payoffs; at a node where player ``i`` moves, the node's value is the
value of the child whose ``i``-th component is largest, ties to the first child. In a two-player
zero-sum game it is minimax. A ``utility(player, payoffs)`` hook replaces "component ``i``" by any
scalar the mover maximises (MP-Mix's offensive strategy uses ``-payoffs[target]`` for the searcher).

Soft-max^n: given a strict partial order ``prefers(i, v, w)`` ("player ``i`` strictly prefers
payoff vector ``v`` to ``w``"; default ``v[i] > w[i]``), a node's value is a *max^n set* of payoff
vectors. A leaf's set is its own payoffs. Child set ``S`` dominates child set ``T`` for the mover
``i`` when no ``t in T`` is preferred to any ``s in S`` and some ``s in S`` is preferred to some
``t in T`` (under the default order: ``min_S v[i] >= max_T v[i]`` and ``max_S v[i] > min_T v[i]``).
The node's set is the union, in child order without repeats, of the sets of the children no other
child dominates; with singleton sets and the default order this keeps exactly the tied maximal
children, which is Sturtevant et al. 2006's Figure 2. A coarser order (e.g. "prefers only by 2 or
more") widens the sets, which is how soft-max^n expresses uncertainty about an opponent's utility.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.perfect_info.search.tree import Leaf, Number, Tree, validate_tree

Payoffs = tuple[Number, ...]


@dataclass(frozen=True)
class MaxnResult:
    """Max^n value of a node, the mover's choice (``None`` at a leaf) and the children's results."""

    value: Payoffs
    move: int | None
    children: tuple[MaxnResult, ...]


@dataclass(frozen=True)
class SoftMaxnResult:
    """Soft-max^n value (a max^n set, in first-seen order), the indices of the children the mover
    might choose (not dominated by another child; empty at a leaf), and the children's results."""

    value: tuple[Payoffs, ...]
    choices: tuple[int, ...]
    children: tuple[SoftMaxnResult, ...]


def own_component(player: int, payoffs: Payoffs) -> Number:
    """Default max^n utility: the mover's own payoff."""
    return payoffs[player]


def maxn(tree: Tree, *, utility: Callable[[int, Payoffs], Number] = own_component) -> MaxnResult:
    """Max^n value of ``tree``: each mover maximises ``utility(mover, value)``; ties to the first
    child."""
    validate_tree(tree, need_payoffs=True)
    return _maxn(tree, utility)


def _maxn(tree: Tree, utility: Callable[[int, Payoffs], Number]) -> MaxnResult:
    if isinstance(tree, Leaf):
        return MaxnResult(value=tree.payoffs, move=None, children=())
    results = tuple(_maxn(child, utility) for child in tree.children)
    best = 0
    best_utility = utility(tree.player, results[0].value)
    for index in range(1, len(results)):
        candidate = utility(tree.player, results[index].value)
        if candidate > best_utility:
            best, best_utility = index, candidate
    return MaxnResult(value=results[best].value, move=best, children=results)


def greater_component(player: int, v: Payoffs, w: Payoffs) -> bool:
    """Default soft-max^n order: ``player`` strictly prefers ``v`` to ``w`` iff ``v[i] > w[i]``."""
    return v[player] > w[player]


def softmaxn(
    tree: Tree, *, prefers: Callable[[int, Payoffs, Payoffs], bool] = greater_component
) -> SoftMaxnResult:
    """Soft-max^n value of ``tree`` under the strict partial order ``prefers``."""
    validate_tree(tree, need_payoffs=True)
    return _softmaxn(tree, prefers)


def _dominates(
    player: int, s: tuple[Payoffs, ...], t: tuple[Payoffs, ...], prefers: Callable
) -> bool:
    if any(prefers(player, b, a) for a in s for b in t):
        return False
    return any(prefers(player, a, b) for a in s for b in t)


def _softmaxn(tree: Tree, prefers: Callable[[int, Payoffs, Payoffs], bool]) -> SoftMaxnResult:
    if isinstance(tree, Leaf):
        return SoftMaxnResult(value=(tree.payoffs,), choices=(), children=())
    results = tuple(_softmaxn(child, prefers) for child in tree.children)
    choices = tuple(
        index
        for index, result in enumerate(results)
        if not any(
            _dominates(tree.player, other.value, result.value, prefers)
            for j, other in enumerate(results)
            if j != index
        )
    )
    if not choices:
        raise InvalidArgumentError("prefers", "is not a strict partial order: dominance is cyclic")
    union: list[Payoffs] = []
    for index in choices:
        union.extend(v for v in results[index].value if v not in union)
    return SoftMaxnResult(value=tuple(union), choices=choices, children=results)
