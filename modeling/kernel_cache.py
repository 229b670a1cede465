"""numba's ``njit`` with a cache that sees a kernel's dependencies in other files.

numba keys a cached kernel by its own source file only. A kernel that calls (or inlines) a kernel
of another module, or reads one of its constants, keeps its old machine code after that module
changes, until its own file changes: a rebase that changes ``normalise_rows`` in
``mbbr/_limit_kernels.py`` alone leaves ``mixture_prior``'s kernels running the old one, and the
checkout's warm runs give other bits than a fresh clone's cold ones. Here a kernel's source stamp
also holds the hashes of the package's files its module imports from, followed through the
imported modules that declare kernels themselves (a module that does not is a leaf: its
constants and types are read, not compiled); numba compiles again when any of them changes.

Every kernel module takes ``njit`` from here, so the locator is in numba's list before the first
kernel is declared. ``NUMBA_CACHE_DIR`` and numba's other locators still say where the cache is.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from numba import njit
from numba.core import caching

__all__ = ["PACKAGES", "dependency_files", "njit"]

PACKAGES = {"oppmodel"}  # the top-level packages whose kernels' stamps hold their dependencies
# the class holding numba's list of locators (_CacheImpl in older releases; a release without
# either caches by numba's own stamp, which test_kernel_cache tells)
_IMPL: Any = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)


@functools.cache
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    """The SHA-256 of a file's bytes (memoized by its path, mtime and size, as numba does)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _digest(path: str) -> str:
    stat = Path(path).stat()
    return _file_digest(path, stat.st_mtime_ns, stat.st_size)


# a module-level import statement: ``from M import a, b as c`` (names parenthesised over lines or
# not) or ``import M``; imports inside functions are left out (no kernel reads them)
IMPORT = re.compile(
    r"^(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|.*)|import[ \t]+(.*))", re.MULTILINE
)


@functools.cache
def _source_facts(path: str, digest: str) -> tuple[frozenset[tuple[str, str]], bool]:
    """What a source file (of the contents ``digest``) imports, as (module, name) pairs (name ""
    for ``import module``), and whether it declares kernels."""
    text = Path(path).read_text()
    found: set[tuple[str, str]] = set()
    for module, names, modules in IMPORT.findall(text):
        for entry in re.sub(r"#.*", "", names or modules).strip("()").split(","):
            words = entry.split()  # "name" or "name as alias"
            if words:
                found.add((module, words[0]) if module else (words[0], ""))
    return frozenset(found), "njit" in text


def _imported_modules(file: str, top: str) -> set[str]:
    """The loaded modules of package ``top`` that ``file`` imports from (``from P import m``:
    the submodule ``P.m`` when it is one, else ``P``); this module aside, whose ``njit`` is
    numba's and compiled into no kernel."""
    found = set()
    for module, name in _source_facts(file, _digest(file))[0]:
        submodule = f"{module}.{name}"
        found.add(submodule if name and submodule in sys.modules else module)
    found.discard(__name__)
    return {m for m in found if m.partition(".")[0] == top and m in sys.modules}


def dependency_files(name: str) -> list[str]:
    """The source files a kernel of module ``name`` depends on besides its own: the package
    modules it imports from, and theirs in turn where they declare kernels (sorted)."""
    own = sys.modules[name].__file__ or ""
    files: set[str] = set()
    todo = [own]
    while todo:
        for dep in _imported_modules(todo.pop(), name.partition(".")[0]):
            file = sys.modules[dep].__file__
            if file is None or file in files or file == own:
                continue
            files.add(file)
            if _source_facts(file, _digest(file))[1]:
                todo.append(file)
    return sorted(files)


@functools.cache
def _dependencies_stamp(module: ModuleType) -> str:
    """One digest of the contents of ``dependency_files``, once per module object (its kernels
    are declared as it is imported, after its own imports; imported again, it is another)."""
    hasher = hashlib.sha256()
    for file in dependency_files(module.__name__):
        hasher.update(f"{Path(file).name}:{_digest(file)}\n".encode())
    return hasher.hexdigest()


class DependencyStampedLocator(caching._CacheLocator):
    """The locator numba would use for a kernel of ``PACKAGES``, its source stamp joined with
    the digest of the files the kernel's module depends on: a change in any of them is a
    stale cache, as a change in its own file is."""

    def __init__(self, inner: caching._CacheLocator, dependencies: str) -> None:
        self._inner: Any = inner  # numba's locators are unannotated
        self._dependencies = dependencies

    def ensure_cache_path(self) -> None:
        self._inner.ensure_cache_path()

    def get_cache_path(self) -> str:
        return self._inner.get_cache_path()

    def get_disambiguator(self) -> str:
        return self._inner.get_disambiguator()

    def get_source_stamp(self) -> tuple[object, str]:
        return self._inner.get_source_stamp(), self._dependencies

    @classmethod
    def from_function(cls, py_func: Callable, py_file: str) -> DependencyStampedLocator | None:
        name = py_func.__module__
        if name.partition(".")[0] not in PACKAGES or name not in sys.modules:
            return None
        for other in LOCATORS:
            inner = None if other is cls else other.from_function(py_func, py_file)
            if inner is not None:
                return cls(inner, _dependencies_stamp(sys.modules[name]))
        return None


LOCATORS: list = getattr(_IMPL, "_locator_classes", [])
if DependencyStampedLocator not in LOCATORS:
    LOCATORS.insert(0, DependencyStampedLocator)
