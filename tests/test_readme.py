"""The README's Python examples run as written (against a real server where they need one)."""

from __future__ import annotations

import argparse
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


def _command_lines(text: str) -> list[list[str]]:
    """Every ``oppmodel ...`` command line in shell text, as argv (comments, ``&&`` tails,
    a trailing ``&`` and ``[--optional]`` parts dropped; lines using shell variables skipped)."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        code = line.split("#")[0]
        start = code.find("oppmodel ")
        if start < 0:
            continue
        command = code[start:].split("&&")[0].rstrip(" &")
        if "$" in command:  # a shell variable's value is not known here
            continue
        command = re.sub(r"\[[^\]]*\]", "", command)  # [--optional] parts
        commands.append(shlex.split(command)[1:])
    return commands


def _readme_commands() -> list[list[str]]:
    """Every ``oppmodel ...`` command line of the README's shell examples, as argv."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)
    return [argv for block in blocks for argv in _command_lines(block)]


def _help_examples() -> list[list[str]]:
    """Every ``oppmodel ...`` line of the examples that end each subcommand's ``--help``."""
    (subcommands,) = (
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    commands = []
    for parser in subcommands.choices.values():
        examples = re.search(r"^examples?\b.*", parser.epilog or "", re.M | re.S)
        if examples is not None:
            commands += _command_lines(examples[0])
    return commands


def _check_command(argv: list[str]) -> None:
    """The flags exist, and every ACPC game file is a path here or a bundled game's short name."""
    args = build_parser().parse_args(argv)
    acpc = args.command in {"dealer", "acpc-agent", "acpc-agent-script", "tournament", "replay"}
    for name in ("gamefile", "game"):
        value = getattr(args, name, None)
        if acpc and value is not None:
            assert game_path(value).is_file()


def test_readme_command_lines_paste_into_a_shell() -> None:
    """No ``[--optional]`` brackets in a command: a shell passes them on as text and the command
    stops at them; optional flags go in the comment."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)
    lines = [line for block in blocks for line in block.splitlines() if "oppmodel " in line]
    assert [line for line in lines if re.search(r"\[-", line.split("#")[0])] == []


def test_readme_dealers_run_in_the_background() -> None:
    """A dealer waits for its agents, so one started in the foreground blocks the agents'
    commands that follow it in the README's blocks (and its traffic floods the terminal
    without -q)."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)
    commands = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    dealers = [command for command in commands if command.startswith("oppmodel dealer ")]
    assert dealers
    assert [d for d in dealers if not (d.endswith(" &") and " -q " in f"{d} ")] == []


@pytest.mark.parametrize("argv", _readme_commands(), ids=" ".join)
def test_readme_commands_parse_and_name_games_that_exist(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from the repository's root as the README is read."""
    monkeypatch.chdir(README.parent)
    _check_command(argv)


def test_every_subcommand_help_ends_with_examples() -> None:
    assert len({argv[0] for argv in _help_examples()}) >= 10


@pytest.mark.parametrize("argv", _help_examples(), ids=" ".join)
def test_help_examples_parse_and_name_games_that_exist(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from an empty folder, as a user who installed the package: a game named in an
    example must be a bundled one (a file of the package's own is no name of the user's)."""
    monkeypatch.chdir(tmp_path)
    _check_command(argv)
