"""MBBR for any compiled ACPC limit game (Leduc, Kuhn from its game file, ...): the models and the
one factory, ``build_model``.

Ganzfried, Wang & Chiswick 2024, Alg 2-5: one posterior per our position over the strategies of the
opponents sitting at each seat offset, fed with what our seat saw of each finished hand
(``LimitObservation``), hidden cards summed out exactly; the default strategy for the first H
hands, then the configured response. ``Posterior.DIRICHLET`` (the default) is ``dirichlet.py``'s
incremental collapsed-variational Dirichlet posterior (with ``Prior.TYPED``: the typed prior of
``typed_prior.py``; with ``Prior.MIXTURE``: the mixture of informed, uninformed and card-blind
types of ``mixture_prior.py``); ``Posterior.SAMPLES`` is the paper's ``samples.py``.

Responses go through the limit-game kernels. ``mean``: the best response to the opponents'
posterior-mean models (for the Dirichlet posterior this is also the Bayesian response: the
fitted product of Dirichlets is independent across information sets and a sequence meets each
information set once, so the expected reach is the reach of the means).
``bayes`` (samples): the exact best response to sum_s p(s) EU(., tau_s), from the posterior
expectation of the opponents' joint reach of every terminal under every deal.

A response is computed lazily, one hole of ours at a time: an information set's best action
depends only on the deals that give us its hole cards, so :meth:`MBBRModel.action_probabilities`
(what an agent asks at each decision) solves the deals of that hole only (Leduc 3p: 1/8 of the
tree's deals), and only once per change of the posterior of that position.

With a finite ``config.safety_budget`` (default 0.5, game.rate_unit) what is played is the candidate
(the default for the first H hands, then the response) mixed with the default strategy as far as
the safety bankroll of ``safety.py`` allows, one share per hand and hole of ours: against
opponents who play the default strategy, learning costs at most the budget. ``math.inf`` plays
the candidate unconstrained. With ``config.change_hazard`` > 0 the model is
``change.ChangeDetectingModel``, which follows opponents who change strategy with a bank of
models of the configured posterior (BOCPD).

Defaults (no profile given): the game's solved strategy (``games/acpc/solved.py``: the bundled
file, else the cache, else solved on first use) is both the default strategy and the prior mean;
compiled 3-player Kuhn uses N1 and N3 (Szafron, Gibson & Sturtevant 2013), and its safety
bankroll guards against the family N1, N2, N3 (:func:`safety_guards`). Uniform play only when
passed.
"""

from __future__ import annotations

import abc
import copy
import functools
import hashlib
import itertools
import math
from typing import ClassVar, NamedTuple, cast

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError, ResourceExhaustedError
from oppmodel.modeling.evaluation import _limit_kernels as evaluation_kernels
from oppmodel.modeling.evaluation.limit import pack_tree
from oppmodel.modeling.games.acpc.betting import CALL, NUM_ACTIONS
from oppmodel.modeling.games.acpc.limit_game import LimitGame, LimitTree
from oppmodel.modeling.games.acpc.solved import is_bundled, solved_profile
from oppmodel.modeling.games.acpc.strategy import validate_profile
from oppmodel.modeling.games.kuhn3p import equilibria
from oppmodel.modeling.mbbr import _limit_kernels as kernels
from oppmodel.modeling.mbbr import snapshot as snapshot_format
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Prior, Response
from oppmodel.modeling.mbbr.dirichlet import DirichletPosterior
from oppmodel.modeling.mbbr.evidence import Evidence, consistent_deals, hand_evidence
from oppmodel.modeling.mbbr.memory import ENTRY_BYTES, array_bytes
from oppmodel.modeling.mbbr.mixture_prior import MixturePrior
from oppmodel.modeling.mbbr.priors import create_samples, prior_alpha
from oppmodel.modeling.mbbr.safety import SafetyBankroll, is_off
from oppmodel.modeling.mbbr.samples import MAX_JOINT_SAMPLES, SamplePosterior
from oppmodel.modeling.mbbr.snapshot import (
    SnapshotError,
    decode_snapshot,
    model_snapshot_parts,
    snapshot_identity,
    take,
)
from oppmodel.modeling.mbbr.typed_prior import TypedPrior, typed_priors
from oppmodel.modeling.observation import (
    LimitObservation,
    limit_observation_cards,
    limit_observation_of,
    validate_limit_observation,
)

