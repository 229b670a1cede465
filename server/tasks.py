"""State changes that a cancelled RPC cannot cut in half.

A gRPC call is cancelled (deadline, client gone, server stopping) by cancelling the coroutine that
serves it, at whichever ``await`` it has reached. A state change that spans several awaits (commit
to the database, then apply to the model in memory) must not stop between them, or memory and the
database disagree. ``ShieldedTasks.run`` runs such a change as a task of its own that the RPC
awaits shielded (as through ``asyncio.shield``): cancelling the RPC abandons the wait, never the
change, which runs to its end (holding its locks until then). ``drain`` waits for every change
still running, so a server stops only once its state is whole.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class ShieldedTasks:
    """Runs coroutines to completion even when their caller is cancelled."""

    def __init__(self) -> None:
        self._running: set[asyncio.Task] = set()

    async def run(self, change: Coroutine[Any, Any, T]) -> T:
        """Run ``change`` in its own task and return its result; a cancelled caller stops waiting
        but the task runs on (its outcome is then dropped).

        What ``asyncio.shield`` does, with one done callback of the task that also forgets it
        (shield's own future and callbacks cost three more callbacks on the event loop per
        change, and the server makes a change per observation)."""
        waiter: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(change)
        self._running.add(task)
        task.add_done_callback(functools.partial(self._finished, waiter))
        return await waiter

    def _finished(self, waiter: asyncio.Future[T], task: asyncio.Task[T]) -> None:
        self._running.discard(task)
        if waiter.cancelled():
            return  # the caller stopped waiting; an error is reported as never retrieved
        if task.cancelled():
            waiter.cancel()
        elif (error := task.exception()) is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(task.result())

    def start(self, change: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Start ``change`` as a task that is kept (and drained) until it ends."""
        task = asyncio.ensure_future(change)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    async def drain(self) -> None:
        """Wait until every started task has ended."""
        while self._running:
            await asyncio.wait(set(self._running))
