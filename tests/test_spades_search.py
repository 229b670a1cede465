"""Spades max^n and prob-max^n kernels (merging + transposition table) against the plain reference.

The reference (``modeling._spades_reference``) expands every legal card, has no table and restates
the rules, so agreement on many seeded small deals (3-4 cards each, roots at trick boundaries and
mid-trick) checks the merging, the multiplicity weighting, the rank-compressed table and the rules.
"""

from __future__ import annotations

import numpy as np
import pytest

from modeling import _spades_reference as R
from modeling import spades as S
from modeling.errors import InvalidArgumentError


def _random_root(rng: np.random.Generator, hand_size: int) -> S.Position:
    """A seeded deal, a random leader and 0-2 random cards already played to the first trick."""
    pos = S.Position.start(S.deal(rng, hand_size), int(rng.integers(3)))
    for _ in range(int(rng.integers(3))):
        moves = pos.legal_moves()
        pos = pos.play(moves[int(rng.integers(len(moves)))])
    return pos


def _ref_args(pos: S.Position):
    hands = [set(S.mask_to_cards(h)) for h in pos.hands]
    order = [(pos.leader + k) % 3 for k in range(3)]
    played = [(p, pos.trick[p]) for p in order if pos.trick[p] != S.NO_CARD]
    return hands, played, pos.leader, pos.turn, list(pos.tricks)


def _random_bids(rng, pos, hand_size):
    if rng.random() < 0.5:
        return S.bids(pos.hands)
    return tuple(int(b) for b in rng.integers(1, hand_size + 1, size=3))


CASES = [(3, seed) for seed in range(40)] + [(4, seed) for seed in range(100, 108)]


@pytest.mark.parametrize(("hand_size", "seed"), CASES)
def test_maxn_equals_reference(hand_size, seed):
    rng = np.random.default_rng(seed)
    pos = _random_root(rng, hand_size)
    b = _random_bids(rng, pos, hand_size)
    models = [S.MODELS[int(m)] for m in rng.integers(2, size=3)]
    got = S.maxn_search(pos, b, models)
    util = [list(S.utility_table(m, bb, hand_size)) for m, bb in zip(models, b, strict=True)]
    ref = R.maxn(*_ref_args(pos), util)
    assert list(got.value) == ref.value
    best = max(range(len(ref.cards)), key=lambda i: (ref.child_values[i][pos.turn], -i))
    assert got.move == ref.cards[best]
    assert set(got.moves) <= set(ref.cards)
    assert sum(got.multiplicities) == len(ref.cards)
    for card, v in zip(got.moves, got.child_values, strict=True):
        assert list(v) == ref.child_values[ref.cards.index(card)]


@pytest.mark.parametrize(("hand_size", "seed"), CASES)
def test_probmaxn_equals_reference(hand_size, seed):
    rng = np.random.default_rng(seed)
    pos = _random_root(rng, hand_size)
    b = _random_bids(rng, pos, hand_size)
    me = int(rng.integers(3))
    eps = float(rng.choice([0.0, 0.1, 0.3]))
    w1 = rng.choice([0.0, 0.5, 1.0, float(rng.random())], size=3)
    weights = np.stack([w1, 1.0 - w1], axis=1)
    true_model = S.MODELS[int(rng.integers(2))]
    got = S.probmaxn_search(pos, b, me=me, true_model=true_model, weights=weights, eps=eps)
    util = [[list(S.utility_table(m, bb, hand_size)) for m in S.MODELS] for bb in b]
    utrue = list(S.utility_table(true_model, b[me], hand_size))
    ref = R.probmaxn(*_ref_args(pos), util, weights.tolist(), utrue, me, eps)
    np.testing.assert_allclose(got.u, ref.value, rtol=1e-10, atol=1e-10)
    assert got.u_true == pytest.approx(ref.true, rel=1e-10, abs=1e-10)
    assert got.move == ref.cards[S.first_best(ref.child_true)]
    assert got.n_cards == len(ref.cards)
    # each merged move stands for a run of consecutive legal cards with equal values
    i = 0
    for g, (card, k) in enumerate(zip(got.moves, got.multiplicities, strict=True)):
        assert ref.cards[i] == card
        members = range(i, i + k)
        assert got.prob_choice[g] == pytest.approx(sum(ref.prob_choice[j] for j in members))
        for j in members:
            np.testing.assert_allclose(got.child_u[g], ref.child_values[j], rtol=1e-10, atol=1e-10)
            assert got.child_true[g] == pytest.approx(ref.child_true[j], rel=1e-10, abs=1e-10)
        i += k
    assert i == len(ref.cards)
    assert got.prob_choice.sum() == pytest.approx(1.0)


