"""The paranoid algorithm (Sturtevant & Korf 2000; Sturtevant 2004), plain and with alpha-beta.

Paranoid reduces an n-player game to two players: the searching player ``p`` maximises its own
payoff ``v = payoffs[p]`` and assumes every other player minimises it (a coalition against ``p``).
The value is the minimax value of ``v``; alpha-beta returns the same value and the same root move
(the first child attaining it) while visiting fewer nodes (Sturtevant 2004: the branching factor
drops from b to O(b^((n-1)/n)) in the best case). :func:`paranoid` is the plain reference search,
and also returns every root child attaining the value (``best_moves``) for tie-breaking experiments
such as Hashavit & Markovitch's Figure 1, where paranoid's uniform tie-breaker earns 7/12.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.perfect_info.search.tree import Leaf, Number, Tree, validate_tree


@dataclass(frozen=True)
class ParanoidResult:
    """Paranoid value for the searching player, the root move (first child attaining the value;
    ``None`` at a leaf), all root children attaining it, and the number of nodes visited."""

    value: Number
    move: int | None
    best_moves: tuple[int, ...]
    nodes: int


def _check(tree: Tree, player: int) -> None:
    n = validate_tree(tree, need_payoffs=True)
    if not 0 <= player < n:
        raise InvalidArgumentError("player", f"must be in 0..{n - 1}, got {player}")


def paranoid(tree: Tree, *, player: int) -> ParanoidResult:
    """Plain paranoid search (no pruning): the reference for :func:`paranoid_alphabeta`."""
    _check(tree, player)
    counter = [0]

    def value(t: Tree) -> Number:
        counter[0] += 1
        if isinstance(t, Leaf):
            return t.payoffs[player]
        values = [value(child) for child in t.children]
        return max(values) if t.player == player else min(values)

    if isinstance(tree, Leaf):
        return ParanoidResult(value=value(tree), move=None, best_moves=(), nodes=counter[0])
    counter[0] += 1
    values = [value(child) for child in tree.children]
    best = max(values) if tree.player == player else min(values)
    best_moves = tuple(i for i, v in enumerate(values) if v == best)
    return ParanoidResult(value=best, move=best_moves[0], best_moves=best_moves, nodes=counter[0])


def paranoid_alphabeta(tree: Tree, *, player: int) -> ParanoidResult:
    """Paranoid search with alpha-beta pruning (fail-soft); ``best_moves`` holds only ``move``."""
    _check(tree, player)
    counter = [0]

    def search(t: Tree, alpha: Number, beta: Number) -> Number:
        counter[0] += 1
        if isinstance(t, Leaf):
            return t.payoffs[player]
        if t.player == player:
            best: Number = -math.inf
            for child in t.children:
                best = max(best, search(child, alpha, beta))
                alpha = max(alpha, best)
                if alpha >= beta:
                    break
            return best
        best = math.inf
        for child in t.children:
            best = min(best, search(child, alpha, beta))
            beta = min(beta, best)
            if alpha >= beta:
                break
        return best

    if isinstance(tree, Leaf):
        return ParanoidResult(
            value=search(tree, -math.inf, math.inf), move=None, best_moves=(), nodes=counter[0]
        )
    counter[0] += 1
    maximising = tree.player == player
    best_value: Number = -math.inf if maximising else math.inf
    move = 0
    for index, child in enumerate(tree.children):
        # The root keeps a full-width window on its own side so the first best child is exact;
        # later children only need to beat it (strictly) to replace it.
        if maximising:
            v = search(child, best_value, math.inf)
            if v > best_value:
                best_value, move = v, index
        else:
            v = search(child, -math.inf, best_value)
            if v < best_value:
                best_value, move = v, index
    return ParanoidResult(value=best_value, move=move, best_moves=(move,), nodes=counter[0])
