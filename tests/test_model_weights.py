"""Model-weight inference: the exact mixture-of-Dirichlets oracle against brute force and closed
forms, the Gibbs kernel against its plain-Python twin, and the Gibbs estimates against the oracle
within Monte-Carlo error."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import special, stats

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.perfect_info._model_weights_kernels import gibbs_chains
from oppmodel.modeling.perfect_info.model_weights import (
    choice_likelihood,
    effective_sample_size,
    exact_posterior,
    gibbs_posterior,
    split_rhat,
)

MASK = (1 << 64) - 1
XS_MULT = 2685821657736338717


def gibbs_chains_py(lik, alpha, seeds, burn_in, sweeps):
    """Plain-Python twin of the kernel (same PRNG, same arithmetic order)."""
    n_obs, n_models = lik.shape
    out = np.zeros((len(seeds), sweeps, n_models), dtype=np.int64)
    for chain, seed in enumerate(seeds):
        state = int(seed)

        def uniform():
            nonlocal state
            x = state
            x ^= x >> 12
            x ^= (x << 25) & MASK
            x ^= x >> 27
            state = x
            return float(((x * XS_MULT) & MASK) >> 11) * (1.0 / 9007199254740992.0)

        z = []
        for t in range(n_obs):
            positive = [j for j in range(n_models) if lik[t, j] > 0]
            z.append(positive[int(uniform() * len(positive))])
        counts = [z.count(j) for j in range(n_models)]
        for sweep in range(burn_in + sweeps):
            for t in range(n_obs):
                counts[z[t]] -= 1
                weights = [(counts[j] + alpha[j]) * lik[t, j] for j in range(n_models)]
                total = 0.0
                for w in weights:
                    total += w
                target = uniform() * total
                cumulative, chosen = 0.0, -1
                for j, w in enumerate(weights):
                    cumulative += w
                    if w > 0:
                        chosen = j
                        if target < cumulative:
                            break
                z[t] = chosen
                counts[chosen] += 1
            if sweep >= burn_in:
                out[chain, sweep - burn_in] = counts
    return out


def brute_force_mean(lik: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """E[w | L] by summing over every assignment z of models to observations."""
    n_obs, n_models = lik.shape
    total = alpha.sum() + n_obs
    log_b0 = special.gammaln(alpha).sum() - special.gammaln(alpha.sum())
    weights, means = [], []
    for z in itertools.product(range(n_models), repeat=n_obs):
        counts = np.bincount(z, minlength=n_models)
        log_b = special.gammaln(alpha + counts).sum() - special.gammaln(total) - log_b0
        weights.append(np.prod(lik[np.arange(n_obs), z]) * np.exp(log_b))
        means.append((alpha + counts) / total)
    weights = np.array(weights)
    return weights @ np.array(means) / weights.sum()


def random_problem(seed: int, n_models: int, n_obs: int) -> tuple[np.ndarray, np.ndarray]:
    """Likelihood rows from epsilon-greedy choices among 2-4 children with random utilities."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_obs):
        k = int(rng.integers(2, 5))
        utilities = rng.integers(0, 4, size=(k, n_models))
        rows.append(
            choice_likelihood(utilities, int(rng.integers(k)), float(rng.uniform(0.1, 0.6)))
        )
    return np.array(rows), rng.uniform(0.5, 3.0, size=n_models)


def test_choice_likelihood_is_paper000_figure5() -> None:
    utilities = [[31, 29], [30, 30], [31, 29]]  # Player 1's MT and mOT utilities of (a), (b), (c)
    np.testing.assert_allclose(choice_likelihood(utilities, 1, 0.3), [0.1, 0.8], atol=1e-15)
    np.testing.assert_allclose(choice_likelihood(utilities, 2, 0.3), [0.45, 0.1], atol=1e-15)


@pytest.mark.parametrize(
    ("n_models", "n_obs", "seed"), [(2, 7, 0), (3, 5, 1), (2, 1, 2), (3, 6, 3)]
)
def test_exact_posterior_matches_brute_force(n_models: int, n_obs: int, seed: int) -> None:
    lik, alpha = random_problem(seed, n_models, n_obs)
    exact = exact_posterior(lik, alpha)
    np.testing.assert_allclose(exact.mean, brute_force_mean(lik, alpha), rtol=1e-12)
    np.testing.assert_allclose(exact.count_marginals.sum(axis=1), 1.0, rtol=1e-12)


