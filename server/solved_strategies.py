"""The service's solved strategies: MBBR's default strategy and prior mean in a game no bundle
holds, solved once per game, kept in the store, shared by every session of the game.

A session of such a game needs its game's solved strategy (``modeling/games/acpc/solved.py``: CFR+
to nash_conv <= 1 mA/h or 1 mbb/h, or 1000 iterations). :meth:`SolvedStrategies.of` answers it from
memory, else from the store's ``solved_strategies`` table (keyed by the SHA-256 of the game's
canonical rules), else starts one solve of the game in a child process (the CFR kernels hold the
GIL: on a thread they would stall the event loop) and waits for it up to :data:`WAIT_SECONDS`. A
solve that takes longer answers UNAVAILABLE, "solving game ...: retry in N s" (N the estimate of
what is left), to this caller and to every other one until it is stored; the solve goes on
meanwhile, and the first call after it finished gets the strategy. A stored strategy survives
restarts, and every process sharing the store reads the same one."""

from __future__ import annotations

import asyncio
import logging
import math
import multiprocessing
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from oppmodel.modeling.errors import GameSolvingError
from oppmodel.modeling.games.acpc import solved
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import parse_profile
from oppmodel.server.storage import SessionStore

log = logging.getLogger("oppmodel.server")
WAIT_SECONDS = 5.0  # a create or load waits this long for a solve, then answers UNAVAILABLE
START_SECONDS = 5.0  # a generous start of the solver's process, in the estimate of "retry in"

Cpu = Callable[..., Awaitable[Any]]  # runs a function on the server's worker pool


class SolvedStrategies:
    """The solved strategies of the sessions' games (see the module docstring)."""

    def __init__(
        self,
        storage: SessionStore,
        cpu: Cpu,
        *,
        preload: list[str],
        wait_seconds: float = WAIT_SECONDS,
    ) -> None:
        """``preload``: what the model workers' fork server imports (the solver forks from it)."""
        self.storage = storage
        self.preload = preload
        self.wait_seconds = wait_seconds
        self._cpu = cpu
        self._known: dict[str, np.ndarray] = {}  # game key -> the stored strategy
        self._solving: dict[str, tuple[asyncio.Task, float]] = {}  # key -> (solve, its start)
        self._pool: ProcessPoolExecutor | None = None

    async def of(self, game: LimitGame) -> np.ndarray:
        """The game's solved strategy (read-only); UnavailableError while it is being solved
        beyond ``wait_seconds``."""
        key = solved.game_key(game)
        known = self._known.get(key)
        if known is not None:
            return known
        text = await asyncio.wrap_future(self.storage.load_solved_async(key))
        if text is not None:
            return await self._keep(game, key, text)
        solved.check_solvable(game)  # too large: refused now, with the size and the bound
        if key not in self._solving:
            task = asyncio.create_task(self._solve(game, key))
            task.add_done_callback(_log_failure)
            self._solving[key] = (task, time.monotonic())
        task, started = self._solving[key]
        try:
            return await asyncio.wait_for(asyncio.shield(task), self.wait_seconds)
        except TimeoutError:
            total = START_SECONDS + solved.estimated_seconds(game)
            left = max(total - (time.monotonic() - started), 1.0)
            raise GameSolvingError(
                f"config.game: solving game {game.name} (first use of these rules) for MBBR's "
                f"default strategy and prior mean: retry in {math.ceil(left)} s"
            ) from None

    async def _solve(self, game: LimitGame, key: str) -> np.ndarray:
        """Solve in the child process, store, keep; the entry in ``_solving`` goes either way."""
        try:
            log.info("solving game", extra={"game": game.name, "game_key": key})
            loop = asyncio.get_running_loop()
            rules = game.gamedef.to_text()
            text = await loop.run_in_executor(self._solver(), solved.solve_text, rules)
            await asyncio.wrap_future(self.storage.save_solved_async(key, text))
            log.info("game solved and stored", extra={"game": game.name, "game_key": key})
            return await self._keep(game, key, text)
        finally:
            del self._solving[key]

    async def _keep(self, game: LimitGame, key: str, text: str) -> np.ndarray:
        profile = await self._cpu(parse_profile, game, text, f"solved strategy {key}")
        profile.setflags(write=False)
        self._known[key] = profile
        return profile

    def _solver(self) -> ProcessPoolExecutor:
        if self._pool is None:  # from the fork server: a fork of a threaded server is unsafe
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(self.preload)
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
        return self._pool

    async def close(self) -> None:
        """Stop solving (a solve in progress is abandoned: the next server starts it again)."""
        for task, _ in list(self._solving.values()):
            task.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def _log_failure(task: asyncio.Task) -> None:
    """A failed solve is logged (its waiters, if any, got the error; the next call retries)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("solving a game failed", exc_info=task.exception())
