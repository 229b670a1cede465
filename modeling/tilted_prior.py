"""The tilted prior in a compiled limit game (``Prior.TILTED``; docs/modeling.md): the eta
mixture whose prior mean is refitted to the opponent every ``REFIT_EVERY`` hands, as hold'em's
posterior refits its own (:mod:`oppmodel.modeling.holdem.tilt`, the one fit of a tilt).

A Dirichlet per information set learns nothing at a set the opponent has not shown, and in
Leduc most of what MBBR leaves of the static oracle is there (experiments/RESULTS.md, session
47: with the truth at the sets seen fewer than 10 times the late share would be 97.6%, not
84.4%). The opponent's action at a betting node is public, so its frequency there is seen each
time the node is reached, whatever the cards: the prior mean of each set is the clipped prior
mean tilted by a log multiplier per action of its *situation* (round, a bet to call, a raise
allowed) and of its betting node, fitted by maximum likelihood to the fit's expected counts and
shrunk to no tilt (``tilt.fit_tilt``). The concentrations stay the eta mixture's (eta and
weak_eta), so a set the opponent has shown is still learned from its own counts; a set it has
not shown starts from what it did at the sets of the same node and situation. Empirical Bayes
(the prior is fitted to the data its Dirichlets also count), stated as such.

No refit while the safety bankroll (the model's own, or its change-detection bank's) has a live
hypothesis: while the opponents may still be playing the equilibria it guards, the game's prior
mean is the right one, and a tilt fitted to their noise is exploited by the response (Kuhn's
pairs of different equilibrium members lost 11-18 points of the oracle to it, session 48). So
against those the tilted prior plays as the eta mixture, bit for bit; plain MBBR (no budget)
refits from H on.

Each refit replaces the prior parameters of both types of the mixture (never in place: a
change-detection run opened later starts from the untilted prior, as every run does), steps the
fit ``SWEEPS`` times over the hands with hidden cards under it and mixes every row again. The
weights' evidence from earlier revealed moves is kept as it was scored. A snapshot holds the
tilted means (``p<p>.tilt_mean``) once the first refit has made them.

A population's type mixture (``Prior.POPULATION``, ``population_types``) is tilted by the same
fit, around its informed type's mean: what the population does not know of an opponent (the
two informed types, and the rows of a fitted type its members never reached) is predicted as
the default predicts it, and the rows the members reached keep the population's parameters. The
fit keeps the population's own prior (no sweeps). In Leduc 2p the untilted types had fallen
below the tilted default on held-out members of their population (83.1% of the static oracle
against 86.3%); tilted they reach 87.2% (experiments/RESULTS.md, session 53).
"""

from __future__ import annotations

from typing import cast

import numpy as np

from oppmodel.modeling.holdem.sets import CompiledSets
from oppmodel.modeling.holdem.tilt import TiltMap, fit_tilt
from oppmodel.modeling.mbbr.config import Prior
from oppmodel.modeling.mbbr.evidence import Evidence
from oppmodel.modeling.mbbr.mixture_prior import MixturePrior
from oppmodel.modeling.mbbr.model import DirichletModel
from oppmodel.modeling.mbbr.priors import prior_alpha
from oppmodel.modeling.mbbr.snapshot import take
from oppmodel.modeling.observation import LimitObservation
from oppmodel.modeling.population_types import TypeMixture

REFIT_EVERY = 100  # hands of a run between refits (the first at H, as the default phase ends)
SWEEPS = 2  # steps over the hands with hidden cards after a refit (incremental EM goes on)
# the tilt's shrinkage in pseudo-visits, 30x hold'em's (tilt.SITUATION_WEIGHT, NODE_WEIGHT):
# chosen on Leduc 2p seed 0, 86.7% of the oracle against 86.1% at 1x, 86.0% at 10x, 82.9% at 100x
# (experiments/RESULTS.md, session 49)
SITUATION_WEIGHT = 60.0  # a situation's tilt is shrunk to none by these
NODE_WEIGHT = 240.0  # a node's own tilt is shrunk to its situation's by these
_NO_ROWS = np.zeros((0, 3), dtype=np.int64)


