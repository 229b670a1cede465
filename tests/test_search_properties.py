"""Property tests on random trees: fast searches against plain references, and the algorithms'
relations to one another (prob-max^n -> max^n as eps -> 0 with one model each, and so on)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.perfect_info.search.maxn import maxn, softmaxn
from oppmodel.modeling.perfect_info.search.maxprob import max_prob, win_probabilities
from oppmodel.modeling.perfect_info.search.paranoid import paranoid, paranoid_alphabeta
from oppmodel.modeling.perfect_info.search.probmaxn import combine, probmaxn
from oppmodel.modeling.perfect_info.search.tree import Leaf, Node, Tree, build_tree, iter_leaves

PROPS = settings(max_examples=150, deadline=None)


@st.composite
def trees(draw, *, n_players=None, values=None, max_depth=4) -> Tree:
    """A random tree: every node has 1-3 children; leaves get payoffs from ``values``."""
    n = n_players if n_players is not None else draw(st.integers(2, 4))
    leaf_values = values if values is not None else st.integers(0, 5)

    def build(depth: int) -> Tree:
        if depth == max_depth or (depth > 0 and draw(st.booleans())):
            return Leaf(payoffs=tuple(draw(leaf_values) for _ in range(n)))
        k = draw(st.integers(1, 3))
        return Node(
            player=draw(st.integers(0, n - 1)), children=tuple(build(depth + 1) for _ in range(k))
        )

    return build(0)


def relabel_distinct(tree: Tree, seed: int) -> Tree:
    """Same shape, leaf payoffs replaced so that no player has a tie anywhere."""
    leaves = list(iter_leaves(tree))
    n = len(leaves[0].payoffs)
    rng = np.random.default_rng(seed)
    columns = [rng.permutation(len(leaves)) for _ in range(n)]
    it = iter(range(len(leaves)))

    def rebuild(t: Tree) -> Tree:
        if isinstance(t, Leaf):
            k = next(it)
            return Leaf(payoffs=tuple(int(columns[i][k]) for i in range(n)))
        return Node(player=t.player, children=tuple(rebuild(c) for c in t.children))

    return rebuild(tree)


def with_single_models(tree: Tree) -> Tree:
    if isinstance(tree, Leaf):
        return Leaf(payoffs=tree.payoffs, utilities=tuple((p,) for p in tree.payoffs))
    return Node(player=tree.player, children=tuple(with_single_models(c) for c in tree.children))


@PROPS
@given(tree=trees(), data=st.data())
def test_alphabeta_equals_plain_paranoid(tree: Tree, data) -> None:
    player = data.draw(st.integers(0, len(next(iter_leaves(tree)).payoffs) - 1))
    plain = paranoid(tree, player=player)
    pruned = paranoid_alphabeta(tree, player=player)
    assert pruned.value == plain.value
    assert pruned.move == plain.move
    assert pruned.nodes <= plain.nodes


@PROPS
@given(tree=trees(n_players=2), data=st.data())
def test_paranoid_is_minimax_is_maxn_in_zero_sum_two_player(tree: Tree, data) -> None:
    """Sturtevant 2004: with two players and zero-sum payoffs, max^n is minimax (= paranoid)."""

    def zero_sum(t: Tree) -> Tree:
        if isinstance(t, Leaf):
            return Leaf(payoffs=(t.payoffs[0], -t.payoffs[0]))
        return Node(player=t.player, children=tuple(zero_sum(c) for c in t.children))

    zs = zero_sum(tree)
    assert maxn(zs).value[0] == paranoid(zs, player=0).value


@PROPS
@given(tree=trees(), seed=st.integers(0, 2**32 - 1))
def test_probmaxn_with_one_greedy_model_is_maxn(tree: Tree, seed: int) -> None:
    distinct = with_single_models(relabel_distinct(tree, seed))
    n = len(next(iter_leaves(distinct)).payoffs)
    result = probmaxn(distinct, prob_model=[[1.0]] * n, epsilon=0.0, you=0, true_model=0)
    reference = maxn(distinct)
    assert tuple(float(row[0]) for row in result.utilities) == reference.value
    # And soft-max^n's sets collapse to the max^n value when there are no ties.
    assert softmaxn(distinct).value == (reference.value,)


@PROPS
@given(tree=trees(), seed=st.integers(0, 2**32 - 1))
def test_probmaxn_epsilon_one_is_uniform_and_values_stay_in_range(tree: Tree, seed: int) -> None:
    rng = np.random.default_rng(seed)
    leaves = list(iter_leaves(tree))
    n = len(leaves[0].payoffs)

    def two_models(t: Tree) -> Tree:
        if isinstance(t, Leaf):
            return Leaf(
                utilities=tuple(tuple(rng.integers(-9, 10, size=2).tolist()) for _ in range(n))
            )
        return Node(player=t.player, children=tuple(two_models(c) for c in t.children))

    tree2 = two_models(tree)
    weights = [rng.dirichlet([1.0, 1.0]).tolist() for _ in range(n)]
    uniform = probmaxn(tree2, prob_model=weights, epsilon=1.0, you=0, true_model=1)
    if isinstance(tree2, Node):
        k = len(tree2.children)
        np.testing.assert_allclose(uniform.prob_choice, [1 / k] * k, atol=1e-15)
    greedy = probmaxn(tree2, prob_model=weights, epsilon=0.2, you=0, true_model=1)
    assert abs(sum(greedy.prob_choice) - 1) < 1e-12 or not greedy.prob_choice
    # Players' utilities stay within their leaf ranges (expectations of leaf values).
    for i in range(n):
        for j in range(2):
            column = [lf.utilities[i][j] for lf in iter_leaves(tree2)]
            assert min(column) - 1e-9 <= greedy.utilities[i][j] <= max(column) + 1e-9


@PROPS
@given(
    bounds=st.lists(
        st.tuples(st.integers(-5, 5), st.integers(1, 6)).map(lambda p: (p[0], p[0] + p[1])),
        min_size=1,
        max_size=5,
    )
)
def test_interval_win_probabilities_sum_to_one_exactly(bounds) -> None:
    probs = win_probabilities(bounds)
    assert all(isinstance(p, Fraction) and 0 <= p <= 1 for p in probs)
    assert sum(probs) == 1


@settings(max_examples=30, deadline=None)
@given(
    bounds=st.lists(
        st.tuples(st.floats(-5, 5), st.floats(0.1, 6)).map(lambda p: (p[0], p[0] + p[1])),
        min_size=2,
        max_size=4,
    )
)
def test_interval_win_probabilities_match_quadrature(bounds) -> None:
    def integrand(x: float, a: int) -> float:
        lo, hi = bounds[a]
        out = 1 / (hi - lo)
        for b, (blo, bhi) in enumerate(bounds):
            if b != a:
                out *= min(max((x - blo) / (bhi - blo), 0.0), 1.0)
        return out

    cuts = sorted({x for pair in bounds for x in pair})
    for a, (lo, hi) in enumerate(bounds):
        points = [c for c in cuts if lo < c < hi]
        numeric, _ = integrate.quad(integrand, lo, hi, args=(a,), points=points or None, limit=200)
        assert win_probabilities(bounds)[a] == pytest.approx(numeric, abs=1e-9)


def test_point_masses_count_ties_as_wins() -> None:
    assert win_probabilities([(3, 3), (3, 3), (1, 2)]) == (1, 1, 0)
    assert win_probabilities([(2, 2), (0, 4)]) == (Fraction(1, 2), Fraction(1, 2))


@PROPS
@given(tree=trees(values=st.integers(0, 1)))
def test_max_prob_values_are_probabilities_and_mover_gets_its_best(tree: Tree) -> None:
    result = max_prob(tree, tie_tol=0)
    assert all(0 <= v <= 1 for v in result.value)
    if isinstance(tree, Node):
        best = max(child.value[tree.player] for child in result.children)
        assert result.value[tree.player] == best


@PROPS
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 4),
    mover=st.integers(0, 2),
    eps=st.floats(0, 1),
)
def test_combine_probchoice_reads_only_the_movers_rows(seed: int, k: int, mover: int, eps: float):
    rng = np.random.default_rng(seed)
    children = [
        tuple(rng.integers(-3, 4, size=2).astype(float) for _ in range(3)) for _ in range(k)
    ]
    row = rng.dirichlet([1.0, 1.0])
    _, first = combine(children, mover, prob_model_row=row, epsilon=eps)
    changed = [
        tuple(c[i] if i == mover else rng.normal(size=2) for i in range(3)) for c in children
    ]
    matrix, second = combine(changed, mover, prob_model_row=row, epsilon=eps)
    np.testing.assert_array_equal(first, second)
    assert second.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(matrix[mover], second @ np.array([c[mover] for c in children]))


def test_build_tree_expands_a_game() -> None:
    """A 3-player take-away game: from a pile of 4, take 1 or 2; whoever takes the last wins."""

    def children(state):
        pile, turn = state
        return [(pile - take, (turn + 1) % 3) for take in (1, 2) if take <= pile] if pile else []

    def leaf(state):
        winner = (state[1] - 1) % 3  # the player who just moved took the last counter
        return Leaf(payoffs=tuple(int(p == winner) for p in range(3)))

    tree = build_tree((4, 0), mover=lambda s: s[1], children=children, leaf=leaf)
    assert sum(1 for _ in iter_leaves(tree)) == 5  # compositions of 4 into 1s and 2s
    # Backward induction: from 2 the mover takes both; from 3 the next player wins either way; so
    # from 4 player 0 loses whatever it takes, and the tie goes to "take 1": player 2 wins.
    assert maxn(tree).value == (0, 0, 1) and maxn(tree).move == 0
    with pytest.raises(InvalidArgumentError):
        build_tree((4, 0), mover=lambda s: s[1], children=children, leaf=leaf, max_nodes=5)
