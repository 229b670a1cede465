"""Every shell example of the README and of ``docs/*.md`` runs in the tests, in the bounded form
the README states (``docs_shell_support``): this file runs the README's blocks and checks that
every line of every block is run by one of the ``test_docs_shell*.py`` files or listed with the
reason it is not; the other files run the blocks of their documents."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import docs_shell_support
import pytest
from docs_shell_support import (
    BOUNDS,
    DEALER_HANDS,
    DOCUMENTS,
    NOT_RUN,
    REPOSITORY,
    SPLIT,
    Block,
    Line,
    _Started,
    _wait_for,
    blocks_run_in,
    bounded,
    first_runs,
    run,
    shell_blocks,
)

pytestmark = pytest.mark.slow  # commands of a whole document: tens of CPU seconds a file

RUNS = first_runs()


def test_every_code_block_is_bash_or_python() -> None:
    """A shell example in a block of another name (``sh``, ``console``, none) would not run."""
    fences = [
        (document.name, language)
        for document in DOCUMENTS
        for language in re.findall(r"^```(\w*)\n(?:.*?)^```$", document.read_text(), re.S | re.M)
    ]
    assert [f for f in fences if f[1] not in ("bash", "python")] == []
    assert sum(language == "bash" for _, language in fences) == len(shell_blocks())


def test_every_document_with_shell_blocks_is_run_by_a_test_file() -> None:
    with_blocks = {block.name.rsplit(":", 1)[0] for block in shell_blocks()}
    split = [name for names in SPLIT.values() for name in names]
    assert sorted(with_blocks - set(split)) == [], "add the document to SPLIT"
    assert len(split) == len(set(split)), "a document in two files would run twice"
    assert [f for f in SPLIT if not (REPOSITORY / "tests" / f).is_file()] == []


def test_every_shell_line_is_run_or_listed() -> None:
    """A line is run (an ``oppmodel`` command) or listed in NOT_RUN with its reason, and every
    listed line is still in the docs."""
    commands = {line.command for block in shell_blocks() for line in block.lines}
    unknown = sorted(c for c in commands if c not in NOT_RUN and not c.startswith("oppmodel "))
    assert unknown == [], "run these in docs_shell_support.py or list them in NOT_RUN"
    assert sorted(set(NOT_RUN) - commands) == []


def test_a_line_run_once_in_its_bounded_form_is_not_run_again() -> None:
    def key(name: str, number: int) -> str:
        (block,) = (block for block in shell_blocks() if block.name == name)
        return " ".join(bounded(block.lines[number].command, {}, None, Path("home")))

    assert ("README.md:1", 0) in RUNS  # eval --profile N2
    assert ("docs/modeling.md:0", 0) not in RUNS  # the same line again
    assert key("docs/modeling.md:1", 0) == key("README.md:1", 5)  # --hands 3000 and 1000
    assert ("docs/modeling.md:1", 0) not in RUNS and ("README.md:1", 5) in RUNS
    assert ("docs/acpc.md:0", 1) in RUNS  # an agent beside its dealer always runs


def test_the_readme_states_the_bounds() -> None:
    text = " ".join((REPOSITORY / "README.md").read_text().split())
    assert [f"{flag} {cap}" for flag, cap in BOUNDS.items() if f"`{flag} {cap}`" not in text] == []
    assert f"`--hands {DEALER_HANDS}` (a dealer's hand count too)" in text


def test_the_bounded_form_caps_sizes_and_moves_ports(tmp_path: Path) -> None:
    ports = {"50051": "40001"}
    argv = bounded("oppmodel match --agents mbbr,n1,n3 --hands 3000", ports, None, tmp_path)
    assert argv == ["match", "--agents", "mbbr,n1,n3", "--hands", "40", "--duplicates", "1"]
    argv = bounded("oppmodel dealer m kuhn3p 3000 42 A B C -p 50051", ports, None, tmp_path)
    assert argv[3] == "40" and argv[-1] == "40001"
    argv = bounded("oppmodel serve --store ~/x.sqlite --host 0.0.0.0", ports, None, tmp_path)
    assert argv[:5] == ["serve", "--store", f"{tmp_path}/x.sqlite", "--host", "127.0.0.1"]
    assert argv[5] == "--port"
    argv = bounded("oppmodel tournament --agent a=./a.sh --hands 9", ports, None, tmp_path)
    assert argv[-2] == "--start_timeout"


def test_a_server_that_never_says_it_serves_fails_the_block_at_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lines after a server need it: one still warming up at the deadline (a cold numba
    cache at load 40 took over the 600 s) fails there, naming it, instead of the block going on
    against a server that does not answer and failing later for another reason."""
    monkeypatch.setattr(docs_shell_support, "DEADLINE", 1.0)
    out = tmp_path / ".line0.out"
    out.write_text("warming up\n")
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        started = _Started(Line("oppmodel serve --db o.sqlite", "", True), process, out)
        with pytest.raises(
            AssertionError, match=r"^oppmodel serve --db o\.sqlite: no 'serving' in 1 s\nwarming up"
        ):
            _wait_for(started, "serving")
    finally:
        process.kill()
        process.wait()


@blocks_run_in(__file__)
def test_shell_block_runs(block: Block, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    run(block, tmp_path, request)
