"""MBBR's two posteriors as models, ``DirichletModel`` (the default, ``dirichlet.py``'s fit) and
``SampleModel`` (the paper's, ``samples.py``), and the one factory, ``build_model``. A new
posterior is a subclass of ``MBBRModel``, a value of ``config.Posterior`` and an entry of
``MODEL_CLASSES`` (docs/layout.md)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, cast

import numpy as np

from oppmodel.modeling.errors import ResourceExhaustedError
from oppmodel.modeling.games.acpc.betting import NUM_ACTIONS
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr import _limit_kernels as kernels
from oppmodel.modeling.mbbr.base import MBBRModel
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Prior, Response
from oppmodel.modeling.mbbr.dirichlet import DirichletPosterior
from oppmodel.modeling.mbbr.evidence import Evidence
from oppmodel.modeling.mbbr.memory import array_bytes
from oppmodel.modeling.mbbr.mixture_prior import MixturePrior
from oppmodel.modeling.mbbr.priors import create_samples, prior_alpha
from oppmodel.modeling.mbbr.samples import MAX_JOINT_SAMPLES, SamplePosterior
from oppmodel.modeling.mbbr.snapshot import SnapshotError, section, take
from oppmodel.modeling.observation import (
    LimitObservation,
    limit_observation_cards,
    limit_observation_of,
)
from oppmodel.modeling.population_types import Mixtures, type_mixtures

if TYPE_CHECKING:
    from oppmodel.modeling.population import Population

MAX_SAMPLE_BYTES = 1 << 29  # the sampled strategies of every (position, opponent)


class DirichletModel(MBBRModel):
    """MBBR in a limit game with the incremental Dirichlet posterior (the default)."""

    POSTERIOR = Posterior.DIRICHLET

    def _build_posterior(self) -> None:
        game, config = self.game, self.config
        n = game.num_players
        # a mixture's informed (typed: error-prone) type is the model's own fit
        mixture = config.prior in (Prior.MIXTURE, Prior.ETA_MIXTURE, Prior.TYPED, Prior.TILTED)
        own_prior = Prior.INFORMED if mixture else config.prior
        alpha = prior_alpha(
            game,
            self.prior_mean,
            epsilon=config.epsilon,
            eta=config.informed_eta(),
            prior=own_prior,
            population=None if self.population is None else self.population.alpha,
        )
        seats = [[(p + d) % n for d in range(1, n)] for p in range(n)]
        self._dirichlet = [
            DirichletPosterior(alpha[seats[p]], self.default_strategy.copy(), seats[p])
            for p in range(n)
        ]
        self._mixture: Mixtures | None = type_mixtures(self.population, seats, self._dirichlet)
        if mixture:
            # the eta mixture's weak type; the typed prior's in-support type, unclipped
            typed = config.prior == Prior.TYPED
            second = prior_alpha(
                game,
                self.prior_mean,
                epsilon=0.0 if typed else config.epsilon,
                eta=config.eta if typed else config.weak_eta,
                prior=Prior.INFORMED,
            )
            self._mixture = [
                MixturePrior(game, alpha[s], s, fit, config.prior, second[s])
                for s, fit in zip(seats, self._dirichlet, strict=True)
            ]

    def _models_profile(self, p: int) -> np.ndarray:  # kept up to date, hand by hand
        return (self._dirichlet if self._mixture is None else self._mixture)[p].profile

    def _update(self, p: int, obs: LimitObservation, evidence: Evidence) -> None:
        applied = self._dirichlet[p].observe(obs, evidence)
        if applied and self._mixture is not None:
            self._mixture[p].observe(obs, evidence)

    def _version(self, p: int) -> int:  # the mixture changes only with the fit
        return self._dirichlet[p].version

    def _opponent_model(self, p: int, d: int) -> tuple[np.ndarray, float]:
        posterior = self._dirichlet[p]
        rows = self.game.infosets((p + d) % self.game.num_players)
        least_seen = float(posterior.concentration(d)[rows].min())
        if self._mixture is not None:
            return self._mixture[p].profile[(p + d) % self.game.num_players], least_seen
        return posterior.mean(d), least_seen

    def opponent_counts(self) -> np.ndarray:
        n = self.game.num_players
        counts = np.zeros((n - 1, *self.game.legal_mask.shape))
        for p, posterior in enumerate(self._dirichlet):
            seen = posterior.alpha - posterior.alpha0
            for d in range(1, n):
                rows = self.game.infosets((p + d) % n)
                counts[d - 1, (p + d) % n, rows] = seen[d - 1, rows]
        return counts

    def _concentration(self, p: int, d: int) -> np.ndarray:
        return self._dirichlet[p].concentration(d).copy()

    def converge(self) -> None:
        """Bring every position's fit to the fixed point of its equations (the incremental fit
        stays near it; tests and offline analyses call this)."""
        for posterior in self._dirichlet:
            posterior.converge()

    def _state(self) -> dict[str, np.ndarray]:
        arrays: dict[str, np.ndarray] = {}
        for p, posterior in enumerate(self._dirichlet):
            state = self._posterior_state(posterior)
            if self._mixture is not None:
                state.update(self._mixture[p].state())
                fit = self._mixture[p].second
                if fit is not None:  # "u.": the uninformed type's fit
                    state.update({f"u.{k}": a for k, a in self._posterior_state(fit).items()})
            arrays.update({f"p{p}.{name}": a for name, a in state.items()})
        return arrays

    def _posterior_state(self, posterior: DirichletPosterior) -> dict[str, np.ndarray]:
        """A fit's state with its observations' keys as arrays (``key_*``)."""
        found, state = posterior.state()
        keys = cast(list[LimitObservation], found)  # the observations it was given
        state["key_position"] = np.array([k.position for k in keys], dtype=np.int64)
        state["key_betting"] = np.array([k.betting for k in keys], dtype=np.str_)
        width = self.game.num_players + self.game.num_rounds
        state["key_cards"] = np.array(
            [_padded(limit_observation_cards(k), width) for k in keys], dtype=np.str_
        ).reshape(len(keys), width)
        return state

    def _restore_posterior(
        self, posterior: DirichletPosterior, p: int, state: dict[str, np.ndarray]
    ) -> None:
        """Restore a fit of position ``p`` from ``_posterior_state``'s arrays."""
        n = self.game.num_players
        positions = take(state, "key_position", "i8", (None,))
        m = len(positions)
        bettings = take(state, "key_betting", "U", (m,))
        cards = take(state, "key_cards", "U", (m, n + self.game.num_rounds))
        if np.any(positions != p):
            raise SnapshotError(f"snapshot observations of position {p} seat another")
        keys = [
            limit_observation_of(p, str(b), _unpadded(row, n), n)
            for b, row in zip(bettings, cards, strict=True)
        ]
        posterior.restore(keys, state)

    def _fresh_posterior(self) -> tuple[list[DirichletPosterior], Mixtures | None]:
        """New fits (and mixture priors) at the prior, built from this model's."""
        fresh = [post.at_prior() for post in self._dirichlet]
        mixture = self._mixture and [
            m.at_prior(f) for m, f in zip(self._mixture, fresh, strict=True)
        ]
        return fresh, mixture

    def _reset_posterior(self) -> None:
        self._dirichlet, self._mixture = self._fresh_posterior()

    def _restore_state(self, arrays: dict[str, np.ndarray], hands: int) -> None:
        n = self.game.num_players
        fresh, mixture = self._fresh_posterior()
        for p in range(n):
            state = section(arrays, f"p{p}.")
            self._restore_posterior(fresh[p], p, state)
            if mixture is not None:  # "u.": the uninformed type's fit
                fit, second = mixture[p].second, section(state, "u.")
                if fit is None and second:  # its means (and change detection's masses) differ
                    raise SnapshotError("an eta mixture's, before its weak type shared a fit")
                if fit is not None:
                    self._restore_posterior(fit, p, second)
                mixture[p].restore(state)
        self._dirichlet, self._mixture = fresh, mixture

    def _posterior_nbytes(self) -> int:
        return sum(fit.nbytes() for fit in (*self._dirichlet, *(self._mixture or ())))