def test_choice_likelihood_recombines_to_prob_choice():
    rng = np.random.default_rng(7)
    pos = _random_root(rng, 4)
    b = S.bids(pos.hands)
    w = np.array([[0.3, 0.7], [0.6, 0.4], [0.5, 0.5]])
    res = S.probmaxn_search(pos, b, me=(pos.turn + 1) % 3, true_model="mOT", weights=w, eps=0.2)
    for g, (card, k) in enumerate(zip(res.moves, res.multiplicities, strict=True)):
        lik = res.choice_likelihood(card)
        assert k * float(w[pos.turn] @ lik) == pytest.approx(res.prob_choice[g])
        assert np.all(lik >= 0.2 / res.n_cards - 1e-12)


def test_table_reuse_is_safe_and_hits():
    rng = np.random.default_rng(11)
    hands = S.deal(rng, 6)
    pos = S.Position.start(hands, 1)
    b = S.bids(hands)
    w = np.full((3, 2), 0.5)
    table = S.SearchTable(12)
    first = S.probmaxn_search(pos, b, me=1, true_model="mOT", weights=w, table=table)
    again = S.probmaxn_search(pos, b, me=1, true_model="mOT", weights=w, table=table)
    assert again.u_true == first.u_true and again.move == first.move
    assert again.nodes < first.nodes  # children come straight from the table
    # different parameters on the same table must not read stale entries
    w2 = np.array([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]])
    shared = S.probmaxn_search(pos, b, me=1, true_model="MT", weights=w2, table=table)
    fresh = S.probmaxn_search(pos, b, me=1, true_model="MT", weights=w2)
    np.testing.assert_array_equal(shared.u, fresh.u)
    assert shared.u_true == fresh.u_true
    m1 = S.maxn_search(pos, b, ("MT", "mOT", "MT"), table=table)
    m2 = S.maxn_search(pos, b, ("MT", "mOT", "MT"))
    np.testing.assert_array_equal(m1.value, m2.value)


def test_maxn_with_all_mt_models_maximises_own_tricks_at_last_trick():
    # one card each: the search just resolves the trick
    hands = (S.parse_hand("AH"), S.parse_hand("2S"), S.parse_hand("KH"))
    res = S.maxn_search(S.Position.start(hands, 0), (1, 1, 1), ("MT", "MT", "MT"))
    assert res.move == S.parse_card("AH") and list(res.value) == [-10, 10, -10]


def test_search_input_validation():
    hands = S.deal(np.random.default_rng(0), 3)
    pos = S.Position.start(hands, 0)
    with pytest.raises(InvalidArgumentError, match="weights"):
        S.probmaxn_search(pos, (1, 1, 1), me=0, true_model="MT", weights=np.ones((3, 2)))
    with pytest.raises(InvalidArgumentError, match="me"):
        S.probmaxn_search(pos, (1, 1, 1), me=3, true_model="MT", weights=np.full((3, 2), 0.5))
    with pytest.raises(InvalidArgumentError, match="model"):
        S.maxn_search(pos, (1, 1, 1), ("MT", "MT", "XX"))
    with pytest.raises(InvalidArgumentError, match="bids"):
        S.maxn_search(pos, (1, 1), ("MT", "MT", "MT"))
