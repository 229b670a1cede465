"""Perfect-information sessions: opponents' model weights learned from their choices.

Sturtevant et al. 2006, "Learning in Prob-Max^n". Each opponent i of a session has
models ``m_{i,0..N_i-1}`` and a Dirichlet(alpha_i) prior over its model weights w_i. An observed
choice t of opponent i contributes a likelihood vector ``L_t[j] = P(choice | model j)``; the
posterior of w_i given its choices is computed by the collapsed Gibbs sampler of
``oppmodel.modeling.perfect_info.model_weights.gibbs_posterior`` with the session's settings and the
seed ``opponent_seed(session seed, i)``. The posterior is therefore a pure function of (the
opponent's stored likelihood vectors, the settings, the seed): it is computed on demand and cached
by the opponent's choice count, and a restart (which reloads the stored vectors) gives identical
numbers.

Storage: ``server/perfect_info_store.py``, in the server's store (SQLite or PostgreSQL); a choice
is acknowledged only once it is committed.

Sequence numbers run 1, 2, ... per session across its opponents. The choices of one stream message
are checked together and stored all or none: ``s <= choices_observed`` is a resend, acknowledged
again if it equals the stored choice and refused (FAILED_PRECONDITION) if it differs; the next
number is new; anything larger is a gap (FAILED_PRECONDITION).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field
from typing import TypeVar

import numpy as np

from oppmodel.modeling.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    ResourceExhaustedError,
    UnknownGameError,
)
from oppmodel.modeling.games.spades import bidding
from oppmodel.modeling.games.spades.cards import N_PLAYERS, deal
from oppmodel.modeling.games.spades.scoring import MODEL_LABELS
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.modeling.perfect_info.model_weights import GibbsPosterior, gibbs_posterior
from oppmodel.modeling.perfect_info.spades_search import probmaxn_search
from oppmodel.server.metrics import Metrics
from oppmodel.server.perfect_info_store import Choice, PerfectInfoRow, PerfectInfoStore
from oppmodel.server.storage import StaleSessionError
from oppmodel.server.storage_sql import SqlStore
from oppmodel.server.tasks import ShieldedTasks

T = TypeVar("T")
log = logging.getLogger("oppmodel.server")

SPADES3P = "spades3p"
GAME_MODELS: dict[str, tuple[str, ...]] = {SPADES3P: MODEL_LABELS}
"""Games a session can be about, with the model names their search knows."""
GAME_OPPONENTS: dict[str, int] = {SPADES3P: N_PLAYERS - 1}


@dataclass(frozen=True)
class PerfectInfoLimits:
    """Server-side bounds of perfect-information sessions; exceeding one is RESOURCE_EXHAUSTED."""

    max_sessions: int = 10_000
    max_label_length: int = 128
    max_models: int = 16
    max_children: int = 256  # children of one choice given as utilities
    max_choices_per_message: int = 1024
    # Gibbs work behind one posterior: choices x (sweeps + burn_in) x chains (~25M per second here)
    max_gibbs_updates: int = 250_000_000
    max_sweeps: int = 100_000  # burn-in included
    max_chains: int = 16
    max_search_cards: int = 7  # cards a player may still hold in a searched Spades position
    max_live_sessions: int = 1000


@dataclass(frozen=True)
class GibbsConfig:
    """Settings of the collapsed Gibbs sampler (``gibbs_posterior``)."""

    sweeps: int = 1000
    burn_in: int = 200
    chains: int = 4
    level: float = 0.95


@dataclass(frozen=True)
class OpponentSpec:
    """One opponent: label, model names, and the Dirichlet prior (one alpha per model)."""

    label: str
    models: tuple[str, ...]
    alpha: tuple[float, ...]


@dataclass(frozen=True)
class PerfectInfoSpec:
    """Everything a session is created from; stored as JSON."""

    game: str
    opponents: tuple[OpponentSpec, ...]
    gibbs: GibbsConfig
    seed: int

    def to_json(self) -> dict:
        """A JSON-serialisable dict."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> PerfectInfoSpec:
        """Inverse of ``to_json``."""
        return cls(
            game=data["game"],
            opponents=tuple(
                OpponentSpec(o["label"], tuple(o["models"]), tuple(float(a) for a in o["alpha"]))
                for o in data["opponents"]
            ),
            gibbs=GibbsConfig(**data["gibbs"]),
            seed=int(data["seed"]),
        )

    def opponent_index(self, label: str, field_name: str) -> int:
        """Index of the opponent called ``label`` (InvalidArgumentError naming ``field_name``)."""
        for i, opponent in enumerate(self.opponents):
            if opponent.label == label:
                return i
        labels = [o.label for o in self.opponents]
        raise InvalidArgumentError(field_name, f"{label!r} is not one of {labels}")


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


