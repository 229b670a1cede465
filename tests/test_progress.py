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

from oppmodel.clients.progress import progress_bar


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    with progress_bar(10, desc="hands") as bar:
        bar.update(10)
    assert log.getvalue() == ""


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
