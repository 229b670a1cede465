"""Background work yields the CPU to the server's event loop.

The event loop serves every call, and gRPC's asyncio server takes several of its turns to accept
each one, so a moment the loop waits for a CPU delays every call queued behind it. The model
worker and the store's writer do work with slack (the updates, the commits). On Linux they run at
a nice value ``BACKGROUND_NICE`` above the loop's, so when the cores are short the scheduler runs
the loop first; idle cores still run them at full speed. On a 2-core machine with the load
generator beside the server this halved the time the loop waited for a CPU (0.17-0.24 of its
time to 0.11-0.14) and cut GetAction's p99 at 500 hands/s in 4 of 5 alternated runs
(``benchmarks/RESULTS.md``, "The event loop first").
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

BACKGROUND_NICE = 10  # added to the nice value of a background thread (the maximum is 19)


def yield_to_the_loop() -> None:
    """Raise the calling thread's nice value by ``BACKGROUND_NICE`` (Linux, where the nice value
    belongs to a thread; elsewhere nothing changes)."""
    if sys.platform != "linux":
        return
    thread = threading.get_native_id()
    with contextlib.suppress(OSError):  # a sandbox may refuse it: run at the loop's priority
        nice = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(nice + BACKGROUND_NICE, 19))