@dataclass(frozen=True)
class ChoiceAck:
    """The acknowledgement of one choice: committed (now or before)."""

    sequence: int
    duplicate: bool


@dataclass(frozen=True)
class PerfectInfoInfo:
    """What callers see of a session."""

    session_id: str
    spec: PerfectInfoSpec
    choices_observed: int
    created_unix_ms: int


def validate_spec(spec: PerfectInfoSpec, limits: PerfectInfoLimits) -> None:
    """Raise InvalidArgumentError (field paths under ``config``) or ResourceExhaustedError."""
    if spec.game not in GAME_MODELS:
        raise UnknownGameError("config.game", f"unknown game {spec.game!r}; try {SPADES3P!r}")
    known = GAME_MODELS[spec.game]
    wanted = GAME_OPPONENTS[spec.game]
    if len(spec.opponents) != wanted:
        raise InvalidArgumentError(
            "config.opponents", f"{spec.game} has {wanted} opponents, got {len(spec.opponents)}"
        )
    labels: set[str] = set()
    for i, opponent in enumerate(spec.opponents):
        where = f"config.opponents[{i}]"
        if not opponent.label or len(opponent.label) > limits.max_label_length:
            raise InvalidArgumentError(
                f"{where}.label", f"must be 1..{limits.max_label_length} characters"
            )
        if opponent.label in labels:
            raise InvalidArgumentError(f"{where}.label", f"{opponent.label!r} is used twice")
        labels.add(opponent.label)
        if not opponent.models:
            raise InvalidArgumentError(f"{where}.models", "needs at least one model")
        if len(opponent.models) > limits.max_models:
            raise ResourceExhaustedError(
                f"{where}.models: at most {limits.max_models} models per opponent"
            )
        for j, name in enumerate(opponent.models):
            if name not in known:
                raise InvalidArgumentError(
                    f"{where}.models[{j}]", f"unknown model {name!r} for {spec.game}; use {known}"
                )
            if name in opponent.models[:j]:
                raise InvalidArgumentError(f"{where}.models[{j}]", f"{name!r} is given twice")
        if len(opponent.alpha) != len(opponent.models):
            raise InvalidArgumentError(
                f"{where}.alpha", f"needs {len(opponent.models)} entries, got {len(opponent.alpha)}"
            )
        if not all(np.isfinite(a) and a > 0 for a in opponent.alpha):
            raise InvalidArgumentError(
                f"{where}.alpha", f"entries must be finite and > 0, got {list(opponent.alpha)}"
            )
    g = spec.gibbs
    bounds = (("sweeps", g.sweeps, 4), ("burn_in", g.burn_in, 0), ("chains", g.chains, 2))
    for name, value, low in bounds:
        if value < low:
            raise InvalidArgumentError(f"config.gibbs.{name}", f"must be >= {low}, got {value}")
    if not 0.0 < g.level < 1.0:
        raise InvalidArgumentError("config.gibbs.level", f"must be in (0, 1), got {g.level}")
    if g.sweeps + g.burn_in > limits.max_sweeps or g.chains > limits.max_chains:
        raise ResourceExhaustedError(
            f"config.gibbs: sweeps + burn_in <= {limits.max_sweeps} and chains <= "
            f"{limits.max_chains} on this server"
        )
    if not 0 <= spec.seed < 2**64:
        raise InvalidArgumentError("config.seed", "must be in 0..2^64-1")


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


