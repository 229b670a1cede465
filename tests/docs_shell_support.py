"""How ``tests/test_docs_shell*.py`` run every shell example of the README and of ``docs/*.md``,
block by block, as a reader pastes it, in the bounded form the README's Development section
states:

- each block runs in a fresh folder (with the dealer logs of ``tests/data/acpc/`` the docs name,
  each cut to its first 40 hands), line by line in its order, with ``~`` that folder; a line
  ending in ``&`` runs beside the lines after it (a process of its own; a foreground line runs in
  the test's process, the package loaded once), and the block's dealers and agents must then end
  by themselves; a server (``serve``, ``ui``) started in the foreground is ended with Ctrl-C once
  it serves, as a reader ends it before the next line, one started with ``&`` at the block's end;
  either must end cleanly (status 0 or 130); a line after a dealer starts once the dealer printed
  its ports, a dealer once the block's earlier match ended;
- sizes are capped (``BOUNDS``: ``--hands 3000`` runs as ``--hands 40``), and set to the cap where
  a line leaves them at a larger default; a dealer's hand count likewise; a tournament waits
  ``LOADED_START_MS`` for its external agents (a loaded machine starts them slowly);
- a server listens on a free port of 127.0.0.1: a port the docs write (50051, 18791...) is
  replaced in every line of the block by one free port, ``--host 0.0.0.0`` by 127.0.0.1, and a
  PostgreSQL URL names a database of the tests' own server;
- the files a line reads that the reader makes elsewhere are made first (``_prepare``);
- a line whose comment says what it shows is checked for it (``SHOWS``); every line must exit 0;
- a line whose bounded form an earlier block already ran (``--hands 1000`` and ``--hands 3000``
  both run as ``--hands 40``) is not run again (``first_runs``).

Lines that set a machine up rather than run the project (``pip install``, ``sudo ...``, the
suite itself), that need Ray, and the benchmark and experiment scripts (minutes of CPU each) are
not run: each is listed in ``NOT_RUN`` with the reason. Each test file runs the blocks of the
documents ``SPLIT`` gives it (so that pytest-xdist spreads them), and ``test_docs_shell.py``
fails if a line is neither run nor listed or a document's blocks are in no file.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_cli_interrupt import as_a_terminal_job

from oppmodel.clients.cli import build_parser, main
from oppmodel.modeling.games.acpc.bundled import game_path

REPOSITORY = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
OPPMODEL = str(Path(sys.executable).with_name("oppmodel"))
DEADLINE = 600.0  # seconds a block's process may take: a bound on a hang, no speed check
LOADED_START_MS = int(DEADLINE * 1000)  # a tournament's wait for its external agents

# test file -> the documents whose blocks it runs (spread by pytest-xdist, a file per worker)
SPLIT = {
    "test_docs_shell.py": ("README.md",),
    "test_docs_shell_acpc.py": ("docs/acpc.md",),
    "test_docs_shell_modeling.py": (
        "docs/modeling.md",
        "docs/move-prediction.md",
        "docs/perfect-information.md",
    ),
    "test_docs_shell_service.py": (
        "docs/service.md",
        "docs/ui.md",
        "docs/scale-out.md",
        "docs/benchmarks.md",
    ),
}

# flag -> the largest value a test runs (the README's Development section states them)
BOUNDS = {
    "--hands": 40,
    "--duplicates": 1,
    "--iterations": 20,
    "--repeats": 1,
    "--reps": 1,
    "--deal-sequences": 1,
    "--deals": 20,
    "--target": 50,  # spades-match: points that end a game (300: six or more hands)
}
DEALER_HANDS = 40  # the dealer's positional hand count
SERVERS = ("serve", "ui")  # commands that run until Ctrl-C
DEFAULT_PORTS = {"serve": "50051", "ui": "8080"}

# lines not run, with the reason (the exact command, comment and `&` dropped)
NOT_RUN = {
    'pip install -e ".[test]"': "sets the machine up: the suite runs in this install",
    'pip install -e ".[postgres]"': "sets the machine up: the suite's install has the driver",
    'pip install -e ".[ray]"': "sets the machine up: the suite's install has Ray and psycopg",
    "pytest": "the suite itself",
    "sudo apt-get install postgresql": "needs root: the tests start a PostgreSQL of their own",
    "sudo -u postgres createuser --pwprompt oppuser": "needs root and a terminal",
    "sudo -u postgres createdb --owner oppuser oppdb": "needs root",
    "read -rsp 'password: ' PGPASSWORD": "reads a password from the terminal",
    "export PGPASSWORD": "the password read above",
    "grpcurl -plaintext 127.0.0.1:50051 list": "grpcurl is no part of the install; "
    "test_service_infra lists the services through reflection as it does",
    # Ray: a cluster start costs tens of CPU seconds and fails under load (fc3bc3b); `serve
    # --ray` is run by test_service_ray, the sweep's Ray backend by test_ray_local
    "ray start --head": "starts a machine-wide Ray cluster on fixed ports",
    "python experiments/sweep.py --params k,eta --backend ray --address auto": "needs Ray",
    "oppmodel serve --ray --replicas 2 --store postgresql://oppmodel@db.example:5432/oppmodel": (
        "needs Ray"
    ),
    "oppmodel serve --ray --address auto --replicas 4 "
    "--store postgresql://oppmodel@db.example:5432/oppmodel": "needs Ray",
}
# the benchmarks and experiments: a --quick run is a minute or more of CPU each (the field's is
# 446 match jobs), too much for the suite; test_readme parses each with the script's own parser
NOT_RUN |= dict.fromkeys(
    (
        "python benchmarks/posterior.py --quick",
        "python benchmarks/posterior.py --game leduc3p --hands 3000 --repeats 5",
        "python benchmarks/best_response.py --quick --json",
        "python benchmarks/service.py --quick",
        "python benchmarks/hand_eval.py --quick",
        "python benchmarks/spades.py --json",
        "python benchmarks/ui_load.py --quick",
        "python benchmarks/ui_load.py --json",
        "python benchmarks/ui_load.py --calls",
        "python experiments/kuhn3p_field.py --quick",
        "python experiments/kuhn3p_field.py --hands 3000 --reps 10",
        "python experiments/kuhn3p_field.py --field competent --mbbr-posterior dirichlet "
        "--mbbr-prior typed",
        "python experiments/sweep.py --params k --quick",
    ),
    "a benchmark or an experiment: minutes of CPU (parsed by test_readme)",
)

# a documented line (its start) -> what its output must contain
SHOWS = {
    "oppmodel eval --profile N2": r"-1/32[\s\S]*-1/48[\s\S]*5/96[\s\S]*nash_conv 0",
    "oppmodel eval --game kuhn2p --profile uniform": r"nash_conv .*11/12",
    "oppmodel eval --game leduc2p --profile cfr": r"nash_conv 1\.3\d*e-06",
    "oppmodel serve": r"serving",
    "oppmodel ui": r"ui: http://127\.0\.0\.1:\d+/",
    "oppmodel replay": r"Alice|replay as p1",
    "oppmodel movepred": r"top",
}


@dataclass(frozen=True)
class Line:
    """One command of a shell block: its text (comment and ``&`` dropped), its comment, and
    whether it runs in the background."""

    command: str
    comment: str
    background: bool


@dataclass(frozen=True)
class Block:
    """A shell block: ``document:index`` and its commands."""

    name: str
    lines: tuple[Line, ...]


def shell_blocks(documents: list[Path] = DOCUMENTS) -> list[Block]:
    """Every ``bash`` block of ``documents``, in their order."""
    found = []
    for document in documents:
        name = document.relative_to(REPOSITORY).as_posix()
        blocks = re.findall(r"```bash\n(.*?)```", document.read_text(), re.S)
        for index, block in enumerate(blocks):
            found.append(Block(f"{name}:{index}", tuple(_lines(block))))
    return found


def _lines(block: str) -> Iterator[Line]:
    for raw in block.replace("\\\n", " ").splitlines():
        code, comment = [*re.split(r"(?:^|\s)#", raw, maxsplit=1), ""][:2]
        code = code.strip()
        background = code.endswith("&") and not code.endswith("&&")
        code = code.removesuffix("&").strip()
        for part in code.split("&&") if code else ():
            yield Line(" ".join(part.split()), comment.strip(), background)


def blocks_of(test_file: str) -> list[Block]:
    """The blocks ``test_file`` runs: those of its documents in ``SPLIT`` that have a line to
    run (a block of listed lines only is checked by ``test_docs_shell.py``'s listing test)."""
    documents = [REPOSITORY / name for name in SPLIT[Path(test_file).name]]
    return [
        block
        for block in shell_blocks(documents)
        if any(line.command not in NOT_RUN for line in block.lines)
    ]


@functools.cache
def first_runs() -> frozenset[tuple[str, int]]:
    """(block, line number) of each foreground line whose bounded form no earlier line of the
    README and docs/ has (a server's or a background process's line always runs: the lines
    after it use it)."""
    seen: set[tuple[str, ...]] = set()
    first = set()
    for block in shell_blocks():
        for number, line in enumerate(block.lines):
            if line.command in NOT_RUN or not line.command.startswith("oppmodel "):
                continue  # listed, or neither run nor listed: test_docs_shell.py names it
            if line.background or is_server(line):
                first.add((block.name, number))
                continue
            key = tuple(bounded(line.command, {}, "postgresql://", Path("home")))
            if key not in seen:
                seen.add(key)
                first.add((block.name, number))
    return frozenset(first)


# --- the bounded form -------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _options(argv: list[str]) -> set[str]:
    """The option strings the subcommand of ``argv`` takes."""
    parser = build_parser()
    (subparsers,) = (a for a in parser._actions if a.choices and argv[0] in a.choices)
    return set(subparsers.choices[argv[0]]._option_string_actions)


def _holdem_only(argv: list[str], flag: str) -> bool:
    """Whether ``flag`` is an option ``argv`` refuses: solve's ``--deals`` is hold'em's alone."""
    return (argv[0], flag) == ("solve", "--deals") and not argv[1].startswith("holdem")


def bounded(command: str, ports: dict[str, str], postgres: str | None, home: Path) -> list[str]:
    """The argv after ``oppmodel`` a test runs for a documented line (module docstring)."""
    for documented, free in ports.items():
        command = re.sub(rf"\b{documented}\b", free, command)
    argv = shlex.split(command.replace("~/", f"{home}/"))[1:]
    options = _options(argv)
    for flag, cap in BOUNDS.items():
        if flag in argv:
            at = argv.index(flag) + 1
            argv[at] = str(min(int(argv[at]), cap))
        elif flag in options and not _holdem_only(argv, flag):
            argv += [flag, str(cap)]
    if argv[0] == "dealer":
        argv[3] = str(min(int(argv[3]), DEALER_HANDS))
    if argv[0] == "tournament" and "--start_timeout" not in argv:
        argv += ["--start_timeout", str(LOADED_START_MS)]
    for i, value in enumerate(argv):
        if value.startswith("postgresql://"):
            assert postgres is not None
            argv[i] = postgres
        if value == "0.0.0.0":
            argv[i] = "127.0.0.1"
    if argv[0] in SERVERS and "--port" not in argv:  # its default port, moved as the block's
        argv += ["--port", ports.get(DEFAULT_PORTS[argv[0]], str(_free_port()))]
    return argv


# --- the prepared files -----------------------------------------------------------------------


def _prepare(folder: Path, commands: str) -> None:
    """The files the block reads that a reader makes elsewhere, made in ``folder``."""
    logs = folder / "tests/data/acpc"
    logs.mkdir(parents=True)
    for log in (REPOSITORY / "tests/data/acpc").glob("*.log"):
        _cut(log, logs / log.name)
    if "mygame.game" in commands:  # "any ACPC limit game": the smallest, under another name
        shutil.copy(game_path("kuhn2p"), folder / "mygame.game")
    if "a.log" in commands:  # dealer logs of Alice's matches in 2-player Leduc
        for name in ("a", "b", "c"):
            shutil.copy(logs / "leduc2p-seed42-example-players.log", folder / f"{name}.log")
    if "l3.json" in commands:  # a strategy file of 3-player Leduc, as `oppmodel solve` writes
        _run_quietly(folder, ["solve", "leduc3p", "--iterations", "2", "--out", "l3.json"])
    for script, game in (("my_agent.sh", "kuhn3p"), ("leduc_agent.sh", "leduc3p")):
        if script in commands:  # an `exe HOST PORT` agent of the game, as the docs write one
            _run_quietly(folder, ["acpc-agent-script", script, game, "--agent", "uniform"])
    if "tokens.txt" in commands:
        (folder / "tokens.txt").write_text("reader-token\n")
    if "cert.pem" in commands:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-keyout", "key.pem", "-out", "cert.pem", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
            cwd=folder, check=True, capture_output=True,
        )  # fmt: skip


