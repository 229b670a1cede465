"""The typed prior: is this opponent an equilibrium-support player or an error-prone one? The
informed prior clips the equilibrium to [epsilon, 1 - epsilon], so a best response exploits
phantom mistakes where the data has not reached. This prior mixes two types: *in support*
(1 - ERROR_PRONE_PRIOR), Dirichlet(eta * the unclipped prior mean), and *error-prone*, the informed
prior. They differ only where the equilibrium is pure, so the evidence is the opponent's moves
there with its card revealed (one revealed mistake rules the in-support type out; hands with
hidden cards are left out: fitted under the floor, they would count its phantom mistakes). The
model is the posterior mean: w * the Dirichlet posterior's mean + (1 - w) * (its expected counts
off the forbidden moves + eta * the unclipped mean), w the error-prone type's probability.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr.config import Prior
from oppmodel.modeling.mbbr.priors import mixed_distributions, prior_alpha
from oppmodel.modeling.mbbr.snapshot import take

ERROR_PRONE_PRIOR = 0.05


class TypedPrior:
    """Posterior type weights and mixture means for the opponents of one position."""

    def __init__(self, clipped: np.ndarray, support: np.ndarray, legal: np.ndarray) -> None:
        """``clipped``, ``support``: (n - 1, num_infosets, num_actions) Dirichlet parameters of
        the two types (support has zeros at the moves the equilibrium never makes); ``legal``:
        the actions that exist (illegal actions are zero in both and are no mistakes)."""
        self.clipped = np.asarray(clipped, dtype=np.float64)
        self.support = np.asarray(support, dtype=np.float64)
        self.legal = np.asarray(legal, dtype=bool)
        self.forbidden = (self.support == 0.0) & self.legal
        self.pure = self.forbidden.any(axis=2)  # (n - 1, num_infosets)
        self.revealed = np.zeros_like(self.clipped)  # moves seen with the mover's card
        self._error_prone: list[float | None] = [None] * len(self.clipped)  # cache per offset

    def observe_revealed(self, d: int, infoset: int, action: int) -> None:
        """Count one move of the opponent at offset ``d`` whose card we saw."""
        self.revealed[d - 1, infoset, action] += 1.0
        self._error_prone[d - 1] = None

    def state(self) -> dict[str, np.ndarray]:
        """What the observations changed (``modeling/mbbr/snapshot.py``): the revealed move
        counts."""
        return {"revealed": self.revealed.copy()}

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Set the revealed move counts of ``state()``; SnapshotError if they do not fit."""
        self.revealed = take(state, "revealed", "f8", self.clipped.shape)
        self._error_prone = [None] * len(self.clipped)

    def nbytes(self) -> int:
        """Bytes of the arrays held."""
        arrays = (self.clipped, self.support, self.forbidden, self.pure, self.revealed)
        return sum(a.nbytes for a in arrays)

    def error_prone(self, d: int) -> float:
        """Posterior probability that the opponent at offset ``d`` is the error-prone type."""
        cached = self._error_prone[d - 1]
        if cached is None:
            cached = self._error_prone[d - 1] = self._posterior_error_prone(d)
        return cached

    def _posterior_error_prone(self, d: int) -> float:
        counts = self.revealed[d - 1]
        if np.any(counts[self.forbidden[d - 1]] > 0.0):
            return 1.0
        rows = self.pure[d - 1]
        alpha, n = self.clipped[d - 1, rows], counts[rows]
        with np.errstate(invalid="ignore"):
            per_action = gammaln(alpha + n) - gammaln(alpha)
        per_action[~self.legal[d - 1, rows]] = 0.0  # illegal: gammaln(0) - gammaln(0), dropped
        # log p(counts | error-prone); p(counts | in support) = 1 (its pure rows are point masses)
        log_likelihood = float(
            np.sum(gammaln(alpha.sum(axis=1)) - gammaln(alpha.sum(axis=1) + n.sum(axis=1)))
            + np.sum(per_action)
        )
        odds = ERROR_PRONE_PRIOR / (1.0 - ERROR_PRONE_PRIOR) * np.exp(log_likelihood)
        return float(odds / (1.0 + odds))

    def mean(self, d: int, alpha: np.ndarray) -> np.ndarray:
        """The mixture's posterior mean (num_infosets, num_actions), given the fitted Dirichlet
        ``alpha`` of the opponent at offset ``d`` (fitted under the clipped prior)."""
        error_prone = alpha / alpha.sum(axis=1, keepdims=True)
        counts = np.where(self.forbidden[d - 1], 0.0, np.maximum(alpha - self.clipped[d - 1], 0.0))
        in_support = counts + self.support[d - 1]
        in_support = in_support / in_support.sum(axis=1, keepdims=True)
        w = self.error_prone(d)
        return mixed_distributions(w * error_prone + (1.0 - w) * in_support)


def typed_priors(
    game: LimitGame, prior_mean: np.ndarray, clipped: list[np.ndarray], *, eta: float
) -> list[TypedPrior]:
    """One :class:`TypedPrior` per our position p: the error-prone type's parameters are
    ``clipped[p]`` (the informed prior of p's opponents, (n - 1, num_infosets, num_actions)), the
    in-support type's eta times the unclipped prior mean."""
    n = game.num_players
    support = prior_alpha(game, prior_mean, epsilon=0.0, eta=eta, prior=Prior.INFORMED)
    out = []
    for p in range(n):
        seats = [(p + d) % n for d in range(1, n)]
        out.append(TypedPrior(clipped[p], support[seats], game.legal_mask[seats]))
    return out
