"""Work that can wait takes turns with the event loop, so requests keep being accepted.

One turn of an asyncio loop runs every callback that was ready when it began. gRPC's asyncio
server accepts one new call per turn, so a turn that runs long leaves the calls arriving meanwhile
waiting in line, and the line drains only as fast as turns go by. Model updates made such turns: a
group commit completes the hands of many sessions at once, and each woken session applied its hand
in the same turn (turns of up to 19 ms with 25 updates were logged at 500 hands/s; every GetAction
behind them waited). With ``TurnTaking`` the updates go one piece per turn, in the order they
asked, whichever session they belong to.
"""

from __future__ import annotations

import asyncio
from collections import deque


class TurnTaking:
    """One piece of deferrable work per turn of the running event loop, first come first served.

    ``await take()``, then do the piece without awaiting anything: the turn is the caller's until
    the loop's next turn begins.
    """

    def __init__(self) -> None:
        self._line: deque[asyncio.Future[None]] = deque()
        self._claimed: asyncio.AbstractEventLoop | None = None  # the loop whose turn is taken

    async def take(self) -> None:
        """Return in a turn of the loop that is the caller's: this one if it is free and no one
        waits, else a later one, after every caller that asked before."""
        loop = asyncio.get_running_loop()
        if self._claimed is not None and self._claimed is not loop:
            self._claimed, self._line = None, deque()  # left by a loop that closed meanwhile
        if self._claimed is None and not self._line:
            self._claim(loop)
            return
        place = loop.create_future()
        self._line.append(place)
        await place  # resolved by ``_next_turn``, which claimed the turn it resumes in

    def _claim(self, loop: asyncio.AbstractEventLoop) -> None:
        self._claimed = loop
        loop.call_soon(self._next_turn)  # runs in the next turn, after this turn's piece

    def _next_turn(self) -> None:
        """The turn that claimed ended: wake the first caller still waiting (it resumes in the
        turn after this one, which is its)."""
        self._claimed = None
        while self._line:
            place = self._line.popleft()
            if not place.done():  # a cancelled caller gave up its place
                place.set_result(None)
                self._claim(asyncio.get_running_loop())
                return
