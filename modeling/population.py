"""The population prior: a Dirichlet per information set fitted across the opponents already met.

Each opponent met so far is a draw from a population; at each information set (position q, set
i) its strategy is a priori Dirichlet(alpha[q, i]), the same for every opponent, and what it was
seen to do there is a count vector n_j (the expected counts of its session's Dirichlet fit:
exact where its cards were shown, split over the unseen cards otherwise). Empirical Bayes fits
alpha[q, i] by maximum marginal likelihood of the opponents' counts, the product over opponents
of the Dirichlet-multinomial (Polya) likelihood, with Minka's fixed point (Minka 2000,
"Estimating a Dirichlet distribution", eq. 55):

    alpha_k <- alpha_k * sum_j [psi(n_jk + alpha_k) - psi(alpha_k)] / sum_j [psi(N_j + s) - psi(s)]

(s = sum alpha, N_j = sum_k n_jk). Its mean says where the population plays, its concentration s
how alike its members are there: where they agree a new opponent is expected to play as they did
from its first hand, where they differ its own hands decide soon.

Guards, so that a new opponent unlike the population is still learned (docs/modeling.md):
- an information set where fewer than ``MIN_OPPONENTS`` opponents were seen keeps the informed
  prior (eta x the clipped prior mean), as does every set of a population of fewer opponents;
- the fitted mean is clipped to [epsilon, 1 - epsilon] as the informed prior's is, and the
  concentration to at most ``MAX_CONCENTRATION`` (a population of identical players has an
  unbounded maximum).

A :class:`Population` is what a session with ``prior="population"`` is built from
(``build_model(..., population=...)``); its bytes are the snapshot format's
(``mbbr/snapshot.py``), so a stored population is read back bit for bit.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.solved import profile_or_default
from oppmodel.modeling.kernel_cache import njit
from oppmodel.modeling.mbbr import snapshot as snapshot_format
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior
from oppmodel.modeling.mbbr.priors import prior_alpha

MIN_OPPONENTS = 3  # opponents seen at an information set before it is fitted
MAX_CONCENTRATION = 100.0  # the fitted prior weighs at most as 100 visits
FIT_SWEEPS = 2000
FIT_TOLERANCE = 1e-9  # largest relative change of any alpha in the last sweep
_ALPHA_FLOOR = 1e-6  # an action no opponent took still keeps a positive parameter
KIND = "population"  # the header entry that tells a population from a model snapshot


@njit(cache=True)
def digamma(x):
    """psi(x) for x > 0: the recurrence up to 6, then the asymptotic series."""
    result = 0.0
    while x < 6.0:
        result -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))))
    return result + math.log(x) - 0.5 / x - series


@njit(cache=True)
def polya_fit(counts, alpha, legal, cap, sweeps, tolerance):
    """Minka's fixed point for the Dirichlet(``alpha``) maximising the Polya likelihood of the
    rows of ``counts`` (opponents x actions; rows of all zeros add nothing), over the ``legal``
    actions, starting from ``alpha`` and written back into it; the concentration is held at most
    ``cap``. Returns the sweeps made."""
    num_actions = alpha.shape[0]
    totals = counts.sum(axis=1)
    for sweep in range(sweeps):
        s = 0.0
        for k in range(num_actions):
            s += alpha[k]
        denominator = 0.0
        for j in range(counts.shape[0]):
            if totals[j] > 0.0:
                denominator += digamma(totals[j] + s) - digamma(s)
        change = 0.0
        s_new = 0.0
        for k in range(num_actions):
            if not legal[k]:
                continue
            numerator = 0.0
            for j in range(counts.shape[0]):
                if counts[j, k] > 0.0:
                    numerator += digamma(counts[j, k] + alpha[k]) - digamma(alpha[k])
            updated = max(alpha[k] * numerator / denominator, _ALPHA_FLOOR)
            change = max(change, abs(updated - alpha[k]) / alpha[k])
            alpha[k] = updated
            s_new += updated
        if s_new > cap:
            for k in range(num_actions):
                alpha[k] *= cap / s_new
        if change < tolerance:
            return sweep + 1
    return sweeps


@njit(cache=True)
def fit_rows(counts, legal, alpha, min_opponents, cap, sweeps, tolerance, fitted):
    """Fit every row r of ``alpha`` (rows x actions, the informed prior on entry) to
    ``counts[:, r]`` (opponents x rows x actions) with :func:`polya_fit` where at least
    ``min_opponents`` opponents have counts there (``fitted[r]`` set), else leave it."""
    for r in range(alpha.shape[0]):
        seen = 0
        for j in range(counts.shape[0]):
            if counts[j, r].sum() > 0.0:
                seen += 1
        fitted[r] = seen >= min_opponents
        if fitted[r]:
            polya_fit(counts[:, r], alpha[r], legal[r], cap, sweeps, tolerance)


@dataclass(frozen=True)
class Population:
    """A fitted population prior: ``alpha`` (n, num_infosets, 3) the Dirichlet parameters of
    every position's information sets (0 at illegal actions), ``fitted`` (n, num_infosets) where
    they came from the population rather than the informed prior, ``opponents`` how many
    opponents it was fitted from."""

    alpha: np.ndarray
    fitted: np.ndarray
    opponents: int
    # the mixture over opponent types (``population_types.py``), None without: (T, n,
    # num_infosets, 3) each type's Dirichlet parameters, the informed ones last, and (T,) their
    # prior probabilities
    types: np.ndarray | None = None
    type_weights: np.ndarray | None = None

    def mean(self) -> np.ndarray:
        """The prior-mean profile, alpha normalised (padding rows uniform over their actions)."""
        return self.alpha / self.alpha.sum(axis=2, keepdims=True)

    def digest(self) -> str:
        """SHA-256 of the parameters' float64 bytes (the types' after alpha's, if any): what a
        snapshot checks it is restored with."""
        parts = [self.alpha]
        if self.types is not None and self.type_weights is not None:
            parts += [self.types, self.type_weights]
        return hashlib.sha256(b"".join(a.astype(np.float64).tobytes() for a in parts)).hexdigest()

    def to_bytes(self) -> bytes:
        """The population as the snapshot format's bytes (the same population, the same bytes)."""
        meta = {"kind": KIND, "opponents": self.opponents}
        arrays = {"alpha": self.alpha, "fitted": self.fitted}
        if self.types is not None and self.type_weights is not None:
            arrays.update(types=self.types, type_weights=self.type_weights)
        return snapshot_format.encode(meta, arrays)

    @classmethod
    def from_bytes(cls, game: LimitGame, blob: bytes) -> Population:
        """Read :meth:`to_bytes`'s bytes for ``game``; InvalidArgumentError naming
        ``population`` if they are not a population of its shape."""
        try:
            meta, arrays = snapshot_format.decode(blob)
            shape = game.legal_mask.shape
            alpha = snapshot_format.take(arrays, "alpha", "f8", shape)
            fitted = snapshot_format.take(arrays, "fitted", "?", shape[:2])
            types = weights = None
            if "types" in arrays:
                types = snapshot_format.take(arrays, "types", "f8", (None, *shape))
                weights = snapshot_format.take(arrays, "type_weights", "f8", (len(types),))
        except snapshot_format.SnapshotError as exc:
            message = f"not a population of {game.name}: {exc}"
            raise InvalidArgumentError("population", message) from None
        bad_types = (
            types is not None
            and weights is not None
            and (not np.all(types[:, game.legal_mask] > 0) or not np.all(weights > 0))
        )
        if meta.get("kind") != KIND or not np.all(alpha[game.legal_mask] > 0) or bad_types:
            raise InvalidArgumentError("population", f"not a population of {game.name}")
        return cls(alpha, fitted, int(meta.get("opponents", 0)), types, weights)


