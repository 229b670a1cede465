"""Every test that starts Ray starts a Ray instance of its own.

A plain ``ray.init()`` joins the cluster that ``ray start --head`` runs on the machine (or the one
RAY_ADDRESS names), and with ``num_cpus`` it fails there instead ("When connecting to an existing
cluster, num_cpus and num_gpus must not be provided"): the suite would depend on what else runs
on the machine, and could run its jobs on someone else's cluster. ``ray.init(address="local")``
starts a new instance whatever runs. The scan below holds every ``ray.init`` in the tests to it,
and every one in the code the tests run to naming its address.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = sorted(
    p
    for part in ("server", "clients", "benchmarks", "experiments")
    for p in (ROOT / part).rglob("*.py")
)


def ray_inits(source: str, *, local: bool) -> list[int]:
    """Lines of the ``ray.init(...)`` calls in ``source`` without ``address="local"`` (``local``)
    or, if not ``local``, without any ``address``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "init"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "ray"
        ):
            continue
        address = next((k.value for k in node.keywords if k.arg == "address"), None)
        named = address is not None
        if local:
            named = isinstance(address, ast.Constant) and address.value == "local"
        if not named:
            found.append(node.lineno)
    return found


def test_the_scan_finds_a_plain_ray_init() -> None:
    source = (
        "import ray\n"
        'ray.init(address="local", num_cpus=1)\n'
        "ray.init(num_cpus=1)\n"
        'ray.init(address="auto")\n'
        "ray.init(address=where)\n"
        "ray.init(**options)\n"
    )
    assert ray_inits(source, local=True) == [3, 4, 5, 6]
    assert ray_inits(source, local=False) == [3, 6]


def offenders(paths: list[Path], *, local: bool) -> dict[str, list[int]]:
    """{file: lines} of the ``ray.init`` calls in ``paths`` that the scan finds."""
    found = {str(p.relative_to(ROOT)): ray_inits(p.read_text(), local=local) for p in paths}
    return {name: lines for name, lines in found.items() if lines}


def test_tests_start_ray_instances_of_their_own() -> None:
    assert offenders(sorted((ROOT / "tests").glob("*.py")), local=True) == {}


def test_the_code_names_the_ray_cluster_it_joins() -> None:
    assert offenders(CODE, local=False) == {}
