"""The examples of the README and of ``docs/*.md`` run as written: Python blocks are executed
(against a real server where they name one), and every command line of their shell blocks is
parsed by its own argument parser (``oppmodel ...`` and the ``python benchmarks/...`` and ``python
experiments/...`` scripts), so a flag that does not exist or a game file that is not there fails.
So are the commands quoted beside the current figures of both RESULTS.md files. The shell
blocks also run, line by line, in ``test_docs_shell*.py``."""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
import sys
from pathlib import Path

import pytest
from service_support import LOADED_DEADLINE, running_server

from oppmodel.clients.cli import build_parser
from oppmodel.modeling.games.acpc.bundled import game_path

REPOSITORY = Path(__file__).resolve().parents[1]
README = REPOSITORY / "README.md"
DOCUMENTS = [README, *sorted((REPOSITORY / "docs").glob("*.md"))]
DEFAULT_ADDRESS = "127.0.0.1:50051"
SCRIPT_FOLDERS = ("benchmarks", "experiments")


def _blocks(language: str) -> list[tuple[str, str]]:
    """(document name, block) of every ``language`` code block of the README and docs/."""
    return [
        (document.relative_to(REPOSITORY).as_posix(), block)
        for document in DOCUMENTS
        for block in re.findall(rf"```{language}\n(.*?)```", document.read_text(), re.S)
    ]


BLOCKS = _blocks("python")
SHELL = _blocks("bash")


def test_the_docs_have_python_examples_and_a_page_per_topic():
    assert len(BLOCKS) >= 8
    assert {"modeling", "service", "scale-out", "acpc", "perfect-information"} <= {
        document.stem for document in DOCUMENTS
    }
    assert len(README.read_text().splitlines()) <= 250  # a door, not the house


@pytest.mark.parametrize(
    "index", range(len(BLOCKS)), ids=[f"{name}-{i}" for i, (name, _) in enumerate(BLOCKS)]
)
def test_readme_example_runs(index, tmp_path):
    name, code = BLOCKS[index]
    if DEFAULT_ADDRESS not in code:
        exec(compile(code, f"{name} example {index}", "exec"), {})
        return
    # the example's client gets the tests' deadline, a bound on a hang: with both cores busy, a
    # first leduc3p CreateSession (2-3 s of CPU: the game compiled, its 1.9 MB strategy read)
    # outlived the client's default 30 s
    client = f'"{DEFAULT_ADDRESS}"'
    assert client in code, "a client's address is its first argument in the docs' examples"
    with running_server(tmp_path / "readme.sqlite") as port:
        code = code.replace(client, f'"127.0.0.1:{port}", timeout={LOADED_DEADLINE}')
        exec(compile(code, f"{name} example {index}", "exec"), {})


def _command_lines(text: str, program: str = "oppmodel ") -> list[list[str]]:
    """Every ``program ...`` command line in shell text, as argv (comments, ``&&`` tails,
    a trailing ``&`` and ``[--optional]`` parts dropped; lines using shell variables skipped)."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        code = line.split("#")[0]
        start = code.find(program)
        if start < 0:
            continue
        command = code[start:].split("&&")[0].rstrip(" &")
        if "$" in command:  # a shell variable's value is not known here
            continue
        command = re.sub(r"\[[^\]]*\]", "", command)  # [--optional] parts
        commands.append(shlex.split(command)[1:])
    return commands


def _readme_commands() -> list[list[str]]:
    """Every ``oppmodel ...`` command line of the shell examples and of the current figures, as
    argv."""
    shell = [argv for _, block in SHELL for argv in _command_lines(block)]
    return shell + _current_commands("oppmodel ")


def _current_commands(program: str) -> list[list[str]]:
    """The commands that made the current figures of benchmarks/RESULTS.md and
    experiments/RESULTS.md (inline code before ``# History``), those run by ``program``."""
    found = []
    for folder in SCRIPT_FOLDERS:
        current = (REPOSITORY / folder / "RESULTS.md").read_text().split("\n# History\n")[0]
        for code in re.findall(r"`([^`]+)`", current):
            if code.startswith(program):
                found += _command_lines(code, program)
    return found


def _script_commands() -> list[list[str]]:
    """Every ``python benchmarks/X.py ...`` or ``python experiments/X.py ...`` command line of the
    shell examples and of the current figures, as argv (the script first)."""
    commands = [argv for _, block in SHELL for argv in _command_lines(block, "python ")]
    commands += _current_commands("python ")
    return [argv for argv in commands if argv and argv[0].split("/")[0] in SCRIPT_FOLDERS]


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
    lines = [line for _, block in SHELL for line in block.splitlines() if "oppmodel " in line]
    assert [line for line in lines if re.search(r"\[-", line.split("#")[0])] == []


def test_readme_dealers_run_in_the_background() -> None:
    """A dealer waits for its agents, so one started in the foreground blocks the agents'
    commands that follow it in the README's blocks (and its traffic floods the terminal
    without -q)."""
    commands = [line.split("#")[0].strip() for _, block in SHELL for line in block.splitlines()]
    dealers = [command for command in commands if command.startswith("oppmodel dealer ")]
    assert dealers
    assert [d for d in dealers if not (d.endswith(" &") and " -q " in f"{d} ")] == []


@pytest.mark.parametrize("argv", _readme_commands(), ids=" ".join)
def test_readme_commands_parse_and_name_games_that_exist(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from the repository's root as the README is read."""
    monkeypatch.chdir(REPOSITORY)
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


class _Parsed(Exception):
    """Raised in place of running a script once its arguments parsed."""


@pytest.mark.parametrize("argv", _script_commands(), ids=" ".join)
def test_script_commands_name_scripts_that_exist_and_flags_they_take(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script's own parser takes the command line (its main runs up to parsing, no further);
    the scripts import as benchmarks.* and experiments.* (tests/conftest.py)."""
    script = REPOSITORY / argv[0]
    assert script.is_file()
    module = importlib.import_module(".".join(Path(argv[0]).with_suffix("").parts))
    parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(parser, args=None, namespace=None):
        raise _Parsed(parse(parser, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    monkeypatch.setattr(sys, "argv", [str(script), *argv[1:]])
    with pytest.raises(_Parsed):
        module.main()
