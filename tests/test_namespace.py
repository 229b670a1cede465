"""One namespace: the project imports as oppmodel.* only, and the wheel holds every package.

The folders ``modeling/``, ``server/`` and ``clients/`` stay at the repository's root and install as
``oppmodel.modeling``, ``oppmodel.server`` and ``oppmodel.clients`` (pyproject's ``package-dir``);
their bare names would collide with any other package so named. ``.ci/run`` builds the wheel and
checks what it installs (``.ci/check_wheel.py``).
"""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

import oppmodel.clients
import oppmodel.modeling
import oppmodel.server

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["modeling", "server", "clients"])
def test_a_folder_does_not_import_by_its_bare_name(name: str) -> None:
    assert importlib.util.find_spec(name) is None


def test_the_packages_import_from_their_folders() -> None:
    for package, folder in [
        (oppmodel.modeling, "modeling"),
        (oppmodel.server, "server"),
        (oppmodel.clients, "clients"),
    ]:
        assert Path(package.__file__).resolve().parent == ROOT / folder


def test_pyproject_lists_every_package_of_the_mapped_folders() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = set()
    for package, folder in setuptools["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            found.add(".".join([package, *init.parent.relative_to(ROOT / folder).parts]))
    assert set(setuptools["packages"]) == found
