"""The suite reads nothing outside the repository, so it passes in any clone.

Two guards: ``conftest.py``'s audit hook fails a test that opens a file outside the repository in
this process, and the scan below finds absolute paths written into the test sources, which is
how a test (or a subprocess it starts) would reach a folder beside the repository.
"""

from __future__ import annotations

import ast
import hashlib
import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
# Top-level folders of a Unix file system where data could sit outside the repository.
DATA_ROOTS = frozenset(
    {"home", "root", "work", "data", "shared", "mnt", "media", "opt", "srv", "tmp", "var", "Users"}
)


def absolute_paths(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal that is an absolute path under a data root or an
    existing folder of this machine other than the system's own."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        text = node.value
        if not text.startswith("/") or len(text) < 2 or text[1] in "/ ":
            continue
        top = text[1:].split("/", 1)[0]
        system = top in {"dev", "proc", "sys"}
        if top in DATA_ROOTS or (not system and os.path.isdir(f"/{top}")):
            found.append((node.lineno, text))
    return found


def test_the_scan_finds_an_absolute_path_to_a_shared_folder() -> None:
    shared = "/".join(("", "work", "shared", "data", "acpc"))  # spelled out, it would be found
    source = f'DATA = Path("{shared}")\nURL = f"http://h/m"\nX = "/CN=localhost"\n'
    assert absolute_paths(source) == [(1, shared)]


@pytest.mark.parametrize("path", sorted(TESTS.rglob("*.py")), ids=lambda p: p.name)
def test_no_test_source_names_an_absolute_path(path: Path) -> None:
    assert absolute_paths(path.read_text()) == []


def test_a_read_outside_the_repository_fails_the_test(reads_outside_the_repository) -> None:
    outside = Path(os.path.abspath(os.sep)) / "oppmodel-outside-the-repository" / "data.txt"
    with pytest.raises(RuntimeError, match="outside the repository"):
        outside.read_text()
    assert reads_outside_the_repository == [str(outside)]
    reads_outside_the_repository.clear()


def test_the_test_data_matches_its_checksums() -> None:
    """tests/data/SHA256SUMS records the copies of the shared data byte for byte."""
    lines = (DATA / "SHA256SUMS").read_text().splitlines()
    listed = {}
    for line in lines:
        digest, name = line.split(maxsplit=1)
        listed[name.lstrip("*")] = digest
    files = {str(p.relative_to(DATA)) for p in DATA.rglob("*") if p.is_file() and p.suffix != ".md"}
    assert set(listed) | {"SHA256SUMS"} == files
    for name, digest in listed.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name