def test_exact_posterior_closed_forms() -> None:
    alpha = np.array([1.5, 2.0, 0.5])
    # Choices every model makes equally often carry no information: posterior = prior.
    prior = exact_posterior(np.full((40, 3), 0.2), alpha, level=0.9)
    np.testing.assert_allclose(prior.mean, alpha / alpha.sum(), rtol=1e-12)
    for j in range(3):
        marginal = stats.beta(alpha[j], alpha.sum() - alpha[j])
        np.testing.assert_allclose(prior.interval[j], marginal.ppf([0.05, 0.95]), atol=1e-9)
        assert prior.sd[j] == pytest.approx(marginal.std(), rel=1e-9)
    # Choices only one model could make reveal z: posterior = Dirichlet(alpha + counts).
    z = np.array([0] * 7 + [1] * 2 + [2] * 11)
    revealed = exact_posterior(np.eye(3)[z], alpha)
    post = alpha + np.bincount(z, minlength=3)
    np.testing.assert_allclose(revealed.mean, post / post.sum(), rtol=1e-12)
    for j in range(3):
        marginal = stats.beta(post[j], post.sum() - post[j])
        np.testing.assert_allclose(revealed.interval[j], marginal.ppf([0.025, 0.975]), atol=1e-9)
        assert revealed.cdf(j, 0.3) == pytest.approx(marginal.cdf(0.3), abs=1e-12)
    # No observations: the prior again, and the evidence of nothing is 1.
    empty = exact_posterior(np.empty((0, 3)), alpha)
    np.testing.assert_allclose(empty.mean, alpha / alpha.sum(), rtol=1e-12)
    assert empty.log_evidence == pytest.approx(0.0, abs=1e-12)


def test_kernel_matches_python_twin() -> None:
    lik, alpha = random_problem(7, 3, 12)
    lik = np.ascontiguousarray(lik / lik.max(axis=1, keepdims=True))
    seeds = np.array([12345, 2**63 + 99, 7], dtype=np.uint64)
    out = np.zeros((3, 25, 3), dtype=np.int64)
    gibbs_chains(lik, alpha, seeds, 5, out)
    np.testing.assert_array_equal(out, gibbs_chains_py(lik, alpha, seeds, 5, 25))
    assert np.all(out.sum(axis=2) == 12)


PROBLEMS = [(2, 200, 11), (2, 60, 12), (2, 13, 13), (3, 200, 14), (3, 90, 15), (3, 25, 16)]


@pytest.mark.parametrize(("n_models", "n_obs", "seed"), PROBLEMS)
def test_gibbs_agrees_with_exact_oracle(n_models: int, n_obs: int, seed: int) -> None:
    lik, alpha = random_problem(seed, n_models, n_obs)
    exact = exact_posterior(lik, alpha)
    gibbs = gibbs_posterior(lik, alpha, seed=seed, sweeps=3000, burn_in=200, chains=4)
    # Within 5 Monte-Carlo standard errors (from the chains' ESS) of the exact mean.
    assert np.all(np.abs(gibbs.mean - exact.mean) <= 5 * gibbs.std_error), (
        gibbs.mean,
        exact.mean,
        gibbs.std_error,
    )
    assert np.all(gibbs.rhat < 1.05)
    assert np.all(gibbs.ess > 200)
    # Quantiles of 12000 correlated draws: a few hundredths is several standard errors.
    np.testing.assert_allclose(gibbs.interval, exact.interval, atol=0.04)


def test_gibbs_is_reproducible() -> None:
    lik, alpha = random_problem(3, 2, 50)
    first = gibbs_posterior(lik, alpha, seed=42, sweeps=200, burn_in=10)
    second = gibbs_posterior(lik, alpha, seed=42, sweeps=200, burn_in=10)
    other = gibbs_posterior(lik, alpha, seed=43, sweeps=200, burn_in=10)
    np.testing.assert_array_equal(first.counts, second.counts)
    np.testing.assert_array_equal(first.weight_samples, second.weight_samples)
    np.testing.assert_array_equal(first.mean, second.mean)
    assert not np.array_equal(first.counts, other.counts)
    from_rng = gibbs_posterior(lik, alpha, seed=np.random.default_rng(5), sweeps=200, burn_in=10)
    again = gibbs_posterior(lik, alpha, seed=np.random.default_rng(5), sweeps=200, burn_in=10)
    np.testing.assert_array_equal(from_rng.weight_samples, again.weight_samples)
    assert first.seed == 42 and from_rng.seed is None


