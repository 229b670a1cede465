"""Ctrl-C on every long command: one line saying what was interrupted and what was kept, exit
status 130, and nothing left running (child processes, worker pools, the model worker and its
fork server, external agents, servers).

Each command runs as the installed ``oppmodel`` in a session of its own, as a shell runs a job;
once it shows it is at work (its first progress line off a terminal, or its serving or ports
line) the whole process group gets SIGINT, as the terminal's Ctrl-C sends it. The commands run
at once, in parallel, each in a folder of its own.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from oppmodel.clients.cli import build_parser
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.solve.cfr import CFRSolver

pytestmark = pytest.mark.slow  # every long command started and stopped: a minute or more

TESTS = Path(__file__).resolve().parent
OPPMODEL = str(Path(sys.executable).parent / "oppmodel")
EXTERNAL = f"{sys.executable} {TESTS / 'acpc_external_agent.py'}"
LOG = TESTS / "data/acpc/leduc3p-seed42-example-players.log"
PROGRESS = re.compile(r"^oppmodel [^:]+: \d+/\d+ [\w ]+ done, \d+ s$")  # a progress line
STARTED_SECONDS = 240  # for the command to show it is at work (imports on two loaded cores)
# from SIGINT to the command's exit and its process group's end; the goal is 5 s (about 1 s
# here when quiet), the bound leaves room for two busy cores and still catches a wait for the
# running work (spades-match --jobs 2 took 78 s) or for a seat that never connects
STOP_SECONDS = 20

# command: (argv, pattern of the interrupted line); sizes that keep each at work for minutes
CASES = {
    "demo": (
        "demo --hands 100 --duplicates 10000",  # progress: a count after every match
        r"interrupted after \d+ of 6000000 hands; nothing kept",
    ),
    "match": (
        "match --agents mbbr,n1,n3 --hands 200 --duplicates 10000",
        r"interrupted after \d+ of 12000000 hands; nothing kept",
    ),
    "solve": (
        "solve leduc3p --iterations 1000000 --out s.json --resume s.npz",
        r"interrupted at iteration (\d+) of 1000000; state saved to s.npz "
        r"\(the same command resumes from it\)",
    ),
    "replay": (
        f"replay {LOG} --as Alice --local",
        r"interrupted after \d+ of 3000 hands; nothing kept",
    ),
    "population": (  # one log 100 times: 100 opponents' models fed its 3,000 hands each
        f"population {' '.join([str(LOG)] * 100)} --as Alice --out p.npz",
        r"interrupted after \d+ of 300000 hands; nothing kept",
    ),
    "tournament": (
        f"tournament --agent a=builtin:n1 --agent b=builtin:n3 --agent 'c={EXTERNAL}' "
        "--hands 100000 --out logs",
        r"interrupted after \d+ of 600000 hands; the logs of the matches played are in logs/",
    ),
    "dealer": (  # interrupted while it waits for its seats to connect
        "dealer m kuhn3p 100000 42 a b c",
        r"interrupted after 0 of 100000 hands; the hands dealt are in m.log",
    ),
    "movepred": (
        "movepred --games 200 --repeats 100000",
        r"interrupted after \d+ of 100000 replications; nothing kept",
    ),
    "spades-match": (
        "spades-match --jobs 2 --deal-sequences 1000 --hand-size 3 --target 100",
        r"interrupted after \d+ of 4000 deal sequences; nothing kept",
    ),
    "serve": (
        "serve --store s.sqlite --port 0",
        r"interrupted; the sessions are kept in s.sqlite",
    ),
    "ui": (  # its pages read the service only when one is open: no service needed to serve
        "ui --service 127.0.0.1:1 --port 0",
        r"interrupted; nothing: the sessions stay in the service",
    ),
    # a seat of a dealer's match (DEALER its port), interrupted once hands are dealt; the other
    # seats are external agents, the service (SERVICE its port) is an `oppmodel serve`
    "acpc-agent": (
        "acpc-agent kuhn3p 127.0.0.1 {dealer} --in-process --seed 1",
        r"interrupted after \d+ hands; nothing kept",
    ),
    "acpc-agent --service": (
        "acpc-agent kuhn3p 127.0.0.1 {dealer} --service 127.0.0.1:{service} --seed 1",
        r"interrupted after \d+ hands; the hands sent are in session [\w-]+ on the service at "
        r"127\.0\.0\.1:\d+",
    ),
}
HELPED = ("acpc-agent", "acpc-agent --service")  # cases that need a dealer (and a service)
# The commands without a case above: each ends within a second of its start-up (a few seconds of
# imports), where Ctrl-C is answered as in every command (test_ctrl_c_while_a_command_starts)
QUICK = {
    "eval": "eval --game leduc3p --profile maniac",  # exact values: the largest bundled game
    "acpc-agent-script": "acpc-agent-script agent.sh leduc3p",  # writes a script
}


def session_processes(session: int) -> list[int]:
    """Live processes (zombies aside) of a session, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        state, _, _, sid = stat.rsplit(")", 1)[1].split()[:4]
        if int(sid) == session and state != "Z":
            found.append(int(entry.name))
    return found


