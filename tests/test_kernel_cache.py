"""The kernels' numba cache sees the other modules a kernel depends on (``kernel_cache``).

numba's own cache keys a kernel by its file alone: a caller cached before its callee (in another
file) changed kept the old callee's machine code, so a long-lived checkout's warm runs gave other
bits than a fresh clone's cold ones. Checked here on a small package in a temporary folder, with
numba's cache there too: the caller is compiled again after the callee's module changes (numba's
own stamp loads 4.0, the old callee, where 202.0 is due), and loaded from the cache when nothing
changed.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import numba
import pytest

from oppmodel.modeling import kernel_cache

REPOSITORY = Path(__file__).resolve().parents[1]

CALLEE = """
from oppmodel.modeling.kernel_cache import njit

SCALE = 2.0


@njit(cache=True)
def g(x):
    return x + 1.0
"""

CALLER = """
from oppmodel.modeling.kernel_cache import njit
from kcprobe.b import SCALE, g


@njit(cache=True)
def f(x):
    return g(x) * SCALE
"""


def _caller() -> numba.core.registry.CPUDispatcher:
    """The caller, its package imported afresh (new dispatchers, each with its cache stamp)."""
    for name in ("kcprobe", "kcprobe.a", "kcprobe.b"):
        sys.modules.pop(name, None)
    importlib.invalidate_caches()
    return importlib.import_module("kcprobe.a").f


def test_a_kernel_compiles_again_when_a_module_it_calls_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert kernel_cache.LOCATORS[:1] == [kernel_cache.DependencyStampedLocator], (
        "numba's list of cache locators not found (its internals changed)"
    )
    package = tmp_path / "kcprobe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(CALLER)
    (package / "b.py").write_text(CALLEE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # edits read from source each time
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "numba"))
    monkeypatch.setattr(kernel_cache, "PACKAGES", {"oppmodel", "kcprobe"})
    try:
        f = _caller()
        assert f(1.0) == 4.0 and f.stats.cache_misses and not f.stats.cache_hits
        f = _caller()
        assert f(1.0) == 4.0 and f.stats.cache_hits  # unchanged: loaded, not compiled
        (package / "b.py").write_text(CALLEE.replace("x + 1.0", "x + 100.0"))
        assert _caller()(1.0) == 202.0  # the callee changed
        (package / "b.py").write_text(CALLEE.replace("SCALE = 2.0", "SCALE = 0.5"))
        assert _caller()(1.0) == 1.0  # a constant the caller reads changed
    finally:
        for name in ("kcprobe", "kcprobe.a", "kcprobe.b"):
            sys.modules.pop(name, None)


def test_the_package_kernels_dependencies() -> None:
    """The cross-file calls and constants of the package's kernels are in their stamps, followed
    through kernel modules (the Dirichlet kernels read NUM_ACTIONS of mbbr's, which calls the
    evaluation's sweep over the tree's LimitTree)."""
    from oppmodel.modeling.games.acpc import _abstraction_kernels  # noqa: F401
    from oppmodel.modeling.mbbr import _dirichlet_kernels, mixture_prior  # noqa: F401

    def files(name: str) -> set[str]:
        return {str(Path(f).relative_to(REPOSITORY)) for f in kernel_cache.dependency_files(name)}

    assert "modeling/mbbr/_limit_kernels.py" in files("oppmodel.modeling.mbbr.mixture_prior")
    assert files("oppmodel.modeling.mbbr._dirichlet_kernels") == {
        "modeling/mbbr/_limit_kernels.py",
        "modeling/evaluation/_limit_kernels.py",
        "modeling/games/acpc/limit_game.py",
    }
    assert files("oppmodel.modeling.games.acpc._abstraction_kernels") == {
        "modeling/games/acpc/_hand_rank_kernels.py"
    }


def test_every_kernel_module_takes_njit_from_kernel_cache() -> None:
    """A kernel declared with numba's own ``njit`` before kernel_cache is imported would be
    cached by its file alone."""
    own = re.compile(r"^from numba import .*\bnjit\b|\bnumba\.njit\b", re.MULTILINE)
    found = [
        str(path.relative_to(REPOSITORY))
        for folder in ("modeling", "server", "clients")
        for path in sorted((REPOSITORY / folder).rglob("*.py"))
        if own.search(path.read_text())
    ]
    assert found == ["modeling/kernel_cache.py"]
