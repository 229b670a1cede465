"""MBBR's priors over opponent strategies: their Dirichlet parameters and the paper's samples.

Each opponent position's strategy is a priori Dirichlet at every information set. Informed (and
the error-prone type of the typed prior): eta times the prior mean, clipped to
[epsilon, 1 - epsilon] and renormalised; uninformed: Dirichlet(2). CreateSamples (Ganzfried, Wang &
Chiswick 2024, Alg 3) draws the sample posterior's k strategies per (position, opponent) from it.
Without a prior mean or a default strategy given, 3-player Kuhn uses the robust equilibria N3 (prior
mean) and N1 (default strategy) of Szafron, Gibson & Sturtevant 2013; other sizes play uniformly.
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.mbbr._samples_kernels import normalise_rows
from oppmodel.modeling.mbbr.config import Prior
from oppmodel.modeling.strategy import uniform_profile, validate_profile

UNINFORMED_ALPHA = 2.0


def default_strategy_of(game: KuhnGame, given: np.ndarray | None) -> np.ndarray:
    """The validated default strategy (what is played for the first H hands): ``given``, else N1
    in 3-player Kuhn and uniform play otherwise."""
    if given is not None:
        return validate_profile(game, given, "default_strategy")
    return robust_profile("N1") if game.num_players == 3 else uniform_profile(game)


def prior_mean_of(game: KuhnGame, given: np.ndarray | None) -> np.ndarray:
    """The validated prior mean of every position: ``given``, else N3 in 3-player Kuhn and
    uniform play otherwise."""
    if given is not None:
        return validate_profile(game, given, "prior_mean")
    return robust_profile("N3") if game.num_players == 3 else uniform_profile(game)


def prior_alpha(
    game: KuhnGame | LimitGame,
    prior_mean: np.ndarray,
    *,
    epsilon: float,
    eta: float,
    prior: Prior,
) -> np.ndarray:
    """(n, num_infosets, num_actions) Dirichlet parameters of each position's strategy under the
    prior, over the actions of :func:`action_mask` (0 elsewhere: illegal actions of a limit game).

    Informed (and typed, whose error-prone type this is): eta times the prior mean clipped to
    [epsilon, 1 - epsilon] and renormalised; uninformed: Dirichlet(2) everywhere. Padding rows get
    Dirichlet(1, ...) over their actions; nothing reads them.
    """
    legal = action_mask(game)
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


def action_mask(game: KuhnGame | LimitGame) -> np.ndarray:
    """(n, num_infosets, num_actions) the actions a prior puts weight on: both actions
    everywhere in Kuhn; the legal actions in a limit game (padding rows: call)."""
    if isinstance(game, LimitGame):
        return game.legal_mask
    return np.ones((game.num_players, game.num_infosets, game.num_actions), dtype=bool)


def create_samples(
    game: KuhnGame | LimitGame,
    prior_mean: np.ndarray,
    *,
    k: int,
    epsilon: float,
    eta: float,
    prior: Prior,
    rng: np.random.Generator,
) -> np.ndarray:
    """CreateSamples (Alg 3): (n, n-1, k, num_infosets, num_actions) sampled strategies.

    Entry [p, d - 1] holds the samples of the opponent at position (p + d) mod n while we sit at p.
    Illegal actions of a limit game have prior weight 0 and so probability 0 in every sample.
    """
    n, num_infosets, num_actions = game.num_players, game.num_infosets, game.num_actions
    alpha = prior_alpha(game, prior_mean, epsilon=epsilon, eta=eta, prior=prior)
    legal = action_mask(game)
    padding = legal / legal.sum(axis=2, keepdims=True)
    tau = np.empty((n, n - 1, k, num_infosets, num_actions))
    tau[:] = padding[(np.arange(n)[:, None] + np.arange(1, n)) % n][:, :, None]
    for p in range(n):
        for d in range(1, n):
            rows = game.infosets((p + d) % n)
            draws = rng.gamma(alpha[(p + d) % n, rows], size=(k, len(rows), num_actions))
            sums = draws.sum(axis=2, keepdims=True)
            lost = np.flatnonzero(sums == 0.0)  # both draws of a row underflowed
            if len(lost):
                sums[sums == 0.0] = 1.0
                draws.reshape(-1, num_actions)[lost] = _log_space_draws(
                    alpha[(p + d) % n, rows], lost, rng
                )
            tau[p, d - 1][:, rows] = draws / sums
    return tau


def mixed_distributions(mixture: np.ndarray) -> np.ndarray:
    """The rows of ``mixture``, a weighted sum of strategies (a posterior mean over samples or
    types), each divided by its own sum (an all-zero row stays zero).

    The weights add up to 1 only within rounding, so an unnormalised mean of nearly pure samples
    came out at 1.0000000000000002: x / (x + y) with x, y >= 0 is at most 1 in floating point
    (rounding is monotone), so every entry is in [0, 1] and each row sums to 1 within a few ulps.
    """
    out = np.empty(mixture.shape)
    rows = mixture.shape[-1]
    normalise_rows(mixture.reshape(-1, rows), out.reshape(-1, rows))
    return out


def _log_space_draws(alpha: np.ndarray, lost: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet draws (normalised) of the rows ``lost`` (flat indices into (k, rows)) whose
    Gamma draws both underflowed, with tiny ``alpha``: Gamma(a) = Gamma(a + 1) U^(1/a) in logs."""
    a = alpha[lost % len(alpha)]
    with np.errstate(divide="ignore"):  # an illegal action (a = 0) gets log 0 = -inf
        logs = np.log(rng.gamma(a + 1.0)) + np.where(
            a > 0, np.log(rng.random(a.shape)), -np.inf
        ) / np.where(a > 0, a, 1.0)
    draws = np.exp(logs - logs.max(axis=1, keepdims=True))
    return draws / draws.sum(axis=1, keepdims=True)