@dataclass
class Run:
    """A command running in a session of its own, its output collected line by line."""

    name: str
    folder: Path
    process: subprocess.Popen
    temp: Path  # its TMPDIR, short: AF_UNIX socket paths (the model workers') hold 107 bytes
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    seconds: float = float("inf")  # from SIGINT to the end of the command and its group
    readers: list[threading.Thread] = field(default_factory=list)

    def first_line(self) -> str:
        """Its first line on stdout (a dealer's ports, a server's address), once it prints it."""
        deadline = time.monotonic() + STARTED_SECONDS
        while not self.out:
            assert self.process.poll() is None and time.monotonic() < deadline, self.err
            time.sleep(0.05)
        return self.out[0]

    def read(self, stream: object, lines: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.append(line.rstrip("\n"))

    def stop_watch(self, sent: float) -> None:
        """Wait for the command's exit and its process group's end (or STOP_SECONDS) and keep
        the seconds since SIGINT was ``sent``."""
        self.process.wait(timeout=STARTED_SECONDS)
        while session_processes(self.process.pid) and time.monotonic() < sent + STOP_SECONDS:
            time.sleep(0.05)
        self.seconds = time.monotonic() - sent
        for reader in self.readers:  # the last lines (end of file once the group is gone)
            reader.join(timeout=STOP_SECONDS)

    def at_work(self) -> bool:
        if self.name in HELPED:  # the dealer has logged hands
            log = self.folder / "dealer" / "m.log"
            return log.exists() and log.read_text().count("\nSTATE:") >= 3
        if self.name == "serve":
            return any(line.startswith("serving on") for line in self.out)
        if self.name == "ui":
            return any(line.startswith("ui: http://") for line in self.out)
        if self.name == "dealer":
            return bool(self.out)  # the ports line
        return any(PROGRESS.match(line) for line in self.err)


def match_for(name: str, folder: Path, helpers: list[Run]) -> dict[str, str]:
    """Start the service (for --service), a kuhn3p dealer and external agents in its other seats
    (each added to ``helpers`` once started); the ports the agent under test needs."""
    ports = {}
    if "--service" in name:
        serve = "serve --store s.sqlite --port 0"
        helpers.append(start("serve", folder, helpers, [OPPMODEL, *shlex.split(serve)]))
        ports["service"] = re.findall(r":(\d+) ", helpers[-1].first_line())[0]
    dealer = "dealer m kuhn3p 100000 42 a b c -q --t_per_hand 600000"  # slow starts
    helpers.append(start("dealer", folder, helpers, [OPPMODEL, *shlex.split(dealer)]))
    ports["dealer"], *others = helpers[-1].first_line().split()
    for port in others:
        seat = [*shlex.split(EXTERNAL), "127.0.0.1", port]
        helpers.append(start(f"seat{port}", folder, helpers, seat))
    return ports


def as_a_terminal_job() -> None:
    """In the child before exec: SIGINT as an interactive shell gives its foreground job (the
    default action, not blocked). A disposition of SIG_IGN and a blocked mask are inherited
    through exec, and a test process may hold either: a suite started as a background job of a
    script (``pytest ... &`` in a shell without job control; ``timeout`` resets it) ignores
    SIGINT in every worker, and the command would then never see the Ctrl-C this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def start(name: str, tmp_path: Path, helpers: list[Run], argv: list[str] | None = None) -> Run:
    """Start the case's command (or ``argv``, a helper's) in a folder of its own; a case in
    HELPED gets its service, its dealer and the other seats first, added to ``helpers``."""
    folder = tmp_path / name.replace(" ", "")
    folder.mkdir(parents=True)
    temp = Path(tempfile.mkdtemp(prefix="oppmodel-int-"))
    if argv is None:
        ports = match_for(name, folder, helpers) if name in HELPED else {}
        argv = [OPPMODEL, *shlex.split(CASES[name][0].format(**ports))]
    process = subprocess.Popen(
        argv,
        cwd=folder,
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group and session, as a shell's job
        preexec_fn=as_a_terminal_job,
    )
    run = Run(name, folder, process, temp)
    for stream, lines in ((process.stdout, run.out), (process.stderr, run.err)):
        run.readers.append(threading.Thread(target=run.read, args=(stream, lines), daemon=True))
        run.readers[-1].start()
    return run


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    """Every command started at once, each sent Ctrl-C once at work."""
    tmp_path = tmp_path_factory.mktemp("interrupt")
    runs: list[Run] = []
    helpers: list[Run] = []  # the services, dealers and other seats of the HELPED cases
    stopped: dict[str, tuple[Run, threading.Thread]] = {}
    try:
        for name in CASES:
            runs.append(start(name, tmp_path, helpers))
        deadline = time.monotonic() + STARTED_SECONDS
        while len(stopped) < len(runs) and time.monotonic() < deadline:
            for run in runs:  # each one Ctrl-C as soon as it is at work
                if run.name in stopped:
                    continue
                assert run.process.poll() is None, f"{run.name} ended early: {run.err}"
                if run.at_work():
                    os.killpg(run.process.pid, signal.SIGINT)
                    watcher = threading.Thread(target=run.stop_watch, args=(time.monotonic(),))
                    watcher.start()
                    stopped[run.name] = (run, watcher)
            time.sleep(0.05)
        assert len(stopped) == len(runs), [(r.name, r.err) for r in runs if r.name not in stopped]
        for _, watcher in stopped.values():
            watcher.join()
    finally:
        for helper in helpers:  # Ctrl-C them too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(helper.process.pid, signal.SIGINT)
        for run in runs + helpers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                run.process.wait(timeout=STOP_SECONDS)
            for pid in session_processes(run.process.pid):  # only if the test failed
                os.kill(pid, signal.SIGKILL)
            run.process.kill()
            run.process.wait()
    try:
        yield {name: run for name, (run, _) in stopped.items()}
    finally:
        for run in runs + helpers:
            shutil.rmtree(run.temp, ignore_errors=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_ctrl_c_ends_a_command_in_one_line_status_130_and_nothing_left_running(
    name: str, interrupted: dict[str, Run]
) -> None:
    run = interrupted[name]
    # what it printed besides its progress lines, its JSON log lines (serve) and the dealer's
    # log header: the one interrupted line
    said = [line for line in run.err if not (PROGRESS.match(line) or line.startswith(("{", "#")))]
    assert "Traceback" not in "\n".join(run.err)
    assert "KeyboardInterrupt" not in "\n".join(run.err)
    assert len(said) == 1, run.err
    command = name.split()[0]
    line = re.fullmatch(f"oppmodel {command}: {CASES[name][1]}", said[0])
    assert line, said
    assert run.process.returncode == 130
    assert session_processes(run.process.pid) == []
    assert run.seconds < STOP_SECONDS
    assert list(run.temp.iterdir()) == []  # a temporary folder is removed
    if name == "solve":  # the state saved is the one the line names, whole
        solver = CFRSolver.load(limit_game("leduc3p"), run.folder / "s.npz")
        assert solver.iteration == int(line.group(1))


def test_every_command_has_a_ctrl_c_case() -> None:
    """Each of the CLI's commands is stopped above, or ends within a second of its start-up
    (QUICK): a new command needs a case or a place in QUICK."""
    (commands,) = (
        action.choices
        for action in build_parser()._actions
        if isinstance(action.choices, dict)  # the subcommands' action
    )
    cased = {name.split()[0] for name in CASES}
    assert sorted(commands) == sorted(cased | set(QUICK))
    assert not cased & set(QUICK)


def past_numpy_import(pid: int) -> bool:
    """Whether the process has numba's extensions mapped: the command's start-up has reached the
    imports of every command (``build_parser``), seconds long, past numpy's own import (numba
    imports it first; SIGINT inside numpy's C-level import surfaced as an ImportError)."""
    with contextlib.suppress(OSError):
        return "/numba/" in Path(f"/proc/{pid}/maps").read_text()
    return False


