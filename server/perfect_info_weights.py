"""The posterior of a perfect-information opponent's model weights, from its choices.

Sturtevant et al. 2006, "Learning in Prob-Max^n". Each opponent i of a session has
models ``m_{i,0..N_i-1}`` and a Dirichlet(alpha_i) prior over its model weights w_i. An observed
choice t of opponent i contributes a likelihood vector ``L_t[j] = P(choice | model j)``; the
posterior of w_i given its choices is computed by the collapsed Gibbs sampler of
``oppmodel.modeling.perfect_info.model_weights.gibbs_posterior`` with the session's settings and the
seed ``opponent_seed(session seed, i)``. The posterior is therefore a pure function of (the
opponent's stored likelihood vectors, the settings, the seed), so a restart (which reloads the
stored vectors) gives identical numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.games.spades import bidding
from oppmodel.modeling.games.spades.cards import deal
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.modeling.perfect_info.model_weights import GibbsPosterior, gibbs_posterior
from oppmodel.modeling.perfect_info.spades_search import probmaxn_search
from oppmodel.server.perfect_info_spec import PerfectInfoSpec


@dataclass(frozen=True)
class WeightsSummary:
    """The posterior of one opponent's model weights (tuples indexed by model)."""

    opponent: str
    models: tuple[str, ...]
    mean: tuple[float, ...]
    std_error: tuple[float, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    level: float
    rhat: tuple[float, ...]
    ess: tuple[float, ...]
    choices: int


def opponent_seed(seed: int, index: int) -> int:
    """The Gibbs seed of opponent ``index`` of a session seeded with ``seed``.

    ``SeedSequence((seed, index))`` mixes both into independent streams per opponent.
    """
    return int(np.random.SeedSequence((seed, index)).generate_state(1, dtype=np.uint64)[0])


def weights_posterior(
    spec: PerfectInfoSpec, index: int, likelihoods: Sequence[Sequence[float]]
) -> GibbsPosterior:
    """The posterior of opponent ``index``'s weights from its likelihood vectors (in order)."""
    opponent = spec.opponents[index]
    lik = np.asarray(likelihoods, dtype=np.float64).reshape(-1, len(opponent.models))
    g = spec.gibbs
    return gibbs_posterior(
        lik,
        np.asarray(opponent.alpha),
        seed=opponent_seed(spec.seed, index),
        sweeps=g.sweeps,
        burn_in=g.burn_in,
        chains=g.chains,
        level=g.level,
    )


def summary(
    spec: PerfectInfoSpec, index: int, *, count: int, post: GibbsPosterior
) -> WeightsSummary:
    opponent = spec.opponents[index]

    def row(x: np.ndarray) -> tuple[float, ...]:
        return tuple(float(v) for v in x)

    return WeightsSummary(
        opponent=opponent.label,
        models=opponent.models,
        mean=row(post.mean),
        std_error=row(post.std_error),
        lower=row(post.interval[:, 0]),
        upper=row(post.interval[:, 1]),
        level=float(post.level),
        rhat=row(post.rhat),
        ess=row(post.ess),
        choices=count,
    )


def warm_up_perfect_info() -> None:
    """Compile (or load from numba's cache) the Gibbs and Spades kernels a request can reach."""
    gibbs_posterior(np.ones((2, 2)), 1.0, seed=0, sweeps=4, burn_in=0, chains=2)
    state = SpadesState.start(deal(np.random.default_rng(0), 2))
    probmaxn_search(
        state, bidding.bids(state.hands), me=0, true_model="MT", weights=np.full((3, 2), 0.5)
    )
