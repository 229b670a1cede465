"""The population prior as a mixture over opponent types (issue 32; docs/modeling.md).

The Polya fit (``population.py``) learns, per information set, where the population plays and
how alike it is there; a new opponent's rows are still learned one by one from the hands that
reach them. The members of a population are alike *as wholes* (a maniac bets everywhere), and a
learner told which member it faces knows every row from the first hands that tell them apart.
Here the prior is a mixture over types, each a product of Dirichlets over every information set:

- the fitted types: the members met before, clustered (k-means over their models' means when
  there are more than ``MAX_TYPES``); a type's Dirichlet is the informed prior plus its members'
  mean expected counts, each row's concentration at most ``MAX_CONCENTRATION`` (a member seen
  often at a row is known there as from that many visits; where it was never seen, the type is
  the informed prior); prior probability ``TYPE_SHARE``, split by cluster size;
- the informed types, the eta mixture's two: Dirichlet(eta x the clipped prior mean) and the
  same at weak_eta, ``(1 - TYPE_SHARE) / 2`` each, so that an opponent unlike every member is
  learned as the default prior learns it.

The posterior is again such a mixture: every type's Dirichlet is updated with the hands'
expected counts (the model's one CVB0 fit, ``mbbr/dirichlet.py``, shared by every type as the
eta mixture's weak type shares it) and weighed by the probability of each hand's moves under the
type's mean before the hand, summed over the hidden cards (``mbbr.evidence.hand_likelihood``):
every hand moves the weights, not only those whose cards were shown. The opponents of one of
our positions are weighed jointly, one weight per combination of their types (T^(n-1): the
hidden cards couple them); each opponent's model is the mean of its marginal mixture.

The informed parts of the types (the two informed types, and a fitted type's rows its members
never reached: the informed type's own parameters there) are what the tilted prior tilts to the
opponent (``TypeMixture.tilt``, ``tilted_prior.TiltedModel``): a population by this module's
convention holds its informed types last.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from enum import StrEnum

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.kernel_cache import njit
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior
from oppmodel.modeling.mbbr.dirichlet import DirichletPosterior
from oppmodel.modeling.mbbr.evidence import Evidence, hand_likelihood
from oppmodel.modeling.mbbr.mixture_prior import MixturePrior
from oppmodel.modeling.mbbr.priors import prior_alpha
from oppmodel.modeling.mbbr.snapshot import take
from oppmodel.modeling.population import MAX_CONCENTRATION, Population, fit_population

MAX_TYPES = 16  # fitted types at most (members beyond are clustered)
TYPE_SHARE = 0.8  # prior probability that a new opponent is one of the fitted types
KMEANS_SWEEPS = 50


class PopulationKind(StrEnum):
    """What a population is fitted as: the Polya fit and its mixture over types (the default:
    on held-out members of the population, tilted, 94.6% of the static oracle in 3-player Kuhn
    and 87.2% in Leduc 2p where the Polya fit alone reaches 92.8% and 74.8%; experiments/
    RESULTS.md, session 53), or the Polya fit alone (the cheaper: a type mixture costs a Leduc 2p
    hand ~5x the CPU, a 3-player Leduc hand ~20x and 5x the model's memory)."""

    TYPES = "types"
    DIRICHLET = "dirichlet"


def fit_kind(
    game: LimitGame,
    counts: np.ndarray,
    kind: PopulationKind | str = PopulationKind.TYPES,
    *,
    prior_mean: np.ndarray,
    config: MBBRConfig | None = None,
) -> Population:
    """The population of ``game`` fitted to ``counts`` (``fit_population``'s) as ``kind``: the
    Polya fit, and for ``types`` its mixture over types (``with_types``)."""
    kind = PopulationKind(kind)
    population = fit_population(game, counts, prior_mean=prior_mean, config=config)
    if kind == PopulationKind.DIRICHLET:
        return population
    return with_types(population, game, counts, prior_mean=prior_mean, config=config)


def kind_of(population: Population) -> PopulationKind:
    """What ``population`` was fitted as (a type mixture of no member has an empty ``types``)."""
    return PopulationKind.DIRICHLET if population.types is None else PopulationKind.TYPES


def with_types(
    population: Population,
    game: LimitGame,
    counts: np.ndarray,
    *,
    prior_mean: np.ndarray,
    config: MBBRConfig | None = None,
    max_types: int = MAX_TYPES,
) -> Population:
    """``population`` with the mixture over types fitted to ``counts`` (opponents, n,
    num_infosets, 3; ``fit_population``'s) around the informed prior of ``config`` at
    ``prior_mean`` (module docstring). With no member (no opponent that acted) the mixture has
    no type at all: a model on it plays ``population``'s parameters alone, the informed prior,
    as a population of no opponents does."""
    config = config or MBBRConfig()
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 4 or counts.shape[1:] != game.legal_mask.shape or max_types < 1:
        raise InvalidArgumentError(
            "counts", f"must be shaped (opponents, *{game.legal_mask.shape})"
        )
    counts = counts[counts.sum(axis=(1, 2, 3)) > 0]
    if not len(counts):
        nothing = np.zeros((0, *game.legal_mask.shape))
        return dataclasses.replace(population, types=nothing, type_weights=np.zeros(0))
    informed, weak = (
        prior_alpha(game, prior_mean, epsilon=config.epsilon, eta=eta, prior=Prior.INFORMED)
        for eta in (config.eta, config.weak_eta)
    )
    labels = _clusters(informed + counts, max_types)
    types, sizes = [], []
    for c in range(int(labels.max()) + 1):
        alpha = informed + counts[labels == c].mean(axis=0)
        total = alpha.sum(axis=2, keepdims=True)
        types.append(alpha * np.minimum(1.0, MAX_CONCENTRATION / total))
        sizes.append(np.sum(labels == c))
    weights = [*(TYPE_SHARE * np.array(sizes) / sum(sizes)), *[(1 - TYPE_SHARE) / 2] * 2]
    return dataclasses.replace(
        population, types=np.stack([*types, informed, weak]), type_weights=np.array(weights)
    )


def _clusters(alpha: np.ndarray, k: int) -> np.ndarray:
    """Each member's cluster (0..k-1, every one used) by k-means over the means of ``alpha``
    (members, n, num_infosets, 3), started from the farthest-point seeds from member 0: the same
    members give the same clusters. Each member its own when there are at most k."""
    points = (alpha / alpha.sum(axis=3, keepdims=True)).reshape(len(alpha), -1)
    if len(points) <= k:
        return np.arange(len(points))
    seeds = [0]
    for _ in range(k - 1):
        far = ((points[:, None] - points[seeds][None]) ** 2).sum(axis=2).min(axis=1)
        seeds.append(int(far.argmax()))
    centres = points[seeds]
    labels = np.zeros(len(points), dtype=np.int64)
    for _ in range(KMEANS_SWEEPS):
        labels = ((points[:, None] - centres[None]) ** 2).sum(axis=2).argmin(axis=1)
        # a centre left without members keeps its place (its seed's own cluster otherwise)
        moved = np.array([points[labels == c].mean(0) if np.any(labels == c) else centres[c]
                          for c in range(k)])  # fmt: skip
        if np.array_equal(moved, centres):
            break
        centres = moved
    return np.unique(labels, return_inverse=True)[1].astype(np.int64)


def type_mixtures(
    population: Population | None, seats: list[list[int]], fits: list[DirichletPosterior]
) -> Mixtures | None:
    """The type mixtures of a model's positions (the opponents of position p at ``seats[p]``,
    beside its fit ``fits[p]``) on ``population``; None without a population or its types."""
    if population is None or population.types is None or not len(population.types):
        return None
    mixtures: Mixtures = [
        TypeMixture(population, s, fit) for s, fit in zip(seats, fits, strict=True)
    ]
    return mixtures


class TypeMixture:
    """The type mixture's posterior for the opponents of one of our positions (module
    docstring), beside the model's fit of that position; it keeps the opponents' models in
    ``profile`` (n, num_infosets, 3; our row the fit's), hand by hand."""

    second: DirichletPosterior | None = None  # no fit of its own (the mixture priors' have one)

    def __init__(self, population: Population, seats: list[int], fit: DirichletPosterior) -> None:
        """``seats``: the position of the opponent at each offset; ``fit``: the model's fit of
        this position, at the prior."""
        assert population.types is not None and population.type_weights is not None
        self.seats = np.asarray(seats, dtype=np.int64)
        self.untilted = np.ascontiguousarray(population.types[:, self.seats])  # (T, n - 1, I, 3)
        self.types = self.untilted
        num_types, offsets = len(self.types), len(self.seats)
        digits = (
            np.arange(num_types**offsets)[:, None] // num_types ** np.arange(offsets) % num_types
        )
        self.digits = digits.astype(np.int64)  # (combinations, n - 1): each offset's type
        self._log_prior = np.log(population.type_weights)[self.digits].sum(axis=1)
        self._start(fit)

    def base(self) -> np.ndarray:
        """(n - 1, num_infosets, 3) the informed type's mean by offset: the clipped prior mean the
        population was fitted around, what a tilt multiplies."""
        informed = self.untilted[-2]
        total = informed.sum(axis=2, keepdims=True)
        return np.divide(informed, total, out=np.zeros_like(informed), where=total > 0.0)

    def tilt(self, means: np.ndarray | None) -> None:
        """Make ``means`` ((n - 1, num_infosets, 3) by offset, the tilted prior's) the mean of
        every informed part of the types at its own concentration, or (None) the population's
        types again; the members' rows are kept. Then the means and models."""
        if means is None and self.types is self.untilted:
            return  # untilted already (a run change detection opens, a restore at the prior)
        self.types = self.untilted
        if means is not None:
            # the informed parts: the two informed types, and the rows of a fitted type its
            # members never reached (the informed type's own parameters there)
            informed = np.all(self.untilted == self.untilted[-2], axis=3, keepdims=True)
            informed[-2:] = True
            concentration = self.untilted.sum(axis=3, keepdims=True)
            self.types = np.where(informed, concentration * means, self.untilted)
        self._refresh()

    def _start(self, fit: DirichletPosterior) -> None:
        """No hand seen, beside the fit ``fit`` (at the prior) and the population's types."""
        self.types = self.untilted
        self.fit = fit
        self.log_weights = self._log_prior.copy()
        self.means = np.empty_like(self.types)
        self.marginals = np.empty((len(self.seats), len(self.types)))
        self.profile = fit.profile.copy()
        self._scratch = np.zeros(self.types.shape[1:])
        self._refresh()

    def _refresh(self) -> None:
        _mix(self.types, self.fit.expected, self.log_weights, self.digits, self.seats,
             self.means, self.marginals, self.profile)  # fmt: skip

    def at_prior(self, fit: DirichletPosterior) -> TypeMixture:
        """A mixture like this one at the prior, beside the fit ``fit`` (at the prior)."""
        fresh = copy.copy(self)
        fresh._start(fit)
        return fresh

    def observe(self, key: object, evidence: Evidence) -> None:
        """Add one hand (already added to the fit): each combination's weight times the hand's
        probability under its types' means before the hand, then the means and models."""
        _weigh(evidence.rows, evidence.weights, self.means, self.digits, self._scratch,
               self.log_weights)  # fmt: skip
        self._refresh()

    def weights(self, d: int) -> np.ndarray:
        """Posterior probability of each type (the population's order) of the opponent at
        offset ``d``."""
        return self.marginals[d - 1].copy()

    def state(self) -> dict[str, np.ndarray]:
        """What the observations changed besides the fit: the combinations' log weights."""
        return {"type_log_weights": self.log_weights.copy()}

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Set ``state()``'s weights in a mixture at the prior whose fit is restored already;
        SnapshotError if they do not fit."""
        self.log_weights[:] = take(state, "type_log_weights", "f8", self.log_weights.shape)
        self._refresh()

    def nbytes(self) -> int:
        """Bytes of the arrays held (not the fit's)."""
        arrays = (self.types, self.digits, self.log_weights, self.means, self.profile)
        tilted = () if self.types is self.untilted else (self.untilted,)
        return sum(
            a.nbytes for a in (*arrays, *tilted, self.marginals, self._scratch, self._log_prior)
        )


Mixtures = list[MixturePrior | TypeMixture]  # a model's mixture priors, one a position


@njit(cache=True)
def _weigh(rows, weights, means, digits, scratch, log_weights):
    """Add to each combination's log weight the log probability of the hand's moves ``rows``
    (``Evidence.rows``, ``weights``) when each opponent plays its type's ``means``:
    ``hand_likelihood`` over the rows of ``scratch`` (n - 1, num_infosets, 3) the hand reaches,
    filled for that combination."""
    for c in range(digits.shape[0]):
        for r in range(rows.shape[0]):
            for j in range(rows.shape[1]):
                d, i = rows[r, j, 0], rows[r, j, 1]
                scratch[d, i] = means[digits[c, d], d, i]
        # offset d at row d of scratch: position -1 maps (position + 1 + d) mod (n - 1) to d
        total = hand_likelihood(rows, weights, -1, scratch)
        log_weights[c] += math.log(total) if total > 0.0 else -math.inf


@njit(cache=True)
def _mix(types, expected, log_weights, digits, seats, means, marginals, profile):
    """Each type's mean (its parameters plus the fit's expected counts, none at the moves it
    never makes), each offset's marginal type weights, and each opponent's model, their mean."""
    for t in range(types.shape[0]):
        for d in range(types.shape[1]):
            for i in range(types.shape[2]):
                total = 0.0
                for a in range(3):
                    x = types[t, d, i, a]
                    means[t, d, i, a] = x + expected[d, i, a] if x > 0.0 else 0.0
                    total += means[t, d, i, a]
                for a in range(3):
                    means[t, d, i, a] /= total
    weight = np.exp(log_weights - log_weights.max())
    weight /= weight.sum()
    marginals[:] = 0.0
    for c in range(digits.shape[0]):
        for d in range(digits.shape[1]):
            marginals[d, digits[c, d]] += weight[c]
    for d in range(types.shape[1]):
        profile[seats[d]] = 0.0
        for t in range(types.shape[0]):
            profile[seats[d]] += marginals[d, t] * means[t, d]
