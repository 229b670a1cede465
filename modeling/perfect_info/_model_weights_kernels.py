"""Numba kernel of the collapsed Gibbs sampler for opponent-model weights (see model_weights.py).

Arrays and scalars in, preallocated arrays out; inputs are validated by
``oppmodel.modeling.perfect_info.model_weights``. Randomness comes from a xorshift64* generator
(Vigna 2016) inside the kernel, one uint64 state per chain, so a run is a pure function of its
seeds; uniforms are the top 53 bits times 2^-53.
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.kernel_cache import njit

_XS_MULT = np.uint64(2685821657736338717)
_S12 = np.uint64(12)
_S25 = np.uint64(25)
_S27 = np.uint64(27)
_S11 = np.uint64(11)
_TWO_M53 = 1.0 / 9007199254740992.0


@njit(cache=True)
def _uniform(state: np.ndarray) -> float:
    """Advance the xorshift64* state ``state[0]`` and return a uniform in [0, 1)."""
    x = state[0]
    x ^= x >> _S12
    x ^= x << _S25
    x ^= x >> _S27
    state[0] = x
    return float((x * _XS_MULT) >> _S11) * _TWO_M53


@njit(cache=True)
def gibbs_chains(
    lik: np.ndarray,
    alpha: np.ndarray,
    seeds: np.ndarray,
    burn_in: int,
    counts_out: np.ndarray,
) -> None:
    """Run ``len(seeds)`` chains of the collapsed Gibbs sampler.

    lik[t, j] = P(choice t | model j) (each row has a positive entry); alpha[j] > 0; seeds: nonzero
    uint64, one per chain. Each chain starts from z_t uniform over the models with lik[t, j] > 0,
    runs ``burn_in`` sweeps, then ``counts_out.shape[1]`` recorded sweeps; a sweep visits t = 0..T-1
    and draws z_t with P(z_t = j) proportional to (n_{-t,j} + alpha_j) * lik[t, j].
    counts_out[c, s, j] = n_j after recorded sweep s of chain c.
    """
    n_obs, n_models = lik.shape
    sweeps = counts_out.shape[1]
    z = np.empty(n_obs, np.int64)
    counts = np.empty(n_models, np.int64)
    weights = np.empty(n_models)
    state = np.empty(1, np.uint64)
    for chain in range(seeds.shape[0]):
        state[0] = seeds[chain]
        counts[:] = 0
        for t in range(n_obs):
            positive = 0
            for j in range(n_models):
                if lik[t, j] > 0.0:
                    positive += 1
            pick = int(_uniform(state) * positive)
            for j in range(n_models):
                if lik[t, j] > 0.0:
                    if pick == 0:
                        z[t] = j
                        break
                    pick -= 1
            counts[z[t]] += 1
        for sweep in range(burn_in + sweeps):
            for t in range(n_obs):
                counts[z[t]] -= 1
                total = 0.0
                for j in range(n_models):
                    weights[j] = (counts[j] + alpha[j]) * lik[t, j]
                    total += weights[j]
                target = _uniform(state) * total
                chosen = -1
                cumulative = 0.0
                for j in range(n_models):
                    cumulative += weights[j]
                    if weights[j] > 0.0:
                        chosen = j  # rounding guard: the last positive model if target >= sum
                        if target < cumulative:
                            break
                z[t] = chosen
                counts[chosen] += 1
            if sweep >= burn_in:
                for j in range(n_models):
                    counts_out[chain, sweep - burn_in, j] = counts[j]
