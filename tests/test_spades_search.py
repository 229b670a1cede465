"""Spades max^n and prob-max^n kernels (merging + transposition table) against plain tree search.

The oracle builds the whole unmerged game tree below a position with independently restated rules
(``oppmodel.modeling.perfect_info._spades_reference``) and runs the project's reference
``oppmodel.modeling.perfect_info.search.maxn`` and
``oppmodel.modeling.perfect_info.search.probmaxn`` on it. Agreement on many seeded small deals (3-4
cards each, roots at trick boundaries and mid-trick, random bids, models, weights and epsilon)
checks the rules, the move merging and its multiplicity weighting, and the rank-compressed
transposition table.
"""

from __future__ import annotations

import numpy as np
import pytest

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.spades.bidding import bids
from oppmodel.modeling.games.spades.cards import (
    NO_CARD,
    deal,
    mask_to_cards,
    parse_card,
    parse_hand,
)
from oppmodel.modeling.games.spades.scoring import MODEL_LABELS, utility_table
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.modeling.perfect_info import _spades_reference as R
from oppmodel.modeling.perfect_info.search.maxn import maxn, softmaxn
from oppmodel.modeling.perfect_info.search.probmaxn import probmaxn
from oppmodel.modeling.perfect_info.search.tree import Leaf
from oppmodel.modeling.perfect_info.spades_search import (
    generic_level,
    maxn_search,
    probmaxn_search,
    softmaxn_search,
)
from oppmodel.modeling.perfect_info.transposition import SearchTable


def _random_root(rng: np.random.Generator, hand_size: int) -> SpadesState:
    """A seeded deal, a random leader and 0-2 random cards already played to the first trick."""
    pos = SpadesState.start(deal(rng, hand_size), int(rng.integers(3)))
    for _ in range(int(rng.integers(3))):
        moves = pos.legal_moves()
        pos = pos.play(moves[int(rng.integers(len(moves)))])
    return pos


def _tree(pos: SpadesState, make_leaf):
    hands = [set(mask_to_cards(h)) for h in pos.hands]
    order = [(pos.leader + k) % 3 for k in range(3)]
    played = [(p, pos.trick[p]) for p in order if pos.trick[p] != NO_CARD]
    return R.build_tree(hands, played, pos.leader, pos.turn, list(pos.tricks), make_leaf)


def _random_bids(rng, pos, hand_size):
    if rng.random() < 0.5:
        return bids(pos.hands)
    return tuple(int(b) for b in rng.integers(1, hand_size + 1, size=3))


CASES = [(3, seed) for seed in range(40)] + [(4, seed) for seed in range(100, 108)]


@pytest.mark.parametrize(("hand_size", "seed"), CASES)
def test_maxn_equals_plain_tree_search(hand_size, seed):
    rng = np.random.default_rng(seed)
    pos = _random_root(rng, hand_size)
    b = _random_bids(rng, pos, hand_size)
    models = [MODEL_LABELS[int(m)] for m in rng.integers(2, size=3)]
    got = maxn_search(pos, b, models)
    util = [utility_table(m, bb, hand_size) for m, bb in zip(models, b, strict=True)]
    tree, cards = _tree(pos, lambda t: Leaf(payoffs=tuple(float(util[p][t[p]]) for p in range(3))))
    ref = maxn(tree)
    assert tuple(got.value) == ref.value
    assert got.move == cards[ref.move]
    assert sum(got.multiplicities) == len(cards)
    for card, v in zip(got.moves, got.child_values, strict=True):
        assert tuple(v) == ref.children[cards.index(card)].value


