"""The papers' worked examples, typed in as trees (players are 0-based: the papers' Player 1 is 0).

Where a figure's numbers are not all in the paper's text, the test says how it reads the figure.
"""

from __future__ import annotations

from fractions import Fraction as F
from itertools import permutations

import numpy as np
import pytest

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.perfect_info.search.maxn import maxn, softmaxn
from oppmodel.modeling.perfect_info.search.maxprob import (
    bounded_max_prob,
    max_prob,
    win_probabilities,
)
from oppmodel.modeling.perfect_info.search.mpmix import choose_strategy, mp_mix
from oppmodel.modeling.perfect_info.search.paranoid import paranoid, paranoid_alphabeta
from oppmodel.modeling.perfect_info.search.probmaxn import model_choice_probabilities, probmaxn
from oppmodel.modeling.perfect_info.search.tree import Leaf, Node, find, leaf, node


def paper000_figure1() -> Node:
    """Sturtevant et al. 2006, Figure 1. The text gives (a) = {(6,4,0), (1,4,5)}, (b) = {(3,4,3),
    (1,3,6)} and (5,4,1) as the first (tie-winning) child of (c). The second child of (c) is not in
    the text; it must give Player 2 a 4 (a tie) and Player 1 between 3 and 5 (Figure 2: moving to
    (c) guarantees 3, only (a) can give 6). We read it as (3,4,3); every leaf then sums to 10, as in
    the paper."""
    a = node(1, leaf(6, 4, 0), leaf(1, 4, 5), label="a")
    b = node(1, leaf(3, 4, 3), leaf(1, 3, 6), label="b")
    c = node(1, leaf(5, 4, 1), leaf(3, 4, 3), label="c")
    return node(0, a, b, c, label="root")


def test_paper000_figure1_maxn() -> None:
    result = maxn(paper000_figure1())
    assert [child.value for child in result.children] == [(6, 4, 0), (3, 4, 3), (5, 4, 1)]
    assert [child.move for child in result.children] == [0, 0, 0]  # (a), (c): ties to the left
    assert result.value == (6, 4, 0)
    assert result.move == 0  # Player 1 takes the left branch


def test_paper000_figure2_softmaxn() -> None:
    result = softmaxn(paper000_figure1())
    a, b, c = result.children
    assert set(a.value) == {(6, 4, 0), (1, 4, 5)}  # Player 2 indifferent: a max^n set
    assert b.value == ((3, 4, 3),)
    assert set(c.value) == {(5, 4, 1), (3, 4, 3)}
    # Needing 3 points, (c) guarantees a win; needing 6, only (a) can give it.
    assert min(v[0] for v in c.value) >= 3
    assert [
        i for i, child in enumerate(result.children) if max(v[0] for v in child.value) >= 6
    ] == [0]
    # (c) dominates (b) for Player 1 ({5, 3} vs {3}); (a) and (c) are incomparable.
    assert result.choices == (0, 2)
    assert set(result.value) == set(a.value) | set(c.value)


def test_softmaxn_coarser_order_widens_sets() -> None:
    """Under "prefers only by 2 or more", Player 2's 4 vs 3 at (b) becomes a tie."""
    result = softmaxn(paper000_figure1(), prefers=lambda i, v, w: v[i] >= w[i] + 2)
    assert set(result.children[1].value) == {(3, 4, 3), (1, 3, 6)}


