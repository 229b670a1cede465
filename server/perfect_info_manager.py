"""Perfect-information sessions in memory: created, loaded, observed and queried.

The posterior of an opponent's weights (``server/perfect_info_weights.py``) is computed on demand
and cached by the opponent's choice count. Storage: ``server/perfect_info_store.py``, in the
server's store (SQLite or PostgreSQL); a choice is acknowledged only once it is committed. The
sessions kept in memory are a ``SessionCache`` (load once, least recently used leave beyond the
limits).

Sequence numbers run 1, 2, ... per session across its opponents. The choices of one stream message
are checked together and stored all or none: ``s <= choices_observed`` is a resend, acknowledged
again if it equals the stored choice and refused (FAILED_PRECONDITION) if it differs; the next
number is new; anything larger is a gap (FAILED_PRECONDITION). Several processes may share one
store: choices are stored only at the stored version, and a copy found behind it is reloaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from oppmodel.modeling.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    ResourceExhaustedError,
)
from oppmodel.server.metrics import Metrics
from oppmodel.server.perfect_info_spec import (
    GAME_MODELS,
    PerfectInfoLimits,
    PerfectInfoSpec,
    validate_spec,
)
from oppmodel.server.perfect_info_store import Choice, PerfectInfoRow, PerfectInfoStore
from oppmodel.server.perfect_info_weights import WeightsSummary, summary, weights_posterior
from oppmodel.server.session_cache import SessionCache
from oppmodel.server.storage import StaleSessionError
from oppmodel.server.storage_sql import SqlStore
from oppmodel.server.tasks import ShieldedTasks

T = TypeVar("T")
log = logging.getLogger("oppmodel.server")
# A stored choice in memory, measured with tracemalloc: ~200 bytes with 2 models, ~650 with 16.
CHOICE_BYTES = 144
CHOICE_BYTES_PER_MODEL = 32
PI_SESSION_OVERHEAD_BYTES = 4096


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
    nbytes: int = 0  # estimated memory, as counted against PerfectInfoLimits.memory_bytes

    def estimate_nbytes(self) -> int:
        """The session's estimated memory: its choices (at the widest opponent's models) and a
        fixed overhead (posterior summaries, locks)."""
        models = max(len(o.models) for o in self.spec.opponents)
        return PI_SESSION_OVERHEAD_BYTES + len(self.choices) * (
            CHOICE_BYTES + CHOICE_BYTES_PER_MODEL * models
        )

    def busy(self) -> bool:
        """Whether a writer holds the session (it is not evicted then)."""
        return self.lock.locked()

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
        self._changes = ShieldedTasks()
        self.cache: SessionCache[PerfectInfoSession] = SessionCache(
            budget_bytes=limits.memory_bytes,
            max_sessions=limits.max_live_sessions,
            tasks=self._changes,
            what="PerfectInfoLimits.memory_bytes",
        )

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
        self.cache.remember(session)
        log.info("perfect-information session created", extra={"session_id": session.session_id})
        return session.info()

    async def get(self, owner: str, session_id: str) -> PerfectInfoSession:
        """The session (loaded from storage on first use); another owner's is not found. On a
        store that other processes write too, a copy behind the stored choices is reloaded."""
        session = await self.cache.get(session_id, lambda: self._load(session_id))
        if session is None or session.deleted or session.owner != owner:
            raise NotFoundError(f"session_id: no session {session_id!r}")
        if self.store.storage.shared:
            stored = await asyncio.wrap_future(self.store.count_choices(session_id))
            if stored != len(session.choices):  # another process moved it on: a fresh copy
                self.cache.forget(session)
                return await self.get(owner, session_id)
        return session

    async def _load(self, session_id: str) -> PerfectInfoSession | None:
        row = await self._blocking(self.store.get_session, session_id)
        if row is None:
            return None
        choices = await self._blocking(self.store.load_choices, session_id)
        session = PerfectInfoSession(
            session_id=session_id,
            owner=row.owner,
            created_unix_ms=row.created_unix_ms,
            spec=PerfectInfoSpec.from_json(row.spec),
            choices=choices,
        )
        self.cache.remember(session)
        return session

    async def delete(self, owner: str, session_id: str) -> None:
        """Delete a session and its stored choices (whole even if the caller is cancelled)."""
        await self._changes.run(self._delete(owner, session_id))

    async def _delete(self, owner: str, session_id: str) -> None:
        session = await self.get(owner, session_id)
        async with session.lock:
            await self._blocking(self.store.delete_session, session_id)
            session.deleted = True
            self.cache.forget(session)
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
                    self.cache.forget(session)
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
                self.cache.forget(session)
                raise
            session.choices.extend(new)
            self.cache.resize(session)
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
        weights = summary(session.spec, index, count=count, post=post)
        current = session.cache.get(index)
        if current is None or current[0] < count:
            session.cache[index] = (count, weights)
        return weights

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