@pytest.mark.parametrize(("hand_size", "seed"), CASES)
def test_probmaxn_equals_plain_tree_search(hand_size, seed):
    rng = np.random.default_rng(seed)
    pos = _random_root(rng, hand_size)
    b = _random_bids(rng, pos, hand_size)
    me = pos.turn if rng.random() < 0.7 else int(rng.integers(3))
    eps = float(rng.choice([0.0, 0.1, 0.3]))
    w1 = rng.choice([0.0, 0.5, 1.0, float(rng.random())], size=3)
    weights = np.stack([w1, 1.0 - w1], axis=1)
    true_model = int(rng.integers(2))
    got = probmaxn_search(pos, b, me=me, true_model=true_model, weights=weights, eps=eps)
    util = [[utility_table(m, bb, hand_size) for m in MODEL_LABELS] for bb in b]
    tree, cards = _tree(
        pos,
        lambda t: Leaf(
            payoffs=t, utilities=tuple(tuple(float(u[t[p]]) for u in util[p]) for p in range(3))
        ),
    )
    ref = probmaxn(tree, prob_model=weights, epsilon=eps, you=me, true_model=true_model)
    np.testing.assert_allclose(got.u, np.array(ref.utilities), rtol=1e-9, atol=1e-9)
    assert got.u_true == pytest.approx(ref.u_true, rel=1e-9, abs=1e-9)
    assert got.move == (None if ref.move is None else cards[ref.move])
    assert got.n_cards == len(cards)
    # each merged move stands for a run of consecutive legal cards with equal values
    i = 0
    for g, (card, k) in enumerate(zip(got.moves, got.multiplicities, strict=True)):
        assert cards[i] == card
        members = range(i, i + k)
        assert got.prob_choice[g] == pytest.approx(sum(ref.prob_choice[j] for j in members))
        for j in members:
            assert got.child_true[g] == pytest.approx(ref.child_u_true[j], rel=1e-9, abs=1e-9)
        i += k
    assert i == len(cards)
    assert got.prob_choice.sum() == pytest.approx(1.0)


@pytest.mark.parametrize(("hand_size", "seed"), CASES)
def test_softmaxn_equals_plain_tree_search(hand_size, seed):
    rng = np.random.default_rng(seed)
    pos = _random_root(rng, hand_size)
    b = _random_bids(rng, pos, hand_size)
    me = pos.turn if rng.random() < 0.7 else int(rng.integers(3))
    true_model = MODEL_LABELS[int(rng.integers(2))]
    got = softmaxn_search(pos, b, me=me, true_model=true_model)
    level = [
        utility_table(true_model, b[p], hand_size) if p == me else generic_level(b[p], hand_size)
        for p in range(3)
    ]
    tree, cards = _tree(pos, lambda t: Leaf(payoffs=t))
    ref = softmaxn(tree, prefers=lambda i, v, w: level[i][v[i]] > level[i][w[i]])
    assert set(got.value) == set(ref.value)
    i = 0
    for card, k, st in zip(got.moves, got.multiplicities, got.child_sets, strict=True):
        for j in range(i, i + k):
            assert set(st) == set(ref.children[j].value)
            assert (card in got.choices) == (j in ref.choices)
        i += k
    if me == pos.turn:
        own = level[me]
        key = [
            (min(own[t[me]] for t in c.value), max(own[t[me]] for t in c.value))
            for c in ref.children
        ]
        best = max(range(len(key)), key=lambda j: (*key[j], -j))
        assert got.move == cards[best]


def test_choice_likelihood_recombines_to_prob_choice():
    rng = np.random.default_rng(7)
    pos = _random_root(rng, 4)
    b = bids(pos.hands)
    w = np.array([[0.3, 0.7], [0.6, 0.4], [0.5, 0.5]])
    res = probmaxn_search(pos, b, me=(pos.turn + 1) % 3, true_model="mOT", weights=w, eps=0.2)
    for g, (card, k) in enumerate(zip(res.moves, res.multiplicities, strict=True)):
        lik = res.choice_likelihood(card)
        assert k * float(w[pos.turn] @ lik) == pytest.approx(res.prob_choice[g])
        assert np.all(lik >= 0.2 / res.n_cards - 1e-12)