class SampleModel(MBBRModel):
    """MBBR in a limit game with the paper's importance-weighted sample posterior."""

    POSTERIOR = Posterior.SAMPLES

    def _build_posterior(self) -> None:
        game, config = self.game, self.config
        n, k = game.num_players, config.k
        if k ** (n - 1) > MAX_JOINT_SAMPLES:
            raise ResourceExhaustedError(
                f"k: {k}^{n - 1} joint samples exceed the limit of {MAX_JOINT_SAMPLES}"
            )
        sample_bytes = n * (n - 1) * k * game.num_infosets * NUM_ACTIONS * 8
        if sample_bytes > MAX_SAMPLE_BYTES:
            raise ResourceExhaustedError(
                f"k: {k} samples of every opponent need {sample_bytes:,} bytes in {game.name}, "
                f"above the limit of {MAX_SAMPLE_BYTES:,}"
            )
        self.tau = create_samples(
            game,
            self.prior_mean,
            k=config.k,
            epsilon=config.epsilon,
            eta=config.eta,
            prior=config.prior,
            rng=np.random.default_rng(config.seed),
            weak_eta=config.weak_eta,
            population=None if self.population is None else self.population.alpha,
        )
        self._samples = [SamplePosterior(self.tau[p]) for p in range(n)]
        self._seats = [np.array([(p + d) % n for d in range(1, n)]) for p in range(n)]

    def _update(self, p: int, obs: LimitObservation, evidence: Evidence) -> None:
        self._samples[p].observe(evidence)

    def _version(self, p: int) -> int:
        return self._samples[p].version

    def _opponent_model(self, p: int, d: int) -> tuple[np.ndarray, float]:
        marginal = self._samples[p].marginals[d - 1]
        model = self._models_profile(p)[(p + d) % self.game.num_players]
        return model, float(1.0 / np.dot(marginal, marginal))

    def _write_models(self, p: int, profile: np.ndarray) -> None:
        self._samples[p].write_means(profile, self._seats[p])

    def posterior(self, our_position: int) -> np.ndarray:
        """The normalised joint posterior over sample combinations for our position."""
        self.game.check_position(our_position, "our_position")
        return self._samples[our_position].posterior()

    def _solve_hole(self, p: int, kind: Response, h: int, strategy: np.ndarray) -> float:
        if kind == Response.MEAN:
            return super()._solve_hole(p, kind, h, strategy)
        game, n = self.game, self.game.num_players
        deals = self._holes.deals_of_hole[p][h]
        weights = self._samples[p].posterior().ravel()
        opponents = np.array([(p + d) % n for d in range(1, n)], dtype=np.int64)
        leaf = np.empty((game.num_terminals, len(deals)))
        kernels.bayes_leaf_values(game.tree, self.tau[p], opponents, weights, p, deals, leaf)
        cfv = self._sweep_scratch.reshape(-1, 3)
        value = kernels.best_response_to_leaf_values(game.tree, leaf, p, deals, cfv, self._choice)
        kernels.write_choices(strategy, self._holes.infosets_of_hole[p][h], self._choice)
        return value

    def _state(self) -> dict[str, np.ndarray]:
        return {
            f"p{p}.{name}": a
            for p, posterior in enumerate(self._samples)
            for name, a in posterior.state().items()
        }

    def _reset_posterior(self) -> None:
        self._samples = [SamplePosterior(self.tau[p]) for p in range(self.game.num_players)]

    def _restore_state(self, arrays: dict[str, np.ndarray], hands: int) -> None:
        fresh = [SamplePosterior(self.tau[p]) for p in range(self.game.num_players)]
        for p, posterior in enumerate(fresh):
            posterior.restore(section(arrays, f"p{p}."))
        self._samples = fresh

    def _posterior_nbytes(self) -> int:
        arrays = [self.tau]
        for s in self._samples:
            arrays += [s.weights, *s.marginals]
        return array_bytes(arrays)


