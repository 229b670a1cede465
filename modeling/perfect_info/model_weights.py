"""Bayesian inference of an opponent's model weights (Sturtevant et al. 2006, "Learning ...").

Setting. An opponent has N models (utility functions); prob-max^n needs
``probModel[i, :] = w``, the probability that it plays each. Give ``w`` a Dirichlet(alpha) prior and
treat the model behind each observed choice t as a latent ``z_t ~ Categorical(w)``. A choice's
likelihood vector is ``L_t[j] = P(choice t | model j)``: the epsilon-greedy probability of the
chosen child under model j (:func:`choice_likelihood` computes it from each model's utilities of all
the children, with the same rule and tie tolerance as
``oppmodel.modeling.perfect_info.search.probmaxn``). Only ratios within a row matter. Opponents are
independent a priori and their likelihoods factorise, so each opponent's posterior is computed on
its own.

Exact posterior. Summing out z, the posterior is a mixture of Dirichlets::

    p(w | L) = sum_c pi(c) Dirichlet(w; alpha + c),   pi(c) ∝ M_T(c) B(alpha + c) / B(alpha),
    M_0 = [c = 0],   M_t(c) = sum_j L_t[j] M_{t-1}(c - e_j),

over count vectors c with sum T, where B is the multivariate Beta function. There are
C(T + N - 1, N - 1) count vectors, so :func:`exact_posterior` (run in log space) is polynomial in T
for fixed N: the oracle for tests and the answer for small problems. Its marginals are mixtures of
Betas, ``w_j | L ~ sum_k P(c_j = k) Beta(alpha_j + k, A + T - alpha_j - k)`` (A = sum alpha), which
gives exact CDFs and credible intervals.

Collapsed Gibbs sampler (``_model_weights_kernels.gibbs_chains``): with w integrated out, resample
each z_t from ``P(z_t = j | z_-t) ∝ (n_{-t,j} + alpha_j) L_t[j]``. :func:`gibbs_posterior` runs
several independent chains and reports

- the posterior mean by Rao-Blackwellisation: the average over sweeps of
  ``E[w_j | z] = (n_j + alpha_j) / (T + A)``, with its Monte-Carlo standard error
  ``sd / sqrt(ESS)`` of that series;
- central credible intervals: per-model quantiles of one weight draw ``w ~ Dirichlet(alpha + n)``
  per sweep (exact draws from the posterior once the chain has mixed);
- split R-hat (Gelman et al., BDA3 section 11.4) and the effective sample size (Geyer's initial
  monotone sequence over the chains' combined autocorrelations, as in Stan) of the
  Rao-Blackwellised series.

Randomness: a seed (or a ``numpy.random.Generator``) fixes the kernel's per-chain xorshift64*
states and the Dirichlet draws, so the same seed gives bit-identical output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from oppmodel.modeling.errors import InvalidArgumentError, ResourceExhaustedError
from oppmodel.modeling.perfect_info._model_weights_kernels import gibbs_chains
from oppmodel.modeling.perfect_info.search.probmaxn import TIE_TOL, model_choice_probabilities

EXACT_MAX_STATES = 20_000_000
"""Largest count grid, (T + 1)^(N - 1), the exact oracle will allocate."""


def choice_likelihood(
    child_utilities: Sequence[Sequence[float]] | np.ndarray,
    chosen: int,
    epsilon: float,
    *,
    tie_tol: float = TIE_TOL,
) -> np.ndarray:
    """``L[j] = P(chosen | model j)`` for an epsilon-greedy player.

    ``child_utilities[c][j]`` is model j's utility of child c (prob-max^n's ``u_c[i][j]`` for the
    mover i). Model j's optimal children B_j (within ``tie_tol`` of its best) get
    ``(1 - eps)/|B_j| + eps/k``, the others ``eps/k`` (ibid., Figure 5).
    """
    u = np.asarray(child_utilities, dtype=np.float64)
    if u.ndim != 2 or u.shape[0] < 1 or u.shape[1] < 1:
        raise InvalidArgumentError(
            "child_utilities", f"must be a (children, models) matrix, got shape {u.shape}"
        )
    if not np.all(np.isfinite(u)):
        raise InvalidArgumentError("child_utilities", "entries must be finite")
    if isinstance(chosen, bool) or not 0 <= chosen < u.shape[0]:
        raise InvalidArgumentError("chosen", f"must be in 0..{u.shape[0] - 1}, got {chosen}")
    if not 0.0 <= epsilon <= 1.0:
        raise InvalidArgumentError("epsilon", f"must be in [0, 1], got {epsilon}")
    return model_choice_probabilities(u, epsilon, tie_tol=tie_tol)[chosen]


def validate_likelihoods(likelihoods: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """Return the likelihoods as a float64 (T, N) array; raises if any entry is NaN, infinite or
    negative, or a row is all zero (a choice no model can make)."""
    lik = np.asarray(likelihoods, dtype=np.float64)
    if lik.ndim != 2 or lik.shape[1] < 1:
        raise InvalidArgumentError(
            "likelihoods", f"must be a (observations, models) matrix, got shape {lik.shape}"
        )
    bad = ~np.isfinite(lik) | (lik < 0)
    if bad.any():
        t, j = np.argwhere(bad)[0]
        raise InvalidArgumentError(
            f"likelihoods[{t}, {j}]", f"must be finite and >= 0, got {lik[t, j]}"
        )
    empty = ~(lik > 0).any(axis=1)
    if empty.any():
        t = int(np.flatnonzero(empty)[0])
        raise InvalidArgumentError(f"likelihoods[{t}]", "no model can make this choice (all 0)")
    return lik


def validate_alpha(alpha: Sequence[float] | np.ndarray | float, n_models: int) -> np.ndarray:
    """Return alpha as a float64 vector of length ``n_models`` (a scalar is broadcast)."""
    a = np.asarray(alpha, dtype=np.float64)
    if a.ndim == 0:
        a = np.full(n_models, float(a))
    if a.shape != (n_models,):
        raise InvalidArgumentError("alpha", f"needs {n_models} entries, got shape {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise InvalidArgumentError("alpha", f"entries must be finite and > 0, got {a.tolist()}")
    return a


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise InvalidArgumentError("level", f"must be in (0, 1), got {level}")


# --------------------------------------------------------------------------- exact oracle


@dataclass(frozen=True)
class ExactPosterior:
    """The exact mixture-of-Dirichlets posterior of one opponent's model weights.

    ``mean[j]``, ``sd[j]``: posterior mean and standard deviation of w_j; ``interval[j]``: the
    central ``level`` credible interval of w_j; ``count_marginals[j][k] = P(c_j = k)``;
    ``log_evidence``: log p(choices) up to the likelihoods' scale, i.e.
    log sum_c M_T(c) B(alpha + c) / B(alpha).
    """

    alpha: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    interval: np.ndarray
    level: float
    count_marginals: np.ndarray
    log_evidence: float

    def cdf(self, model: int, x: float) -> float:
        """P(w_model <= x): a mixture of Beta CDFs over the model's count."""
        self._check_model(model)
        return _mixture_cdf(self.alpha, self.count_marginals, model, x)

    def quantile(self, model: int, q: float) -> float:
        """The ``q`` quantile of w_model (root of the exact CDF)."""
        self._check_model(model)
        if not 0.0 <= q <= 1.0:
            raise InvalidArgumentError("q", f"must be in [0, 1], got {q}")
        return _mixture_quantile(self.alpha, self.count_marginals, model, q)

    def _check_model(self, model: int) -> None:
        if not 0 <= model < self.alpha.size:
            raise InvalidArgumentError("model", f"must be in 0..{self.alpha.size - 1}")