def _cut(log: Path, to: Path) -> None:
    """A dealer log cut to its first DEALER_HANDS hands (its header kept, its SCORE dropped)."""
    lines = log.read_text().splitlines(keepends=True)
    hands = [line for line in lines if line.startswith("STATE:")][:DEALER_HANDS]
    to.write_text("".join(line for line in lines if line.startswith("#")) + "".join(hands))


def _environment(folder: Path) -> dict[str, str]:
    path = f"{Path(OPPMODEL).parent}:{os.environ['PATH']}"
    return {**os.environ, "HOME": str(folder), "PATH": path}


# --- running a block --------------------------------------------------------------------------


@dataclass
class _Started:
    line: Line
    process: subprocess.Popen
    out: Path


def _run_here(folder: Path, argv: list[str], out: Path) -> int:
    """An ``oppmodel`` command run in this process (the package and its compiled kernels loaded
    once, not per line), its output written to ``out``; its exit status."""
    with (
        out.open("w") as sink,
        contextlib.chdir(folder),
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(sink),
    ):
        return main(argv)


def _run_quietly(folder: Path, argv: list[str]) -> None:
    out = folder / ".prepare.out"
    assert _run_here(folder, argv, out) == 0, out.read_text()[-3000:]


def _start(folder: Path, line: Line, argv: list[str], number: int) -> _Started:
    out = folder / f".line{number}.out"
    with out.open("w") as sink:
        process = subprocess.Popen(
            [OPPMODEL, *argv], cwd=folder, env=_environment(folder), stdout=sink,
            stderr=subprocess.STDOUT, text=True, preexec_fn=as_a_terminal_job,
        )  # fmt: skip
    return _Started(line, process, out)