@pytest.mark.parametrize("name", sorted(QUICK))
def test_ctrl_c_while_a_command_starts_is_one_line_and_status_130(
    name: str, tmp_path: Path
) -> None:
    """Ctrl-C in the seconds a command spends importing (a quick command spends nearly all its
    time there) gave a traceback: it is one line too, saying the command was starting."""
    run = start(name, tmp_path, [], [OPPMODEL, *shlex.split(QUICK[name])])
    try:
        deadline = time.monotonic() + STARTED_SECONDS
        while not past_numpy_import(run.process.pid):
            assert run.process.poll() is None and time.monotonic() < deadline, run.err
            time.sleep(0.01)
        os.killpg(run.process.pid, signal.SIGINT)
        run.stop_watch(time.monotonic())
    finally:
        run.process.kill()
        run.process.wait()
        shutil.rmtree(run.temp, ignore_errors=True)
    # in its imports; on a fast machine perhaps past them, in its work
    assert len(run.err) == 1, run.err
    assert re.fullmatch(f"oppmodel {name}: interrupted( while starting)?; nothing kept", run.err[0])
    assert run.process.returncode == 130
    assert run.out == []


# A child that raises a real SIGINT at the moment numpy's C code imports ``datetime`` (its
# ``PyCapsule_Import``), the first ~0.1 s of a command; it says whether that was the moment.
SIGINT_IN_NUMPYS_C_IMPORT = """
import signal, sys
from oppmodel.clients.cli import main

class SigintAtDatetime:
    def find_spec(self, name, path=None, target=None):
        if name == "datetime":
            sys.meta_path.remove(self)
            frame, loading = sys._getframe(), []
            while frame is not None:  # the extension modules being executed, innermost first
                if frame.f_code.co_name == "exec_module":
                    loading.append(getattr(frame.f_locals.get("self"), "name", None))
                frame = frame.f_back
            if loading[:1] == ["numpy._core._multiarray_umath"]:
                print("in numpy's C-level import", flush=True)
            signal.raise_signal(signal.SIGINT)
        return None

assert "datetime" not in sys.modules and "numpy" not in sys.modules
sys.meta_path.insert(0, SigintAtDatetime())
sys.exit(main(["eval"]))
"""