def _summary(
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


# -- live sessions ---------------------------------------------------------------------------------
@dataclass
class PerfectInfoSession:
    """A session in memory: its spec, its choices, and posteriors cached by choice count."""

    session_id: str
    owner: str
    created_unix_ms: int
    spec: PerfectInfoSpec
    choices: list[Choice]
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    cache: dict[int, tuple[int, WeightsSummary]] = field(default_factory=dict)
    deleted: bool = False
    evicted: bool = False  # dropped from memory; writers fetch the current copy instead

    def info(self) -> PerfectInfoInfo:
        """A snapshot of the public description."""
        return PerfectInfoInfo(self.session_id, self.spec, len(self.choices), self.created_unix_ms)

    def likelihoods_of(self, index: int) -> list[tuple[float, ...]]:
        """The likelihood vectors of opponent ``index``, in sequence order."""
        return [c.likelihoods for c in self.choices if c.opponent == index]


class PerfectInfoManager:
    """Creates, loads, updates and queries perfect-information sessions."""

    def __init__(
        self,
        storage: SqlStore,
        *,
        executor: Executor,
        metrics: Metrics,
        limits: PerfectInfoLimits,
    ) -> None:
        self.store = PerfectInfoStore(storage)
        self.executor = executor
        self.metrics = metrics
        self.limits = limits
        self._live: OrderedDict[str, PerfectInfoSession] = OrderedDict()
        self._changes = ShieldedTasks()

    async def drain(self) -> None:
        """Wait for every state change in progress (their callers may be gone) to finish."""
        await self._changes.drain()

    async def _blocking(self, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    async def cpu(self, fn: Callable[..., T], *args: object) -> T:
        """Run CPU-heavy work (Gibbs sampling, search) on the worker pool."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    # -- sessions --------------------------------------------------------------------------------
    async def create(self, owner: str, spec: PerfectInfoSpec) -> PerfectInfoInfo:
        """Validate and store a new session."""
        validate_spec(spec, self.limits)
        session = PerfectInfoSession(
            session_id=uuid.uuid4().hex,
            owner=owner,
            created_unix_ms=int(time.time() * 1000),
            spec=spec,
            choices=[],
        )
        row = PerfectInfoRow(session.session_id, owner, session.created_unix_ms, spec.to_json())
        await self._blocking(
            lambda: self.store.create_session(row, max_sessions=self.limits.max_sessions)
        )
        self._remember(session)
        log.info("perfect-information session created", extra={"session_id": session.session_id})
        return session.info()

    def _remember(self, session: PerfectInfoSession) -> None:
        self._live[session.session_id] = session
        self._live.move_to_end(session.session_id)
        for session_id, candidate in list(self._live.items()):
            if len(self._live) <= self.limits.max_live_sessions:
                break
            if candidate is not session and not candidate.lock.locked():
                candidate.evicted = True
                del self._live[session_id]  # reloaded from storage on next use

    def _evict(self, session: PerfectInfoSession) -> None:
        """Drop our copy of a session; whoever holds it fetches the current one."""
        session.evicted = True
        if self._live.get(session.session_id) is session:
            del self._live[session.session_id]

    async def get(self, owner: str, session_id: str) -> PerfectInfoSession:
        """The session (loaded from storage on first use); another owner's is not found."""
        session = self._live.get(session_id)
        if session is None:
            row = await self._blocking(self.store.get_session, session_id)
            if row is not None:
                session = self._live.get(session_id)  # loaded meanwhile by another call
            if row is not None and session is None:
                choices = await self._blocking(self.store.load_choices, session_id)
                session = self._live.get(session_id)  # loaded meanwhile by another call?
                if session is None:
                    session = PerfectInfoSession(
                        session_id=session_id,
                        owner=row.owner,
                        created_unix_ms=row.created_unix_ms,
                        spec=PerfectInfoSpec.from_json(row.spec),
                        choices=choices,
                    )
                    self._remember(session)
        if session is None or session.deleted or session.owner != owner:
            raise NotFoundError(f"session_id: no session {session_id!r}")
        self._live.move_to_end(session_id)
        return session

    async def delete(self, owner: str, session_id: str) -> None:
        """Delete a session and its stored choices (whole even if the caller is cancelled)."""
        await self._changes.run(self._delete(owner, session_id))

    async def _delete(self, owner: str, session_id: str) -> None:
        session = await self.get(owner, session_id)
        async with session.lock:
            await self._blocking(self.store.delete_session, session_id)
            session.deleted = True
            self._live.pop(session_id, None)
        log.info("perfect-information session deleted", extra={"session_id": session_id})

    # -- choices ---------------------------------------------------------------------------------
    async def observe(
        self, session: PerfectInfoSession, items: Sequence[tuple[int, Choice]]
    ) -> tuple[list[ChoiceAck], int, PerfectInfoSession]:
        """Store the new choices of one message (all or none).

        Returns (acks, choices observed, the session's live copy: ``session`` unless it was
        evicted from memory and reloaded meanwhile).

        Raises FailedPreconditionError on a gap or on a resend whose content differs, and
        ResourceExhaustedError when an opponent's posterior would exceed the Gibbs work limit;
        nothing is stored then. Storing and remembering run as one shielded change, so a
        cancelled caller leaves memory equal to the database.
        """
        return await self._changes.run(self._observe(session, items))

    async def _observe(
        self, session: PerfectInfoSession, items: Sequence[tuple[int, Choice]]
    ) -> tuple[list[ChoiceAck], int, PerfectInfoSession]:
        while True:
            async with session.lock:
                if session.deleted:
                    raise NotFoundError(f"session_id: no session {session.session_id!r}")
                if not session.evicted:
                    with contextlib.suppress(StaleSessionError):  # evicted: go round again
                        return await self._observe_locked(session, items)
            session = await self.get(session.owner, session.session_id)

    async def _observe_locked(
        self, session: PerfectInfoSession, items: Sequence[tuple[int, Choice]]
    ) -> tuple[list[ChoiceAck], int, PerfectInfoSession]:
        before = len(session.choices)
        new: list[Choice] = []
        acks: list[ChoiceAck] = []
        for k, (sequence, choice) in enumerate(items):
            where = f"observations[{k}].sequence"
            expected = before + len(new) + 1
            if sequence < 1:
                raise InvalidArgumentError(where, "must be >= 1")
            if sequence > expected:
                count = await asyncio.wrap_future(self.store.count_choices(session.session_id))
                if count != before:  # another process appended: reload and check again
                    self._evict(session)
                    raise StaleSessionError(session.session_id, count, before + 1)
                raise FailedPreconditionError(
                    f"{where}: expected {expected}, got {sequence} (a gap)"
                )
            if sequence < expected:
                stored = (
                    session.choices[sequence - 1]
                    if sequence <= before
                    else new[sequence - before - 1]
                )
                if stored != choice:
                    raise FailedPreconditionError(
                        f"{where}: {sequence} was already stored with different content"
                    )
                acks.append(ChoiceAck(sequence, True))
                continue
            new.append(choice)
            acks.append(ChoiceAck(sequence, False))
        g = session.spec.gibbs
        per_choice = (g.sweeps + g.burn_in) * g.chains
        most = self.limits.max_gibbs_updates // per_choice
        counts = np.bincount(
            [c.opponent for c in (*session.choices, *new)],
            minlength=len(session.spec.opponents),
        )
        if any(counts[c.opponent] > most for c in new):
            raise ResourceExhaustedError(
                f"observations: at most {most} choices per opponent with these Gibbs "
                f"settings on this server ({self.limits.max_gibbs_updates} updates)"
            )
        if new:
            try:
                await asyncio.wrap_future(
                    self.store.append_choices(session.session_id, before + 1, new)
                )
            except (StaleSessionError, NotFoundError) as exc:
                # another process appended (our copy is stale: reload and check again) or
                # deleted the session
                session.deleted = isinstance(exc, NotFoundError)
                self._evict(session)
                raise
            session.choices.extend(new)
            self.metrics.observations.inc(len(new))
        return acks, len(session.choices), session

    async def weights(self, session: PerfectInfoSession, index: int) -> WeightsSummary:
        """The posterior of opponent ``index``'s weights given its choices so far (cached)."""
        likelihoods = session.likelihoods_of(index)
        count = len(likelihoods)
        cached = session.cache.get(index)
        if cached is not None and cached[0] == count:
            return cached[1]
        post = await self.cpu(weights_posterior, session.spec, index, likelihoods)
        summary = _summary(session.spec, index, count=count, post=post)
        current = session.cache.get(index)
        if current is None or current[0] < count:
            session.cache[index] = (count, summary)
        return summary

    async def learned_weights(self, session: PerfectInfoSession) -> list[np.ndarray]:
        """Each opponent's posterior mean over the game's models (0 for models it lacks)."""
        known = GAME_MODELS[session.spec.game]
        rows = []
        for index, opponent in enumerate(session.spec.opponents):
            summary = await self.weights(session, index)
            row = np.zeros(len(known))
            for name, mean in zip(opponent.models, summary.mean, strict=True):
                row[known.index(name)] = mean
            rows.append(row)
        return rows
