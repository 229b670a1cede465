"""The suite's files reach pytest-xdist's workers in the order ``conftest.py`` sorts them: the
files holding a ``slow`` test first, so the two workers end together instead of one waiting on
a long file started last."""

from __future__ import annotations

import pytest


def test_xdist_keeps_the_order_conftest_sorts_the_files_in(pytestconfig: pytest.Config) -> None:
    # xdist's default (--loadscope-reorder) sends the files sorted by their number of tests,
    # which put the long files of few tests (the docs' shell blocks, Ray's) last
    assert pytestconfig.pluginmanager.hasplugin("xdist")
    assert pytestconfig.getoption("loadscopereorder") is False
