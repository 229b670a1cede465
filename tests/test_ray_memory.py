"""The memory of ``serve --ray`` (benchmarks/ray_memory.py) sums a whole process tree: children
and grandchildren, shared pages counted once (PSS) where summed RSS counts them per process."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from oppmodel.clients.lab.process_tree import tree_memory

# a child that starts a grandchild (the same interpreter: pages the two share), says so, waits
CHILD = """
import subprocess, sys
grandchild = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                              stdin=subprocess.PIPE)
print("started", flush=True)
sys.stdin.read()
grandchild.stdin.close()
grandchild.wait()
"""


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/PID/smaps_rollup is Linux's")
def test_the_tree_counts_every_process_and_shared_pages_once() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "started\n"
        deadline = time.monotonic() + 60
        while (memory := tree_memory(child.pid))["processes"] < 2:  # the grandchild's exec
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(60)
    assert memory["processes"] == 2
    assert 0 < memory["uss_mb"] < memory["pss_mb"] < memory["rss_mb"]  # two interpreters share