def fit_population(
    game: LimitGame,
    counts: np.ndarray,
    *,
    prior_mean: np.ndarray,
    config: MBBRConfig | None = None,
) -> Population:
    """The population prior of ``game`` fitted to ``counts`` (opponents, n, num_infosets, 3):
    each opponent's action counts at every information set (zeros where it was not seen;
    ``MBBRModel.opponent_counts`` gives a session's). Where it cannot be fitted (module
    docstring) it is the informed prior of ``config`` (epsilon, eta) around ``prior_mean``."""
    config = config or MBBRConfig()
    counts = np.asarray(counts, dtype=np.float64)
    shape = game.legal_mask.shape
    if counts.ndim != 4 or counts.shape[1:] != shape or np.any(~(counts >= 0)):
        raise InvalidArgumentError(
            "counts", f"must be non-negative, shaped (opponents, *{shape}); got {counts.shape}"
        )
    informed = prior_alpha(
        game, prior_mean, epsilon=config.epsilon, eta=config.eta, prior=Prior.INFORMED
    )
    legal = game.legal_mask
    rows = shape[0] * shape[1]
    fit = informed.reshape(rows, -1).copy()
    fitted_rows = np.zeros(rows, dtype=np.bool_)
    fit_rows(
        counts.reshape(len(counts), rows, shape[2]), legal.reshape(rows, -1), fit, MIN_OPPONENTS,
        MAX_CONCENTRATION, FIT_SWEEPS, FIT_TOLERANCE, fitted_rows,
    )  # fmt: skip
    alpha = fit.reshape(shape)
    fitted = np.zeros(shape[:2], dtype=np.bool_)
    for q in range(game.num_players):  # padding rows stay unfitted
        rows_q = game.infosets(q)
        fitted[q, rows_q] = fitted_rows.reshape(shape[:2])[q, rows_q]
    # the informed prior's guard on the mean: no action below epsilon
    concentration = alpha.sum(axis=2, keepdims=True)
    mean = np.where(legal, np.clip(alpha / concentration, config.epsilon, 1 - config.epsilon), 0)
    mean /= mean.sum(axis=2, keepdims=True)
    alpha = np.where(fitted[..., None], concentration * mean, informed)
    return Population(alpha, fitted, len(counts))


def stored_population(
    game: LimitGame, blob: bytes | None, prior_mean: np.ndarray | None, config: MBBRConfig
) -> Population:
    """The population a stored session starts from: ``blob`` read back, or without one (none
    was fitted) the population of no opponents, the informed prior of ``config`` around
    ``prior_mean`` (None: the game's default prior mean)."""
    if blob is not None:
        return Population.from_bytes(game, blob)
    mean = profile_or_default(game, prior_mean, "prior_mean")
    nobody = np.zeros((0, *game.legal_mask.shape))
    return fit_population(game, nobody, prior_mean=mean, config=config)