def test_table_reuse_is_safe_and_hits():
    rng = np.random.default_rng(11)
    hands = deal(rng, 6)
    pos = SpadesState.start(hands, 1)
    b = bids(hands)
    w = np.full((3, 2), 0.5)
    table = SearchTable(12)
    first = probmaxn_search(pos, b, me=1, true_model="mOT", weights=w, table=table)
    again = probmaxn_search(pos, b, me=1, true_model="mOT", weights=w, table=table)
    assert again.u_true == first.u_true and again.move == first.move is not None
    assert again.nodes < first.nodes  # children come straight from the table
    # different parameters on the same table must not read stale entries
    w2 = np.array([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]])
    shared = probmaxn_search(pos, b, me=1, true_model="MT", weights=w2, table=table)
    fresh = probmaxn_search(pos, b, me=1, true_model="MT", weights=w2)
    np.testing.assert_array_equal(shared.u, fresh.u)
    assert shared.u_true == fresh.u_true
    m1 = maxn_search(pos, b, ("MT", "mOT", "MT"), table=table)
    m2 = maxn_search(pos, b, ("MT", "mOT", "MT"))
    np.testing.assert_array_equal(m1.value, m2.value)


def test_maxn_with_all_mt_models_maximises_own_tricks_at_last_trick():
    # one card each: the search just resolves the trick
    hands = (parse_hand("AH"), parse_hand("2S"), parse_hand("KH"))
    res = maxn_search(SpadesState.start(hands, 0), (1, 1, 1), ("MT", "MT", "MT"))
    assert res.move == parse_card("AH") and list(res.value) == [-10, 10, -10]


def test_search_input_validation():
    hands = deal(np.random.default_rng(0), 3)
    pos = SpadesState.start(hands, 0)
    with pytest.raises(InvalidArgumentError, match="weights"):
        probmaxn_search(pos, (1, 1, 1), me=0, true_model="MT", weights=np.ones((3, 2)))
    with pytest.raises(InvalidArgumentError, match="me"):
        probmaxn_search(pos, (1, 1, 1), me=3, true_model="MT", weights=np.full((3, 2), 0.5))
    with pytest.raises(InvalidArgumentError, match="model"):
        maxn_search(pos, (1, 1, 1), ("MT", "MT", "XX"))
    with pytest.raises(InvalidArgumentError, match="bids"):
        maxn_search(pos, (1, 1), ("MT", "MT", "MT"))


@pytest.mark.parametrize("seed", range(3))
def test_reused_and_tiny_tables_agree_with_fresh_tables_along_a_hand(seed):
    """Play a 5-card hand; at every position a search through a table reused for the whole hand
    (as agents do) and one through a 256-entry table (constant overwrites) equal a fresh one."""
    rng = np.random.default_rng(seed)
    hands = deal(rng, 5)
    b = bids(hands)
    pos = SpadesState.start(hands, seed % 3)
    w = np.array([[0.5, 0.5], [0.2, 0.8], [0.7, 0.3]])
    # one table per search kind: a table keeps the entries of the last parameters only
    reused_p, tiny_p, reused_m, tiny_m = (SearchTable(n) for n in (14, 8, 14, 8))
    hits = 0
    while not pos.is_terminal:
        fresh = probmaxn_search(pos, b, me=0, true_model="mOT", weights=w)
        for table in (reused_p, tiny_p):
            r = probmaxn_search(pos, b, me=0, true_model="mOT", weights=w, table=table)
            np.testing.assert_allclose(r.u, fresh.u, rtol=1e-12, atol=1e-12)
            assert r.u_true == pytest.approx(fresh.u_true, rel=1e-12, abs=1e-12)
            assert r.move == fresh.move
            hits += r.tt_hits if table is reused_p else 0
        m_fresh = maxn_search(pos, b, ("mOT", "MT", "MT"))
        for table in (reused_m, tiny_m):
            m = maxn_search(pos, b, ("mOT", "MT", "MT"), table=table)
            np.testing.assert_array_equal(m.value, m_fresh.value)
            assert m.move == m_fresh.move
        pos = pos.play(fresh.moves[int(rng.integers(len(fresh.moves)))])
    assert hits > 0
    assert reused_p.generation_for(None) == 2  # one generation for the whole hand (+1 for None)
