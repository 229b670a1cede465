"""Explicit perfect-information n-player game trees, small enough to type in from a paper's figure.

A tree is made of two frozen records:

- ``Node(player, children, label)``: ``player`` (0-based: the papers' "Player 1" is ``0``) moves by
  choosing one of ``children``, in order; every algorithm in this package breaks ties to the first
  child, so the order of ``children`` is part of the tree.
- ``Leaf(payoffs, utilities, bounds, label)``: an outcome. ``payoffs`` is the n-tuple of scores that
  max^n, soft-max^n, paranoid and Max-Prob read (a tuple of 0/1 for a binary-utility game).
  ``utilities[i][j]`` is the utility of player ``i`` under its model ``j`` (prob-max^n; player
  ``i`` may have its own number of models). ``bounds[i] = (l, u)`` is a heuristic interval for
  player ``i``'s final value (bounded Max-Prob, Hashavit & Markovitch section 3). Fields an
  algorithm does not read may be left out.

Numbers may be ints, floats or ``fractions.Fraction``; the algorithms that only add, multiply and
compare (max^n, soft-max^n, paranoid, Max-Prob) keep Fractions exact, which lets tests check a
figure's 2/3 or 7/12 exactly. ``validate_tree`` checks shapes once and returns the number of
players.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real
from typing import TypeVar

from oppmodel.modeling.errors import InvalidArgumentError

Number = int | float | Fraction
S = TypeVar("S")


@dataclass(frozen=True)
class Leaf:
    """A terminal (or search-horizon) outcome; see the module docstring for the fields."""

    payoffs: tuple[Number, ...] = ()
    utilities: tuple[tuple[Number, ...], ...] | None = None
    bounds: tuple[tuple[Number, Number], ...] | None = None
    label: str = ""


@dataclass(frozen=True)
class Node:
    """A decision node: ``player`` chooses one of ``children`` (ties go to the first child)."""

    player: int
    children: tuple[Node | Leaf, ...]
    label: str = ""


Tree = Node | Leaf


def leaf(*payoffs: Number, label: str = "") -> Leaf:
    """Shorthand for a leaf with payoffs only: ``leaf(6, 4, 0, label="x")``."""
    return Leaf(payoffs=tuple(payoffs), label=label)


def node(player: int, *children: Tree, label: str = "") -> Node:
    """Shorthand for a decision node: ``node(0, child_a, child_b, label="root")``."""
    return Node(player=player, children=tuple(children), label=label)


def build_tree(
    state: S,
    *,
    mover: Callable[[S], int],
    children: Callable[[S], Sequence[S]],
    leaf: Callable[[S], Leaf],
    max_nodes: int = 1_000_000,
) -> Tree:
    """Expand a game from ``state`` into an explicit tree: a state with no ``children`` becomes
    ``leaf(state)``, any other a ``Node(mover(state), ...)`` with its children in the given order.

    This is how a fast game-specific search (e.g. the Spades kernel) is checked against this
    package's reference algorithms on small positions. Raises once ``max_nodes`` is exceeded.
    """
    count = 0

    def expand(s: S) -> Tree:
        nonlocal count
        count += 1
        if count > max_nodes:
            raise InvalidArgumentError("max_nodes", f"the tree has more than {max_nodes} nodes")
        successors = children(s)
        if not successors:
            return leaf(s)
        return Node(player=mover(s), children=tuple(expand(c) for c in successors))

    return expand(state)


def iter_leaves(tree: Tree) -> Iterator[Leaf]:
    """Yield the leaves left to right."""
    if isinstance(tree, Leaf):
        yield tree
        return
    for child in tree.children:
        yield from iter_leaves(child)


def find(tree: Tree, label: str) -> Tree:
    """Return the first node or leaf (pre-order) with this label; raises if there is none."""
    stack: list[Tree] = [tree]
    while stack:
        current = stack.pop()
        if current.label == label:
            return current
        if isinstance(current, Node):
            stack.extend(reversed(current.children))
    raise InvalidArgumentError("label", f"no node labelled {label!r} in the tree")


def _check_number(field: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidArgumentError(field, f"must be a real number, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise InvalidArgumentError(field, f"must be finite, got {value!r}")


def validate_tree(
    tree: Tree,
    *,
    need_payoffs: bool = False,
    need_utilities: bool = False,
    need_bounds: bool = False,
) -> int:
    """Check the tree's shape and return its number of players n.

    Every node must have at least one child and a player in ``0..n-1``; the fields asked for must be
    present on every leaf, finite, and of consistent length (payoffs and bounds: n entries;
    utilities: n rows, each row's length the same on every leaf). n comes from the first leaf.
    """
    n: int | None = None
    model_counts: tuple[int, ...] | None = None
    for index, lf in enumerate(iter_leaves(tree)):
        where = f"leaf {lf.label or index}"
        sizes = []
        if need_payoffs or lf.payoffs:
            if not lf.payoffs:
                raise InvalidArgumentError(f"{where}.payoffs", "required by this algorithm")
            for value in lf.payoffs:
                _check_number(f"{where}.payoffs", value)
            sizes.append(len(lf.payoffs))
        if need_utilities:
            if not lf.utilities:
                raise InvalidArgumentError(f"{where}.utilities", "required by this algorithm")
            counts = tuple(len(row) for row in lf.utilities)
            if min(counts) < 1:
                raise InvalidArgumentError(f"{where}.utilities", "every player needs >= 1 model")
            if model_counts is None:
                model_counts = counts
            elif counts != model_counts:
                raise InvalidArgumentError(
                    f"{where}.utilities", f"models per player {counts} != {model_counts}"
                )
            for row in lf.utilities:
                for value in row:
                    _check_number(f"{where}.utilities", value)
            sizes.append(len(lf.utilities))
        if need_bounds:
            if not lf.bounds:
                raise InvalidArgumentError(f"{where}.bounds", "required by this algorithm")
            for pair in lf.bounds:
                if len(pair) != 2:
                    raise InvalidArgumentError(f"{where}.bounds", "each entry must be (low, high)")
                _check_number(f"{where}.bounds", pair[0])
                _check_number(f"{where}.bounds", pair[1])
                if pair[0] > pair[1]:
                    raise InvalidArgumentError(f"{where}.bounds", f"low > high in {pair}")
            sizes.append(len(lf.bounds))
        if len(set(sizes)) > 1:
            raise InvalidArgumentError(where, f"fields disagree on the number of players: {sizes}")
        if sizes:
            if n is None:
                n = sizes[0]
            elif sizes[0] != n:
                raise InvalidArgumentError(where, f"has {sizes[0]} players, expected {n}")
    if n is None or n < 1:
        raise InvalidArgumentError("tree", "leaves carry no values")
    _check_nodes(tree, n)
    return n


def _check_nodes(tree: Tree, n: int) -> None:
    stack: list[Tree] = [tree]
    while stack:
        current = stack.pop()
        if isinstance(current, Leaf):
            continue
        if not isinstance(current, Node):
            raise InvalidArgumentError("tree", f"expected Node or Leaf, got {type(current)!r}")
        name = f"node {current.label or '?'}"
        if not current.children:
            raise InvalidArgumentError(f"{name}.children", "a decision node needs >= 1 child")
        if isinstance(current.player, bool) or not 0 <= current.player < n:
            raise InvalidArgumentError(f"{name}.player", f"must be in 0..{n - 1}")
        stack.extend(current.children)
