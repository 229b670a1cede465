"""MBBR's sample posterior (the paper's) against brute-force Bayes: enumerate every sample
combination and hidden-card assignment."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oppmodel.modeling.errors import InvalidArgumentError, ResourceExhaustedError
from oppmodel.modeling.evaluation.kuhn import best_response_to_weights, leaf_weights
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import MBBRModel, build_model
from oppmodel.modeling.mbbr.priors import create_samples
from oppmodel.modeling.observation import HandObservation, observe_hand

SAMPLES = functools.partial(MBBRConfig, posterior="samples", change_hazard=0.0)  # tested here


def brute_force_posterior(model: MBBRModel, observations, p: int) -> np.ndarray:
    """p(s | observations) by direct enumeration, with no shared code beyond the game tree."""
    game, k, n = model.game, model.config.k, model.game.num_players
    weights = np.ones((k,) * (n - 1))
    for obs in observations:
        if obs.position != p:
            continue
        for s in itertools.product(range(k), repeat=n - 1):
            z = 0.0
            for deal in game.deals:
                if any(c is not None and c != deal[i] for i, c in enumerate(obs.cards)):
                    continue
                prob = 1.0
                for i, letter in enumerate(obs.history):
                    q = i % n
                    if q == p:
                        continue
                    d = (q - p) % n
                    node = game.node(obs.history[:i])
                    infoset = game.infoset_of[node, deal[q]]
                    prob *= model.tau[p, d - 1, s[d - 1], infoset, "pb".index(letter)]
                z += prob
            weights[s] *= z
    return weights / weights.sum()


def brute_force_bayes_response(model: MBBRModel, p: int) -> tuple[np.ndarray, float]:
    """Best response to sum_s p(s) EU(., tau_s), one full profile per combination."""
    game, n = model.game, model.game.num_players
    posterior = model.posterior(p)
    total = 0.0
    for s in itertools.product(range(model.config.k), repeat=n - 1):
        profile = model.default_strategy.copy()
        for d in range(1, n):
            profile[(p + d) % n] = model.tau[p, d - 1, s[d - 1]]
        total = total + posterior[s] * leaf_weights(game, profile, p)
    return best_response_to_weights(game, total, p)


# Each kind of hand the update must handle, as (history, full deal) for 3 players.
HANDS_3P = [
    ("ppp", [0, 1, 2]),  # everyone checks: full showdown
    ("ppbpp", [3, 1, 0]),  # position 2 bets, both fold: no cards shown
    ("bpp", [0, 2, 3]),  # a bluff takes it down: no cards shown
    ("ppbpb", [3, 0, 2]),  # one folds, two show down (folded card hidden)
    ("pbbb", [1, 3, 2]),  # bet, two calls
    ("bpb", [2, 0, 1]),
    ("pbpp", [0, 1, 3]),
    ("ppbbp", [1, 2, 3]),
]


def play_observations(game, hands, rotate: bool = True):
    return [
        observe_hand(game, (h % game.num_players) if rotate else 0, hist, deal)
        for h, (hist, deal) in enumerate(hands)
    ]


@pytest.mark.parametrize("prior", ["informed", "uninformed"])
def test_posterior_equals_brute_force_3p(prior):
    game = kuhn_game(3)
    model = build_model(game, SAMPLES(k=4, seed=11, prior=prior))
    observations = play_observations(game, HANDS_3P * 2)
    for obs in observations:
        model.observe(obs)
    for p in range(3):
        np.testing.assert_allclose(
            model.posterior(p), brute_force_posterior(model, observations, p), rtol=0, atol=1e-12
        )


def test_each_hand_kind_from_one_seat():
    """Folds, showdowns and all-fold hands, every one seen from each position in turn."""
    game = kuhn_game(3)
    for p in range(3):
        model = build_model(game, SAMPLES(k=3, seed=p))
        observations = [observe_hand(game, p, hist, deal) for hist, deal in HANDS_3P]
        assert any(all(c is None for i, c in enumerate(o.cards) if i != p) for o in observations)
        assert any(all(c is not None for c in o.cards) for o in observations)
        for obs in observations:
            model.observe(obs)
        expected = brute_force_posterior(model, observations, p)
        np.testing.assert_allclose(model.posterior(p), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("n", "k"), [(2, 5), (4, 2)])
def test_posterior_and_bayes_response_other_player_counts(n, k):
    game = kuhn_game(n)
    model = build_model(game, SAMPLES(k=k, seed=5))
    rng = np.random.default_rng(n)
    observations = []
    for h in range(3 * n):
        deal = [int(c) for c in rng.permutation(game.num_cards)[:n]]
        hist = game.histories[game.terminal_nodes[rng.integers(game.num_terminals)]]
        observations.append(observe_hand(game, h % n, hist, deal))
        model.observe(observations[-1])
    for p in range(n):
        np.testing.assert_allclose(
            model.posterior(p), brute_force_posterior(model, observations, p), rtol=0, atol=1e-12
        )
        strategy, value = model.response(p, "bayes")
        oracle_strategy, oracle_value = brute_force_bayes_response(model, p)
        assert value == pytest.approx(oracle_value, abs=1e-12)
        np.testing.assert_array_equal(strategy, oracle_strategy)


def test_bayes_response_equals_brute_force_3p():
    game = kuhn_game(3)
    model = build_model(game, SAMPLES(k=5, seed=2))
    for obs in play_observations(game, HANDS_3P * 3):
        model.observe(obs)
    for p in range(3):
        strategy, value = model.response(p, "bayes")
        oracle_strategy, oracle_value = brute_force_bayes_response(model, p)
        assert value == pytest.approx(oracle_value, abs=1e-12)
        np.testing.assert_array_equal(strategy, oracle_strategy)
        # The Bayesian response is optimal for the posterior-expected utility, so it is never
        # worse there than the paper's response to the mean models.
        mean_strategy, _ = model.response(p, "mean")
        posterior = model.posterior(p)
        expected_mean = 0.0
        for s in itertools.product(range(5), repeat=2):
            profile = model.default_strategy.copy()
            profile[p] = mean_strategy
            for d in (1, 2):
                profile[(p + d) % 3] = model.tau[p, d - 1, s[d - 1]]
            w = leaf_weights(game, profile, p)
            expected_mean += posterior[s] * _value_of(game, w, mean_strategy, p)
        assert value >= expected_mean - 1e-12


def _value_of(game, w, strategy, p) -> float:
    """Value of a fixed strategy against leaf weights: sum over terminals of own reach x weight."""
    total = 0.0
    for c in range(game.num_cards):
        for t in range(game.num_terminals):
            reach = 1.0
            for i in range(game.path_len[t]):
                node = game.path_nodes[t, i]
                if game.node_player[node] == p:
                    reach *= strategy[game.infoset_of[node, c], game.path_actions[t, i]]
            total += reach * w[c, t]
    return total


def test_models_are_posterior_mixtures_of_samples():
    game = kuhn_game(3)
    model = build_model(game, SAMPLES(k=4, seed=9))
    for obs in play_observations(game, HANDS_3P):
        model.observe(obs)
    for p in range(3):
        posterior = model.posterior(p)
        for d in (1, 2):
            marginal = posterior.sum(axis=2 - d)
            expected = np.einsum("s,sia->ia", marginal, model.tau[p, d - 1])
            got, ess = model.opponent_model(p, (p + d) % 3)
            np.testing.assert_allclose(got, expected, atol=1e-13)
            assert ess == pytest.approx(1.0 / np.square(marginal).sum())
            assert 1.0 <= ess <= 4.0


def test_samples_follow_the_clipped_prior_mean():
    game = kuhn_game(3)
    n3 = robust_profile("N3")
    tau = create_samples(
        game, n3, k=4000, epsilon=0.05, eta=4.0, prior="informed", rng=np.random.default_rng(0)
    )
    for p in range(3):
        for d in (1, 2):
            q = (p + d) % 3
            mean = np.clip(n3[q], 0.05, 0.95)
            mean /= mean.sum(axis=1, keepdims=True)
            got = tau[p, d - 1].mean(axis=0)
            # Dirichlet(eta * m) marginal sd = sqrt(m(1-m)/(eta+1)) <= 0.23; 4000 draws: se < 0.004
            np.testing.assert_allclose(got, mean, atol=0.02)
            assert tau[p, d - 1].min() > 0.0


def test_uninformed_prior_is_dirichlet_two():
    game = kuhn_game(3)
    tau = create_samples(
        game, robust_profile("N3"), k=4000, epsilon=0.05, eta=4.0, prior="uninformed",
        rng=np.random.default_rng(0),
    )  # fmt: skip
    draws = tau[0, 0][:, :, 1]
    np.testing.assert_allclose(draws.mean(axis=0), 0.5, atol=0.02)
    np.testing.assert_allclose(draws.var(axis=0), 0.25 / 5, atol=0.01)  # Beta(2, 2) variance


def test_same_seed_same_posterior_and_replay_is_bit_identical():
    game = kuhn_game(3)
    observations = play_observations(game, HANDS_3P * 5)
    a = build_model(game, SAMPLES(k=30, seed=4))
    b = build_model(game, SAMPLES(k=30, seed=4))
    c = build_model(game, SAMPLES(k=30, seed=5))
    for obs in observations:
        a.observe(obs)
        b.observe(obs)
        c.observe(obs)
    for p in range(3):
        np.testing.assert_array_equal(a.posterior(p), b.posterior(p))
        assert not np.array_equal(a.posterior(p), c.posterior(p))


def test_policy_is_default_for_first_h_hands():
    game = kuhn_game(3)
    model = build_model(game, MBBRConfig(k=5, hands_default=3, seed=1))
    n1 = robust_profile("N1")
    for obs in play_observations(game, HANDS_3P[:3]):
        np.testing.assert_array_equal(model.policy(obs.position), n1[obs.position])
        model.observe(obs)
    np.testing.assert_array_equal(model.policy(0), model.response(0)[0])


def test_weights_never_underflow():
    """A thousand hands that one sample explains far better than the others: nothing hits 0."""
    game = kuhn_game(3)
    model = build_model(game, SAMPLES(k=20, seed=3))
    obs = observe_hand(game, 0, "pbbb", [0, 1, 3])
    for _ in range(1000):
        model.observe(obs)
    posterior = model.posterior(0)
    assert posterior.min() > 0.0
    assert posterior.sum() == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("epsilon", {"epsilon": 0.7}),
        ("k", {"k": 0}),
        ("hands_default", {"hands_default": -1}),
        ("eta", {"eta": float("nan")}),
        ("prior", {"prior": "flat"}),
        ("response", {"response": "max"}),
        ("seed", {"seed": -3}),
    ],
)
def test_bad_config_names_the_field(field, kwargs):
    with pytest.raises(InvalidArgumentError) as info:
        build_model(kuhn_game(3), MBBRConfig(**kwargs))
    assert info.value.field == field


def test_k_too_large_is_resource_exhausted():
    with pytest.raises(ResourceExhaustedError):
        build_model(kuhn_game(3), SAMPLES(k=5000))


def test_bad_observation_changes_nothing():
    game = kuhn_game(3)
    model = build_model(game, SAMPLES(k=4, seed=0))
    model.observe(observe_hand(game, 0, "pbbb", [0, 1, 3]))
    before = [model.posterior(p) for p in range(3)]
    with pytest.raises(InvalidArgumentError) as info:
        model.observe(HandObservation(0, "ppbpp", (0, 1, 2)))  # all-fold hand cannot show cards
    assert info.value.field == "cards[1]"
    assert model.hands_observed == 1
    for p in range(3):
        np.testing.assert_array_equal(model.posterior(p), before[p])


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    hands=st.lists(
        st.tuples(st.integers(0, 12), st.permutations([0, 1, 2, 3]), st.integers(0, 2)),
        min_size=1,
        max_size=12,
    ),
)
def test_posterior_is_a_distribution(seed, hands):
    game = kuhn_game(3)
    model = build_model(game, SAMPLES(k=6, seed=seed))
    for t, deck, p in hands:
        model.observe(observe_hand(game, p, game.histories[game.terminal_nodes[t]], deck[:3]))
    for p in range(3):
        posterior = model.posterior(p)
        assert np.all(posterior > 0)
        assert posterior.sum() == pytest.approx(1.0, abs=1e-12)
        for q in range(3):
            if q != p:
                model_q, ess = model.opponent_model(p, q)
                rows = game.infosets(q)
                np.testing.assert_allclose(model_q[rows].sum(axis=1), 1.0, atol=1e-12)
                assert 1.0 - 1e-9 <= ess <= 6.0 + 1e-9
