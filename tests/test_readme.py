"""The README's Python examples run as written (against a real server where they need one)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from service_support import running_server

from oppmodel.clients.cli import build_parser
from oppmodel.modeling.games.acpc.bundled import game_path

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
DEFAULT_ADDRESS = "127.0.0.1:50051"


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, tmp_path):
    code = BLOCKS[index]
    if DEFAULT_ADDRESS not in code:
        exec(compile(code, f"README.md example {index}", "exec"), {})
        return
    with running_server(tmp_path / "readme.sqlite") as port:
        code = code.replace(DEFAULT_ADDRESS, f"127.0.0.1:{port}")
        exec(compile(code, f"README.md example {index}", "exec"), {})


def _readme_commands() -> list[list[str]]:
    """Every ``oppmodel ...`` command line of the README's shell examples, as argv."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), re.S):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            start = line.find("oppmodel ")
            if start < 0:
                continue
            command = line[start:].split("#")[0].split("&&")[0].rstrip(" &")
            command = re.sub(r"\[[^\]]*\]", "", command)  # [--optional] parts
            commands.append(shlex.split(command)[1:])
    return commands


@pytest.mark.parametrize("argv", _readme_commands(), ids=" ".join)
def test_readme_commands_parse_and_name_games_that_exist(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from the repository's root as the README is read: the flags exist, and every game
    file is a path there or a bundled game's short name."""
    monkeypatch.chdir(README.parent)
    args = build_parser().parse_args(argv)
    acpc = args.command in {"dealer", "acpc-agent", "acpc-agent-script", "tournament", "replay"}
    for name in ("gamefile", "game"):
        value = getattr(args, name, None)
        if acpc and value is not None:
            assert game_path(value).is_file()
