"""The one session cache both managers use: load once, least recently used out beyond the
budget (bytes or sessions), busy sessions kept, a session too large for the budget refused."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from oppmodel.modeling.errors import ResourceExhaustedError
from oppmodel.server.session_cache import SessionCache
from oppmodel.server.tasks import ShieldedTasks


@dataclass
class Entry:
    session_id: str
    size: int
    in_use: bool = False
    nbytes: int = 0
    evicted: bool = False

    def estimate_nbytes(self) -> int:
        return self.size

    def busy(self) -> bool:
        return self.in_use


def _cache(budget: int, max_sessions: int | None = None) -> SessionCache[Entry]:
    return SessionCache(
        budget_bytes=budget, max_sessions=max_sessions, tasks=ShieldedTasks(), what="test"
    )


def test_concurrent_gets_share_one_load() -> None:
    async def scenario() -> tuple[list[Entry | None], int]:
        cache = _cache(1000)
        loads = 0

        async def load() -> Entry:
            nonlocal loads
            loads += 1
            await asyncio.sleep(0.01)
            entry = Entry("a", 10)
            cache.remember(entry)
            return entry

        got = await asyncio.gather(*(cache.get("a", load) for _ in range(5)))
        again = await cache.get("a", load)
        return [*got, again], loads

    got, loads = asyncio.run(scenario())
    assert loads == 1
    assert all(g is got[0] for g in got)


def test_a_missing_session_loads_as_none_every_time() -> None:
    async def scenario() -> list[Entry | None]:
        cache = _cache(1000)

        async def load() -> None:
            return None

        return [await cache.get("nope", load), await cache.get("nope", load)]

    assert asyncio.run(scenario()) == [None, None]


def test_least_recently_used_idle_sessions_leave_beyond_the_byte_budget() -> None:
    async def scenario() -> None:
        cache = _cache(100)
        a, b, c = Entry("a", 40), Entry("b", 40), Entry("c", 40)
        for e in (a, b):
            cache.remember(e)

        async def never() -> None:
            raise AssertionError("cached: no load")

        await cache.get("a", never)  # a is now the most recently used: b goes first
        cache.remember(c)
        assert cache.ids() == ["a", "c"] and b.evicted and not a.evicted
        assert cache.total_bytes == 80
        a.in_use = True  # busy: skipped; c is older than the newcomer, so c goes
        cache.remember(Entry("d", 40))
        assert cache.ids() == ["a", "d"] and c.evicted and not a.evicted

    asyncio.run(scenario())


def test_a_count_limit_evicts_too() -> None:
    cache = _cache(10**9, max_sessions=2)
    entries = [Entry(str(i), 1) for i in range(4)]
    for e in entries:
        cache.remember(e)
    assert cache.ids() == ["2", "3"] and len(cache) == 2
    assert [e.evicted for e in entries] == [True, True, False, False]


def test_a_session_larger_than_the_budget_is_refused_and_a_grown_one_leaves() -> None:
    cache = _cache(100)
    with pytest.raises(ResourceExhaustedError, match="test"):
        cache.remember(Entry("big", 101))
    assert len(cache) == 0 and cache.total_bytes == 0
    grows = Entry("g", 50)
    cache.remember(grows)
    grows.size = 70
    cache.resize(grows)
    assert cache.total_bytes == 70 and grows.nbytes == 70
    grows.size = 200
    cache.resize(grows)
    assert grows.evicted and "g" not in cache and cache.total_bytes == 0


def test_a_resize_counts_as_a_use_and_reports_only_changes() -> None:
    changes: list[tuple[int, int]] = []
    cache = SessionCache(
        budget_bytes=100, tasks=ShieldedTasks(), what="test", on_change=lambda *c: changes.append(c)
    )
    a, b = Entry("a", 30), Entry("b", 30)
    cache.remember(a)
    cache.remember(b)
    changes.clear()
    cache.resize(a)  # same size: the most recently used now, nothing else changed
    assert cache.ids() == ["b", "a"] and changes == []
    a.size = 40
    cache.resize(a)
    assert cache.total_bytes == 70 and changes == [(2, 70)]
    a.in_use = b.in_use = True
    c = Entry("c", 40)
    cache.remember(c)  # over the budget: every other session is busy
    assert cache.total_bytes == 110 and not (a.evicted or b.evicted)
    a.in_use = False
    cache.resize(c)  # the same size, but still over the budget: the idle one makes room
    assert a.evicted and cache.ids() == ["b", "c"] and changes[-1] == (2, 70)


def test_a_hit_is_a_use_of_a_cached_session_and_never_loads() -> None:
    cache = _cache(1000)
    a, b = Entry("a", 10), Entry("b", 10)
    cache.remember(a)
    cache.remember(b)
    assert cache.hit("a") is a and cache.ids() == ["b", "a"]
    assert cache.hit("c") is None and cache.loading("c") is None and len(cache) == 2
