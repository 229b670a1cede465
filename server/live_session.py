"""A session loaded in memory, and its locks.

Observations of one session are ordered by its writers' lock, held across the commit; the model
itself is updated and read under a second lock held only for the arithmetic, so updates are
applied in order, queries never see a half-applied update, and a query never waits for a commit
(an fsync can take long on a busy disk). A copy evicted or dropped while a caller waited for its
lock is not used: ``SessionLock`` takes the lock of the session's current copy instead.
"""

from __future__ import annotations

import asyncio
import collections
from array import array
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from oppmodel.modeling.errors import NotFoundError
from oppmodel.modeling.games.interface import HandKey
from oppmodel.modeling.mbbr.memory import ENTRY_BYTES
from oppmodel.server.model_hosting import ModelHost
from oppmodel.server.session_spec import Game, SessionInfo, SessionSpec

SESSION_OVERHEAD_BYTES = 8192  # a live session's objects besides its model and hands, measured


@dataclass
class LiveSession:
    """A session loaded in memory.

    ``lock`` orders the writers (observations, deletion) and is held across the commit;
    ``model_lock`` is held only while the model is updated or read, so queries never wait for
    the disk.
    """

    session_id: str
    owner: str
    created_unix_ms: int
    spec: SessionSpec
    game: Game
    host: ModelHost  # the model, here or in a model worker
    hands_observed: int  # observations applied (= the last acknowledged sequence number)
    # The last applied hands (at most Limits.recent_hands) as plain (position, history, cards)
    # tuples, for comparing resends without a read (older resends are compared with storage):
    # the collector untracks tuples of atoms, so they cost a full collection nothing.
    recent: collections.deque[HandKey]
    snapshot_hands: int = 0  # hands folded into the latest stored snapshot
    stored_hands: int = 0  # hands this copy knows are stored (committed; applied or being so)
    replay_seconds: float = 0.0  # what applying the hands after it took: the cost of a reload
    seconds_per_hand: float = 0.0  # what the last update took per hand (0: not measured yet)
    # what the latest snapshot of this copy cost, in seconds (0: none yet): its bytes at
    # Limits.snapshot_write_rate, or from asking the model for it to its store having it if longer
    snapshot_cost: float = 0.0
    nbytes: int = 0  # estimated memory, as counted against Limits.memory_bytes
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    model_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    deleted: bool = False
    evicted: bool = False  # dropped from memory; the next use reloads it from storage
    # Our chips in each applied hand (hand s at index s - 1), what GetWinnings answers: None
    # until a caller first asks (then built from the store, once), then extended as each hand
    # is applied, so a page polling the winnings reads no store
    winnings: array[float] | None = None

    def estimate_nbytes(self) -> int:
        """The session's estimated memory: its model, its recent hands, its winnings, a fixed
        overhead."""
        won = 0 if self.winnings is None else self.winnings.itemsize * len(self.winnings)
        return self.host.nbytes() + len(self.recent) * ENTRY_BYTES + won + SESSION_OVERHEAD_BYTES

    def record(self, keys: list[HandKey]) -> None:
        """Keep what hands just applied (``hands_observed`` counts them already) tell without
        a read: the last ones for comparing resends, our chips in each if kept."""
        self.recent.extend(keys)
        if self.winnings is not None:
            self.winnings.extend(self.game.stored_winnings(*key) for key in keys)

    def busy(self) -> bool:
        """Whether a writer or a query holds the session (it is not evicted then)."""
        return self.lock.locked() or self.model_lock.locked()

    def info(self) -> SessionInfo:
        """A snapshot of the session's public description."""
        return SessionInfo(self.session_id, self.spec, self.hands_observed, self.created_unix_ms)


Reload = Callable[[str, str], Awaitable[LiveSession]]  # (owner, session_id): its current copy


class SessionLock:
    """``async with SessionLock(session, write, reload) as session``: hold a lock of the session's
    current live copy, ``reload``-ed if the one given was evicted; NotFoundError if deleted.

    ``write``: the writers' lock (held across commits); else the model lock (for reads). A class,
    not an ``asynccontextmanager``, because every observation and query enters one on the event
    loop (a generator-based one cost a generator and its frames per use).
    """

    __slots__ = ("_held", "_reload", "_session", "_write")

    def __init__(self, session: LiveSession, write: bool, reload: Reload) -> None:
        self._session = session
        self._write = write
        self._reload = reload
        self._held: asyncio.Lock | None = None

    async def __aenter__(self) -> LiveSession:
        session = self._session
        while True:
            lock = session.lock if self._write else session.model_lock
            await lock.acquire()
            if session.deleted:
                lock.release()
                raise NotFoundError(f"session_id: no session {session.session_id!r}")
            if not session.evicted:
                self._held = lock
                return session
            lock.release()
            session = await self._reload(session.owner, session.session_id)

    async def __aexit__(self, *exc_info: object) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.release()