def test_gibbs_without_observations_returns_the_prior() -> None:
    alpha = np.array([2.0, 1.0])
    gibbs = gibbs_posterior(np.empty((0, 2)), alpha, seed=0, sweeps=4000, burn_in=0)
    np.testing.assert_allclose(gibbs.mean, alpha / alpha.sum(), rtol=1e-12)
    assert np.all(gibbs.rhat == 1.0) and np.all(gibbs.ess == 4 * 4000)
    np.testing.assert_allclose(gibbs.interval[0], stats.beta(2, 1).ppf([0.025, 0.975]), atol=0.02)


def test_diagnostics_known_answers() -> None:
    rng = np.random.default_rng(0)
    iid = rng.normal(size=(4, 2000))
    assert effective_sample_size(iid) == pytest.approx(8000, rel=0.15)
    assert split_rhat(iid) < 1.01
    phi = 0.9
    ar = np.zeros((4, 4000))
    noise = rng.normal(size=ar.shape)
    for t in range(1, ar.shape[1]):
        ar[:, t] = phi * ar[:, t - 1] + noise[:, t]
    assert effective_sample_size(ar) == pytest.approx(16000 * (1 - phi) / (1 + phi), rel=0.3)
    shifted = iid + np.array([[0.0], [0.0], [0.0], [3.0]])
    assert split_rhat(shifted) > 1.2
    trend = iid + np.linspace(0, 5, 2000)  # every chain drifts: only the split halves see it
    assert split_rhat(trend) > 1.2
    assert split_rhat(np.ones((3, 10))) == 1.0 and effective_sample_size(np.ones((3, 10))) == 30


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: exact_posterior([[0.5, np.nan]], [1, 1]), "likelihoods[0, 1]"),
        (lambda: exact_posterior([[0.5, 0.2], [-0.1, 1]], [1, 1]), "likelihoods[1, 0]"),
        (lambda: exact_posterior([[0.5, 0.2], [0.0, 0.0]], [1, 1]), "likelihoods[1]"),
        (lambda: exact_posterior([0.5, 0.2], [1, 1]), "likelihoods"),
        (lambda: exact_posterior([[0.5, 0.2]], [1, 1, 1]), "alpha"),
        (lambda: exact_posterior([[0.5, 0.2]], [1, 0]), "alpha"),
        (lambda: exact_posterior([[0.5, 0.2]], [1, 1], level=1.0), "level"),
        (lambda: gibbs_posterior([[0.5, 0.2]], 1.0, seed=0, chains=1), "chains"),
        (lambda: gibbs_posterior([[0.5, 0.2]], 1.0, seed=0, sweeps=0), "sweeps"),
        (lambda: gibbs_posterior([[0.5, 0.2]], 1.0, seed=-1), "seed"),
        (lambda: gibbs_posterior([[0.5, np.inf]], 1.0, seed=0), "likelihoods[0, 1]"),
        (lambda: choice_likelihood([[1, 2], [3, 4]], 2, 0.1), "chosen"),
        (lambda: choice_likelihood([[1, 2], [3, 4]], 0, -0.1), "epsilon"),
        (lambda: choice_likelihood([1, 2], 0, 0.1), "child_utilities"),
        (lambda: choice_likelihood([[1, np.nan]], 0, 0.1), "child_utilities"),
        (lambda: split_rhat(np.ones((2, 3))), "draws"),
        (lambda: exact_posterior(np.ones((1, 2)), [1, 1]).quantile(0, 2.0), "q"),
    ],
)
def test_invalid_inputs_name_the_field(call, field: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert info.value.field == field


def test_gibbs_weight_draws_survive_tiny_alpha() -> None:
    """Gamma(1e-3) draws underflow to 0 about half the time; every weight draw must still be a
    point of the simplex."""
    gibbs = gibbs_posterior(np.empty((0, 2)), 1e-3, seed=3, sweeps=500, burn_in=0)
    assert np.all(np.isfinite(gibbs.weight_samples))
    np.testing.assert_allclose(gibbs.weight_samples.sum(axis=2), 1.0)


def test_single_model_is_certain() -> None:
    exact = exact_posterior([[0.2], [0.5]], [2.0])
    assert exact.mean.tolist() == [1.0] and exact.interval.tolist() == [[1.0, 1.0]]
    assert exact.log_evidence == pytest.approx(np.log(0.1))
    gibbs = gibbs_posterior([[0.2], [0.5]], [2.0], seed=0, sweeps=10, burn_in=0)
    assert gibbs.mean.tolist() == [1.0]
