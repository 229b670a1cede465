"""MBBR's priors over opponent strategies: their Dirichlet parameters and the paper's samples.

Each opponent position's strategy is a priori Dirichlet at every information set. Informed (and
the error-prone type of the typed prior): eta times the prior mean, clipped to
[epsilon, 1 - epsilon] and renormalised; uninformed: Dirichlet(2). CreateSamples (Ganzfried, Wang &
Chiswick 2024, Alg 3) draws the sample posterior's k strategies per (position, opponent) from it.
Only legal actions get weight.
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior

UNINFORMED_ALPHA = 2.0


def prior_alpha(
    game: LimitGame,
    prior_mean: np.ndarray,
    *,
    epsilon: float,
    eta: float,
    prior: Prior,
    population: np.ndarray | None = None,
) -> np.ndarray:
    """(n, num_infosets, num_actions) Dirichlet parameters of each position's strategy under the
    prior, over the game's legal actions (0 elsewhere); the population prior's are its fitted
    ``population`` (``oppmodel.modeling.population``); the others' as the module docstring says.
    Padding rows get Dirichlet(1, ...) over their actions; nothing reads them."""
    if population is not None:
        return population.copy()
    legal = game.legal_mask
    alpha = legal.astype(np.float64)
    for q in range(game.num_players):
        rows = game.infosets(q)
        if prior == Prior.UNINFORMED:
            alpha[q, rows] = np.where(legal[q, rows], UNINFORMED_ALPHA, 0.0)
        else:
            mean = np.where(
                legal[q, rows], np.clip(prior_mean[q, rows], epsilon, 1.0 - epsilon), 0.0
            )
            alpha[q, rows] = eta * mean / mean.sum(axis=1, keepdims=True)
    return alpha


def create_samples(
    game: LimitGame,
    prior_mean: np.ndarray,
    *,
    k: int,
    epsilon: float,
    eta: float,
    prior: Prior,
    rng: np.random.Generator,
    weak_eta: float = MBBRConfig.weak_eta,
    population: np.ndarray | None = None,
) -> np.ndarray:
    """CreateSamples (Alg 3): (n, n-1, k, num_infosets, num_actions) sampled strategies, [p, d - 1]
    those of the opponent at position (p + d) mod n while we sit at p (illegal actions: 0). The
    eta mixture (prior weights 1/2 each) draws its even samples at eta, its odd ones at
    ``weak_eta``."""
    n, num_infosets, num_actions = game.num_players, game.num_infosets, game.num_actions
    etas = [eta, weak_eta] if prior == Prior.ETA_MIXTURE else [eta]
    alphas = [
        prior_alpha(game, prior_mean, epsilon=epsilon, eta=e, prior=prior, population=population)
        for e in etas
    ]
    alpha = np.stack([alphas[j % len(etas)] for j in range(k)], axis=1)  # (n, k, infosets, 3)
    legal = game.legal_mask
    padding = legal / legal.sum(axis=2, keepdims=True)
    tau = np.empty((n, n - 1, k, num_infosets, num_actions))
    tau[:] = padding[(np.arange(n)[:, None] + np.arange(1, n)) % n][:, :, None]
    for p in range(n):
        for d in range(1, n):
            rows = game.infosets((p + d) % n)
            draws = rng.gamma(alpha[(p + d) % n][:, rows])
            sums = draws.sum(axis=2, keepdims=True)
            lost = np.flatnonzero(sums == 0.0)  # both draws of a row underflowed
            if len(lost):
                sums[sums == 0.0] = 1.0
                draws.reshape(-1, num_actions)[lost] = _log_space_draws(
                    alpha[(p + d) % n][:, rows].reshape(-1, num_actions), lost, rng
                )
            tau[p, d - 1][:, rows] = draws / sums
    return tau


def _log_space_draws(alpha: np.ndarray, lost: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet draws (normalised) of the rows ``lost`` (flat indices into ``alpha``, (k x rows,
    3)) whose Gamma draws both underflowed, with tiny ``alpha``: Gamma(a) = Gamma(a + 1) U^(1/a)
    in logs."""
    a = alpha[lost]
    with np.errstate(divide="ignore"):  # an illegal action (a = 0) gets log 0 = -inf
        logs = np.log(rng.gamma(a + 1.0)) + np.where(
            a > 0, np.log(rng.random(a.shape)), -np.inf
        ) / np.where(a > 0, a, 1.0)
    draws = np.exp(logs - logs.max(axis=1, keepdims=True))
    return draws / draws.sum(axis=1, keepdims=True)
