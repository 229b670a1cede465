"""The package's cached numba kernels compiled once before a whole run's workers start.

Numba writes a kernel's machine code to its cache only once a process has compiled it, and two
processes that call the same uncached kernel both compile it. In a fresh clone (CI's every run)
the suite's first minutes did that many times over: each pytest-xdist worker's first test starts
an ``oppmodel serve`` (whose warm-up compiles every model kernel, ~67 s of CPU) beside MBBR agents
compiling the same kernels, and test_cli_interrupt starts thirteen commands at once. Here the
kernels compile once, split between two processes (one a core; 9 of their 78 kernels shared),
while the workers start and collect the tests, and before they run one; every later process
loads them from the cache.

A run of the whole suite (no files named) warms them when the kernels' sources (theirs and those
their modules import from: any file of modeling/) changed since the last warm-up that finished (a
stamp in pytest's cache): a run with nothing changed costs nothing, one after an edit that staled
no kernel ~6 s of CPU beside the workers' start (the kernels loaded from the cache).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGE_FOLDERS = ("modeling", "server", "clients")
STAMP_KEY = "oppmodel/numba-warm-up"
DEADLINE = 1800  # seconds: a bound on a hang (~60 s quiet, 550 s at load 30 in a fresh clone)


def _models() -> None:
    """Every model kernel a session reaches: the service's own warm-up (MBBR's posteriors,
    priors, responses, snapshots on Kuhn and Leduc)."""
    from oppmodel.server.session_models import warm_up_models

    warm_up_models()


def _the_others() -> None:
    """The kernels the commands reach besides the models': perfect information (Gibbs, Spades),
    CFR, exact evaluation, the match loop (no MBBR agent: the other process compiles its)."""
    from oppmodel.clients.cli import main
    from oppmodel.server.perfect_info_weights import warm_up_perfect_info

    warm_up_perfect_info()
    for argv in (  # exact evaluation last: the models' best responses share its sweep
        "solve leduc3p --iterations 2 --out s.json",
        "match --game leduc3p --agents cfr,maniac@0.35,cfr --hands 5 --duplicates 1",
        "eval --game leduc3p --profile maniac",
    ):
        assert main(argv.split()) == 0, argv


GROUPS = {"models": _models, "others": _the_others}  # each a process of its own


def sources_stamp() -> str:
    """What the cached kernels depend on (``modeling/kernel_cache.py``: a kernel's file and the
    files its module imports from, all in modeling/): every source file of modeling/ and any
    other that declares a kernel (its path, size and modification time), numba's and Python's
    versions."""
    sources = sorted(
        path
        for folder in PACKAGE_FOLDERS
        for path in (REPOSITORY / folder).rglob("*.py")
        if folder == "modeling" or "cache=True" in path.read_text()
    )
    described = [
        f"{p.relative_to(REPOSITORY)} {p.stat().st_size} {p.stat().st_mtime_ns}" for p in sources
    ]
    described += [version("numba"), sys.version]
    return hashlib.sha256("\n".join(described).encode()).hexdigest()


def _status(process: subprocess.Popen[bytes]) -> int | None:
    """Its exit status, or None if it is still at work after DEADLINE seconds."""
    try:
        return process.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        return None


class WarmUp:
    """The warm-up's processes (``GROUPS``, in parallel), at work from ``start`` to ``finish``."""

    def __init__(self, cache: pytest.Cache, stamp: str) -> None:
        self.cache, self.stamp = cache, stamp
        self.folder = tempfile.TemporaryDirectory(prefix="oppmodel-warm-up-")
        self.logs = {group: Path(self.folder.name, f"{group}.log") for group in GROUPS}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        for group, log in self.logs.items():
            with log.open("w") as sink:
                self.processes[group] = subprocess.Popen(
                    [sys.executable, __file__, group],
                    cwd=self.folder.name,
                    stdout=subprocess.DEVNULL,
                    stderr=sink,
                )

    def finish(self) -> None:
        """Wait for the processes; a warm-up that fails is reported and leaves no stamp (the
        tests then compile what they call, as without it)."""
        try:
            failed = {
                g: self.logs[g].read_text()[-2000:]
                for g, p in self.processes.items()
                if _status(p) != 0
            }
        finally:  # one that took too long, or the run's own end (Ctrl-C)
            self.stop()
        if failed:
            for group, error in failed.items():
                print(f"numba warm-up {group!r} failed or took over {DEADLINE} s (the tests")
                print(f"compile their kernels):\n{error}")
            return
        self.cache.set(STAMP_KEY, self.stamp)

    def stop(self) -> None:
        """End the processes (those at work killed) and remove their folder."""
        for process in self.processes.values():
            process.kill()
            process.wait()
        self.folder.cleanup()


def start_warm_up(config: pytest.Config) -> WarmUp | None:
    """The warm-up started if this run is the whole suite and the kernels changed since the
    last warm-up that finished (None: nothing to do). The run's workers start and collect the
    tests beside it (~16 s of CPU each, on the core the shorter group leaves idle); the run's
    process calls ``finish`` before it sends them a test."""
    cache = getattr(config, "cache", None)  # None with -p no:cacheprovider
    if cache is None or config.args_source is not pytest.Config.ArgsSource.TESTPATHS:
        return None
    stamp = sources_stamp()
    if cache.get(STAMP_KEY, None) == stamp:
        return None
    return WarmUp(cache, stamp)


if __name__ == "__main__":
    GROUPS[sys.argv[1]]()
