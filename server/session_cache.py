"""The sessions a server keeps in memory: loaded once, least recently used evicted beyond a budget.

One cache serves every kind of session (opponent-model sessions in ``server/sessions.py``,
perfect-information ones in ``server/perfect_info_manager.py``); each manager owns one, with its own
budget. What the cache guarantees:

- **Load once**: concurrent ``get`` calls of a session that is not in memory share one load, which
  runs as a shielded task (a cancelled caller never leaves half a load behind).
- **A budget in bytes** (and optionally in sessions): after a session is remembered, the least
  recently used idle sessions leave memory until the total fits; a busy one (a lock held) stays.
  A session that alone exceeds the budget is refused with ResourceExhaustedError.
- **One live copy**: an evicted session is only marked (``evicted``); whoever still holds it finds
  the mark under its lock and fetches the current copy, so there is never more than one copy of a
  session's state in memory.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

from oppmodel.modeling.errors import ResourceExhaustedError
from oppmodel.server.tasks import ShieldedTasks


class Cacheable(Protocol):
    """What the cache needs of a session."""

    session_id: str
    nbytes: int  # as last counted against the budget
    evicted: bool

    def estimate_nbytes(self) -> int:
        """The session's estimated memory now."""
        ...

    def busy(self) -> bool:
        """Whether the session is in use (a lock held): it is not evicted then."""
        ...


S = TypeVar("S", bound=Cacheable)


class SessionCache(Generic[S]):
    """Sessions in memory, least recently used first (see the module's docstring)."""

    def __init__(
        self,
        *,
        budget_bytes: int,
        max_sessions: int | None = None,
        tasks: ShieldedTasks,
        what: str,
        on_change: Callable[[int, int], None] | None = None,
        on_forget: Callable[[S], None] | None = None,
    ) -> None:
        """``what``: how an error names the budget (e.g. "oppmodel serve --memory-mb");
        ``on_change(sessions, bytes)``: called whenever the contents change (metrics);
        ``on_forget(session)``: called once for each copy of a session that leaves memory (it
        may release what the copy holds elsewhere)."""
        self.budget_bytes = budget_bytes
        self.max_sessions = max_sessions
        self.total_bytes = 0  # the sum of the cached sessions' ``nbytes``
        self._tasks = tasks
        self._what = what
        self._on_change = on_change
        self._on_forget = on_forget
        self._sessions: OrderedDict[str, S] = OrderedDict()
        self._loading: dict[str, asyncio.Task[S | None]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def ids(self) -> list[str]:
        """The ids of the cached sessions, least recently used first."""
        return list(self._sessions)

    def peek(self, session_id: str) -> S | None:
        """The cached session, or None; does not count as a use."""
        return self._sessions.get(session_id)

    def loading(self, session_id: str) -> asyncio.Task[S | None] | None:
        """The load of this session in progress, if any."""
        return self._loading.get(session_id)

    def hit(self, session_id: str) -> S | None:
        """The cached session, now the most recently used; None if it is not in memory (then
        ``get`` loads it). Every request looks its session up: most find it here, without a
        coroutine."""
        session = self._sessions.get(session_id)
        if session is not None:
            self._sessions.move_to_end(session_id)
        return session

    async def get(self, session_id: str, load: Callable[[], Awaitable[S | None]]) -> S | None:
        """The cached session (now the most recently used), else what ``load()`` returns, run
        once however many callers wait for it. ``load`` remembers what it loads itself (it may
        refuse it); None means there is no such session."""
        session = self._sessions.get(session_id)
        if session is not None:
            self._sessions.move_to_end(session_id)
            return session
        task = self._loading.get(session_id)
        if task is None:
            task = self._loading[session_id] = self._tasks.start(_awaited(load))
            task.add_done_callback(lambda _: self._loading.pop(session_id, None))
        return await asyncio.shield(task)

    def check_fits(self, session: S) -> int:
        """The session's estimated bytes; ResourceExhaustedError if it alone exceeds the budget."""
        return self._fitting(session.estimate_nbytes())

    def _fitting(self, nbytes: int) -> int:
        if nbytes > self.budget_bytes:
            raise ResourceExhaustedError(
                f"memory: this session needs about {nbytes / 2**20:.1f} MiB, more than the "
                f"{self.budget_bytes / 2**20:.1f} MiB this server keeps for live sessions "
                f"({self._what})"
            )
        return nbytes

    def remember(self, session: S) -> None:
        """Keep ``session`` as the most recently used, counted at its current size; evict the
        least recently used idle sessions beyond the budget. ResourceExhaustedError (and nothing
        kept) if the session alone exceeds it."""
        self._remember(session, self.check_fits(session))

    def _remember(self, session: S, nbytes: int) -> None:
        if self._sessions.get(session.session_id) is session:
            self.total_bytes -= session.nbytes
        session.nbytes = nbytes
        self.total_bytes += nbytes
        self._sessions[session.session_id] = session
        self._sessions.move_to_end(session.session_id)
        if self._over_budget():  # (a copy of the order only then: this runs after every commit)
            for candidate in list(self._sessions.values()):
                if not self._over_budget():
                    break
                if candidate is session or candidate.busy():
                    continue
                self.forget(candidate)
        self._changed()

    def resize(self, session: S) -> None:
        """Count a cached session's current size (its state can grow up to its bounds): others
        make room if the total exceeds the budget; if it alone grew beyond it, it leaves."""
        if self._sessions.get(session.session_id) is not session:
            return
        nbytes = session.estimate_nbytes()  # (once: this runs after every commit)
        if nbytes == session.nbytes and not self._over_budget():
            self._sessions.move_to_end(session.session_id)  # all that remember() would change
            return
        try:
            self._remember(session, self._fitting(nbytes))
        except ResourceExhaustedError:
            self.forget(session)

    def forget(self, session: S) -> None:
        """Drop ``session`` from memory; holders of it fetch the current copy (``evicted``)."""
        if not session.evicted and self._on_forget is not None:
            self._on_forget(session)
        session.evicted = True
        if self._sessions.get(session.session_id) is session:
            del self._sessions[session.session_id]
            self.total_bytes -= session.nbytes
        self._changed()

    def _over_budget(self) -> bool:
        return self.total_bytes > self.budget_bytes or (
            self.max_sessions is not None and len(self._sessions) > self.max_sessions
        )

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(len(self._sessions), self.total_bytes)


async def _awaited(load: Callable[[], Awaitable[S | None]]) -> S | None:
    return await load()