def _wait_for(started: _Started, pattern: str) -> None:
    """Until a process's output shows ``pattern`` (or it ended: its check says why); fails if
    it runs DEADLINE seconds without showing it (the lines after it would need it)."""
    end = time.monotonic() + DEADLINE
    while started.process.poll() is None:
        if re.search(pattern, started.out.read_text()):
            return
        assert time.monotonic() < end, (
            f"{started.line.command}: no {pattern!r} in {DEADLINE:.0f} s\n"
            + started.out.read_text()[-3000:]
        )
        time.sleep(0.2)


def _check(documented: Line, status: int | None, out: Path) -> None:
    text = out.read_text()
    line = documented.command
    allowed = (0, 130) if is_server(documented) else (0,)
    assert status in allowed, f"{line}: exit {status}\n{text[-3000:]}"
    for start, pattern in SHOWS.items():
        if line.startswith(start + " ") or line == start:
            assert re.search(pattern, text), f"{line} does not show {pattern!r}:\n{text[-3000:]}"


def is_server(line: Line) -> bool:
    """Whether the line runs a server, which serves until Ctrl-C."""
    return line.command.startswith(tuple(f"oppmodel {server} " for server in SERVERS))


def _end_matches(background: list[_Started]) -> None:
    """Wait for the dealers and agents started so far, which end with their match."""
    for started in background:
        if not is_server(started.line):
            _check(started.line, started.process.wait(timeout=DEADLINE), started.out)


