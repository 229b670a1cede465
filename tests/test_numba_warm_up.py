"""The whole run's numba warm-up (``numba_warm_up.py``) runs again exactly when a source file a
cached kernel depends on changed (``kernel_cache``: its own and those its module imports from, all
in modeling/): its stamp follows those files and no other."""

from __future__ import annotations

import os
from pathlib import Path

import numba_warm_up
import pytest
from numba_warm_up import PACKAGE_FOLDERS, sources_stamp


def test_the_stamp_changes_with_the_kernels_sources_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in PACKAGE_FOLDERS:
        (tmp_path / folder).mkdir()
    kernel = tmp_path / "modeling" / "_k.py"
    kernel.write_text("@njit(cache=True)\ndef f(x):\n    return x\n")
    other = tmp_path / "server" / "app.py"
    other.write_text("def g():\n    pass\n")
    constants = tmp_path / "modeling" / "config.py"  # no kernel, but a kernel may read it
    constants.write_text("SIZE = 3\n")
    monkeypatch.setattr(numba_warm_up, "REPOSITORY", tmp_path)
    first = sources_stamp()
    os.utime(other, ns=(0, 10**18))
    assert sources_stamp() == first  # no kernel there, nor anything a kernel imports
    os.utime(constants, ns=(0, 10**18))
    assert sources_stamp() != first
    first = sources_stamp()
    os.utime(kernel, ns=(0, 10**18))  # an edit that keeps the size
    touched = sources_stamp()
    assert touched != first
    kernel.write_text(kernel.read_text() + "# more\n")
    os.utime(kernel, ns=(0, 10**18))  # the same time, another size
    assert sources_stamp() not in (first, touched)
