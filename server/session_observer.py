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
that much at most, however long the session.
"""

from __future__ import annotations

import asyncio
import functools
import logging
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
            if (
                session.replay_seconds >= self.limits.snapshot_seconds
                or session.hands_observed - session.snapshot_hands >= self.limits.snapshot_hands
            ):
                await self._snapshot(session)
        self.metrics.observations.inc(len(new))

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
        try:
            state = await session.host.compute("snapshot")
        except Exception as exc:  # a bug; the hands are stored and applied all the same
            log.error("snapshot failed", extra={"session_id": session.session_id}, exc_info=exc)
            return
        saving = self.storage.save_snapshot_async(
            session.session_id, SnapshotRow(session.hands_observed, state)
        )
        saving.add_done_callback(functools.partial(_log_snapshot_failure, session.session_id))
        session.snapshot_hands = session.hands_observed
        session.replay_seconds = 0.0


def _log_snapshot_failure(session_id: str, saving: Future) -> None:
    if not saving.cancelled() and saving.exception() is not None:
        log.warning(
            "snapshot not stored", extra={"session_id": session_id}, exc_info=saving.exception()
        )