MAX_CACHED_EVIDENCE = 8192  # distinct valid observations whose evidence is kept
MAX_SAMPLE_BYTES = 1 << 29  # the sampled strategies of every (position, opponent)


def check_posterior(config: MBBRConfig, posterior: Posterior, model_name: str) -> None:
    """Validate ``config`` (InvalidArgumentError naming the field) and check that it asks for
    ``posterior``, the one the class ``model_name`` implements."""
    config.validate()
    if config.posterior != posterior:
        raise InvalidArgumentError(
            "posterior", f"{model_name} is the {posterior.value!r} posterior"
        )


def response_kind(kind: Response | str | None, config: MBBRConfig) -> Response:
    """The response asked for (None: the configured one); InvalidArgumentError names ``kind``."""
    kind = kind or config.response
    try:
        return Response(kind)
    except ValueError:
        raise InvalidArgumentError(
            "kind", f"must be one of {Response.names()}, got {kind!r}"
        ) from None


def seat_offset(game: LimitGame, our_position: int, opponent_position: int) -> int:
    """The seat offset d (1..n-1) of an opponent's position from ours, both checked."""
    game.check_position(our_position, "our_position")
    game.check_position(opponent_position, "opponent_position")
    d = (opponent_position - our_position) % game.num_players
    if d == 0:
        raise InvalidArgumentError("opponent_position", "is our own position")
    return d


