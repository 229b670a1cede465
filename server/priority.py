"""Background work yields the CPU to the server's event loop.

The event loop serves every call, and gRPC's asyncio server takes several of its turns to accept
each one, so a moment the loop waits for a CPU delays every call queued behind it. The model
worker does work with slack (the updates, the policies computed ahead). On Linux it runs at a
nice value ``BACKGROUND_NICE`` above the loop's, so when the cores are short the scheduler runs
the loop first; idle cores still run it at full speed. The store's writer stays at the loop's
priority: it commits the hands that calls wait for, and at nice +10 on a machine whose cores
other work filled it was starved past a second (``benchmarks/RESULTS.md``, "The event loop
first").
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