def _mixture_cdf(alpha: np.ndarray, marginals: np.ndarray, model: int, x: float) -> float:
    """sum_k P(c_model = k) BetaCDF(x; alpha_model + k, A + T - alpha_model - k)."""
    if alpha.size == 1:
        return float(x >= 1.0)
    n_obs = marginals.shape[1] - 1
    a = alpha[model] + np.arange(n_obs + 1)
    b = alpha.sum() + n_obs - a
    return float(marginals[model] @ special.betainc(a, b, np.clip(x, 0.0, 1.0)))


def _mixture_quantile(alpha: np.ndarray, marginals: np.ndarray, model: int, q: float) -> float:
    if alpha.size == 1:
        return 1.0
    if q in (0.0, 1.0):
        return q
    return float(
        optimize.brentq(
            lambda x: _mixture_cdf(alpha, marginals, model, x) - q, 0.0, 1.0, xtol=1e-13
        )
    )


def _log_count_likelihoods(log_lik: np.ndarray) -> np.ndarray:
    """log M over the explicit counts c_0..c_{N-2} (c_{N-1} = T - their sum): the log of the
    likelihood of the T observations summed over every assignment of them to the N models with
    those counts, by the counts recursion (one observation at a time)."""
    n_obs, n_models = log_lik.shape
    shape = (n_obs + 1,) * (n_models - 1)
    log_m = np.full(shape, -np.inf)
    log_m[(0,) * (n_models - 1)] = 0.0
    for t in range(n_obs):
        new = log_m + log_lik[t, n_models - 1]
        for j in range(n_models - 1):
            shifted = np.full(shape, -np.inf)
            dst = [slice(None)] * (n_models - 1)
            src = [slice(None)] * (n_models - 1)
            dst[j], src[j] = slice(1, None), slice(None, -1)
            shifted[tuple(dst)] = log_m[tuple(src)] + log_lik[t, j]
            new = np.logaddexp(new, shifted)
        log_m = new
    return log_m


