"""``MBBRModel``: what every posterior of MBBR shares in a compiled limit game (Ganzfried, Wang &
Chiswick 2024, Alg 2-5; the posteriors and ``build_model`` are in ``model.py``, the options in
docs/modeling.md): the default strategy for the first H hands, then the best response to the
posterior, solved lazily one hole of ours at a time (an information set's best action depends
only on the deals of its hole cards) once per change of the posterior; with a finite
``config.safety_budget`` mixed with the default as far as ``safety.py``'s bankroll allows.
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
import math
from typing import TYPE_CHECKING, ClassVar, NamedTuple

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.limit import expected_values
from oppmodel.modeling.games.acpc.betting import CALL, NUM_ACTIONS
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.solved import profile_or_default
from oppmodel.modeling.mbbr import _limit_kernels as kernels
from oppmodel.modeling.mbbr import snapshot as snapshot_format
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Prior, Response
from oppmodel.modeling.mbbr.evidence import Evidence, hand_evidence
from oppmodel.modeling.mbbr.holes import HoleSplit, hole_split
from oppmodel.modeling.mbbr.memory import ENTRY_BYTES, array_bytes
from oppmodel.modeling.mbbr.safety import SafetyBankroll
from oppmodel.modeling.mbbr.snapshot import decode_snapshot
from oppmodel.modeling.observation import LimitObservation, validate_limit_observation

if TYPE_CHECKING:
    from oppmodel.modeling.population import Population

MAX_CACHED_EVIDENCE = 8192  # distinct valid observations whose evidence is kept
_OBS_FIELDS = tuple(f.name for f in dataclasses.fields(LimitObservation))


def seat_offset(game: LimitGame, our_position: int, opponent_position: int) -> int:
    """The seat offset d (1..n-1) of an opponent's position from ours, both checked."""
    game.check_position(our_position, "our_position")
    game.check_position(opponent_position, "opponent_position")
    d = (opponent_position - our_position) % game.num_players
    if d == 0:
        raise InvalidArgumentError("opponent_position", "is our own position")
    return d


class OpponentInsight(NamedTuple):
    """One opponent's model with what a person reads it by (``MBBRModel.opponent_insight``)."""

    model: np.ndarray  # the posterior-mean strategy (num_infosets, 3)
    spread: float  # as opponent_model's
    prior: np.ndarray  # the prior mean (num_infosets, 3)
    concentration: np.ndarray  # alpha_0 per information set; empty: none (samples posterior)
    run_start: int  # the hand the run the models rest on began at (change detection)
    safety_bankroll: float  # chips learning may still lose (inf: no budget binds)
    names: tuple[tuple[int, str], ...] | None = None  # (row, name) of a game naming per session


