"""MBBR's sample posterior (the paper's) on Kuhn, compiled from its game file, against brute-force
Bayes: every sample combination and every deal consistent with what was seen, enumerated through
the game's public API (``limit_mbbr_oracle``); the priors' samples; the factory's validation."""

from __future__ import annotations

import functools
import itertools

import limit_mbbr_oracle as oracle
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_limit_mbbr import random_hands

from oppmodel.modeling.errors import InvalidArgumentError, ResourceExhaustedError
from oppmodel.modeling.evaluation.limit import expected_values
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.kuhn3p import equilibria
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.mbbr.priors import create_samples

# tested here: the paper's sample posterior with its prior (the eta mixture's weak samples are
# near pure, and 1000 repeats of one hand then put some joint weights below 1e-308)
SAMPLES = functools.partial(MBBRConfig, posterior="samples", prior="informed", change_hazard=0.0)
KUHN3P = functools.partial(limit_game, "kuhn3p")


def hand_kinds(observations) -> set[int]:
    """The numbers of hidden hole cards among ``observations`` (0: a showdown of everyone)."""
    return {sum(c is None for c in o.hole) for o in observations}


def bayes_leaf(model, p: int):
    """The Bayesian response's leaf: sum_s p(s) (the opponents' reach under tau_s) x p's payoff."""
    game, n = model.game, model.game.num_players
    posterior = model.posterior(p)

    def leaf(betting, deal):
        reach = 0.0
        for s in itertools.product(range(model.config.k), repeat=n - 1):
            strategies = {(p + d) % n: model.tau[p, d - 1, s[d - 1]] for d in range(1, n)}
            reach += posterior[s] * oracle.reach_of_opponents(game, p, betting, deal, strategies)
        return reach * oracle.payoff(game, p, betting, deal)

    return leaf


def posterior_expected_value(model, p: int, strategy: np.ndarray) -> float:
    """sum_s p(s) EU(strategy, tau_s): ``strategy`` played at p against every sample combination."""
    n = model.game.num_players
    posterior = model.posterior(p)
    total = 0.0
    for s in itertools.product(range(model.config.k), repeat=n - 1):
        profile = model.default_strategy.copy()
        profile[p] = strategy
        for d in range(1, n):
            profile[(p + d) % n] = model.tau[p, d - 1, s[d - 1]]
        total += posterior[s] * expected_values(model.game, profile)[p]
    return total


@pytest.mark.parametrize("prior", ["informed", "uninformed"])
def test_posterior_equals_brute_force_from_each_seat(prior):
    """Folds, showdowns and hands won by folds, every one seen from each position in turn."""
    game = KUHN3P()
    for p in range(3):
        model = build_model(game, SAMPLES(k=4, seed=11 + p, prior=prior))
        observations = random_hands(game, 24, seed=p, positions=[p])
        assert hand_kinds(observations) >= {0, 2}
        for obs in observations:
            model.observe(obs)
        expected = oracle.sample_posterior(game, model.tau[p], observations, p)
        np.testing.assert_allclose(model.posterior(p), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("name", "k"), [("kuhn2p", 5), ("kuhn3p", 5), ("kuhn4p", 2)])
def test_posterior_and_bayes_response_equal_brute_force(name, k):
    """The Bayesian response is the best response to sum_s p(s) EU(., tau_s), and it is never
    worse there than the paper's response to the mean models."""
    game = limit_game(name)
    n = game.num_players
    model = build_model(game, SAMPLES(k=k, seed=5, hands_default=0))
    observations = random_hands(game, 4 * n, seed=n)
    for obs in observations:
        model.observe(obs)
    for p in range(n):
        expected = oracle.sample_posterior(game, model.tau[p], observations, p)
        np.testing.assert_allclose(model.posterior(p), expected, rtol=0, atol=1e-12)
        strategy, value = model.response(p, "bayes")
        sums, oracle_value = oracle.best_response(game, p, bayes_leaf(model, p))
        assert value == pytest.approx(oracle_value, abs=1e-12)
        for i, total in sums.items():
            assert strategy[i, int(np.argmax(strategy[i]))] == 1.0
            assert total[int(np.argmax(strategy[i]))] >= total.max() - 1e-12
        assert posterior_expected_value(model, p, strategy) == pytest.approx(value, abs=1e-12)
        mean_strategy, _ = model.response(p, "mean")
        assert value >= posterior_expected_value(model, p, mean_strategy) - 1e-12


