"""MP-Mix (Zuckerman, Felner & Kraus 2009, as described by Hashavit & Markovitch, section 4.1).

Before searching, the mover ``p`` looks at the heuristic values ``h`` of the current position:
the leader is the agent with the largest ``h`` (the lowest index on a tie) and the gap is the
leader's value minus the runner-up's (the largest among the others).

- ``p`` leads and ``gap > T_d``: defend, i.e. play paranoid (the others minimise ``p``'s payoff).
- another agent leads and ``gap > T_o``: attack it, i.e. max^n in which ``p`` maximises
  ``-payoffs[leader]`` at its own nodes and everyone else maximises its own payoff (offensive).
- otherwise: plain max^n.

Ties inside each search go to the first child, as everywhere in this package.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.perfect_info.search.maxn import Payoffs, maxn
from oppmodel.modeling.perfect_info.search.paranoid import paranoid_alphabeta
from oppmodel.modeling.perfect_info.search.tree import Leaf, Number, Tree, validate_tree

Strategy = Literal["paranoid", "offensive", "maxn"]


@dataclass(frozen=True)
class MpMixResult:
    """The strategy MP-Mix chose, its target (the attacked leader, else ``None``), the root move,
    and the chosen search's value (paranoid: a number; max^n and offensive: a payoff tuple)."""

    strategy: Strategy
    target: int | None
    move: int | None
    value: Number | Payoffs


def choose_strategy(
    values: Sequence[Number], *, player: int, t_d: Number, t_o: Number
) -> tuple[Strategy, int | None]:
    """The MP-Mix rule on the current heuristic values: (strategy, target)."""
    if len(values) < 2:
        raise InvalidArgumentError("values", "needs at least two agents")
    if not 0 <= player < len(values):
        raise InvalidArgumentError("player", f"must be in 0..{len(values) - 1}, got {player}")
    leader = max(range(len(values)), key=lambda a: (values[a], -a))
    gap = values[leader] - max(v for a, v in enumerate(values) if a != leader)
    if leader == player and gap > t_d:
        return "paranoid", None
    if leader != player and gap > t_o:
        return "offensive", leader
    return "maxn", None


def mp_mix(
    tree: Tree, *, player: int, values: Sequence[Number], t_d: Number, t_o: Number
) -> MpMixResult:
    """Pick a strategy from the position's heuristic ``values`` and search ``tree`` with it."""
    n = validate_tree(tree, need_payoffs=True)
    if len(values) != n:
        raise InvalidArgumentError("values", f"needs one value per agent ({n}), got {len(values)}")
    strategy, target = choose_strategy(values, player=player, t_d=t_d, t_o=t_o)
    if isinstance(tree, Leaf):
        return MpMixResult(strategy=strategy, target=target, move=None, value=tree.payoffs)
    if strategy == "paranoid":
        result = paranoid_alphabeta(tree, player=player)
        return MpMixResult(strategy=strategy, target=None, move=result.move, value=result.value)
    if target is not None:  # offensive: only that strategy has a target

        def utility(mover: int, payoffs: Payoffs) -> Number:
            return -payoffs[target] if mover == player else payoffs[mover]

        found = maxn(tree, utility=utility)
    else:
        found = maxn(tree)
    return MpMixResult(strategy=strategy, target=target, move=found.move, value=found.value)