class MBBRModel(abc.ABC):
    """The posterior-independent part of MBBR in a limit game (see the module docstring); a
    subclass implements one posterior. Build one with :func:`build_model`."""

    POSTERIOR: ClassVar[Posterior | None]  # the posterior it implements (None: any)
    guarded = False  # a run's: its change-detection bank's bankroll has a live hypothesis

    def __init__(
        self,
        game: LimitGame,
        config: MBBRConfig,
        *,
        default_strategy: np.ndarray | None = None,
        prior_mean: np.ndarray | None = None,
        population: Population | None = None,
        evidence: dict[LimitObservation, Evidence] | None = None,
    ) -> None:
        """``evidence``: a cache of observations' evidence shared with other models of ``game``
        (a change-detection bank's runs share one); ``population``: the fitted prior of
        ``prior="population"`` (its mean is the prior mean)."""
        config.validate()  # InvalidArgumentError naming the field; then the class's posterior
        if self.POSTERIOR is not None and config.posterior != self.POSTERIOR:
            name = f"{type(self).__name__} is the {self.POSTERIOR.value!r} posterior"
            raise InvalidArgumentError("posterior", name)
        if (config.prior == Prior.POPULATION) != (population is not None):
            raise InvalidArgumentError(
                "population", "is given with prior 'population' and only with it (a fitted one)"
            )
        self.game = game
        self.config = config
        self.population = population
        self.default_strategy = profile_or_default(game, default_strategy, "default_strategy")
        self.prior_mean = (
            profile_or_default(game, prior_mean, "prior_mean")
            if population is None
            else population.mean()
        )
        self.hands_observed = 0
        self._holes = hole_split(game)
        self._evidence = {} if evidence is None else evidence
        self._profiles: dict[int, tuple[int, np.ndarray]] = {}  # p -> (version, models profile)
        self._lazy: dict[tuple[int, Response], _LazyResponse] = {}
        self._choice = np.empty(game.num_infosets, dtype=np.int64)  # scratch of ``_ensure``
        self._sweep_scratch = np.zeros(game.num_infosets * NUM_ACTIONS)  # counterfactual values
        self._build_posterior()
        # The bankroll that bounds what learning costs against the default (safety.py)
        self._safety = None  # an infinite budget never binds: plain MBBR
        if not math.isinf(config.safety_budget):
            self._safety = SafetyBankroll(game, self.default_strategy, config.safety_budget)

    @abc.abstractmethod
    def _build_posterior(self) -> None:
        """Set every attribute of the posterior, at the prior; ResourceExhaustedError, first,
        if its tables would exceed its limit."""

    @abc.abstractmethod
    def _update(self, p: int, obs: LimitObservation, evidence: Evidence) -> None:
        """Bayes-update the posterior of position ``p`` with a validated hand and its evidence."""

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
        """A model like this one at the prior, sharing what hands never change (change detection
        opens one every ``change.GRID`` hands: building one costs more than the hands between).
        Only for a model without a safety bankroll (a run's)."""
        run = object.__new__(type(self))
        run.__dict__.update(self.__dict__)
        run.hands_observed = 0
        run._profiles, run._lazy = {}, {}
        run._reset_posterior()
        return run

    def _solve_hole(self, p: int, kind: Response, h: int, strategy: np.ndarray) -> float:
        """The ``kind`` response's (pure) rows of the information sets of position ``p`` with
        hole ``h``, into ``strategy``; returns the value summed over those deals. The ``mean``
        response here; the sample posterior adds ``bayes``."""
        return kernels.solve_hole(
            *self._holes.packed[p][h], self._models_profile(p), p, self._sweep_scratch,
            self._choice, self._holes.infosets_of_hole[p][h], strategy,
        )  # fmt: skip

    def observe(self, obs: LimitObservation) -> None:
        """Bayes-update the posterior of our position in ``obs`` with what that seat saw.
        InvalidArgumentError / IllegalActionError naming the field, and nothing changed, if the
        dealer could not have shown it."""
        p, evidence = obs.position, self._evidence_of(obs)  # validates (the position first)
        if self._safety is not None:  # book the hand as played, before the posterior moves
            self._safety.record(
                obs, lambda h: self._candidate_rows(p, h), evidence, self._models_profile
            )
        self._update(p, obs, evidence)
        self.hands_observed += 1

    def _evidence_of(self, obs: LimitObservation) -> Evidence:
        """The evidence of ``obs``, checking and validating it the first time it is seen (a hit
        of the cache is equal to a valid observation)."""
        try:
            evidence = self._evidence.get(obs)  # the posteriors key their caches by it
        except TypeError:
            evidence = None  # unhashable: the checks below name the field
        if evidence is None:
            missing = [name for name in _OBS_FIELDS if not hasattr(obs, name)]
            if missing:  # another record (a Kuhn presentation's HandObservation, say)
                raise InvalidArgumentError(
                    "observation", f"has no {', '.join(missing)}: not what a seat sees of a hand"
                )
            validate_limit_observation(self.game, obs)
            hash(obs)  # a valid observation whose field is unhashable (a list of cards, say)
            evidence = hand_evidence(self.game, obs)
            if len(self._evidence) < MAX_CACHED_EVIDENCE:
                self._evidence[obs] = evidence
        return evidence

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

    def opponent_counts(self) -> np.ndarray:
        """(n - 1, n, num_infosets, 3) each opponent's expected action counts at the information
        sets of every position it played, opponent i sitting i + 1 seats after us: what the
        population prior is fitted from (``oppmodel.modeling.population``). The Dirichlet
        posterior's; InvalidArgumentError under one that keeps none."""
        raise InvalidArgumentError("posterior", "only 'dirichlet' keeps counts to fit a population")

    def opponent_insight(self, our_position: int, opponent_position: int) -> OpponentInsight:
        """``opponent_model`` beside the prior mean, the concentration per information set
        (its Dirichlet marginals give credible intervals), the run start and the bankroll."""
        d = seat_offset(self.game, our_position, opponent_position)
        model, spread = self._opponent_model(our_position, d)
        prior = self.prior_mean[opponent_position].copy()
        return OpponentInsight(
            model.copy(),
            spread,
            prior,
            self._concentration(our_position, d),
            self.run_start,
            self.safety_bankroll(),
        )

    def _concentration(self, p: int, d: int) -> np.ndarray:
        """alpha_0 (prior weight + expected visits) per information set of the opponent at
        offset ``d`` of ``p``; empty for a posterior without one (the samples')."""
        return np.zeros(0)

    def safety_bankroll(self) -> float:
        """The least bankroll in chips over the safety budget's live hypotheses, before the
        next hand's budget: what learning may still lose (inf: no budget, or none live)."""
        if self._safety is None or not self._safety.live:
            return math.inf
        return float(self._safety.bank[self._safety.alive].min())

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
        if self._safety is None or not self._safety.live:  # what is played is the candidate
            return candidate
        for h, rows in enumerate(self._holes.infosets_of_hole[our_position]):
            candidate[rows] = self._safety.policy(
                our_position, h, *self._candidate_rows(our_position, h)
            )[0]
        return candidate

    def played(self, our_position: int) -> tuple[np.ndarray, float]:
        """What the agent plays now in ``our_position`` (:meth:`policy`) and its expected value
        per hand against the posterior-mean models: beside the mean response's value, what the
        default phase and the safety budget hold back."""
        policy = self.policy(our_position)
        profile = self._models_profile(our_position).copy()
        profile[our_position] = policy
        return policy, float(expected_values(self.game, profile)[our_position])

    def safety_share(self, our_position: int, infoset: int) -> float:
        """The share of the response in what is played at ``infoset`` of ``our_position`` now:
        the share of its hole (1 without a safety budget)."""
        self._check_infoset(our_position, infoset)
        if self._safety is None or not self._safety.live:
            return 1.0
        h = int(self._holes.hole_of_infoset[our_position][infoset])
        return self._safety.policy(our_position, h, *self._candidate_rows(our_position, h))[1]

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
        h = int(self._holes.hole_of_infoset[our_position][infoset])
        if self._safety is not None and self._safety.live:
            played = self._safety.policy(our_position, h, *self._candidate_rows(our_position, h))
            return played[0][self._holes.row_in_hole[our_position][infoset]].copy()
        if self.hands_observed < self.config.hands_default:
            return self.default_strategy[our_position, infoset].copy()
        lazy = self._response_of(our_position, None)
        self._ensure(our_position, lazy, h)
        return lazy.strategy[infoset].copy()

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
        """The response of a checked position ``p`` to its posterior now (holes solved lazily);
        ``kind`` None: the configured one; InvalidArgumentError names a bad one."""
        try:
            kind = self.config.response if kind is None else Response(kind or self.config.response)
        except ValueError:
            names = Response.names()
            raise InvalidArgumentError("kind", f"must be one of {names}, got {kind!r}") from None
        version = self._version(p)
        lazy = self._lazy.get((p, kind))
        if lazy is None:
            lazy = self._lazy[(p, kind)] = _LazyResponse(self.game, p, kind, self._holes)
        if lazy.version != version:  # solved again hole by hole, in the same arrays
            lazy.values.fill(np.nan)
            lazy.version = version
        return lazy

    def _ensure(self, p: int, lazy: _LazyResponse, h: int) -> None:
        if math.isnan(lazy.values[h]):
            lazy.values[h] = self._solve_hole(p, lazy.kind, h, lazy.strategy)

    def snapshot(self) -> bytes:
        """The model's state after the hands observed so far, in the format of ``snapshot.py``:
        per position p the posterior's ``state()`` as ``p<p>.<name>`` (the Dirichlet posterior's
        observations as ``p<p>.key_position``, ``key_betting``, ``key_cards``; the mixture
        priors' beside it, the mixture's second fit as ``p<p>.u.<name>``); with a safety
        budget the bankroll's as ``safety.<name>``."""
        return snapshot_format.encode(*self.snapshot_parts())

    def snapshot_parts(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The header and named arrays that ``snapshot()`` encodes."""
        arrays = self._state()
        if self._safety is not None:
            arrays.update({f"safety.{name}": a for name, a in self._safety.state().items()})
        return {**self._snapshot_identity(), "hands_observed": self.hands_observed}, arrays

    def restore(self, blob: bytes) -> None:
        """Replace the state with a ``snapshot()``'s; SnapshotError (and nothing changed) if it
        is not a snapshot of a model with this game, configuration and prior mean (or, with a
        safety budget, has no bankroll: one taken before limit games had it)."""
        hands, arrays = decode_snapshot(blob, self._snapshot_identity())
        safety = self._safety
        if safety is not None:  # checked first: a snapshot without a bankroll changes nothing
            safety = safety.restored(arrays)
        self._restore_state(arrays, hands)
        self._safety = safety
        self.hands_observed = hands
        self._profiles.clear()
        self._lazy.clear()

    def _snapshot_identity(self) -> dict:
        """What a snapshot must agree on with this model: the posterior, the player count, the
        configuration (``MBBRConfig.stored_fields``), the prior mean's and the rules' hashes and
        the fitted population's digest."""
        prior_mean = np.ascontiguousarray(self.prior_mean, dtype=np.float64).tobytes()
        rules = self.game.gamedef.to_text().encode()
        population = {} if self.population is None else {"population": self.population.digest()}
        return {
            "posterior": self.config.posterior,
            "num_players": self.game.num_players,
            "config": self.config.stored_fields(),
            "prior_mean_sha256": hashlib.sha256(prior_mean).hexdigest(),
            "game_sha256": hashlib.sha256(rules).hexdigest(),
            **population,
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


class _LazyResponse:
    """A response of one position, solved hole by hole for the posterior's ``version``."""

    __slots__ = ("kind", "strategy", "values", "version")

    def __init__(self, game: LimitGame, p: int, kind: Response, holes: HoleSplit) -> None:
        self.kind = kind
        self.version: int | None = None
        self.strategy = np.zeros((game.num_infosets, NUM_ACTIONS))  # filled hole by hole
        self.strategy[len(game.infosets(p)) :, CALL] = 1.0  # padding
        self.values = np.full(len(holes.subtrees[p]), np.nan)  # per hole, over its deals
