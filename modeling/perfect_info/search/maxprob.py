"""Max-Prob (Hashavit & Markovitch): search for unbiased rational agents.

Unbounded version (binary-utility games). Leaf payoffs are the agents' win indicators (or, more
generally, win probabilities). An unbiased rational agent picks uniformly among the children that
maximise its own win probability, so at a node where ``a`` moves with children ``C``::

    C_max = {c in C : P_w(c)[a] >= max_c' P_w(c')[a] - tie_tol}
    P_w(node)[b] = (1 / |C_max|) * sum_{c in C_max} P_w(c)[b]      for every agent b

(Hashavit & Markovitch, section 2 and Figure 3). The searcher picks a child in ``C_max`` at the root
(the paper picks at random; ``best_moves`` is the whole set and ``move`` its first element).

Bounded version (section 3). A search-horizon leaf carries a heuristic interval ``[l_a, u_a]`` per
agent; agent ``a``'s final value is modelled as ``X_a ~ Uniform[l_a, u_a]`` (a point mass when
``l_a == u_a``), independently, and a win-distinguishing heuristic makes ``a`` a winner when its
value is the largest (ties count as wins, as in Definition 1's ``>=``). So::

    P_w(leaf)[a] = P(X_a >= X_a' for all a' != a)
                 = integral_{l_a}^{u_a} f_a(x) prod_{a' != a} F_a'(x) dx     (ibid., eq. 1)

:func:`win_probabilities` evaluates this exactly: between consecutive interval endpoints every
``F_a'`` is 0, 1 or linear, so the integrand is a polynomial of degree <= n - 1, integrated in
closed form piece by piece. Integer or Fraction bounds give exact Fractions (the paper's node b:
7/8); float bounds give floats. With non-degenerate intervals the win probabilities sum to 1.
The bounded search then propagates these leaf values with the unbounded rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.perfect_info.search.tree import Leaf, Number, Tree, validate_tree

MAXPROB_TIE_TOL = 1e-12
"""Win probabilities within this of the maximum count as tied (0 compares Fractions exactly)."""


@dataclass(frozen=True)
class MaxProbResult:
    """Win probability of every agent at a node, the maximal children of its mover (empty at a
    leaf), the first of them, and the children's results."""

    value: tuple[Number, ...]
    best_moves: tuple[int, ...]
    move: int | None
    children: tuple[MaxProbResult, ...]


def max_prob(tree: Tree, *, tie_tol: float = MAXPROB_TIE_TOL) -> MaxProbResult:
    """Unbounded Max-Prob: leaf payoffs are win indicators or probabilities."""
    validate_tree(tree, need_payoffs=True)
    _check_tol(tie_tol)
    return _search(tree, lambda lf: tuple(lf.payoffs), tie_tol)


def bounded_max_prob(tree: Tree, *, tie_tol: float = MAXPROB_TIE_TOL) -> MaxProbResult:
    """Bounded Max-Prob: leaf values are :func:`win_probabilities` of the leaf's ``bounds``."""
    validate_tree(tree, need_bounds=True)
    _check_tol(tie_tol)
    return _search(tree, _bounded_leaf_value, tie_tol)


def _bounded_leaf_value(lf: Leaf) -> tuple[Number, ...]:
    assert lf.bounds is not None  # validate_tree(need_bounds=True) checked every leaf
    return win_probabilities(lf.bounds)


def _check_tol(tie_tol: float) -> None:
    if not tie_tol >= 0:
        raise InvalidArgumentError("tie_tol", f"must be >= 0, got {tie_tol}")


def _search(
    tree: Tree, evaluate: Callable[[Leaf], tuple[Number, ...]], tie_tol: float
) -> MaxProbResult:
    if isinstance(tree, Leaf):
        return MaxProbResult(value=evaluate(tree), best_moves=(), move=None, children=())
    results = tuple(_search(child, evaluate, tie_tol) for child in tree.children)
    a = tree.player
    top = max(r.value[a] for r in results)
    best = tuple(i for i, r in enumerate(results) if r.value[a] >= top - tie_tol)
    n = len(results[0].value)
    count = Fraction(len(best))
    value = tuple(sum(results[i].value[b] for i in best) / count for b in range(n))
    return MaxProbResult(value=value, best_moves=best, move=best[0], children=results)


def win_probabilities(bounds: Sequence[tuple[Number, Number]]) -> tuple[Number, ...]:
    """Exact ``P(X_a >= X_a' for all a' != a)`` for independent ``X_a ~ Uniform[l_a, u_a]``.

    Ints and Fractions are computed exactly (returned as Fractions); floats as floats.
    """
    if len(bounds) < 1:
        raise InvalidArgumentError("bounds", "needs at least one agent")
    exact = all(isinstance(x, int | Fraction) for pair in bounds for x in pair)
    pairs = [(_exact(lo, exact), _exact(hi, exact)) for lo, hi in bounds]
    for a, (lo, hi) in enumerate(pairs):
        if not lo <= hi:
            raise InvalidArgumentError(f"bounds[{a}]", f"needs low <= high, got {bounds[a]}")
    return tuple(_win_probability(pairs, a) for a in range(len(pairs)))


def _exact(x: Number, exact: bool) -> Number:
    return Fraction(x) if exact else float(x)


def _cdf_at(pair: tuple[Number, Number], x: Number) -> Number:
    lo, hi = pair
    if x >= hi:
        return 1
    if x < lo:
        return 0
    return (x - lo) / (hi - lo)


def _win_probability(pairs: list[tuple[Number, Number]], a: int) -> Number:
    lo, hi = pairs[a]
    others = [p for b, p in enumerate(pairs) if b != a]
    if lo == hi:  # point mass: every other value must be <= it
        result: Number = lo - lo + 1  # 1 of the same type as the bounds
        for pair in others:
            result = result * _cdf_at(pair, lo)
        return result
    cuts = sorted({lo, hi, *(x for pair in others for x in pair if lo < x < hi)})
    total: Number = 0
    for p, q in pairwise(cuts):
        poly: list[Number] = [1]  # coefficients of the integrand's product of CDFs on (p, q)
        for olo, ohi in others:
            if ohi <= p:
                continue  # F = 1 on (p, q)
            if olo >= q:
                poly = [0]  # F = 0 on (p, q): a cannot be the largest there
                break
            # here olo <= p < q <= ohi and olo < ohi: F(x) = (x - olo) / (ohi - olo)
            width = ohi - olo
            poly = _poly_mul(poly, [-olo / width, 1 / width])
        total += sum(c * (q ** (k + 1) - p ** (k + 1)) / (k + 1) for k, c in enumerate(poly))
    return total / (hi - lo)


def _poly_mul(f: list[Number], g: list[Number]) -> list[Number]:
    out: list[Number] = [0] * (len(f) + len(g) - 1)
    for i, x in enumerate(f):
        for j, y in enumerate(g):
            out[i + j] += x * y
    return out