_ABSENT = "-"  # in a snapshot's key_cards: a hidden hole, or a round the hand did not reach


def _padded(cards: tuple[str | None, ...], width: int) -> list[str]:
    return [_ABSENT if c is None else c for c in cards] + [_ABSENT] * (width - len(cards))


def _unpadded(row: np.ndarray, num_players: int) -> tuple[str | None, ...]:
    hole = [None if c == _ABSENT else str(c) for c in row[:num_players]]
    board = itertools.takewhile(lambda c: c != _ABSENT, (str(c) for c in row[num_players:]))
    return (*hole, *board)


MODEL_CLASSES: dict[Posterior, type[MBBRModel]] = {
    Posterior.DIRICHLET: DirichletModel,
    Posterior.SAMPLES: SampleModel,
}


def model_class(config: MBBRConfig) -> type[MBBRModel]:
    """The class of ``config``'s posterior (``tilted_prior``'s: the tilted, population priors)."""
    if config.prior in (Prior.TILTED, Prior.POPULATION) and config.posterior == Posterior.DIRICHLET:
        from oppmodel.modeling.tilted_prior import TiltedModel  # it builds on this module

        return TiltedModel
    return MODEL_CLASSES[config.posterior]


def build_model(
    game: LimitGame,
    config: MBBRConfig | None = None,
    *,
    default_strategy: np.ndarray | None = None,
    prior_mean: np.ndarray | None = None,
    population: Population | None = None,
) -> MBBRModel:
    """A fresh MBBR model of ``config`` (default ``MBBRConfig()``) for a compiled limit game, of
    the class of its posterior. ``default_strategy`` and ``prior_mean`` are profiles
    (n, num_infosets, 3), e.g. read from strategy files with ``acpc.strategy.load_profile``; None
    gives the game's ``solved.default_profile``; ``population`` is the fitted prior of
    ``prior="population"`` (``oppmodel.modeling.population``). InvalidArgumentError names a bad
    field; ResourceExhaustedError refuses tables beyond the posterior's limit."""
    config = config or MBBRConfig()
    config.validate()
    cls = model_class(config)
    if config.change_hazard > 0.0:
        from oppmodel.modeling.mbbr.change import ChangeDetectingModel  # it builds on this module

        cls = ChangeDetectingModel
    return cls(
        game,
        config,
        default_strategy=default_strategy,
        prior_mean=prior_mean,
        population=population,
    )
