"""Every command-line mistake ends alike: one line naming the problem, status 2, no leftovers.

Each case runs ``oppmodel`` in this process (``main(argv)``) with the working folder and the
temporary folder pointed at empty folders of its own, and checks stderr (at the file-descriptor
level, so that a line printed by gRPC's C core would count too), the exit status, and that both
folders are still empty. Usage errors come from argparse (its usage lines, then the error line);
every other mistake prints the error line alone.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from oppmodel.clients.cli import build_parser, main, run_command
from oppmodel.clients.commands import acpc_agent_cmd
from oppmodel.clients.interrupt import noting
from oppmodel.clients.progress import Progress
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.strategy import save_profile

ROOT = Path(__file__).resolve().parent.parent

# (argv with {inputs} and {busy} placeholders, text the error line must contain)
MISTAKES = {
    # demo: validated before its data folder is made
    "demo-unknown-opponent": ("demo --opponents foo,bar", "unknown strategy 'foo'"),
    "demo-one-opponent": ("demo --opponents n1", "opponents: needs exactly two names"),
    "demo-leduc2p-two-opponents": (
        "demo --game leduc2p --opponents cfr,maniac",
        "opponents: needs exactly one name in leduc2p",
    ),
    "demo-leduc-kuhn-opponent": ("demo --game leduc3p --opponents cfr,n2", "n2"),
    "demo-unknown-game": ("demo --game chess", "cannot read chess: no such file"),
    "demo-negative-hands": ("demo --hands -3", "argument --hands: must be from 1 to 10000000"),
    "demo-no-duplicates": ("demo --duplicates 0", "argument --duplicates: must be from 1 to"),
    "demo-huge-hands": (  # was numpy's ArrayMemoryError (7.28 TiB)
        "demo --hands 1000000000000",
        "argument --hands: must be from 1 to 10000000, got 1000000000000",
    ),
    "demo-k-zero": ("demo --k 0", "argument --k: must be from 1 to"),
    "demo-negative-seed": ("demo --seed -1", "argument --seed: must be from 0 to"),
    "demo-data-dir-is-a-file": ("demo --data-dir {inputs}/junk.txt", "junk.txt: File exists"),
    # serve: everything is checked before the database is opened or created
    "serve-missing-folder": (
        "serve --db {inputs}/no/such/x.sqlite --port 0",
        "store: cannot create {inputs}/no/such/x.sqlite: no folder",
    ),
    "serve-not-a-database": (
        "serve --db {inputs}/junk.txt --port 0",
        "store: cannot use {inputs}/junk.txt: file is not a database",
    ),
    "serve-unsupported-store": (
        "serve --db mysql://someone:s3cret@127.0.0.1/db --port 0",
        "store: mysql:// is not a supported store",
    ),
    "serve-unreachable-store": (
        "serve --db postgresql://nobody@127.0.0.1:{closed}/x?password=s3cret --port 0",
        "store: cannot use postgresql://nobody@127.0.0.1:{closed}/x: connection failed",
    ),
    "serve-unreachable-store-connection-string": (  # was taken as a SQLite file's name
        "serve --db 'host=127.0.0.1 port={closed} user=nobody password=s3cret dbname=x' --port 0",
        "store: cannot use host=127.0.0.1 port={closed} user=nobody dbname=x: connection failed",
    ),
    "serve-ray-unreachable-store": (  # refused before Ray starts, as without --ray
        "serve --ray --db postgresql://nobody:s3cret@127.0.0.1:{closed}/x --port 0",
        "store: cannot use postgresql://nobody@127.0.0.1:{closed}/x: connection failed",
    ),
    "serve-missing-tls-files": (
        "serve --db new.sqlite --port 0 --tls-cert no.pem --tls-key no.key",
        "cannot read no.key: No such file or directory",
    ),
    "serve-tls-files-not-pem": (
        "serve --db new.sqlite --port 0 --tls-cert {inputs}/junk.txt --tls-key {inputs}/junk.txt",
        "are not a PEM certificate chain and its private key",
    ),
    "serve-tls-cert-alone": (
        "serve --db new.sqlite --port 0 --tls-cert {inputs}/junk.txt",
        "TLS needs both a certificate and a key",
    ),
    "serve-missing-token-file": (
        "serve --db new.sqlite --port 0 --auth-tokens no.txt",
        "auth_tokens: cannot read no.txt",
    ),
    "serve-empty-token-file": (
        "serve --db new.sqlite --port 0 --auth-tokens {inputs}/empty.txt",
        "empty.txt: no tokens",
    ),
    "serve-foreign-address": (
        "serve --db new.sqlite --host 192.0.2.1 --port 0",  # TEST-NET-1: never this machine's
        "cannot bind 192.0.2.1:0",
    ),
    "serve-ray-host": (  # Ray Serve's gRPC proxy binds every interface: refused, not ignored
        "serve --ray --db postgresql://nobody@127.0.0.1:{closed}/x --host 127.0.0.1",
        "host: not with --ray: Ray Serve's gRPC proxy listens on every interface",
    ),
    # ui: its port and flags are checked before it listens
    "ui-busy-port": (
        "ui --service 127.0.0.1:{closed} --port {busy}",
        "127.0.0.1:{busy} is already in use",
    ),
    "ui-refresh-zero": (
        "ui --service 127.0.0.1:{closed} --refresh-seconds 0",
        "argument --refresh-seconds: must be at least 0.1",
    ),
    "ui-missing-certificates": (
        "ui --service 127.0.0.1:{closed} --root-certificates {inputs}/no.pem",
        "no.pem: No such file or directory",
    ),
    "serve-busy-port": ("serve --db new.sqlite --port {busy}", ":{busy} is already in use"),
    "serve-port-out-of-range": ("serve --db new.sqlite --port 70000", "argument --port: must be"),
    "serve-busy-metrics-port": (
        "serve --db new.sqlite --port 0 --metrics-port {busy}",
        "metrics endpoint: 127.0.0.1:{busy} is already in use",
    ),
    "serve-ray-busy-metrics-port": (  # refused before Ray starts, as without --ray
        "serve --ray --db postgresql://nobody@127.0.0.1:{closed}/x --metrics-port {busy}",
        "metrics endpoint: 127.0.0.1:{busy} is already in use",
    ),
    "serve-metrics-port-out-of-range": (
        "serve --db new.sqlite --metrics-port 65536",
        "argument --metrics-port: must be from 0 to 65535",
    ),
    "serve-negative-max-k": ("serve --db new.sqlite --max-k -1", "argument --max-k: must be"),
    "serve-no-sessions": ("serve --db new.sqlite --max-sessions 0", "argument --max-sessions"),
    "serve-negative-grace": ("serve --db new.sqlite --grace -1", "argument --grace: must be"),
    # solve
    "solve-unknown-game": ("solve nope --iterations 5 --out s.json", "nor a bundled game"),
    "solve-not-a-limit-game": (
        "solve {inputs}/junk.txt --iterations 5 --out s.json",
        "numRounds: invalid number of rounds: 0",
    ),
    "solve-no-iterations": (
        "solve leduc2p --iterations 0 --out s.json",
        "argument --iterations: must be from 1 to 1000000000, got 0",
    ),
    "solve-huge-iterations": (  # would run for centuries
        "solve leduc2p --iterations 100000000000000 --out s.json",
        "argument --iterations: must be from 1 to 1000000000",
    ),
    "solve-not-a-state": (
        "solve kuhn2p --iterations 5 --out s.json --resume {inputs}/junk.txt",
        "junk.txt is not a solver state",
    ),
    # eval and match
    "eval-unknown-profile": ("eval --profile nonesuch", "unknown strategy 'nonesuch'"),
    "match-too-few-agents": ("match --agents n1,n3", "agents: kuhn3p needs 3 agents"),
    "match-no-hands": ("match --agents n1,n2,n3 --hands 0", "argument --hands: must be"),
    "match-huge-hands": (  # was a ValueError deep in numpy
        "match --agents n1,n2,n3 --hands 99999999999999999999",
        "argument --hands: must be from 1 to 10000000",
    ),
    "match-bad-k": ("match --agents mbbr,n2,n3 --mbbr-k 0", "argument --mbbr-k: must be"),
    "match-bad-epsilon": (
        "match --agents mbbr,n2,n3 --mbbr-epsilon 0.7",
        "argument --mbbr-epsilon: must be in",
    ),
    "match-bad-change-hazard": (
        "match --agents mbbr,n2,n3 --mbbr-change-hazard 0.5",
        "argument --mbbr-change-hazard: must be in",
    ),
    "match-eta-not-a-number": (
        "match --agents mbbr,n2,n3 --mbbr-eta x",
        "argument --mbbr-eta: 'x' is not a float",
    ),
    "match-bad-mixture-eta": (
        "match --agents mbbr,n2,n3 --mbbr-mixture-eta 0",
        "argument --mbbr-mixture-eta: must be in",
    ),
    # the ACPC commands
    "dealer-not-a-game-file": (
        "dealer m {inputs}/junk.txt 10 1 a b c",
        "junk.txt is not a valid game definition",
    ),
    "dealer-missing-game": ("dealer m nope.game 10 1 a b c", "cannot read nope.game"),
    "dealer-wrong-player-count": ("dealer m kuhn3p 10 1 a b", "names: the game has 3 players"),
    "dealer-busy-port": (
        "dealer m kuhn3p 10 1 a b c -p {busy},0,0",
        "cannot listen on 127.0.0.1:{busy}",
    ),
    "dealer-port-out-of-range": ("dealer m kuhn3p 10 1 a b c -p 1,2,70000", "argument -p"),
    "dealer-negative-seed": ("dealer m kuhn3p 10 -1 a b c", "argument SEED: must be from 0"),
    "dealer-negative-version-wait": (
        "dealer m kuhn3p 10 1 a b c --t_version -1",
        "argument --t_version: must be from 0 to",
    ),
    "acpc-agent-missing-game": ("acpc-agent nope.game 127.0.0.1 1", "cannot read nope.game"),
    "match-prior-strategy-missing": (
        "match --agents mbbr,n1,n3 --mbbr-prior-strategy nope.json",
        "--mbbr-prior-strategy: cannot read nope.json: No such file or directory",
    ),
    "acpc-agent-prior-strategy-of-another-game": (
        "acpc-agent kuhn2p 127.0.0.1 1 --in-process --mbbr-prior-strategy {inputs}/n1.json",
        "--mbbr-prior-strategy: num_players: {inputs}/n1.json is for 3 players, kuhn2p has 2",
    ),
    "acpc-agent-holdem-prior-strategy": (
        "acpc-agent holdem2p 127.0.0.1 1 --in-process --mbbr-prior-strategy {inputs}/n1.json",
        "--mbbr-prior-strategy: a hold'em session's prior and default are its bundled blueprint",
    ),
    "acpc-agent-no-dealer": (
        "acpc-agent kuhn3p 127.0.0.1 {closed} --connect-timeout 0",
        "cannot connect to 127.0.0.1:{closed}",
    ),
    "acpc-agent-service-plays-mbbr": (
        "acpc-agent kuhn3p 127.0.0.1 1 --service 127.0.0.1:1 --agent n1",
        "--service and --in-process play mbbr only",
    ),
    "acpc-agent-script-unknown-agent": (
        "acpc-agent-script out.sh kuhn3p --agent nonesuch",
        "nonesuch",
    ),
    "tournament-missing-program": (
        "tournament --agent a=builtin:n1 --agent b=builtin:n3 --agent c=./no-such-agent.sh",
        "c: './no-such-agent.sh' is not an executable program",
    ),
    "tournament-too-few-agents": (
        "tournament --agent a=builtin:n1 --agent b=builtin:n3",
        "agent: the game has 3 players, got 2",
    ),
    "tournament-no-hands": (
        "tournament --agent a=builtin:n1 --hands 0",
        "argument --hands: must be from 1 to 10000000",
    ),
    "replay-not-utf8": (
        "replay {inputs}/latin1.log --as Alice --local",
        "latin1.log is not a dealer log: line 2 is not UTF-8 text",
    ),
    "replay-not-a-log": ("replay {inputs}/junk.txt --as Alice --local", "junk.txt: line 1"),
    "replay-missing-log": ("replay nope.log --as Alice --local", "cannot read nope.log"),
    "population-missing-log": (
        "population nope.log --as Alice --out p.npz",
        "cannot read nope.log",
    ),
    "replay-unknown-game": (
        "replay {inputs}/small.log --as Alice --local --game nope",
        "cannot read nope: no such file, nor a bundled game "
        "(kuhn2p, kuhn3p, kuhn4p, leduc2p, leduc3p)",
    ),
    "replay-plot-not-an-image": (  # refused before the replay, not after it
        "replay {inputs}/small.log --as Alice --local --plot curves.txt",
        "plot: curves.txt: cannot draw a .txt file; use ",
    ),
    "replay-plot-no-folder": (
        "replay {inputs}/small.log --as Alice --local --plot {inputs}/no/such/curves.png",
        "no folder {inputs}/no/such",
    ),
    # perfect information and move prediction
    "spades-no-pair": (
        "spades-match --candidates mOT_p --opponents mOT_p",
        "no pair of distinct types",
    ),
    "spades-bad-eps": ("spades-match --eps 2", "argument --eps: must be at least 0"),
    "spades-bad-hand-size": ("spades-match --hand-size 0", "argument --hand-size: must be"),
    "movepred-no-games": ("movepred --games 0", "argument --games: must be from 1 to 100000"),
    "movepred-zero-alpha": ("movepred --alpha 0", "argument --alpha: must be above 0"),
}


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    """Files the mistakes point at, in a folder of their own."""
    folder = tmp_path / "inputs"
    folder.mkdir()
    (folder / "junk.txt").write_text("this is neither a database nor a game nor a log\n")
    (folder / "empty.txt").write_text("# no tokens here\n\n")
    save_profile(kuhn_game(3), robust_profile("N1"), folder / "n1.json")  # OpenSpiel's keys
    log = (ROOT / "tests" / "data" / "acpc" / "kuhn3p-seed42-example-players.log").read_bytes()
    lines = log.splitlines(keepends=True)
    (folder / "small.log").write_bytes(b"".join(lines[:20]))
    (folder / "latin1.log").write_bytes(lines[0] + "# Zoë\n".encode("latin-1"))
    return folder


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port with a listener on it."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on (free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """An empty working folder and an empty temporary folder; the ``oppmodel`` logger restored
    (``serve`` points it at the stderr of the moment)."""
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    logger = logging.getLogger("oppmodel")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    yield cwd, tmp
    logger.handlers[:], logger.level, logger.propagate = saved


def run_cli(argv: list[str]) -> int:
    """``oppmodel ARGV`` in this process; the exit status (argparse's too)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


def error_line(stderr: str, command: str) -> str:
    """The one error line of ``stderr``, after checking that nothing else was printed but
    argparse's usage block."""
    lines = stderr.splitlines()
    assert lines, "nothing on stderr"
    *before, last = lines
    assert last.startswith(f"oppmodel {command}: error: "), stderr
    if before:  # a usage error: argparse's usage block, then the error line
        assert before[0].startswith(f"usage: oppmodel {command} "), stderr
        assert all(line.startswith(" ") for line in before[1:]), stderr
    return last


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_a_mistake_ends_in_one_line_status_2_and_no_leftovers(
    case: str,
    inputs: Path,
    busy_port: int,
    closed_port: int,
    isolated: tuple[Path, Path],
    capfd: pytest.CaptureFixture[str],
) -> None:
    template, expected = MISTAKES[case]
    values = {"inputs": inputs, "busy": busy_port, "closed": closed_port}
    argv = shlex.split(template.format(**values))
    before = sorted(inputs.iterdir())
    status = run_cli(argv)
    captured = capfd.readouterr()
    assert status == 2, captured.err
    assert expected.format(**values) in error_line(captured.err, argv[0])
    assert "Traceback" not in captured.err
    assert "s3cret" not in captured.err  # a password is never shown
    assert captured.out == ""
    cwd, tmp = isolated
    assert list(cwd.iterdir()) == [], "left behind in the working folder"
    assert list(tmp.iterdir()) == [], "left behind in the temporary folder"
    assert sorted(inputs.iterdir()) == before


def test_the_installed_command_exits_2_with_one_line(tmp_path: Path) -> None:
    """The console script, not just ``main``: a usage error and a domain error."""
    oppmodel = Path(sys.executable).parent / "oppmodel"
    for argv, expected in (
        (["demo", "--k", "0"], "oppmodel demo: error: argument --k: must be from 1 to"),
        (["dealer", "m", "nope", "1", "1", "a", "b", "c"], "oppmodel dealer: error: gamefile:"),
    ):
        done = subprocess.run(
            [str(oppmodel), *argv],
            cwd=tmp_path,
            env={**os.environ, "TMPDIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2
        assert done.stderr.splitlines()[-1].startswith(expected), done.stderr
        assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def _options(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from ((f"{name} {label}", a) for label, a in _options(sub))
        else:
            yield "/".join(action.option_strings) or action.dest, action


def test_every_numeric_option_has_a_range() -> None:
    """A bare ``int`` or ``float`` type accepts -3 hands or port 70000; every numeric option of
    every subcommand uses a ranged type instead."""
    bare = [label for label, action in _options(build_parser()) if action.type in (int, float)]
    assert bare == []


def test_every_integer_option_has_an_upper_bound() -> None:
    """A count without one takes 10^12 hands to an allocation of terabytes, or 10^14 iterations
    to a run of centuries: every integer option names its range."""
    unbounded = [
        label
        for label, action in _options(build_parser())
        if getattr(action.type, "__name__", "").startswith("integer")
        and not action.type.__name__.startswith("integer from")
    ]
    assert unbounded == []


def test_every_command_is_covered_by_a_mistake() -> None:
    commands = {name for name, _ in (argv.split(maxsplit=1) for argv, _ in MISTAKES.values())}
    parser = build_parser()
    (subparsers,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert commands == set(subparsers.choices)


def test_the_stand_alone_agent_entry_point_follows_the_convention(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``python -m oppmodel.clients.commands.acpc_agent_cmd`` (what generated wrapper scripts
    run)."""
    assert acpc_agent_cmd.main(["nope.game", "127.0.0.1", "1"]) == 2
    assert capsys.readouterr().err == (
        "oppmodel acpc-agent: error: gamefile: cannot read nope.game: no such file, "
        "nor a bundled game (kuhn2p, kuhn3p, kuhn4p, leduc2p, leduc3p)\n"
    )


# A child that asks one command for its help; it prints the commands' modules it imported.
ONE_COMMANDS_HELP = """
import sys
from oppmodel.clients.cli import main
try:
    main(["acpc-agent", "--help"])
except SystemExit as stop:
    assert stop.code == 0
print(sorted(m for m in sys.modules if m.endswith("_cmd")))
"""


def test_a_command_imports_its_own_modules_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Importing every command's modules took an ACPC agent 2.3 s of CPU before it connected
    (its own 0.9 s): a hold'em agent at load 40 missed the dealer's 60 s start timeout. Its help
    is the one the whole parser gives."""
    done = subprocess.run(
        [sys.executable, "-c", ONE_COMMANDS_HELP], cwd=tmp_path, capture_output=True, text=True
    )
    *shown, imported = done.stdout.splitlines()
    assert imported == "['oppmodel.clients.commands.acpc_agent_cmd']", done.stderr
    with pytest.raises(SystemExit):
        build_parser().parse_args(["acpc-agent", "--help"])
    assert shown == capsys.readouterr().out.splitlines()


def test_ctrl_c_inside_a_compiled_call_is_the_interrupt_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """numba turns a KeyboardInterrupt raised inside a dispatcher call (loading its cache) into a
    SystemError caused by it (seen under load in `match`): still one line and status 130."""

    def compiled_call(_: argparse.Namespace) -> int:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError("CPUDispatcher(...) returned a result with an exception set") from exc

    assert run_command("oppmodel match", compiled_call, argparse.Namespace()) == 130
    assert capsys.readouterr().err == "oppmodel match: interrupted; nothing kept\n"


def test_ctrl_c_under_two_compiled_calls_is_the_interrupt_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ctrl-C while a dispatcher call loads its cache reaches the command as a SystemError of the
    call, caused by the SystemError of numba's unpickling, caused by the KeyboardInterrupt (the
    clean-clone CI's `match` case): the interrupt, one line."""

    def compiled_call(_: argparse.Namespace) -> int:
        return _interrupted_cache_load()

    assert run_command("oppmodel match", compiled_call, argparse.Namespace()) == 130
    assert capsys.readouterr().err == "oppmodel match: interrupted; nothing kept\n"


def _interrupted_cache_load() -> int:
    """What a dispatcher call raises when Ctrl-C comes while it loads its cache."""
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError("_numba_unpickle returned a result with an error set") from exc
    except SystemError as exc:
        raise SystemError("CPUDispatcher(...) returned a result with an exception set") from exc


def test_ctrl_c_under_compiled_calls_still_says_how_far_the_command_got(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The counted work (Progress) and a noted block (noting) see the Ctrl-C through numba's
    SystemErrors too: at load 30 `population`, stopped in its first log's hands, said
    "interrupted; nothing kept" without its count (test_cli_interrupt's case)."""

    def population(_: argparse.Namespace) -> int:
        with Progress(300, desc="oppmodel population", unit="hand", show=False) as bar:
            bar.update(12)
            return _interrupted_cache_load()

    def solve(_: argparse.Namespace) -> int:
        with noting(progress=lambda: "at iteration 7 of 10", kept=lambda: "state saved to s.npz"):
            return _interrupted_cache_load()

    assert run_command("oppmodel population", population, argparse.Namespace()) == 130
    assert run_command("oppmodel solve", solve, argparse.Namespace()) == 130
    assert capsys.readouterr().err.splitlines() == [
        "oppmodel population: interrupted after 12 of 300 hands; nothing kept",
        "oppmodel solve: interrupted at iteration 7 of 10; state saved to s.npz",
    ]


def test_ctrl_c_an_import_took_for_a_missing_module_still_ends_the_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SIGINT inside C code importing becomes that import's ImportError; code that takes an
    ImportError for an optional module missing goes on, so no error reaches ``main``: the noted
    Ctrl-C still ends the start (the clean-clone CI's numpy case printed a usage error instead)."""
    import oppmodel.clients.cli as cli

    def parser_whose_import_swallowed_ctrl_c(command: str | None = None) -> argparse.ArgumentParser:
        # as PyCapsule_Import's ImportError, caught by an optional import
        with contextlib.suppress(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        return build_parser(command)

    monkeypatch.setattr(cli, "build_parser", parser_whose_import_swallowed_ctrl_c)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert cli.main(["eval"]) == 130
    finally:
        signal.signal(signal.SIGINT, before)
    assert capsys.readouterr().err == "oppmodel eval: interrupted while starting; nothing kept\n"


def test_a_system_error_of_another_cause_keeps_its_traceback() -> None:
    def broken(_: argparse.Namespace) -> int:
        raise SystemError("a bug")

    with pytest.raises(SystemError, match="a bug"):
        run_command("oppmodel match", broken, argparse.Namespace())
