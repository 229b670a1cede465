"""Check a built oppmodel wheel: every module and data file of the source folders is inside,
under ``oppmodel/``, and nothing is installed at the top level but ``oppmodel`` (issue 14).

Usage: python .ci/check_wheel.py WHEEL
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# source folder -> where its files land in the wheel
FOLDERS = {
    "proto/oppmodel": "oppmodel",
    "modeling": "oppmodel/modeling",
    "server": "oppmodel/server",
    "clients": "oppmodel/clients",
}
DATA = ("modeling/games/acpc/games",)  # package data: every file there ships


def expected() -> set[str]:
    names = set()
    for folder, target in FOLDERS.items():
        for path in (ROOT / folder).rglob("*"):
            rel = path.relative_to(ROOT)
            shipped = path.suffix in {".py", ".pyi"} or str(rel.parent).startswith(DATA)
            if path.is_file() and "__pycache__" not in rel.parts and shipped:
                names.add(f"{target}/{path.relative_to(ROOT / folder).as_posix()}")
    return names


def main(wheel: str) -> int:
    members = set(zipfile.ZipFile(wheel).namelist())
    tops = {name.split("/", 1)[0] for name in members}
    stray = {top for top in tops if top != "oppmodel" and not top.endswith(".dist-info")}
    missing = expected() - members
    for problem, names in (("installed at the top level", stray), ("missing", missing)):
        for name in sorted(names):
            print(f"wheel: {problem}: {name}", file=sys.stderr)
    return 1 if stray or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