def test_ctrl_c_inside_numpys_c_level_import_is_one_line_and_status_130(tmp_path: Path) -> None:
    """SIGINT handled while numpy's C code imports ``datetime`` surfaced as ``ImportError:
    PyCapsule_Import could not import module "datetime"`` (the KeyboardInterrupt not kept in
    its chain) with a traceback: it is the interrupt too."""
    done = subprocess.run(
        [sys.executable, "-c", SIGINT_IN_NUMPYS_C_IMPORT],
        cwd=tmp_path, capture_output=True, text=True, timeout=STARTED_SECONDS,
        preexec_fn=as_a_terminal_job,
    )  # fmt: skip
    assert done.stdout == "in numpy's C-level import\n", done.stderr
    assert done.stderr == "oppmodel eval: interrupted while starting; nothing kept\n"
    assert done.returncode == 130


# A child that raises a real SIGINT as LLVM hands numba a kernel's object code (the first kernel
# compiled, in a cold cache): inside ``_raw_object_cache_notify``, a ctypes callback.
SIGINT_IN_NUMBAS_OBJECT_CODE_HOOK = """
import signal, sys
from oppmodel.clients.cli import main

def at_the_hook(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "_object_compiled_hook":
        sys.setprofile(None)
        print("in numba's object-code hook", flush=True)
        signal.raise_signal(signal.SIGINT)

sys.setprofile(at_the_hook)
sys.exit(main(["eval", "--game", "kuhn3p", "--profile", "maniac"]))
"""


def test_ctrl_c_while_numba_compiles_is_one_line_and_status_130(tmp_path: Path) -> None:
    """A KeyboardInterrupt raised inside a callback from C is printed by ctypes ("Exception
    ignored on calling ctypes callback function") and dropped: Ctrl-C while LLVM handed numba a
    compiled kernel was lost, the command went on to its end with status 0 (and a kernel whose
    object code was lost could not be cached: "no compiled object yet"). It ends the command."""
    done = subprocess.run(
        [sys.executable, "-c", SIGINT_IN_NUMBAS_OBJECT_CODE_HOOK],
        cwd=tmp_path, capture_output=True, text=True, timeout=STARTED_SECONDS,
        env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cold")},
        preexec_fn=as_a_terminal_job,
    )  # fmt: skip
    assert done.stdout == "in numba's object-code hook\n", done.stderr
    assert done.stderr == "oppmodel eval: interrupted; nothing kept\n"
    assert done.returncode == 130