def _interrupt(started: _Started) -> None:
    """Ctrl-C a server, and check it ended cleanly."""
    if started.process.poll() is None:
        started.process.send_signal(signal.SIGINT)
    _check(started.line, started.process.wait(timeout=DEADLINE), started.out)


def run_block(
    block: Block, folder: Path, postgres: str | None, runs: frozenset[tuple[str, int]]
) -> None:
    """Run the lines of ``block`` that are in ``runs`` (``first_runs``) in ``folder`` (module
    docstring); fails on the first line that exits non-zero or does not show what its comment
    says."""
    lines = [
        (number, line)
        for number, line in enumerate(block.lines)
        if line.command not in NOT_RUN and (block.name, number) in runs
    ]
    text = "\n".join(line.command for _, line in lines)
    documented = set(re.findall(r"\b(1879\d)\b", text)) | set(DEFAULT_PORTS.values())
    ports = {port: str(_free_port()) for port in sorted(documented)}
    _prepare(folder, text)
    background: list[_Started] = []
    try:
        for number, line in lines:
            argv = bounded(line.command, ports, postgres, folder)
            if argv[0] == "dealer":  # on the ports of the block's earlier match: once it ended
                _end_matches(background)
            if not (line.background or is_server(line)):
                out = folder / f".line{number}.out"
                _check(line, _run_here(folder, argv, out), out)
                continue
            started = _start(folder, line, argv, number)
            background.append(started)
            if is_server(line):
                _wait_for(started, SHOWS[f"oppmodel {argv[0]}"])
                if not line.background:  # the reader's Ctrl-C before the next line
                    _interrupt(started)
            elif argv[0] == "dealer":  # its agents connect once it printed its ports
                _wait_for(started, argv[argv.index("-p") + 1].split(",")[0])
        _end_matches(background)
        for started in background:
            if is_server(started.line) and started.process.returncode is None:
                _interrupt(started)
    finally:
        for started in background:
            if started.process.poll() is None:
                started.process.kill()
                started.process.wait()


def needs_postgres(block: Block) -> bool:
    """Whether a line of the block names a PostgreSQL store it runs against."""
    return any(
        "postgresql://" in line.command and line.command not in NOT_RUN for line in block.lines
    )


def blocks_run_in(test_file: str) -> pytest.MarkDecorator:
    """Parametrize a test with each block ``test_file`` runs (``blocks_of``)."""
    blocks = blocks_of(test_file)
    return pytest.mark.parametrize("block", blocks, ids=[block.name for block in blocks])


def run(block: Block, folder: Path, request: pytest.FixtureRequest) -> None:
    """Run the block's lines that no earlier block ran, on the session's PostgreSQL server if a
    line names one (which skips the test where PostgreSQL is not installed, fails it in CI)."""
    postgres = request.getfixturevalue("postgres_url") if needs_postgres(block) else None
    run_block(block, folder, postgres, first_runs())
