"""Suite-wide settings: hypothesis without per-example deadlines; no reads outside the repository.

CI and developers share 2-core machines that are often busy; a wall-clock deadline per example
turns load into flaky failures without testing anything about the code.

The suite must pass in any clone of the repository, so a test may read only what the repository
holds (test data lives in ``tests/data/``), what it wrote itself (temporary folders), and the
installed Python with its packages and the system's own files. An audit hook watches every file
opened for reading in this process while the tests run; a read elsewhere (a sibling
``../shared`` folder, say) fails the test that made it. ``test_self_contained.py`` scans the test
sources for absolute paths, which also covers what subprocesses started by tests read.
"""

from __future__ import annotations

import atexit
import importlib.machinery
import importlib.util
import os
import shutil
import signal
import site
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase
from numba_warm_up import WarmUp, start_warm_up
from postgres_support import (
    MISSING,
    PostgresServer,
    find_bin,
    shared_server,
    stop_shared_server,
)

from oppmodel.modeling.games.acpc.solved import CACHE_ENV

REPOSITORY = Path(__file__).resolve().parent.parent

# The repository's root is not on sys.path: its folders import only as oppmodel.* (installed), never
# by their bare names. The scripts, which are not installed and which tests run too, import as
# benchmarks.* and experiments.* (what two scripts share is in the package, oppmodel.clients.lab).
for _folder in ("benchmarks", "experiments"):
    _scripts = importlib.machinery.ModuleSpec(_folder, None, is_package=True)
    _scripts.submodule_search_locations = [str(REPOSITORY / _folder)]
    sys.modules[_folder] = importlib.util.module_from_spec(_scripts)

settings.register_profile(
    "oppmodel",
    deadline=None,
    database=DirectoryBasedExampleDatabase(REPOSITORY / ".hypothesis" / "examples"),
)
settings.load_profile("oppmodel")

# Strategies solved and card abstractions built on first use (games/acpc/solved.py, abstraction.py)
# are cached in a folder of this run, never in the user's cache. The run's process makes it and
# removes it at its exit; its pytest-xdist workers, started after this file is read, inherit it
# (RUN_CACHE) and share it, so what costs tens of CPU seconds (hold'em's preflop table, its default
# abstraction) is made once a run, not once a worker; subprocesses the tests start inherit it too.
RUN_CACHE = "OPPMODEL_TEST_RUN_CACHE"
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(RUN_CACHE):
    os.environ[CACHE_ENV] = os.environ[RUN_CACHE]
else:
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="oppmodel-test-cache-")
    os.environ[RUN_CACHE] = os.environ[CACHE_ENV]
    atexit.register(shutil.rmtree, os.environ[CACHE_ENV], True)
    # the run's PostgreSQL server, if a worker started one (below), ends before its record goes
    atexit.register(stop_shared_server, Path(os.environ[CACHE_ENV]))

# Folders a test may read besides the repository: temporary files, the interpreter and its
# packages, the user's cache folder (matplotlib's font list, say: rebuilt when missing), and the
# operating system's own files (devices, /proc, locales, certificates).
SYSTEM_FOLDERS = tuple(
    os.sep + name for name in ("dev", "proc", "sys", "etc", "usr", "lib", "lib64", "bin", "run")
)


def _allowed_roots() -> tuple[str, ...]:
    paths = {
        str(REPOSITORY),
        tempfile.gettempdir(),
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        *sysconfig.get_paths().values(),
        *site.getsitepackages(),
        site.getusersitepackages(),
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        *SYSTEM_FOLDERS,
    }
    roots = {os.path.realpath(p) for p in paths} | {os.path.abspath(p) for p in paths}
    return tuple(root.rstrip(os.sep) + os.sep for root in roots)


_ALLOWED = _allowed_roots()
_reads: list[str] = []  # outside reads during the running test (server threads included)


class OutsideRepositoryReadError(RuntimeError):
    """A test read a file outside the repository (not an OSError, so no caller swallows it)."""


def _is_read(mode: object, flags: object) -> bool:
    if isinstance(mode, str):
        return "r" in mode or "+" in mode
    return isinstance(flags, int) and flags & os.O_ACCMODE != os.O_WRONLY


def _outside(path: str) -> bool:
    if (os.path.abspath(path) + os.sep).startswith(_ALLOWED):
        return False
    return not (os.path.realpath(path) + os.sep).startswith(_ALLOWED)


def _audit(event: str, args: tuple) -> None:
    if event != "open":
        return
    path, mode, flags = args
    if isinstance(path, int) or path is None or not _is_read(mode, flags):
        return
    path = os.fsdecode(path)
    if _outside(path):
        _reads.append(path)
        raise OutsideRepositoryReadError(
            f"{path} is outside the repository: keep test data in tests/data/"
        )


sys.addaudithook(_audit)  # stays for the whole process; audit hooks cannot be removed


@pytest.fixture(autouse=True)
def _no_reads_outside_the_repository() -> Iterator[None]:
    """Fail the test if it (or a thread it started) read a file outside the repository, even
    where a caller caught the error the audit hook raised."""
    _reads.clear()
    yield
    if _reads:
        found = ", ".join(sorted(set(_reads)))
        _reads.clear()
        pytest.fail(f"read outside the repository: {found}")