class MBBRModel(abc.ABC):
    """The posterior-independent part of MBBR in a limit game (see the module docstring); a
    subclass implements one posterior. Build one with :func:`build_model`."""

    POSTERIOR: ClassVar[Posterior]

    def __init__(
        self,
        game: LimitGame,
        config: MBBRConfig,
        *,
        default_strategy: np.ndarray | None = None,
        prior_mean: np.ndarray | None = None,
        evidence: dict[LimitObservation, Evidence] | None = None,
    ) -> None:
        """``evidence``: a cache of observations' evidence shared with other models of ``game``
        (a change-detection bank's runs share one)."""
        self._check_config(config)
        self._refuse_oversized(game, config)
        self.game = game
        self.config = config
        self.default_strategy = _profile_or_default(game, default_strategy, "default_strategy")
        self.prior_mean = _profile_or_default(game, prior_mean, "prior_mean")
        self.hands_observed = 0
        self._holes = hole_split(game)
        self._hole_index: dict[tuple[int, str | None], int] = {}  # (p, its cards) -> its hole
        self._evidence = {} if evidence is None else evidence
        self._profiles: dict[int, tuple[int, np.ndarray]] = {}  # p -> (version, models profile)
        self._lazy: dict[tuple[int, Response], _LazyResponse] = {}
        self._choice = np.empty(game.num_infosets, dtype=np.int64)  # scratch of ``_ensure``
        self._sweep_scratch = (
            np.zeros((game.num_infosets, NUM_ACTIONS)),
            np.zeros(game.num_infosets),
        )
        # The bankroll that bounds what learning costs against the default (safety.py)
        self._safety = (
            None
            if is_off(config.safety_budget)
            else SafetyBankroll(
                game,
                self.default_strategy,
                config.safety_budget,
                holes=self._holes.infosets_of_hole,
                subtrees=self._holes.subtrees,
                guards=safety_guards(game, self.default_strategy),
            )
        )
        self._build_posterior()

    # --- what a posterior implements -------------------------------------------------------------

    @classmethod
    def _check_config(cls, config: MBBRConfig) -> None:
        """Validate ``config`` (InvalidArgumentError naming the field) and check that it asks for
        the posterior this class implements."""
        check_posterior(config, cls.POSTERIOR, cls.__name__)

    @abc.abstractmethod
    def _build_posterior(self) -> None:
        """Set every attribute of the posterior, at the prior."""

    @classmethod
    @abc.abstractmethod
    def _refuse_oversized(cls, game: LimitGame, config: MBBRConfig) -> None:
        """ResourceExhaustedError if the posterior's tables would exceed its limit."""

    @abc.abstractmethod
    def _update(self, p: int, obs: LimitObservation) -> None:
        """Bayes-update the posterior of position ``p`` with a hand (validated by
        :meth:`_evidence_of` the first time it is seen)."""

    @abc.abstractmethod
    def _version(self, p: int) -> int:
        """A number that changes whenever the posterior of position ``p`` changes."""

    @abc.abstractmethod
    def _opponent_model(self, p: int, d: int) -> tuple[np.ndarray, float]:
        """(posterior-mean strategy, spread) of the opponent at offset ``d`` of position ``p``."""

    @abc.abstractmethod
    def _posterior_nbytes(self) -> int:
        """Approximate bytes of the posterior's own tables."""

    @abc.abstractmethod
    def _state(self) -> dict[str, np.ndarray]:
        """The arrays the observations changed, named as ``snapshot()`` documents."""

    @abc.abstractmethod
    def _restore_state(self, arrays: dict[str, np.ndarray], hands: int) -> None:
        """Set the state of ``_state()``'s arrays, taken after ``hands`` hands: SnapshotError,
        with nothing changed, if they do not fit this model."""

    def _reset_posterior(self) -> None:
        """Set the posterior back to the prior (a posterior replaces this with a cheaper way
        than building it again)."""
        self._build_posterior()

    def _fresh_run(self) -> MBBRModel:
        """A model like this one at the prior, no hands seen, sharing what hands never change
        (the game's tables, the profiles, the evidence cache, the scratch arrays of one call):
        change detection opens one every
        ``change.GRID`` hands, and building one anew costs more than the hands between. Only
        for a model without a safety bankroll (a run's)."""
        run = copy.copy(self)
        run.hands_observed = 0
        run._profiles, run._lazy = {}, {}
        run._reset_posterior()
        return run

    def _solve_hole(self, p: int, kind: Response, h: int, choice: np.ndarray) -> float:
        """Best actions (into ``choice``) of the information sets of position ``p`` with hole
        ``h`` for the ``kind`` response; returns the value summed over those deals. The ``mean``
        response here; the sample posterior adds ``bayes``."""
        cfv, own_reach = self._sweep_scratch
        cfv.fill(0.0)
        return evaluation_kernels.packed_sweep(
            *self._holes.packed[p][h], self._models_profile(p), p, True, cfv, own_reach, choice
        )

    # --- observing -------------------------------------------------------------------------------

    def observe(self, obs: LimitObservation) -> None:
        """Bayes-update the posterior of our position in ``obs`` with what that seat saw.
        InvalidArgumentError / IllegalActionError naming the field, and nothing changed, if the
        dealer could not have shown it."""
        if not isinstance(obs, LimitObservation):
            raise InvalidArgumentError(
                "observation", f"a limit game takes a LimitObservation, not {type(obs).__name__}"
            )
        try:
            hash(obs)  # the posteriors key their caches by the observation
        except TypeError:
            validate_limit_observation(self.game, obs)  # names the unhashable field
            raise
        p = obs.position
        self.game.check_position(p)
        if self._safety is not None:  # book the hand as played, before the posterior moves
            evidence = self._evidence_of(obs)  # validates
            hole = self._hole_of(p, obs)
            candidate, stamp = self._candidate_rows(p, hole)
            self._safety.record(obs, hole, candidate, stamp, evidence, self._models_profile(p))
        self._update(p, obs)
        self.hands_observed += 1

    def _evidence_of(self, obs: LimitObservation) -> Evidence:
        """The evidence of ``obs``, validating it the first time it is seen."""
        evidence = self._evidence.get(obs)
        if evidence is None:
            validate_limit_observation(self.game, obs)
            evidence = hand_evidence(self.game, obs)
            if len(self._evidence) < MAX_CACHED_EVIDENCE:
                self._evidence[obs] = evidence
        return evidence

    # --- models and responses --------------------------------------------------------------------

    @property
    def run_start(self) -> int:
        """The hand at which the run of hands the models rest on began: 0, unless change
        detection (``change.py``) found the opponents changed strategy then."""
        return 0

    def opponent_model(self, our_position: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """Posterior-mean strategy (num_infosets, 3) of an opponent while we sit at
        ``our_position``, and the spread it rests on (samples: the effective sample size of its
        marginal; Dirichlet: the least concentration over its information sets)."""
        model, spread = self._opponent_model(
            our_position, seat_offset(self.game, our_position, opponent_position)
        )
        return model.copy(), spread

    def models_profile(self, our_position: int) -> np.ndarray:
        """The profile with every opponent replaced by its model (our row: the default strategy;
        the array is cached: do not modify it)."""
        self.game.check_position(our_position, "our_position")
        return self._models_profile(our_position)

    def _models_profile(self, p: int) -> np.ndarray:
        version = self._version(p)
        cached = self._profiles.get(p)
        if cached is None or cached[0] != version:
            profile = self.default_strategy.copy()
            self._write_models(p, profile)
            cached = self._profiles[p] = (version, profile)
        return cached[1]

    def _write_models(self, p: int, profile: np.ndarray) -> None:
        """Write the opponents' models of position ``p`` into their rows of ``profile``."""
        n = self.game.num_players
        for d in range(1, n):
            profile[(p + d) % n] = self._opponent_model(p, d)[0]

    def response(
        self, our_position: int, kind: Response | str | None = None
    ) -> tuple[np.ndarray, float]:
        """The ``kind`` best response (num_infosets, 3) for our position (default: the
        configured one) and its expected value per hand."""
        self.game.check_position(our_position, "our_position")
        lazy = self._response_of(our_position, kind)
        for h in range(len(lazy.values)):
            self._ensure(our_position, lazy, h)
        return lazy.strategy.copy(), float(lazy.values.sum()) / self.game.num_deals

    def policy(self, our_position: int) -> np.ndarray:
        """What the agent plays: the default strategy for the first H hands, then the response;
        with a finite ``config.safety_budget``, mixed with the default hole by hole as far as the
        safety bankroll allows (it changes after every hand, whatever the position)."""
        self.game.check_position(our_position, "our_position")
        if self.hands_observed < self.config.hands_default:
            candidate = self.default_strategy[our_position].copy()
        else:
            candidate = self.response(our_position)[0]
        if self._safety is None:
            return candidate
        for h, rows in enumerate(self._holes.infosets_of_hole[our_position]):
            candidate[rows] = self._safety.policy(
                our_position, h, *self._candidate_rows(our_position, h)
            )[0]
        return candidate

    def safety_share(self, our_position: int, infoset: int) -> float:
        """The share of the response in what is played at ``infoset`` of ``our_position`` now:
        the share of its hole (1 without a safety budget)."""
        self._check_infoset(our_position, infoset)
        if self._safety is None:
            return 1.0
        h = int(self._holes.hole_of_infoset[our_position][infoset])
        return self._safety.policy(our_position, h, *self._candidate_rows(our_position, h))[1]

    def _hole_of(self, p: int, obs: LimitObservation) -> int:
        """The hole index (``hole_split``) of position ``p``'s cards in a validated ``obs``."""
        key = (p, obs.hole[p])
        hole = self._hole_index.get(key)
        if hole is None:
            deal = consistent_deals(self.game, obs)[0]
            hole = self._hole_index[key] = int(self._holes.hole_of_deal[p][deal])
        return hole

    def _candidate_rows(self, p: int, h: int) -> tuple[np.ndarray | None, object]:
        """The unconstrained policy's rows at hole ``h`` of position ``p`` (None for the default,
        the first H hands; then the response, solving that hole only) and a stamp that changes
        whenever they do."""
        if self.hands_observed < self.config.hands_default:
            return None, None
        lazy = self._response_of(p, None)
        self._ensure(p, lazy, h)
        return lazy.strategy[self._holes.infosets_of_hole[p][h]], (lazy.kind, lazy.version)

    def action_probabilities(self, our_position: int, infoset: int) -> np.ndarray:
        """What the agent plays at one information set (as :meth:`policy`, but solving only the
        deals of that information set's hole cards, once per change of the posterior)."""
        self._check_infoset(our_position, infoset)
        if self._safety is None:
            if self.hands_observed < self.config.hands_default:
                return self.default_strategy[our_position, infoset].copy()
            lazy = self._response_of(our_position, None)
            self._ensure(
                our_position, lazy, int(self._holes.hole_of_infoset[our_position][infoset])
            )
            return lazy.strategy[infoset].copy()
        h = int(self._holes.hole_of_infoset[our_position][infoset])
        rows = self._holes.infosets_of_hole[our_position][h]
        played, _ = self._safety.policy(our_position, h, *self._candidate_rows(our_position, h))
        return played[int(np.searchsorted(rows, infoset))].copy()

    def _check_infoset(self, our_position: int, infoset: int) -> None:
        game = self.game
        game.check_position(our_position, "our_position")
        if not (
            isinstance(infoset, (int, np.integer))
            and 0 <= infoset < game.infosets_per_position[our_position]
        ):
            raise InvalidArgumentError(
                "infoset", f"{infoset!r} is not an information set of position {our_position}"
            )

    def _response_of(self, p: int, kind: Response | str | None) -> _LazyResponse:
        """The response of a checked position ``p`` to its posterior now (holes solved lazily)."""
        kind = self.config.response if kind is None else response_kind(kind, self.config)
        version = self._version(p)
        lazy = self._lazy.get((p, kind))
        if lazy is None:
            holes = len(self._holes.subtrees[p])
            strategy = np.zeros((self.game.num_infosets, NUM_ACTIONS))
            strategy[len(self.game.infosets(p)) :, CALL] = 1.0  # padding
            lazy = self._lazy[(p, kind)] = _LazyResponse(
                kind, version, strategy, np.full(holes, np.nan)
            )
        elif lazy.version != version:  # solved again hole by hole, in the same arrays
            lazy.values.fill(np.nan)
            lazy = self._lazy[(p, kind)] = lazy._replace(version=version)
        return lazy

    def _ensure(self, p: int, lazy: _LazyResponse, h: int) -> None:
        if not math.isnan(lazy.values[h]):
            return
        choice = self._choice
        choice.fill(-1)
        lazy.values[h] = self._solve_hole(p, lazy.kind, h, choice)
        kernels.write_choices(lazy.strategy, self._holes.infosets_of_hole[p][h], choice)

    # --- snapshots (``snapshot.py``) --------------------------------------------------------------

    def snapshot(self) -> bytes:
        """The model's state after the hands observed so far, as self-describing bytes in the
        format of ``modeling/mbbr/snapshot.py`` (its header also names the game's rules by the
        SHA-256 of their text). The arrays, per position p: the Dirichlet posterior's
        (``DirichletPosterior.state``) as ``p<p>.<name>``, its distinct observations as
        ``p<p>.key_position``, ``p<p>.key_betting`` and ``p<p>.key_cards`` (rows of
        ``observation.limit_observation_cards``), with the typed prior ``p<p>.revealed``, with
        the mixture prior ``p<p>.revealed``, ``p<p>.blind`` (the card-blind type's counts per
        node) and the uninformed type's fit as ``p<p>.u.<name>`` (its keys too); the
        sample posterior's (``SamplePosterior.state``) as ``p<p>.<name>``; with a safety
        budget the bankroll's (``SafetyBankroll.state``) as ``safety.<name>``.

        ``restore`` into a fresh model of the same game, configuration and prior mean, then
        observing the later hands, gives exactly the posterior of observing them all."""
        return snapshot_format.encode(*self.snapshot_parts())

    def snapshot_parts(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The header and named arrays that ``snapshot()`` encodes."""
        safety = None if self._safety is None else self._safety.state()
        return model_snapshot_parts(
            self._snapshot_identity(), self.hands_observed, self._state(), safety
        )

    def restore(self, blob: bytes) -> None:
        """Replace the state with a ``snapshot()``'s; SnapshotError (and nothing changed) if it
        is not a snapshot of a model with this game, configuration and prior mean (or, with a
        safety budget, has no bankroll: one taken before limit games had it)."""
        hands, arrays = decode_snapshot(blob, self._snapshot_identity())
        safety = None
        if self._safety is not None:
            size = (len(self._safety),)
            safety = (
                take(arrays, "safety.bank", "f8", size),
                take(arrays, "safety.alive", "i8", size),
                take(arrays, "safety.log_odds", "f8", size),
            )
        self._restore_state(arrays, hands)
        if self._safety is not None and safety is not None:
            self._safety.restore(*safety)
        self.hands_observed = hands
        self._profiles.clear()
        self._lazy.clear()

    def _snapshot_identity(self) -> dict:
        rules = self.game.gamedef.to_text().encode()
        return {
            **snapshot_identity(self.game.num_players, self.config, self.prior_mean),
            "game_sha256": hashlib.sha256(rules).hexdigest(),
        }

    def nbytes(self) -> int:
        """Approximate bytes held: the model's arrays and caches and the posterior's tables."""
        arrays = [self.default_strategy, self.prior_mean]
        arrays += [profile for _, profile in self._profiles.values()]
        arrays += [a for lazy in self._lazy.values() for a in (lazy.strategy, lazy.values)]
        arrays += [e.rows for e in self._evidence.values()]
        entries = len(self._evidence) + len(self._profiles) + len(self._lazy)
        safety = 0 if self._safety is None else self._safety.nbytes()
        return array_bytes(arrays) + entries * ENTRY_BYTES + self._posterior_nbytes() + safety


class _LazyResponse(NamedTuple):
    kind: Response
    version: int
    strategy: np.ndarray  # (num_infosets, 3), filled hole by hole
    values: np.ndarray  # (holes,) value summed over the hole's deals; NaN until solved


class DirichletModel(MBBRModel):
    """MBBR in a limit game with the incremental Dirichlet posterior (the default)."""

    POSTERIOR = Posterior.DIRICHLET

    def _build_posterior(self) -> None:
        game, config = self.game, self.config
        n = game.num_players
        # the mixture's informed type is the model's own fit
        own_prior = Prior.INFORMED if config.prior == Prior.MIXTURE else config.prior
        alpha = prior_alpha(
            game,
            self.prior_mean,
            epsilon=config.epsilon,
            eta=config.informed_eta(),
            prior=own_prior,
        )
        seats = [[(p + d) % n for d in range(1, n)] for p in range(n)]
        self._dirichlet = [
            DirichletPosterior(alpha[seats[p]], self.default_strategy.copy(), seats[p])
            for p in range(n)
        ]
        self._types: list[TypedPrior] | None = None
        if config.prior == Prior.TYPED:
            clipped = [posterior.alpha0 for posterior in self._dirichlet]
            self._types = typed_priors(game, self.prior_mean, clipped, eta=config.eta)
        self._mixture: list[MixturePrior] | None = None
        if config.prior == Prior.MIXTURE:
            self._mixture = [
                MixturePrior(game, alpha[seats[p]], seats[p], self.default_strategy)
                for p in range(n)
            ]
        self._type_versions = [0] * n

    @classmethod
    def _refuse_oversized(cls, game: LimitGame, config: MBBRConfig) -> None:
        """Nothing to refuse: the tables are sized by the game and the distinct observations."""

    def _models_profile(self, p: int) -> np.ndarray:
        if self._types is None and self._mixture is None:  # kept up to date, hand by hand
            return self._dirichlet[p].profile
        return super()._models_profile(p)

    def _update(self, p: int, obs: LimitObservation) -> None:
        applied = self._dirichlet[p].observe(obs, lambda: self._evidence_of(obs))
        if applied and self._types is not None:
            evidence = self._evidence_of(obs)
            for d_1, i, a in evidence.rows[0]:
                if evidence.revealed[d_1]:
                    self._types[p].observe_revealed(int(d_1) + 1, int(i), int(a))
                    self._type_versions[p] += 1
        if applied and self._mixture is not None:
            self._mixture[p].observe(obs, self._evidence_of(obs), lambda: self._evidence_of(obs))
            self._type_versions[p] += 1

    def _version(self, p: int) -> int:
        return self._dirichlet[p].version + self._type_versions[p]

    def _opponent_model(self, p: int, d: int) -> tuple[np.ndarray, float]:
        posterior = self._dirichlet[p]
        rows = self.game.infosets((p + d) % self.game.num_players)
        least_seen = float(posterior.concentration(d)[rows].min())
        if self._types is not None:
            return self._types[p].mean(d, posterior.alpha[d - 1]), least_seen
        if self._mixture is not None:
            return self._mixture[p].mean(d, posterior.mean(d)), least_seen
        return posterior.mean(d), least_seen

    def converge(self) -> None:
        """Bring every position's fit to the fixed point of its equations (the incremental fit
        stays near it; tests and offline analyses call this)."""
        for posterior in self._dirichlet:
            posterior.converge()

    def _state(self) -> dict[str, np.ndarray]:
        arrays: dict[str, np.ndarray] = {}
        for p, posterior in enumerate(self._dirichlet):
            state = self._posterior_state(posterior)
            if self._types is not None:
                state.update(self._types[p].state())
            if self._mixture is not None:
                state.update(self._mixture[p].state())
                uninformed = self._posterior_state(self._mixture[p].uninformed)
                state.update({f"u.{name}": a for name, a in uninformed.items()})
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

    def _fresh_posterior(
        self,
    ) -> tuple[list[DirichletPosterior], list[TypedPrior] | None, list[MixturePrior] | None]:
        """New fits (and typed or mixture priors) at the prior, built from this model's."""
        fresh = [
            DirichletPosterior(post.alpha0, self.default_strategy.copy(), post.seats)
            for post in self._dirichlet
        ]
        types = self._types and [TypedPrior(t.clipped, t.support, t.legal) for t in self._types]
        mixture = self._mixture and [
            MixturePrior(self.game, m.informed_alpha0, m.seats, self.default_strategy)
            for m in self._mixture
        ]
        return fresh, types, mixture

    def _reset_posterior(self) -> None:
        self._dirichlet, self._types, self._mixture = self._fresh_posterior()
        self._type_versions = [0] * self.game.num_players

    def _restore_state(self, arrays: dict[str, np.ndarray], hands: int) -> None:
        n = self.game.num_players
        fresh, types, mixture = self._fresh_posterior()
        for p in range(n):
            prefix = f"p{p}."
            state = {k[len(prefix) :]: a for k, a in arrays.items() if k.startswith(prefix)}
            self._restore_posterior(fresh[p], p, state)
            if types is not None:
                types[p].restore(state)
            if mixture is not None:
                mixture[p].restore(state)
                uninformed = {k[2:]: a for k, a in state.items() if k.startswith("u.")}
                self._restore_posterior(mixture[p].uninformed, p, uninformed)
        self._dirichlet, self._types, self._mixture = fresh, types, mixture
        self._type_versions = [0] * n

    def _posterior_nbytes(self) -> int:
        extra = sum(posterior.nbytes() for posterior in self._dirichlet)
        if self._types is not None:
            extra += sum(t.nbytes() for t in self._types)
        if self._mixture is not None:
            extra += sum(m.nbytes() for m in self._mixture)
        return extra


class SampleModel(MBBRModel):
    """MBBR in a limit game with the paper's importance-weighted sample posterior."""

    POSTERIOR = Posterior.SAMPLES

    def _build_posterior(self) -> None:
        game, config = self.game, self.config
        self.tau = create_samples(
            game,
            self.prior_mean,
            k=config.k,
            epsilon=config.epsilon,
            eta=config.eta,
            prior=config.prior,
            rng=np.random.default_rng(config.seed),
        )
        self._samples = [SamplePosterior(self.tau[p]) for p in range(game.num_players)]

    @classmethod
    def _refuse_oversized(cls, game: LimitGame, config: MBBRConfig) -> None:
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

    def _update(self, p: int, obs: LimitObservation) -> None:
        self._samples[p].observe(self._evidence_of(obs))

    def _version(self, p: int) -> int:
        return self._samples[p].version

    def _opponent_model(self, p: int, d: int) -> tuple[np.ndarray, float]:
        marginal = self._samples[p].marginals[d - 1]
        return self._samples[p].mean(d), float(1.0 / np.dot(marginal, marginal))

    def _write_models(self, p: int, profile: np.ndarray) -> None:
        n = self.game.num_players
        for d in range(1, n):
            self._samples[p].write_mean(d, profile[(p + d) % n])

    def posterior(self, our_position: int) -> np.ndarray:
        """The normalised joint posterior over sample combinations for our position."""
        self.game.check_position(our_position, "our_position")
        return self._samples[our_position].posterior()

    def effective_sample_size(self, our_position: int) -> float:
        """1 / sum p(s)^2 of the joint posterior for our position."""
        self.game.check_position(our_position, "our_position")
        return self._samples[our_position].effective_sample_size()

    def _solve_hole(self, p: int, kind: Response, h: int, choice: np.ndarray) -> float:
        if kind == Response.MEAN:
            return super()._solve_hole(p, kind, h, choice)
        game, n = self.game, self.game.num_players
        deals = self._holes.deals_of_hole[p][h]
        weights = self._samples[p].posterior().ravel()
        opponents = np.array([(p + d) % n for d in range(1, n)], dtype=np.int64)
        leaf = np.empty((game.num_terminals, len(deals)))
        kernels.bayes_leaf_values(game.tree, self.tau[p], opponents, weights, p, deals, leaf)
        return kernels.best_response_to_leaf_values(game.tree, leaf, p, deals, choice)

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
            prefix = f"p{p}."
            posterior.restore(
                {k[len(prefix) :]: a for k, a in arrays.items() if k.startswith(prefix)}
            )
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


def build_model(
    game: LimitGame,
    config: MBBRConfig | None = None,
    *,
    default_strategy: np.ndarray | None = None,
    prior_mean: np.ndarray | None = None,
) -> MBBRModel:
    """A fresh MBBR model of ``config`` (default ``MBBRConfig()``) for a compiled limit game, of
    the class of its posterior. ``default_strategy`` and ``prior_mean`` are profiles
    (n, num_infosets, 3), e.g. read from strategy files with ``acpc.strategy.load_profile``; None
    gives :func:`default_profile`. InvalidArgumentError names a bad field; ResourceExhaustedError
    refuses tables beyond the posterior's limit."""
    config = config or MBBRConfig()
    config.validate()
    if config.change_hazard > 0.0:
        from oppmodel.modeling.mbbr.change import ChangeDetectingModel  # it builds on this module

        return ChangeDetectingModel(
            game, config, default_strategy=default_strategy, prior_mean=prior_mean
        )
    return MODEL_CLASSES[config.posterior](
        game, config, default_strategy=default_strategy, prior_mean=prior_mean
    )


def default_profile(game: LimitGame, role: str) -> np.ndarray:
    """The default strategy (``role="default_strategy"``) or prior mean (``"prior_mean"``) of a
    game: N1 / N3 in compiled 3-player Kuhn (``kuhn3p.equilibria``), else its solved strategy
    (:func:`~oppmodel.modeling.games.acpc.solved.solved_profile`: bundled, cached or solved now).
    Uniform play only when passed explicitly (``strategy.uniform_profile``)."""
    family = equilibria(game)
    if family:
        return family["n1" if role == "default_strategy" else "n3"]
    return solved_profile(game).copy()


def safety_guards(game: LimitGame, default_strategy: np.ndarray) -> tuple[np.ndarray, ...]:
    """The safety bankroll's guard set: the equilibrium family N1, N2, N3 in compiled 3-player
    Kuhn (the default N1 is one of them), else the default strategy alone."""
    family = equilibria(game)
    return tuple(family.values()) if family else (default_strategy,)


def needs_solving(game: LimitGame) -> bool:
    """Whether :func:`default_profile` has to solve the game: not compiled 3-player Kuhn, no
    strategy bundled (the service solves such games itself, ``server/solved_strategies.py``)."""
    return not equilibria(game) and not is_bundled(game)


def _profile_or_default(game: LimitGame, given: np.ndarray | None, field: str) -> np.ndarray:
    if given is None:
        return default_profile(game, field)
    return validate_profile(game, given, field)


class HoleSplit(NamedTuple):
    """A game's deals and information sets grouped by one position's hole cards."""

    hole_of_infoset: tuple[np.ndarray, ...]  # position -> (I_p,) hole (round-0 view) of each set
    hole_of_deal: tuple[np.ndarray, ...]  # position -> (D,) its hole in each deal
    infosets_of_hole: tuple[tuple[np.ndarray, ...], ...]  # position -> hole -> its sets
    deals_of_hole: tuple[tuple[np.ndarray, ...], ...]  # position -> hole -> its deals
    subtrees: tuple[tuple[LimitTree, ...], ...]  # position -> hole -> tree over its deals
    packed: tuple[tuple[tuple[np.ndarray, np.ndarray], ...], ...]  # the same, ``pack_tree``'s


@functools.cache  # per game object: compiled games are cached and immutable
def hole_split(game: LimitGame) -> HoleSplit:
    """Per position, the deals and the information sets of each of its hole cards, and the tree
    restricted to those deals (the evaluation kernels take it as they take the whole tree)."""
    tree = game.tree
    hole_of_view = []
    for r in range(game.num_rounds):
        mapping = np.full(int(tree.round_views[r]), -1, dtype=np.int64)
        mapping[tree.deal_view[r].ravel()] = tree.deal_view[0].ravel()
        hole_of_view.append(mapping)
    of_infoset, infosets, deals, subtrees = [], [], [], []
    for p in range(game.num_players):
        rounds = tree.node_round[game.infoset_node[p]]
        holes = np.array(
            [hole_of_view[r][v] for r, v in zip(rounds, game.infoset_view[p], strict=True)],
            dtype=np.int64,
        )
        count = int(tree.deal_view[0, :, p].max()) + 1
        of_infoset.append(holes)
        infosets.append(tuple(np.flatnonzero(holes == h) for h in range(count)))
        by_hole = tuple(np.flatnonzero(tree.deal_view[0, :, p] == h) for h in range(count))
        deals.append(by_hole)
        subtrees.append(
            tuple(
                tree._replace(
                    deal_view=np.ascontiguousarray(tree.deal_view[:, d]),
                    share=np.ascontiguousarray(tree.share[:, d]),
                )
                for d in by_hole
            )
        )
    of_deal = tuple(np.ascontiguousarray(tree.deal_view[0, :, p]) for p in range(game.num_players))
    packed = tuple(tuple(pack_tree(tree) for tree in trees) for trees in subtrees)
    return HoleSplit(
        tuple(of_infoset), of_deal, tuple(infosets), tuple(deals), tuple(subtrees), packed
    )