def spades_utilities(payoffs: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """Sturtevant et al. 2006, two models per player: MT = the payoff; mOT = the payoff minus 2 per
    overtrick (Figure 4: 31 with one overtrick is worth 31 to MT and 29 to mOT). One point is scored
    per overtrick, so a made bid's overtricks are ``payoff mod 10``; a missed bid (negative) has
    none."""
    return tuple((p, p - 2 * (p % 10 if p > 0 else 0)) for p in payoffs)


def paper000_figure3() -> Node:
    """Sturtevant et al. 2006, Figures 3 and 5: Player 1 chooses among outcomes (a), (b), (c)."""
    payoffs = {"a": (31, 10, -20), "b": (30, -10, 20), "c": (31, -10, -20)}
    leaves = [Leaf(payoffs=p, utilities=spades_utilities(p), label=k) for k, p in payoffs.items()]
    return Node(player=0, children=tuple(leaves), label="root")


def test_paper000_figure4_leaf_utilities() -> None:
    assert find(paper000_figure3(), "a").utilities == ((31, 29), (10, 10), (-20, -20))


def test_paper000_figure5_choice_weights() -> None:
    eps = 0.3
    mover = np.array([[31, 29], [30, 30], [31, 29]], dtype=float)  # Player 1's MT, mOT utilities
    weights = model_choice_probabilities(mover, eps)
    expected = [
        [(1 - eps) / 2 + eps / 3, eps / 3],
        [eps / 3, (1 - eps) + eps / 3],
        [(1 - eps) / 2 + eps / 3, eps / 3],
    ]
    np.testing.assert_allclose(weights, expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(weights, [[0.45, 0.1], [0.1, 0.8], [0.45, 0.1]], atol=1e-15)


@pytest.mark.parametrize(("true_model", "u_true", "move"), [(0, 31.0, 0), (1, 30.0, 1)])
def test_paper000_figure6_root_value(true_model: int, u_true: float, move: int) -> None:
    result = probmaxn(
        paper000_figure3(), prob_model=[[0.5, 0.5]] * 3, epsilon=0.3, you=0, true_model=true_model
    )
    np.testing.assert_allclose(result.prob_choice, [0.275, 0.45, 0.275], atol=1e-15)
    expected = [[30.55, 29.45], [-4.5, -4.5], [-2.0, -2.0]]
    np.testing.assert_allclose(np.array(result.utilities), expected, atol=1e-12)
    # Player 1 searching knows its own rule: u_true is the max over children, not the expectation.
    assert result.u_true == u_true
    assert result.move == move  # MT takes (a) (tie with (c) to the first), mOT takes (b)


def test_paper000_figure6_seen_by_another_searcher() -> None:
    """Searched by Player 2 (MT), the root is an opponent node: u_true is the expectation -4.5."""
    result = probmaxn(
        paper000_figure3(), prob_model=[[0.5, 0.5]] * 3, epsilon=0.3, you=1, true_model=0
    )
    assert result.u_true == pytest.approx(-4.5, abs=1e-12)
    assert result.move is None


def test_probmaxn_searcher_row_uses_opponents_belief_below_root() -> None:
    """Player 2 moves first, choosing between Figure 3's position (Player 1 to move) and a leaf
    worth -5 to Player 2. How Player 2 values Figure 3 depends on what the opponents believe about
    Player 1 (prob_model[0]); Player 1's own u_true there is still the max over its true utility."""
    tree = Node(player=1, children=(paper000_figure3(), Leaf(utilities=((0, 0), (-5, -5), (0, 0)))))
    others = [[0.5, 0.5], [0.5, 0.5]]
    # Believed mOT: Player 1 takes (b) w.p. 0.8, Player 2 expects 0.1*10 - 0.8*10 - 0.1*10 = -8.
    as_mot = probmaxn(tree, prob_model=[[0.0, 1.0], *others], epsilon=0.3, you=0, true_model=0)
    np.testing.assert_allclose(as_mot.child_u_true, [31.0, 0.0])
    np.testing.assert_allclose(as_mot.prob_choice, [0.15, 0.85], atol=1e-15)
    np.testing.assert_allclose(as_mot.utilities[1], [0.15 * -8 + 0.85 * -5] * 2, atol=1e-12)
    assert as_mot.u_true == pytest.approx(0.15 * 31, abs=1e-12)
    # Believed MT: Player 1 takes (a) or (c), Player 2 expects 0.45*10 - 0.1*10 - 0.45*10 = -1.
    as_mt = probmaxn(tree, prob_model=[[1.0, 0.0], *others], epsilon=0.3, you=0, true_model=0)
    np.testing.assert_allclose(as_mt.prob_choice, [0.85, 0.15], atol=1e-15)
    np.testing.assert_allclose(as_mt.utilities[1], [0.85 * -1 + 0.15 * -5] * 2, atol=1e-12)
    assert as_mt.u_true == pytest.approx(0.85 * 31, abs=1e-12)


def paper001_figure1() -> Node:
    """Hashavit & Markovitch, Figure 1 (agent 1 = 0 searches, agent 2 = 1 moves at a and b). Agent 2
    loses at every leaf. Under (a) it picks c or d, after which agent 1 or agent 3 wins: c =
    (1,0,0), d = (0,0,1). Under (b), agents 1 and 3 each win with 2/3, and agent 1 wins at e and g
    (the text: agent 2 "will choose ... either node e or node g with a probability of 1/3"), so f is
    (0,0,1) and one of e, g is a shared win: we read e = (1,0,1), g = (1,0,0)."""
    a = node(1, leaf(1, 0, 0, label="c"), leaf(0, 0, 1, label="d"), label="a")
    b = node(
        1, leaf(1, 0, 1, label="e"), leaf(0, 0, 1, label="f"), leaf(1, 0, 0, label="g"), label="b"
    )
    return node(0, a, b, label="root")


def test_paper001_figure1_max_prob() -> None:
    result = max_prob(paper001_figure1(), tie_tol=0)
    a, b = result.children
    assert a.value == (F(1, 2), 0, F(1, 2))
    assert b.value == (F(2, 3), 0, F(2, 3))  # the paper's "0.66"
    assert result.best_moves == (1,) and result.move == 1  # Max-Prob always picks b
    assert result.value[0] == F(2, 3)


def test_paper001_figure1_paranoid_and_maxn_expected_values() -> None:
    """Against unbiased rational opponents, paranoid's uniform tie-break earns 7/12 and max^n's
    (uniform over the agents' tie orders, then uniform at the root) picks a w.p. 5/12."""
    tree = paper001_figure1()
    p_win = [child.value[0] for child in max_prob(tree, tie_tol=0).children]
    para = paranoid(tree, player=0)
    assert para.value == 0 and para.best_moves == (0, 1)  # 0 propagates to both a and b
    assert sum(p_win[i] for i in para.best_moves) / len(para.best_moves) == F(7, 12)
    assert paranoid_alphabeta(tree, player=0).value == 0

    a, b = tree.children
    p_a = F(0)
    expected = F(0)
    orders = [(pa, pb) for pa in permutations(a.children) for pb in permutations(b.children)]
    for order_a, order_b in orders:  # max^n breaks agent 2's ties to the first child
        root = maxn(node(0, Node(1, order_a), Node(1, order_b))).children
        top = max(child.value[0] for child in root)
        tied = [i for i, child in enumerate(root) if child.value[0] == top]
        p_a += F(int(0 in tied), len(tied)) / len(orders)
        expected += sum(F(p_win[i]) for i in tied) / len(tied) / len(orders)
    assert p_a == F(5, 12)
    assert expected == F(43, 72)  # the paper's "approximately 0.6"


def paper001_figure2() -> Node:
    """Hashavit & Markovitch, Figure 2 (bounded Max-Prob). Node b, as the text computes it: agent
    1's value is uniform on [4, 6], agent 2's on [3, 5], and agent 3 "has no chance": we give it [0,
    2]. Node a: agent 1 always highest; we give it [7, 8], [1, 3], [2, 4]. The text does not give c
    and d; we chose them so that, as the text says, agent 2 has one maximal child at e and two at
    f: c = ([0, 1], [2, 4], [2, 4]) and d = ([2, 4], [2, 4], [0, 1])."""
    a = Leaf(bounds=((7, 8), (1, 3), (2, 4)), label="a")
    b = Leaf(bounds=((4, 6), (3, 5), (0, 2)), label="b")
    c = Leaf(bounds=((0, 1), (2, 4), (2, 4)), label="c")
    d = Leaf(bounds=((2, 4), (2, 4), (0, 1)), label="d")
    return node(0, node(1, a, b, label="e"), node(1, c, d, label="f"), label="root")


def test_paper001_figure2_bounded_max_prob() -> None:
    tree = paper001_figure2()
    assert win_probabilities(find(tree, "a").bounds) == (1, 0, 0)
    assert win_probabilities(find(tree, "b").bounds) == (F(7, 8), F(1, 8), 0)  # 0.875 at b
    result = bounded_max_prob(tree, tie_tol=0)
    e, f = result.children
    assert e.best_moves == (1,) and e.value == (F(7, 8), F(1, 8), 0)
    assert f.best_moves == (0, 1) and f.value == (F(1, 4), F(1, 2), F(1, 4))  # not a leaf value
    assert result.move == 0 and result.value == e.value


def mp_mix_tree() -> Node:
    """A tree on which max^n, paranoid and the offensive strategy (against agent 1) all differ:
    max^n takes C (9 if agent 3 keeps its 2), paranoid B (a sure 5), offensive A (agent 1 gets
    0)."""
    return node(
        0,
        leaf(4, 0, 6, label="A"),
        leaf(5, 5, 0, label="B"),
        node(2, leaf(9, 3, 2), leaf(2, 3, 1), label="C"),
    )


@pytest.mark.parametrize(
    ("values", "t_d", "t_o", "strategy", "target", "move"),
    [
        ((10, 2, 1), 5, 5, "paranoid", None, 1),  # we lead by 8 > T_d
        ((10, 2, 1), 8, 5, "maxn", None, 2),  # lead of 8 is not more than T_d = 8
        ((1, 10, 2), 5, 5, "offensive", 1, 0),  # agent 1 leads by 8 > T_o
        ((1, 10, 2), 5, 9, "maxn", None, 2),
        ((3, 3, 1), 0, 0, "maxn", None, 2),  # a tie at the top: no lead
    ],
)
def test_mp_mix_dispatch(values, t_d, t_o, strategy, target, move) -> None:
    result = mp_mix(mp_mix_tree(), player=0, values=values, t_d=t_d, t_o=t_o)
    assert (result.strategy, result.target, result.move) == (strategy, target, move)
    assert choose_strategy(values, player=0, t_d=t_d, t_o=t_o) == (strategy, target)


def test_mp_mix_searches_match_their_algorithms() -> None:
    tree = mp_mix_tree()
    assert maxn(tree).move == 2 and maxn(tree).value == (9, 3, 2)
    assert paranoid(tree, player=0).move == 1
    offensive = mp_mix(tree, player=0, values=(1, 10, 2), t_d=5, t_o=5)
    assert offensive.value == (4, 0, 6)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: maxn(node(0, leaf(1, 2), leaf(1, 2, 3))), "leaf 1"),
        (lambda: maxn(node(2, leaf(1, 2), leaf(3, 4))), "node ?.player"),
        (lambda: maxn(Node(0, ())), "tree"),
        (lambda: maxn(node(0, leaf(1, float("nan")))), "leaf 0.payoffs"),
        (lambda: paranoid(node(0, leaf(1, 2)), player=5), "player"),
        (lambda: bounded_max_prob(node(0, leaf(1, 2))), "leaf 0.bounds"),
        (lambda: win_probabilities([(2, 1), (0, 1)]), "bounds[0]"),
        (lambda: mp_mix(mp_mix_tree(), player=0, values=(1, 2), t_d=1, t_o=1), "values"),
        (
            lambda: probmaxn(
                paper000_figure3(), prob_model=[[0.5, 0.6]] * 3, epsilon=0.3, you=0, true_model=0
            ),
            "prob_model[0]",
        ),
        (
            lambda: probmaxn(
                paper000_figure3(), prob_model=[[0.5, 0.5]] * 3, epsilon=1.5, you=0, true_model=0
            ),
            "epsilon",
        ),
        (
            lambda: probmaxn(
                paper000_figure3(), prob_model=[[1.0]] * 3, epsilon=0.3, you=0, true_model=0
            ),
            "leaf a.utilities",
        ),
        (
            lambda: probmaxn(
                paper001_figure1(), prob_model=[[1.0]] * 3, epsilon=0.3, you=0, true_model=0
            ),
            "leaf c.utilities",
        ),
    ],
)
def test_invalid_inputs_name_the_field(call, field: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert info.value.field == field


def test_probmaxn_models_as_utility_functions_of_payoffs() -> None:
    """Figure 3 with leaves carrying only payoffs and the models applied by ``evaluate``."""
    bare = Node(0, tuple(Leaf(payoffs=lf.payoffs) for lf in paper000_figure3().children))
    result = probmaxn(
        bare,
        prob_model=[[0.5, 0.5]] * 3,
        epsilon=0.3,
        you=0,
        true_model=1,
        evaluate=lambda lf: spades_utilities(lf.payoffs),
    )
    np.testing.assert_allclose(np.array(result.utilities)[0], [30.55, 29.45], atol=1e-12)
    assert result.move == 1


def test_probmaxn_tie_tolerance_is_relative_above_one() -> None:
    """Ties: ``x >= best - 1e-9 * max(1, |best|)`` (the spec shared with the Spades kernel)."""
    big = model_choice_probabilities(np.array([[1000.0], [1000.0 - 5e-7]]), 0.0)
    np.testing.assert_allclose(big[:, 0], [0.5, 0.5])  # 5e-7 <= 1e-9 * 1000: tied
    small = model_choice_probabilities(np.array([[0.5], [0.5 - 5e-9]]), 0.0)
    np.testing.assert_allclose(small[:, 0], [1.0, 0.0])  # 5e-9 > 1e-9 * 1: not tied
    root = Node(0, (Leaf(utilities=((1000.0 - 5e-7,),)), Leaf(utilities=((1000.0,),))))
    assert probmaxn(root, prob_model=[[1.0]], epsilon=0.0, you=0, true_model=0).move == 0