class TiltedModel(DirichletModel):
    """MBBR with the tilted prior (module docstring): the Dirichlet posterior and the eta
    mixture, its prior mean refitted every ``REFIT_EVERY`` hands; or a population's type mixture
    (``Prior.POPULATION``), whose informed parts are tilted the same way."""

    def _build_posterior(self) -> None:
        super()._build_posterior()
        game, config = self.game, self.config
        sets = CompiledSets(game)
        self._maps = [TiltMap(sets, q) for q in range(game.num_players)]
        self._means: list[np.ndarray | None] = [None] * game.num_players
        if config.prior == Prior.POPULATION:
            return  # the types keep what they tilt (``TypeMixture.tilt``)
        # the clipped prior mean the tilt multiplies
        self._base = prior_alpha(
            game, self.prior_mean, epsilon=config.epsilon, eta=1.0, prior=Prior.INFORMED
        )
        self._untilted = [self._alphas(p) for p in range(game.num_players)]
        # per position: where the opponents' sets are (n - 1, num_infosets, 1) and each untilted
        # type's concentration there (what ``_tilt`` multiplies the means by)
        self._sets_of = []
        for fit in self._dirichlet:
            sets_of = np.zeros((*fit.alpha0.shape[:2], 1), dtype=np.bool_)
            for d, q in enumerate(fit.seats):
                sets_of[d, game.infosets(int(q))] = True
            self._sets_of.append(sets_of)
        self._concentrations = [
            [alpha.sum(axis=2, keepdims=True) for alpha in alphas] for alphas in self._untilted
        ]

    def _types_of(self, p: int) -> TypeMixture | None:
        """Position ``p``'s population type mixture; None with the eta mixture."""
        mixture = None if self._mixture is None else self._mixture[p]
        return mixture if isinstance(mixture, TypeMixture) else None

    def _mixture_of(self, p: int) -> MixturePrior:
        assert self._mixture is not None  # the tilted prior is the eta mixture's, always
        return cast(MixturePrior, self._mixture[p])

    def _alphas(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """Position ``p``'s prior parameters of the two types (the informed one the fit's)."""
        return self._dirichlet[p].alpha0, self._mixture_of(p).second_alpha0

    def _set_alphas(self, p: int, informed: np.ndarray, second: np.ndarray) -> None:
        """Make ``informed`` and ``second`` position ``p``'s prior parameters (new arrays: the
        old ones may be shared with other runs' fits, ``DirichletPosterior.at_prior``)."""
        fit, mixture = self._dirichlet[p], self._mixture_of(p)
        fit.alpha0 = informed
        fit._alpha0 = informed.ravel()  # what the fit's kernels read
        mixture.set_alphas(informed, second)

    def _tilt(self, p: int, means: np.ndarray | None) -> None:
        """Position ``p``'s prior tilted to ``means`` ((n - 1, num_infosets, 3), the opponents'
        rows by offset; None: untilted): the eta mixture's untilted concentrations times the
        means at the opponents' sets, or the types' informed parts (``TypeMixture.tilt``)."""
        self._means[p] = means
        if self.config.prior == Prior.POPULATION:
            types = self._types_of(p)
            if types is not None:  # the Polya fit alone has nothing to tilt
                types.tilt(means)
            return
        if means is None:
            self._set_alphas(p, *self._untilted[p])
            return
        informed, second = (
            np.where(self._sets_of[p], concentration * means, alpha)
            for alpha, concentration in zip(self._untilted[p], self._concentrations[p], strict=True)
        )
        self._set_alphas(p, informed, second)

    def _refresh(self, p: int) -> None:
        """Mix every row of position ``p``'s eta mixture again (the types mix their own)."""
        if self.config.prior != Prior.POPULATION:
            self._mixture_of(p)._refresh(_NO_ROWS)  # every row mixed again (all are listed)

    def refit(self) -> None:
        """Fit every position's tilt to its expected counts now, make it the prior and step the
        fit under it (module docstring). A population without types has nothing to tilt."""
        if self._mixture is None:
            return
        for p, fit in enumerate(self._dirichlet):
            types = self._types_of(p)
            base = self._base[fit.seats] if types is None else types.base()
            means = np.stack(
                [
                    fit_tilt(
                        self._maps[int(q)],
                        base[d],
                        fit.expected[d],
                        situation_weight=SITUATION_WEIGHT,
                        node_weight=NODE_WEIGHT,
                    )[0]
                    for d, q in enumerate(fit.seats)
                ]
            )
            self._tilt(p, means)
            if types is None:  # the types' fit keeps the population's parameters
                fit.converge(max_sweeps=SWEEPS)
            self._refresh(p)

    def _update(self, p: int, obs: LimitObservation, evidence: Evidence) -> None:
        super()._update(p, obs, evidence)
        if (self.hands_observed + 1) % REFIT_EVERY == 0 and not (
            self.guarded or (self._safety is not None and self._safety.live)
        ):
            self.refit()  # (hands counted after this call)

    def _reset_posterior(self) -> None:
        super()._reset_posterior()
        self._means = [None] * self.game.num_players  # its own: a new run is a copy of another
        for p in range(self.game.num_players):
            self._tilt(p, None)

    def _state(self) -> dict[str, np.ndarray]:
        arrays = super()._state()
        for p, means in enumerate(self._means):
            if means is not None:
                arrays[f"p{p}.tilt_mean"] = means.copy()
        return arrays

    def _restore_state(self, arrays: dict[str, np.ndarray], hands: int) -> None:
        means = [
            take(arrays, f"p{p}.tilt_mean", "f8", self._dirichlet[p].alpha0.shape)
            if f"p{p}.tilt_mean" in arrays
            else None
            for p in range(self.game.num_players)
        ]
        super()._restore_state(arrays, hands)  # at the untilted prior (``_fresh_posterior``)
        for p, tilt in enumerate(means):
            self._tilt(p, tilt)
            self._refresh(p)
