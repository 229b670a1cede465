"""Progress bars are drawn only on a terminal: never into a log file or a pipe."""

from __future__ import annotations

import fcntl
import io
import os
import select
import struct
import sys
import termios

import pytest

from oppmodel.clients.progress import LOG_LINES, Progress, progress_bar, run_progress


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    with progress_bar(10, desc="hands") as bar:
        bar.update(10)
    assert log.getvalue() == ""


def test_off_a_terminal_a_long_run_logs_a_handful_of_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    with run_progress(557, desc="match jobs") as bar:
        for _ in range(557):
            bar.update()
    lines = log.getvalue().splitlines()
    assert LOG_LINES == 5 and [line.split(",")[0] for line in lines] == [
        f"match jobs: {done}/557 done" for done in (112, 223, 335, 446, 557)
    ]
    with run_progress(557, desc="match jobs", show=False) as bar:  # --no-progress: nothing
        bar.update(557)
    assert log.getvalue().splitlines() == lines


@pytest.mark.parametrize("show", [True, False])
def test_a_bar_on_a_terminal_unless_hidden(monkeypatch: pytest.MonkeyPatch, show: bool) -> None:
    main, secondary = os.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # 80 x 24
    with os.fdopen(secondary, "w") as terminal:
        monkeypatch.setattr(sys, "stderr", terminal)
        with progress_bar(10, desc="hands", show=show) as bar:
            bar.update(10)
        terminal.flush()
        # read before the terminal closes (then its data is gone); the kernel passes it on
        # asynchronously, so wait for it a little
        ready, _, _ = select.select([main], [], [], 2.0 if show else 0.2)
        drawn = os.read(main, 65536).decode() if ready else ""
    os.close(main)
    assert ("hands" in drawn) is show


def test_a_command_of_a_few_seconds_prints_no_progress_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Off a terminal a command's progress is silent unless the run is long (the first line
    comes after LINE_SECONDS; the subprocess test of Ctrl-C waits for it)."""
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    with Progress(100_000, desc="oppmodel match", unit="hand") as progress:
        for _ in range(100_000):
            progress.update()
    assert log.getvalue() == "" and progress.done() == "after 100000 of 100000 hands"
