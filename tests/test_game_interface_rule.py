"""Issue 30's rule: what differs between games is a method of the game (``modeling/games/
interface.py``), so no code in ``modeling/``, ``server/`` or ``clients/`` tests whether a value is
of a game, observation or model class, outside the module that defines the game interface.

The classes are found by introspection, not listed: every class defined in ``modeling/games/``
(any depth), ``modeling/holdem/`` (the sampled hold'em game, its states and policies),
``modeling/observation.py`` and ``modeling/mbbr/`` (exceptions and enums aside: an
error or a setting is no game), and the server's holders of a session's model (the classes of
``server/`` that observe hands and know the model's memory, as ``ServedModel`` does). Each
``isinstance(x, C)`` call in the three folders is then resolved through its module's imports, so
a class of the same name elsewhere (``clients/acpc/agent.Decision``) is not mistaken for one.
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import oppmodel.modeling.games
import oppmodel.modeling.holdem
import oppmodel.modeling.mbbr
import oppmodel.server

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("modeling", "server", "clients")
INTERFACE = ROOT / "modeling" / "games" / "interface.py"  # where the interface may test types
# what a server class answers that holds a session's model, here or in a model worker: it
# observes hands and knows the memory the model takes (members of ``ServedModel``)
HELD_MODEL_MEMBERS = ("observe", "nbytes")


def _modules(package: object) -> Iterator[str]:
    name = package.__name__  # type: ignore[attr-defined]
    yield name
    for info in pkgutil.walk_packages(package.__path__, f"{name}."):  # type: ignore[attr-defined]
        yield info.name


def _defined(module: str) -> Iterator[tuple[str, type]]:
    """(qualified name, class) of every class ``module`` defines."""
    for name, value in vars(importlib.import_module(module)).items():
        if inspect.isclass(value) and value.__module__ == module:
            yield f"{module}.{name}", value


def ruled_classes() -> set[str]:
    """The qualified names of the game, observation and model classes (module docstring)."""
    found = set()
    modules = [
        *_modules(oppmodel.modeling.games),
        *_modules(oppmodel.modeling.holdem),
        "oppmodel.modeling.observation",
        *_modules(oppmodel.modeling.mbbr),
    ]
    for module in modules:
        for name, cls in _defined(module):
            if not issubclass(cls, BaseException | enum.Enum):
                found.add(name)
    for module in _modules(oppmodel.server):
        for name, cls in _defined(module):
            if all(hasattr(cls, member) for member in HELD_MODEL_MEMBERS):
                found.add(name)
    return found


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(("oppmodel", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def _imported_names(tree: ast.Module, module: str) -> dict[str, str]:
    """Local name -> qualified name, from the module's imports and its own classes."""
    names = {
        node.name: f"{module}.{node.name}" for node in tree.body if isinstance(node, ast.ClassDef)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
    return names


def _qualified(node: ast.expr, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _qualified(node.value, names)
        return None if base is None else f"{base}.{node.attr}"
    return None


def type_tests(path: Path, ruled: set[str], module: str | None = None) -> list[str]:
    """``file:line: isinstance(..., Class)`` of every type test on a ruled class in ``path``
    (the source of ``module``, by default the repository's module at ``path``)."""
    tree = ast.parse(path.read_text(), str(path))
    names = _imported_names(tree, module or _module_name(path))
    hits = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
        ):
            continue
        for part in ast.walk(node.args[1]):
            name = _qualified(part, names) if isinstance(part, ast.Name | ast.Attribute) else None
            if name in ruled:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                hits.append(f"{where}:{node.lineno}: isinstance(..., {name.rsplit('.', 1)[1]})")
    return hits


def test_the_rule_finds_the_classes_it_is_about() -> None:
    ruled = ruled_classes()
    for name in (
        "oppmodel.modeling.games.acpc.limit_game.LimitGame",
        "oppmodel.modeling.games.interface.ServedGame",
        "oppmodel.modeling.observation.LimitObservation",
        "oppmodel.modeling.holdem.match.HoldemGame",
    ):
        assert name in ruled
    assert any(name.startswith("oppmodel.modeling.mbbr.") for name in ruled)
    assert any(name.startswith("oppmodel.server.") for name in ruled)  # the held model
    assert not any("errors" in name or name.endswith(".Response") for name in ruled)


def test_the_scan_sees_a_type_test_through_an_import_and_not_a_namesake(tmp_path: Path) -> None:
    ruled = ruled_classes()
    probe = tmp_path / "probe.py"  # read as source only, never imported
    source = (
        "from oppmodel.modeling.games.acpc.limit_game import LimitGame as G\n"
        "from oppmodel.modeling import observation\n"
        "class LimitObservation: ...\n"
        "def f(x):\n"
        "    return isinstance(x, int | G), isinstance(x, observation.HandObservation)\n"
        "def g(x):\n"
        "    return isinstance(x, LimitObservation)\n"
    )
    probe.write_text(source)
    hits = type_tests(probe, ruled, "oppmodel.clients.probe")
    assert [h.split(": ", 1)[1] for h in hits] == [
        "isinstance(..., LimitGame)",
        "isinstance(..., HandObservation)",
    ]


def test_no_type_test_on_a_game_observation_or_model_class_outside_the_interface() -> None:
    ruled = ruled_classes()
    hits = [
        hit
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != INTERFACE
        for hit in type_tests(path, ruled)
    ]
    assert hits == [], "what differs between games is a method of the game:\n" + "\n".join(hits)
