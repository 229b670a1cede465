"""The observation protocol: hands checked against a session's sequence, committed, applied.

Per session, sequence numbers run 1, 2, ...: sequence ``s`` with ``s <= hands_observed`` is a
resend: acknowledged again if it equals the stored observation, refused (FAILED_PRECONDITION) if
it differs; ``s == hands_observed + 1`` is validated, committed, then applied; anything larger is
a gap (FAILED_PRECONDITION). Nothing changes on a refused observation. Commit and apply succeed or
fail together, and a failed apply undoes its commit. Only the last ``Limits.recent_hands`` hands
are kept in memory for comparing resends; older ones are read back. Several processes may serve
one shared store (PostgreSQL): the store accepts a commit only at the session's stored version
(``server/storage.py``), so a process whose copy fell behind another's appends drops it, reloads
and classifies the observations again; no hand is applied twice.

A snapshot is stored after an update once the hands since the last one took
``Limits.snapshot_seconds`` to apply or number ``Limits.snapshot_hands``, so a reload replays about
that much at most, however long the session; and not before their replay is worth
``Limits.snapshot_cost_factor`` times what the last snapshot cost (``_snapshot_due``), so a large
snapshot (a hold'em session's, ~5 MB) is written as often as it pays, not every 0.2 s.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Sequence
from concurrent.futures import Future

from oppmodel.modeling.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    UnavailableError,
)
from oppmodel.modeling.games.interface import HandKey
from oppmodel.server.live_session import LiveSession, Reload, SessionLock
from oppmodel.server.metrics import Metrics
from oppmodel.server.session_cache import SessionCache
from oppmodel.server.session_models import key_of_row
from oppmodel.server.session_spec import Ack, Limits, Observation
from oppmodel.server.storage import ObservationRow, SessionStore, SnapshotRow, StaleSessionError

log = logging.getLogger("oppmodel.server")
STALE_TRIES = 3  # reloads of a session that other processes keep appending to, then UNAVAILABLE


class SessionObserver:
    """Applies observed hands to live sessions (``SessionManager.observe``, which runs each call
    as a change a cancelled caller cannot cut short)."""

    def __init__(
        self,
        storage: SessionStore,
        cache: SessionCache[LiveSession],
        limits: Limits,
        metrics: Metrics,
        reload: Reload,
    ) -> None:
        """``reload(owner, session_id)``: the session's current copy, loaded again if ours was
        dropped (``SessionManager.get``)."""
        self.storage = storage
        self.cache = cache
        self.limits = limits
        self.metrics = metrics
        self._reload = reload

    async def observe(
        self, session: LiveSession, items: Sequence[tuple[int, Observation]], all_or_nothing: bool
    ) -> tuple[list[Ack], Exception | None]:
        """``_observe_at_version``, again on a reloaded copy while the store says that another
        process appended to the session meanwhile (our copy was stale; nothing was applied).

        Hands committed by an earlier chunk of this call are acknowledged as duplicates then."""
        for _ in range(STALE_TRIES):
            try:
                return await self._observe_at_version(session, items, all_or_nothing)
            except StaleSessionError:
                session = await self._reload(session.owner, session.session_id)
        raise UnavailableError(
            f"session_id: session {session.session_id!r} is being written by other servers; "
            "send again"
        )

    async def _observe_at_version(
        self, session: LiveSession, items: Sequence[tuple[int, Observation]], all_or_nothing: bool
    ) -> tuple[list[Ack], Exception | None]:
        async with SessionLock(session, True, self._reload) as session:
            before = session.hands_observed
            new: list[Observation] = []
            acks: list[Ack] = []
            error: Exception | None = None
            for i, (sequence, obs) in enumerate(items):
                expected = before + len(new) + 1
                field = f"observations[{i}].sequence" if all_or_nothing else "observation.sequence"
                if sequence < 1:
                    error = InvalidArgumentError(field, "must be >= 1")
                    break
                if sequence > expected:
                    await self._check_version(session)  # a gap only if no one else moved on
                    error = FailedPreconditionError(
                        f"{field}: expected {expected}, got {sequence} (a gap)"
                    )
                    break
                if sequence < expected:
                    applied = (
                        await self._applied(session, sequence)
                        if sequence <= before
                        else session.game.hand_key(new[sequence - before - 1])
                    )
                    if applied != session.game.hand_key(obs):
                        error = FailedPreconditionError(
                            f"{field}: {sequence} was already applied with different content"
                        )
                        break
                    acks.append(Ack(sequence, True, before + len(new)))
                    continue
                new.append(obs)
                acks.append(Ack(sequence, False, before + len(new)))
            if error is not None and all_or_nothing:
                return [], error
            try:
                while new:
                    size = self._chunk_size(session)
                    await self._commit_and_apply(session, new[:size])
                    new = new[size:]
            except StaleSessionError:  # the store moved on without us: our copy must go
                self.cache.forget(session)
                raise
            except NotFoundError:  # deleted by another process
                session.deleted = True
                self.cache.forget(session)
                raise
            return acks, error

    async def _check_version(self, session: LiveSession) -> None:
        """StaleSessionError (and our copy dropped) if the store holds other than the hands our
        copy has applied: another process appended to the session (a shared store)."""
        stored = await asyncio.wrap_future(self.storage.observation_count_async(session.session_id))
        if stored != session.hands_observed:
            self.cache.forget(session)
            raise StaleSessionError(session.session_id, stored, session.hands_observed + 1)

    def _chunk_size(self, session: LiveSession) -> int:
        """Hands committed and applied together: about ``Limits.snapshot_seconds`` of updates.

        What is committed but not yet in a snapshot is what a reload after a crash replays, so
        a large batch for a costly session goes in several commits, each followed by a
        snapshot when one is due.
        """
        if session.seconds_per_hand <= 0.0:
            return 16  # not measured yet
        return max(1, int(self.limits.snapshot_seconds / session.seconds_per_hand))

    async def _commit_and_apply(self, session: LiveSession, new: list[Observation]) -> None:
        """Commit ``new`` (the next hands of the session) and apply them, both or neither;
        store a snapshot if one is due. The caller holds the session's writers' lock."""
        before = session.hands_observed
        keys = [session.game.hand_key(obs) for obs in new]
        rows = [ObservationRow(before + 1 + i, *key) for i, key in enumerate(keys)]
        await asyncio.wrap_future(self.storage.append_observations_async(session.session_id, rows))
        session.stored_hands = before + len(rows)
        async with session.model_lock:
            try:
                seconds = await session.host.observe(new)
            except Exception:
                # Never half done: the commit is undone and the model, which may hold part of
                # the hands, is dropped (the next use reloads it from storage).
                await asyncio.wrap_future(
                    self.storage.truncate_observations_async(session.session_id, keep=before)
                )
                self.cache.forget(session)
                raise
            session.replay_seconds += seconds
            session.seconds_per_hand = seconds / len(new)
            session.hands_observed += len(new)
            session.record(keys)
            self.cache.resize(session)
            if self._snapshot_due(session):
                await self._snapshot(session)
        self.metrics.observations.inc(len(new))

    def _snapshot_due(self, session: LiveSession) -> bool:
        """Whether to store a snapshot now: the hands since the last one number
        ``Limits.snapshot_hands``, or took ``Limits.snapshot_seconds`` to apply and at least
        ``Limits.snapshot_cost_factor`` times the last snapshot's cost.

        A snapshot costs its computing and its writing (``LiveSession.snapshot_cost``) and saves
        a reload the replay of the hands before it. Weighing the two bounds the time snapshots
        take to about 1 / factor of the time spent applying hands, for any model: with
        ``snapshot_seconds`` alone a hold'em session (~5-10 ms a hand, 0.3 s at a solve) wrote
        its ~5 MB snapshot every ~15-20 hands, ~0.3 MB a hand. What a reload replays stays
        under about max(snapshot_seconds, factor x a snapshot's cost).
        """
        limits = self.limits
        budget = max(limits.snapshot_seconds, limits.snapshot_cost_factor * session.snapshot_cost)
        hands = session.hands_observed - session.snapshot_hands
        return session.replay_seconds >= budget or hands >= limits.snapshot_hands

    async def _applied(self, session: LiveSession, sequence: int) -> HandKey:
        """The applied hand ``sequence`` (<= hands_observed): from memory if recent, else read."""
        first_recent = session.hands_observed - len(session.recent) + 1
        if sequence >= first_recent:
            return session.recent[sequence - first_recent]
        row = await asyncio.wrap_future(
            self.storage.load_observation_async(session.session_id, sequence)
        )
        if row is None:  # never written so: the database was edited under the server
            raise RuntimeError(f"session {session.session_id}: hand {sequence} is not stored")
        return key_of_row(row)

    async def _snapshot(self, session: LiveSession) -> None:
        """Store a snapshot of the session's model (under its model lock, after an update).

        Not awaited: the hands are durable already, and a snapshot only shortens reloads; it is
        queued behind the commit of its hands, so it never covers a hand that is not stored.
        """
        start = time.perf_counter()
        try:
            state = await session.host.compute("snapshot")
        except Exception as exc:  # a bug; the hands are stored and applied all the same
            log.error("snapshot failed", extra={"session_id": session.session_id}, exc_info=exc)
            return
        saving = self.storage.save_snapshot_async(
            session.session_id, SnapshotRow(session.hands_observed, state)
        )
        session.snapshot_cost = self.limits.snapshot_write_seconds(len(state))
        saving.add_done_callback(functools.partial(_snapshot_stored, session, start))
        session.snapshot_hands = session.hands_observed
        session.replay_seconds = 0.0


def _snapshot_stored(session: LiveSession, start: float, saving: Future) -> None:
    """The snapshot asked for at ``start`` is written (its cost, for ``_snapshot_due``, is the
    seconds it took if longer than its bytes' count) or could not be (logged)."""
    if saving.cancelled():
        return
    if saving.exception() is not None:
        log.warning(
            "snapshot not stored",
            extra={"session_id": session.session_id},
            exc_info=saving.exception(),
        )
        return
    session.snapshot_cost = max(session.snapshot_cost, time.perf_counter() - start)
