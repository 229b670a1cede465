"""Tests of the naive Bayes move model (modeling/movepred/naive_bayes.py) and its Kuhn features.

Tiers: a hand-computed example in exact fractions; an exact-fraction twin of the classifier and
scipy's chi-squared test as oracles on random data; hypothesis properties of rankings and
probabilities; save/load; input validation.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.movepred.kuhn import (
    KuhnDecision,
    kuhn_action_probs,
    kuhn_decision_probs,
    kuhn_feature_names,
    kuhn_features,
    parse_infoset,
    train_kuhn_model,
)
from oppmodel.modeling.movepred.naive_bayes import (
    chi2_scores,
    load_move_model,
    move_ranks,
    top_n_curve,
    train_move_model,
)

# Hand example: 3 rows, 2 features, 3 moves (move 2 never made), alpha = 1.
#   priors:  P(0) = (2+1)/(3+3) = 1/2,  P(1) = (1+1)/6 = 1/3,  P(2) = (0+1)/6 = 1/6
#   theta_0 = ((2+1)/4, (1+1)/4) = (3/4, 1/2); theta_1 = (1/3, 2/3); theta_2 = (1/2, 1/2)
HAND_X = np.array([[1, 0], [1, 1], [0, 1]])
HAND_Y = np.array([0, 0, 1])


def _close(actual: np.ndarray, expected: list[Fraction]) -> None:
    np.testing.assert_allclose(actual, [float(f) for f in expected], rtol=1e-12, atol=1e-15)


def test_hand_example_posteriors():
    model = train_move_model(HAND_X, HAND_Y, n_moves=3)
    # x = (1, 0): joints 1/2*3/4*1/2 = 3/16, 1/3*1/3*1/3 = 1/27, 1/6*1/2*1/2 = 1/24 -> /(115/432)
    # x = (0, 1): joints 1/2*1/4*1/2 = 1/16, 1/3*2/3*2/3 = 4/27, 1/6*1/4 = 1/24     -> /(109/432)
    probs = model.predict_proba([[1, 0], [0, 1]])
    _close(probs[0], [Fraction(81, 115), Fraction(16, 115), Fraction(18, 115)])
    _close(probs[1], [Fraction(27, 109), Fraction(64, 109), Fraction(18, 109)])
    _close(
        np.exp(model.log_joint([[1, 0]])[0]), [Fraction(3, 16), Fraction(1, 27), Fraction(1, 24)]
    )
    assert model.rank_moves([1, 0]) == (0, 2, 1)
    # Only moves 1 and 2 legal: 1/27 : 1/24 = 8 : 9.
    _close(
        model.predict_proba([[1, 0]], legal=[[0, 1, 1]])[0], [0, Fraction(8, 17), Fraction(9, 17)]
    )
    assert model.rank_moves([1, 0], legal=[False, True, True]) == (2, 1)


def test_hand_example_chi2_and_selection():
    # Feature 0: table [[0, 1], [2, 0]] is a perfect 2x2 association: chi2 = m = 3.
    # Feature 1: table [[1, 0], [1, 1]], expected [[2/3, 1/3], [4/3, 2/3]]: chi2 = 3/4.
    _close(chi2_scores(HAND_X, HAND_Y, n_moves=3), [Fraction(3), Fraction(3, 4)])
    model = train_move_model(HAND_X, HAND_Y, n_moves=3, k_features=1)
    assert model.selected.tolist() == [0]
    # Feature 0 only, x0 = 1: joints 1/2*3/4 = 3/8, 1/3*1/3 = 1/9, 1/6*1/2 = 1/12 -> /(41/72).
    _close(model.predict_proba([[1, 0]])[0], [Fraction(27, 41), Fraction(8, 41), Fraction(6, 41)])


def test_top_n_curve_and_ranks_hand_example():
    model = train_move_model(HAND_X, HAND_Y, n_moves=3)
    ranks = move_ranks(model, [[1, 0], [1, 0], [0, 1]], [0, 1, 2])
    assert ranks.tolist() == [1, 3, 3]
    assert move_ranks(model, [[1, 0]], [1], legal=[[0, 1, 1]]).tolist() == [2]
    _close(top_n_curve(ranks, 3), [Fraction(1, 3), Fraction(1, 3), Fraction(1)])


def _fraction_posterior(x, y, n_moves, alpha, query, legal):
    """Exact-fraction twin of the classifier (all features selected)."""
    m, d = len(x), len(x[0])
    a = Fraction(alpha)
    joints = []
    for c in range(n_moves):
        if legal is not None and not legal[c]:
            joints.append(Fraction(0))
            continue
        rows = [x[i] for i in range(m) if y[i] == c]
        p = (len(rows) + a) / (m + a * n_moves)
        for j in range(d):
            theta = (sum(r[j] for r in rows) + a) / (len(rows) + 2 * a)
            p *= theta if query[j] else 1 - theta
        joints.append(p)
    total = sum(joints)
    return [p / total for p in joints]


@st.composite
def datasets(draw, max_rows: int = 12, max_features: int = 5, max_moves: int = 5):
    m = draw(st.integers(1, max_rows))
    d = draw(st.integers(1, max_features))
    c = draw(st.integers(1, max_moves))
    x = draw(st.lists(st.lists(st.integers(0, 1), min_size=d, max_size=d), min_size=m, max_size=m))
    y = draw(st.lists(st.integers(0, c - 1), min_size=m, max_size=m))
    return np.array(x, dtype=np.int64), np.array(y, dtype=np.int64), c


@settings(max_examples=60, deadline=None)
@given(data=datasets(), alpha=st.sampled_from([0.5, 1.0, 2.0]), rnd=st.randoms())
def test_matches_exact_fraction_twin(data, alpha, rnd):
    x, y, c = data
    model = train_move_model(x, y, n_moves=c, alpha=alpha)
    query = [rnd.randint(0, 1) for _ in range(x.shape[1])]
    legal = [rnd.random() < 0.6 for _ in range(c)]
    legal[rnd.randrange(c)] = True
    expected = _fraction_posterior(x.tolist(), y.tolist(), c, alpha, query, None)
    _close(model.predict_proba([query])[0], expected)
    expected_legal = _fraction_posterior(x.tolist(), y.tolist(), c, alpha, query, legal)
    _close(model.predict_proba([query], legal=[legal])[0], expected_legal)


@settings(max_examples=80, deadline=None)
@given(data=datasets(max_rows=30))
def test_chi2_matches_scipy_contingency(data):
    x, y, c = data
    scores = chi2_scores(x, y, n_moves=c)
    for j in range(x.shape[1]):
        table = np.array([[np.sum((x[:, j] == v) & (y == k)) for k in range(c)] for v in (0, 1)])
        table = table[:, table.sum(axis=0) > 0]  # moves never made carry no information
        if (table.sum(axis=1) == 0).any():  # a constant feature: scipy cannot test it
            assert scores[j] == 0.0
            continue
        expected = scipy.stats.chi2_contingency(table, correction=False).statistic
        assert scores[j] == pytest.approx(expected, rel=1e-10, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(data=datasets(), k=st.integers(1, 5))
def test_selection_keeps_the_top_k_scores(data, k):
    x, y, c = data
    k = min(k, x.shape[1])
    model = train_move_model(x, y, n_moves=c, k_features=k)
    scores = chi2_scores(x, y, n_moves=c)
    assert model.selected.size == k and np.all(np.diff(model.selected) > 0)
    rest = np.setdiff1d(np.arange(x.shape[1]), model.selected)
    if rest.size:
        assert scores[model.selected].min() >= scores[rest].max()
    # Selecting features is the same as training on those columns alone.
    sub = train_move_model(x[:, model.selected], y, n_moves=c)
    q = np.ones((1, x.shape[1]), dtype=np.int64)
    np.testing.assert_allclose(model.predict_proba(q), sub.predict_proba(q[:, model.selected]))


@settings(max_examples=60, deadline=None)
@given(data=datasets(), rnd=st.randoms())
def test_ranking_is_a_permutation_of_the_legal_moves(data, rnd):
    x, y, c = data
    model = train_move_model(x, y, n_moves=c)
    queries = np.array([[rnd.randint(0, 1) for _ in range(x.shape[1])] for _ in range(4)])
    legal = np.array([[rnd.random() < 0.5 for _ in range(c)] for _ in range(4)])
    legal[np.arange(4), [rnd.randrange(c) for _ in range(4)]] = True
    probs = model.predict_proba(queries, legal=legal)
    assert np.all(probs >= 0) and np.allclose(probs.sum(axis=1), 1.0)
    assert np.all(probs[~legal] == 0.0)
    full = model.predict_proba(queries)
    assert np.allclose(full.sum(axis=1), 1.0) and np.all(full > 0)
    for i in range(4):
        order = model.rank_moves(queries[i], legal=legal[i])
        assert sorted(order) == np.flatnonzero(legal[i]).tolist()
        # Most probable first; moves tied in exact arithmetic may differ by rounding between a
        # batch and a single row (different BLAS kernels), in either direction.
        assert all(probs[i, a] >= probs[i, b] - 1e-12 for a, b in itertools.pairwise(order))
        assert sorted(model.rank_moves(queries[i])) == list(range(c))
        # move_ranks agrees with the position in rank_moves, and legal ranks are never worse.
        for move in order:
            rank_legal = move_ranks(model, queries[i : i + 1], [move], legal=legal[i : i + 1])[0]
            rank_all = move_ranks(model, queries[i : i + 1], [move])[0]
            assert rank_legal == order.index(move) + 1
            assert rank_legal <= rank_all


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2, size=(40, 7))
    y = rng.integers(0, 4, size=40)
    model = train_move_model(
        x,
        y,
        n_moves=5,
        alpha=0.5,
        k_features=4,
        feature_names=list("abcdefg"),
        move_names=list("VWXYZ"),
    )
    path = tmp_path / "model.npz"
    model.save(path)
    back = load_move_model(path)
    assert back.alpha == model.alpha
    assert back.feature_names == model.feature_names and back.move_names == model.move_names
    assert back.selected_names == model.selected_names
    for name in ("class_counts", "feature_counts", "selected", "chi2", "log_prior", "log_on"):
        np.testing.assert_array_equal(getattr(back, name), getattr(model, name))
    q = rng.integers(0, 2, size=(10, 7))
    np.testing.assert_array_equal(back.predict_proba(q), model.predict_proba(q))


def test_load_rejects_other_files(tmp_path):
    bad = tmp_path / "other.npz"
    np.savez(bad, meta=np.array('{"format": "something else"}'))
    with pytest.raises(InvalidArgumentError, match="path"):
        load_move_model(bad)
    with pytest.raises(InvalidArgumentError, match="path"):
        load_move_model(tmp_path / "missing.npz")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"features": [[0, 2]]}, "features"),
        ({"features": [0, 1]}, "features"),
        ({"features": np.zeros((0, 2))}, "features"),
        ({"moves": [3]}, "moves"),
        ({"moves": [0, 1]}, "moves"),
        ({"moves": [0.5]}, "moves"),
        ({"n_moves": 0}, "n_moves"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": math.nan}, "alpha"),
        ({"k_features": 3}, "k_features"),
        ({"k_features": 0}, "k_features"),
        ({"legal": [[False, True, True]]}, "legal"),
        ({"feature_names": ["a"]}, "feature_names"),
        ({"move_names": ["a", "a", "b"]}, "move_names"),
    ],
)
def test_train_validation_names_the_field(kwargs, field):
    args = {"features": [[1, 0]], "moves": [0], "n_moves": 3} | kwargs
    with pytest.raises(InvalidArgumentError, match=rf"^{field}:"):
        train_move_model(args.pop("features"), args.pop("moves"), **args)


def test_prediction_validation_names_the_field():
    model = train_move_model(HAND_X, HAND_Y, n_moves=3)
    with pytest.raises(InvalidArgumentError, match=r"^features:"):
        model.predict_proba([[1, 0, 1]])
    with pytest.raises(InvalidArgumentError, match=r"^legal:"):
        model.predict_proba([[1, 0]], legal=[[0, 0, 0]])
    with pytest.raises(InvalidArgumentError, match=r"^legal:"):
        move_ranks(model, [[1, 0]], [0], legal=[[0, 1, 1]])
    with pytest.raises(InvalidArgumentError, match=r"^ranks:"):
        top_n_curve([0, 1], 3)
    with pytest.raises(InvalidArgumentError, match=r"^n_max:"):
        top_n_curve([1], 0)


# --- Kuhn poker features -------------------------------------------------------------------------


def test_kuhn_features_exact():
    names = kuhn_feature_names(3)
    assert len(names) == 4 + 3 + 2 * 4 + 3
    on = {names[j] for j in np.flatnonzero(kuhn_features(2, 3, "pb", num_players=3))}
    assert on == {"card=3", "position=2", "slot 0=p", "slot 1=b", "facing_bet"}
    on = {names[j] for j in np.flatnonzero(kuhn_features(1, 0, "ppbb", num_players=3))}
    assert on == {
        "card=0",
        "position=1",
        "slot 0=p",
        "slot 1=p",
        "slot 2=b",
        "slot 3=b",
        "facing_bet",
        "called_already",
        "second_turn",
    }
    on2 = {
        kuhn_feature_names(2)[j] for j in np.flatnonzero(kuhn_features(0, 2, "pb", num_players=2))
    }
    assert on2 == {"card=2", "position=0", "slot 0=p", "slot 1=b", "facing_bet", "second_turn"}
    assert parse_infoset("2pb", num_players=3) == (2, 2, "pb")
    assert parse_infoset("1", num_players=2) == (0, 1, "")


@pytest.mark.parametrize(
    ("position", "card", "history", "field", "error"),
    [
        (1, 0, "pb", "position", InvalidArgumentError),
        (0, 4, "", "card", InvalidArgumentError),
        (0, 0, "px", "history", InvalidArgumentError),
        (0, 0, "ppp", "history", IllegalActionError),  # everyone checked: showdown
        (0, 0, "bpp", "history", IllegalActionError),  # both players behind the bettor acted
        (0, 0, "pppb", "history", IllegalActionError),  # a bet after the hand ended
    ],
)
def test_kuhn_feature_validation(position, card, history, field, error):
    with pytest.raises(error, match=rf"^{field}:"):
        kuhn_features(position, card, history, num_players=3)


def test_kuhn_model_hand_example():
    # Balanced data: for each of 10 histories and each card c, 3 decisions of which c are bets.
    # Then 60 bets and 60 passes, every history feature is equally frequent under both actions (it
    # cancels), and for card features theta_bet(c') = (10c' + 1)/62, theta_pass = (31 - 10c')/62.
    # Card 1: odds bet:pass = (11 * 61 * 41 * 31) / (21 * 31 * 51 * 61) = 451 / 1071.
    # Card 0: odds = (1 * 51 * 41 * 31) / (31 * 41 * 51 * 61) = 1 / 61; cards 2, 3 mirror 1, 0.
    histories = ["", "p", "b", "pp", "pb", "bp", "bb", "ppb", "pbp", "pbb"]
    decisions = [
        KuhnDecision(position=len(h) % 3, card=card, history=h, action=int(i < card))
        for h in histories
        for card in range(4)
        for i in range(3)
    ]
    model = train_kuhn_model(decisions, num_players=3)
    expected = [Fraction(1, 62), Fraction(451, 1522), Fraction(1071, 1522), Fraction(61, 62)]
    for card in range(4):
        for h in histories:
            probs = kuhn_action_probs(model, len(h) % 3, card, h, num_players=3)
            _close(probs, [1 - expected[card], expected[card]])
    taken = kuhn_decision_probs(model, decisions[:6], num_players=3)  # card 0 then card 1, h = ""
    _close(taken, [1 - expected[0]] * 3 + [expected[1]] + [1 - expected[1]] * 2)
    with pytest.raises(InvalidArgumentError, match=r"^model:"):
        kuhn_action_probs(model, 0, 0, "", num_players=2)
    with pytest.raises(InvalidArgumentError, match=r"^action:"):
        train_kuhn_model([KuhnDecision(0, 0, "", 2)])
    with pytest.raises(InvalidArgumentError, match=r"^decisions:"):
        train_kuhn_model([])


@pytest.mark.parametrize("num_players", [2, 3])
def test_kuhn_position_assumption_against_openspiel(num_players):
    """Every OpenSpiel decision node: the actor sits at len(history) mod n, and only there."""
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("kuhn_poker", {"players": num_players})
    decision_histories = set()
    stack = [game.new_initial_state()]
    while stack:
        state = stack.pop()
        if state.is_terminal():
            continue
        if not state.is_chance_node():
            infoset = state.information_state_string()
            position, card, history = parse_infoset(infoset, num_players=num_players)
            assert position == state.current_player()
            assert card == int(infoset[0])
            decision_histories.add(history)
            x = kuhn_features(position, card, history, num_players=num_players)
            assert x.shape == (len(kuhn_feature_names(num_players)),)
        actions = [a for a, _ in state.chance_outcomes()] if state.is_chance_node() else None
        for action in actions or state.legal_actions():
            stack.append(state.child(action))
    # The histories accepted are exactly OpenSpiel's decision histories (up to the longest one).
    every = {""}
    for _ in range(2 * num_players - 1):
        every |= {h + a for h in every for a in "pb"}
    accepted = set()
    for h in every:
        try:
            kuhn_features(len(h) % num_players, 0, h, num_players=num_players)
            accepted.add(h)
        except IllegalActionError:
            pass
    assert accepted == decision_histories