@pytest.fixture
def reads_outside_the_repository() -> list[str]:
    """The outside reads recorded so far in this test, for a test of the guard itself (clear the
    list after checking it, or the test fails)."""
    return _reads


# -- SIGINT as the run found it ----------------------------------------------------------------
# How this process handles SIGINT: its handler and whether the main thread blocks it. A child
# process inherits an ignored disposition and a blocked mask (through fork and exec), so a test
# that leaves either changed makes every command a later test starts deaf to Ctrl-C
# (test_cli_interrupt's); the guard below names the test that did and restores the state.
def sigint_handling() -> tuple[object, frozenset[int]]:
    """(SIGINT's handler, the signals the calling thread blocks)."""
    return signal.getsignal(signal.SIGINT), frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, ()))


_SIGINT_AT_START = sigint_handling()


def restore_sigint_handling() -> str | None:
    """Restore SIGINT's handling as the run found it; what had changed (None: nothing)."""
    handler, blocked = sigint_handling()
    start_handler, start_blocked = _SIGINT_AT_START
    changed = []
    if handler != start_handler:
        changed.append(f"SIGINT's handler is {handler!r}, not {start_handler!r}")
        signal.signal(signal.SIGINT, start_handler)  # type: ignore[arg-type]
    if blocked != start_blocked:
        changed.append(f"the blocked signals are {sorted(blocked)}, not {sorted(start_blocked)}")
        signal.pthread_sigmask(signal.SIG_SETMASK, start_blocked)
    return "; ".join(changed) or None


@pytest.fixture(autouse=True)
def _sigint_handling_kept() -> Iterator[None]:
    """Fail the test that leaves SIGINT's handling changed (see ``sigint_handling``), after
    restoring it for the tests that follow in this process."""
    yield
    changed = restore_sigint_handling()
    if changed is not None:
        pytest.fail(f"the test left SIGINT's handling changed: {changed}")


# -- the storage backends ------------------------------------------------------------------------
STORES = ("sqlite", "postgresql")


def _postgres_bin() -> Path:
    """The PostgreSQL programs' folder (skipped without the package, except in CI)."""
    bin_dir = find_bin()
    if bin_dir is None:
        if os.environ.get("CI") == "true":
            pytest.fail(MISSING + "; CI must test it")
        pytest.skip(MISSING)
    return bin_dir


@pytest.fixture(scope="session")
def postgres_server() -> PostgresServer:
    """One PostgreSQL server for the whole run, shared by its workers (each test's databases
    are its own): started by the first worker that needs it, stopped by the run's process at
    its exit (a server is ~1 s of CPU and seconds of waiting to start)."""
    return shared_server(_postgres_bin(), Path(os.environ[RUN_CACHE]))


@pytest.fixture(scope="module")
def own_postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of the test module's own, which its tests may ``pause`` and
    ``resume`` (the whole run's must keep serving)."""
    server = PostgresServer(_postgres_bin())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=STORES)
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a test's store lives, once per backend: a SQLite file's path, or the URL of a fresh
    database on the session's PostgreSQL server (dropped afterwards)."""
    if request.param == "sqlite":
        yield str(tmp_path / "db.sqlite")
    else:
        yield request.getfixturevalue("postgres_url")


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a fresh database on the session's PostgreSQL server (dropped afterwards)."""
    url = postgres_server.new_database()
    try:
        yield url
    finally:
        postgres_server.drop_database(url)


# -- the numba kernels compiled once a run, before its first test (numba_warm_up.py) -----------
_warm_up: list[WarmUp] = []  # the run's process's, while at work


def pytest_sessionstart(session: pytest.Session) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the run's process: before it starts workers
        _warm_up.extend(filter(None, [start_warm_up(session.config)]))


def _warmed_up() -> None:
    while _warm_up:
        _warm_up.pop().finish()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers() -> int:
    """``-n auto``: one worker more than the cores this process may use. Part of the suite's
    wall time is waiting (servers starting, subprocesses, sockets, the docs' shell blocks): on a
    quiet 2-core machine two workers left a core idle for ~17-20% of it; a third fills that."""
    return len(os.sched_getaffinity(0)) + 1


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished() -> None:
    """The run's process, as a worker has collected the tests: none is sent to a worker before
    the warm-up has finished (the other workers go on collecting meanwhile)."""
    _warmed_up()


def pytest_collection_finish() -> None:
    """A run without workers: its tests start once the warm-up has finished."""
    _warmed_up()


def pytest_sessionfinish() -> None:
    """A run that ends before it started its tests (Ctrl-C, an error collecting them) ends the
    warm-up's processes."""
    while _warm_up:
        _warm_up.pop().stop()


# -- the order the files run in ------------------------------------------------------------------
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files holding a ``slow`` test first, each file's tests in their order: the run's workers
    (pytest-xdist, a file per worker at a time) start the longest files first and finish together
    instead of waiting on one long file at the end."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: keeps each file's order