def test_models_are_posterior_mixtures_of_samples():
    game = KUHN3P()
    model = build_model(game, SAMPLES(k=4, seed=9))
    for obs in random_hands(game, 12, seed=9):
        model.observe(obs)
    for p in range(3):
        posterior = model.posterior(p)
        for d in (1, 2):
            marginal = posterior.sum(axis=2 - d)
            expected = np.einsum("s,sia->ia", marginal, model.tau[p, d - 1])
            got, ess = model.opponent_model(p, (p + d) % 3)
            rows = game.infosets((p + d) % 3)
            np.testing.assert_allclose(got[rows], expected[rows], atol=1e-13)
            assert ess == pytest.approx(1.0 / np.square(marginal).sum())
            assert 1.0 <= ess <= 4.0


def test_samples_follow_the_clipped_prior_mean():
    game = KUHN3P()
    n3 = equilibria(game)["n3"]
    tau = create_samples(
        game, n3, k=4000, epsilon=0.05, eta=4.0, prior="informed", rng=np.random.default_rng(0)
    )
    legal = game.legal_mask
    for p in range(3):
        for d in (1, 2):
            q = (p + d) % 3
            rows = game.infosets(q)
            mean = np.where(legal[q, rows], np.clip(n3[q, rows], 0.05, 0.95), 0.0)
            mean /= mean.sum(axis=1, keepdims=True)
            got = tau[p, d - 1][:, rows].mean(axis=0)
            # Dirichlet(eta * m) marginal sd = sqrt(m(1-m)/(eta+1)) <= 0.23; 4000 draws: se < 0.004
            np.testing.assert_allclose(got, mean, atol=0.02)
            assert tau[p, d - 1][:, rows][:, legal[q, rows]].min() > 0.0


def test_uninformed_prior_is_dirichlet_two():
    game = KUHN3P()
    tau = create_samples(
        game, equilibria(game)["n3"], k=4000, epsilon=0.05, eta=4.0, prior="uninformed",
        rng=np.random.default_rng(0),
    )  # fmt: skip
    rows = game.infosets(1)
    draws = tau[0, 0][:, rows]
    legal = game.legal_mask[1, rows]
    assert legal.sum(axis=1).tolist() == [2] * len(rows)  # Kuhn: two legal actions everywhere
    bet = draws[:, legal].reshape(len(draws), len(rows), 2)[:, :, 1]
    np.testing.assert_allclose(bet.mean(axis=0), 0.5, atol=0.02)
    np.testing.assert_allclose(bet.var(axis=0), 0.25 / 5, atol=0.01)  # Beta(2, 2) variance


def test_same_seed_same_posterior_another_seed_another():
    game = KUHN3P()
    observations = random_hands(game, 40, seed=4)
    a, b, c = (build_model(game, SAMPLES(k=30, seed=seed)) for seed in (4, 4, 5))
    for obs in observations:
        a.observe(obs)
        b.observe(obs)
        c.observe(obs)
    for p in range(3):
        np.testing.assert_array_equal(a.posterior(p), b.posterior(p))
        assert not np.array_equal(a.posterior(p), c.posterior(p))


def test_weights_never_underflow():
    """A thousand hands that one sample explains far better than the others: nothing hits 0."""
    game = KUHN3P()
    model = build_model(game, SAMPLES(k=20, seed=3))
    showdown = next(o for o in random_hands(game, 60, seed=3, positions=[0]) if None not in o.hole)
    for _ in range(1000):
        model.observe(showdown)
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
        ("posterior", {"posterior": "particles"}),
    ],
)
def test_bad_config_names_the_field(field, kwargs):
    with pytest.raises(InvalidArgumentError) as info:
        build_model(KUHN3P(), MBBRConfig(**kwargs))
    assert info.value.field == field


def test_k_too_large_is_resource_exhausted_but_only_for_samples():
    with pytest.raises(ResourceExhaustedError):
        build_model(KUHN3P(), SAMPLES(k=5000))
    build_model(KUHN3P(), MBBRConfig(posterior="dirichlet", k=10**6))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 12), data_seed=st.integers(0, 999))
def test_posterior_is_a_distribution(seed, count, data_seed):
    game = KUHN3P()
    model = build_model(game, SAMPLES(k=6, seed=seed))
    for obs in random_hands(game, count, seed=data_seed):
        model.observe(obs)
    for p in range(3):
        posterior = model.posterior(p)
        assert np.all(posterior > 0)
        assert posterior.sum() == pytest.approx(1.0, abs=1e-12)
        for q in set(range(3)) - {p}:
            model_q, ess = model.opponent_model(p, q)
            rows = game.infosets(q)
            np.testing.assert_allclose(model_q[rows].sum(axis=1), 1.0, atol=1e-12)
            assert 1.0 - 1e-9 <= ess <= 6.0 + 1e-9
