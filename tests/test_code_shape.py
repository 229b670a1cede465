"""Issue 31's shape rule for the installed package: no module over 500 lines, no function over 80
lines, no function of cyclomatic complexity grade E or F (radon's grades: E from 31 decisions, F
from 41), so that a maintainer reads any piece of it whole.

The modules are the ones pyproject installs (its ``packages`` and ``package-dir``), not a kept list;
the generated protobuf modules (``*_pb2*.py``) are excepted. A function's lines run from its ``def``
to its last line, docstring included; a nested function counts on its own and inside its parent.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
FAILING_GRADES = ("E", "F")
# Issue 30 (one game stack): modeling/mbbr/ held 4,611 lines with the Kuhn-only stack beside the
# compiled one, and no module may have a ``limit_`` twin (``limit_model.py`` beside ``model.py``)
MBBR = ROOT / "modeling" / "mbbr"
MAX_MBBR_LINES = 3_000


def package_modules() -> Iterator[Path]:
    """Every non-generated ``.py`` file of every package pyproject installs."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = setuptools["package-dir"]
    for package in setuptools["packages"]:
        parts = package.split(".")
        # the longest mapped prefix gives the folder; the rest of the name is subfolders
        cut = max(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in folders)
        folder = ROOT / folders[".".join(parts[:cut])] / Path(*parts[cut:])
        for path in sorted(folder.glob("*.py")):
            if "_pb2" not in path.name:
                yield path


def offenders(path: Path, source: str | None = None) -> list[str]:
    """``file:line: what`` for each way ``path`` (or ``source`` as its text) breaks the rule."""
    text = path.read_text() if source is None else source
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    found = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"{where}: module of {lines} lines (at most {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
            if length > MAX_FUNCTION_LINES:
                found.append(
                    f"{where}:{node.lineno}: {node.name} has {length} lines"
                    f" (at most {MAX_FUNCTION_LINES})"
                )
    for block in cc_visit(text):
        grade = cc_rank(block.complexity)
        if grade in FAILING_GRADES:
            found.append(
                f"{where}:{block.lineno}: {block.name} has complexity {block.complexity}"
                f" (grade {grade})"
            )
    return found


def limit_twins(paths: list[Path]) -> list[str]:
    """Each ``limit_X.py`` (or ``_limit_X.py``) with an ``X.py`` (``_X.py``) in its folder: one
    idea written twice, once for the compiled limit games and once for another stack."""
    names = {(path.parent, path.name) for path in paths}
    found = []
    for folder, name in sorted(names):
        bare = name.lstrip("_")
        if bare.startswith("limit_"):
            twin = name[: len(name) - len(bare)] + bare.removeprefix("limit_")
            if (folder, twin) in names:
                found.append(f"{folder.name}/{name} beside {folder.name}/{twin}")
    return found


def test_the_walk_covers_every_installed_folder_and_skips_generated_code() -> None:
    modules = {path.relative_to(ROOT).as_posix() for path in package_modules()}
    for expected in (
        "modeling/mbbr/config.py",
        "modeling/perfect_info/search/tree.py",
        "server/servicer.py",
        "clients/commands/serve_cmd.py",
        "proto/oppmodel/v1/__init__.py",
    ):
        assert expected in modules
    assert not any("_pb2" in name for name in modules)
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in modules)


def test_the_rule_names_a_long_module_a_long_function_and_a_complex_one() -> None:
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(40))
    long_body = "".join(f"    y = {i}\n" for i in range(80))
    source = (
        f"def branchy(x):\n{branches}    return -1\n\n"
        f"def long(x):\n    '''80 more lines.'''\n{long_body}\n"
        f"def short(x):\n{''.join(f'    y = {i}' + chr(10) for i in range(79))}\n"
    )
    source += "\n" * (MAX_MODULE_LINES + 1 - len(source.splitlines()))
    found = offenders(ROOT / "probe.py", source)
    assert found == [
        f"probe.py: module of {MAX_MODULE_LINES + 1} lines (at most {MAX_MODULE_LINES})",
        "probe.py:1: branchy has 82 lines (at most 80)",
        "probe.py:84: long has 82 lines (at most 80)",
        "probe.py:1: branchy has complexity 41 (grade F)",
    ]


def test_no_long_module_long_function_or_complex_function_in_the_package() -> None:
    found = [hit for path in package_modules() for hit in offenders(path)]
    assert found == [], "split by meaning (named helpers):\n" + "\n".join(found)


def test_the_twin_rule_names_a_limit_module_beside_its_namesake_only() -> None:
    folder = ROOT / "pkg"
    paths = [
        folder / n for n in ("model.py", "limit_model.py", "_limit_kernels.py", "limit_game.py")
    ]
    paths += [folder / "_kernels2.py", folder / "_limit_kernels2.py"]
    assert limit_twins(paths) == [
        "pkg/_limit_kernels2.py beside pkg/_kernels2.py",
        "pkg/limit_model.py beside pkg/model.py",
    ]


def test_one_game_stack_no_limit_twin_and_mbbr_within_its_line_cap() -> None:
    """Issue 30's Done-when: no ``limit_``-prefixed twin of another module anywhere in the
    package, and modeling/mbbr/ at most 3,000 lines (every ``.py`` line, as ``wc -l`` counts)."""
    assert limit_twins(list(package_modules())) == []
    lines = sum(len(path.read_text().splitlines()) for path in MBBR.glob("*.py"))
    assert lines <= MAX_MBBR_LINES, f"modeling/mbbr/ has {lines} lines (at most {MAX_MBBR_LINES})"