def _count_posterior(
    log_m: np.ndarray, a: np.ndarray, n_obs: int
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray, float]:
    """The posterior probability of each count vector on ``log_m``'s grid (M times the
    Dirichlet-multinomial weight of the counts under ``a``), each model's count per grid cell,
    which cells are count vectors (the last count not negative), and the log evidence."""
    n_models = a.size
    grids = np.indices(log_m.shape)  # grids[j] = c_j
    last = n_obs - grids.sum(axis=0)
    valid = last >= 0
    counts = [*grids, np.where(valid, last, 0)]
    log_b = sum(special.gammaln(a[j] + counts[j]) for j in range(n_models))
    log_b = log_b - special.gammaln(a.sum() + n_obs)
    log_b0 = special.gammaln(a).sum() - special.gammaln(a.sum())
    log_w = np.where(valid, log_m + log_b - log_b0, -np.inf)
    log_evidence = float(special.logsumexp(log_w))
    return np.exp(log_w - log_evidence), counts, valid, log_evidence


def exact_posterior(
    likelihoods: Sequence[Sequence[float]] | np.ndarray,
    alpha: Sequence[float] | np.ndarray | float,
    *,
    level: float = 0.95,
) -> ExactPosterior:
    """The exact posterior by the counts recursion (module docstring), in log space.

    Cost: T x (T + 1)^(N - 1) log-add-exps; raises ``ResourceExhaustedError`` above
    ``EXACT_MAX_STATES`` grid cells (e.g. N = 4 with T = 300).
    """
    lik = validate_likelihoods(likelihoods)
    n_obs, n_models = lik.shape
    a = validate_alpha(alpha, n_models)
    _check_level(level)
    if n_models == 1:
        marg = np.zeros((1, n_obs + 1))
        marg[0, n_obs] = 1.0
        return ExactPosterior(
            alpha=a,
            mean=np.ones(1),
            sd=np.zeros(1),
            interval=np.ones((1, 2)),
            level=level,
            count_marginals=marg,
            log_evidence=float(np.log(lik[:, 0]).sum()),
        )
    if (n_obs + 1) ** (n_models - 1) > EXACT_MAX_STATES:
        raise ResourceExhaustedError(
            f"exact_posterior: {n_obs + 1}^{n_models - 1} count states exceed {EXACT_MAX_STATES}"
        )
    with np.errstate(divide="ignore"):
        log_lik = np.log(lik)
    post, counts, valid, log_evidence = _count_posterior(_log_count_likelihoods(log_lik), a, n_obs)
    total = a.sum() + n_obs
    mean = np.empty(n_models)
    second = np.empty(n_models)
    marg = np.zeros((n_models, n_obs + 1))
    for j in range(n_models):
        aj = a[j] + counts[j]
        mean[j] = float((post * aj).sum() / total)
        second[j] = float((post * aj * (aj + 1)).sum() / (total * (total + 1)))
        marg[j] = np.bincount(counts[j][valid], weights=post[valid], minlength=n_obs + 1)
    sd = np.sqrt(np.maximum(second - mean**2, 0.0))
    tails = ((1 - level) / 2, (1 + level) / 2)
    interval = np.array(
        [[_mixture_quantile(a, marg, j, q) for q in tails] for j in range(n_models)]
    )
    return ExactPosterior(
        alpha=a,
        mean=mean,
        sd=sd,
        interval=interval,
        level=level,
        count_marginals=marg,
        log_evidence=log_evidence,
    )


# --------------------------------------------------------------------------- Gibbs sampler


@dataclass(frozen=True)
class GibbsPosterior:
    """Output of :func:`gibbs_posterior` for one opponent (arrays indexed by model j).

    ``mean``: Rao-Blackwellised posterior mean; ``std_error``: its Monte-Carlo standard error;
    ``interval[j]``: central ``level`` credible interval from the weight draws; ``rhat``: split
    R-hat; ``ess``: effective sample size; ``weight_samples[c, s]``: the draw w ~ Dirichlet(alpha +
    n) after sweep s of chain c; ``counts[c, s]``: the model counts n after that sweep; ``seed``:
    what was passed, for the record.
    """

    mean: np.ndarray
    std_error: np.ndarray
    interval: np.ndarray
    level: float
    rhat: np.ndarray
    ess: np.ndarray
    weight_samples: np.ndarray = field(repr=False)
    counts: np.ndarray = field(repr=False)
    seed: int | None


def gibbs_posterior(
    likelihoods: Sequence[Sequence[float]] | np.ndarray,
    alpha: Sequence[float] | np.ndarray | float,
    *,
    seed: int | np.random.Generator,
    sweeps: int = 2000,
    burn_in: int = 200,
    chains: int = 4,
    level: float = 0.95,
) -> GibbsPosterior:
    """Posterior of an opponent's model weights by collapsed Gibbs sampling (module docstring).

    ``sweeps`` recorded sweeps per chain after ``burn_in``; ``chains`` >= 2 independent chains (for
    R-hat) from dispersed starts. Same seed, same output.
    """
    lik = validate_likelihoods(likelihoods)
    n_obs, n_models = lik.shape
    a = validate_alpha(alpha, n_models)
    _check_level(level)
    for name, value, low in (("sweeps", sweeps, 4), ("burn_in", burn_in, 0), ("chains", chains, 2)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise InvalidArgumentError(name, f"must be an integer >= {low}, got {value!r}")
    if isinstance(seed, np.random.Generator):
        rng, seed_record = seed, None
        kernel_seeds: np.ndarray = rng.integers(1, 2**63, size=chains, dtype=np.uint64)
    elif isinstance(seed, int | np.integer) and not isinstance(seed, bool) and seed >= 0:
        kernel_ss, draw_ss = np.random.SeedSequence(int(seed)).spawn(2)
        kernel_seeds = kernel_ss.generate_state(chains, dtype=np.uint64)
        kernel_seeds[kernel_seeds == 0] = np.uint64(0x9E3779B97F4A7C15)  # xorshift needs != 0
        rng, seed_record = np.random.default_rng(draw_ss), int(seed)
    else:
        raise InvalidArgumentError("seed", f"must be an int >= 0 or a Generator, got {seed!r}")

    scaled = np.ascontiguousarray(lik / lik.max(axis=1, keepdims=True))
    counts = np.zeros((chains, sweeps, n_models), dtype=np.int64)
    gibbs_chains(scaled, a, kernel_seeds, int(burn_in), counts)

    total = a.sum() + n_obs
    rb = (counts + a) / total  # E[w | z] per sweep: (chains, sweeps, N)
    shapes = counts + a
    gammas = rng.standard_gamma(shapes)
    sums = gammas.sum(axis=2, keepdims=True)
    # Tiny shapes (alpha << 1 with zero counts) can underflow every Gamma draw to 0; numpy's
    # dirichlet switches to stick-breaking there, so redraw just those rows with it.
    for c, s_ in np.argwhere(sums[:, :, 0] == 0.0):
        gammas[c, s_] = rng.dirichlet(shapes[c, s_])
        sums[c, s_] = 1.0
    weights = gammas / sums
    mean = rb.mean(axis=(0, 1))
    ess = np.array([effective_sample_size(rb[:, :, j]) for j in range(n_models)])
    rhat = np.array([split_rhat(rb[:, :, j]) for j in range(n_models)])
    std_error = rb.std(axis=(0, 1), ddof=1) / np.sqrt(ess)
    flat = weights.reshape(-1, n_models)
    interval = np.quantile(flat, [(1 - level) / 2, (1 + level) / 2], axis=0).T
    return GibbsPosterior(
        mean=mean,
        std_error=std_error,
        interval=interval,
        level=level,
        rhat=rhat,
        ess=ess,
        weight_samples=weights,
        counts=counts,
        seed=seed_record,
    )


# --------------------------------------------------------------------------- diagnostics


def _check_chains(draws: np.ndarray, min_length: int) -> np.ndarray:
    x = np.asarray(draws, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < min_length:
        raise InvalidArgumentError(
            "draws", f"must be (chains, draws) with >= {min_length} draws, got shape {x.shape}"
        )
    if not np.all(np.isfinite(x)):
        raise InvalidArgumentError("draws", "entries must be finite")
    return x


def split_rhat(draws: np.ndarray) -> float:
    """Split R-hat of ``draws[chain, iteration]`` (BDA3 section 11.4): each chain is cut in two
    halves (dropping the middle draw of an odd length), and R = sqrt(var_plus / W) with W the mean
    within-half variance and var_plus = (m-1)/m W + B/m, B/m the variance of the half means.
    Returns 1.0 for a constant series (nothing to disagree about)."""
    x = _check_chains(draws, 4)
    if np.ptp(x) == 0.0:
        return 1.0
    half = x.shape[1] // 2
    halves = np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)
    within = halves.var(axis=1, ddof=1).mean()
    between_over_m = halves.mean(axis=1).var(ddof=1)
    var_plus = (half - 1) / half * within + between_over_m
    if within == 0.0:
        return 1.0 if var_plus == 0.0 else float("inf")
    return float(np.sqrt(var_plus / within))


def effective_sample_size(draws: np.ndarray) -> float:
    """Effective sample size of ``draws[chain, iteration]``.

    The chains' autocovariances (by FFT) are combined as rho_t = 1 - (W - mean_acov_t) / var_plus,
    summed in adjacent pairs while the pair sums stay positive and forced non-increasing (Geyer's
    initial monotone sequence); ESS = M S / tau with tau = -1 + 2 sum pairs (at least
    1 / log10(M S), so antithetic chains are not credited with more than M S log10(M S) draws).
    Returns M S for a constant series.
    """
    x = _check_chains(draws, 4)
    m, s = x.shape
    if np.ptp(x) == 0.0:
        return float(m * s)
    centred = x - x.mean(axis=1, keepdims=True)
    size = 1 << int(np.ceil(np.log2(2 * s)))
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=1)[:, :s] / s
    within = acov[:, 0].mean() * s / (s - 1)
    var_plus = within * (s - 1) / s + (x.mean(axis=1).var(ddof=1) if m > 1 else 0.0)
    if var_plus <= 0.0:
        return float(m * s)
    rho = 1.0 - (within - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    pair_sums = rho[: 2 * (s // 2)].reshape(-1, 2).sum(axis=1)
    non_positive = np.flatnonzero(pair_sums <= 0.0)
    kept = pair_sums[: non_positive[0]] if non_positive.size else pair_sums
    tau = -1.0 + 2.0 * np.minimum.accumulate(kept).sum()
    tau = max(tau, 1.0 / np.log10(m * s))
    return float(m * s / tau)
