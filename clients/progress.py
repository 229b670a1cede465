"""Progress bars for commands and benchmarks: drawn on stderr only when it is a terminal.

A bar redrawn into a log file or a pipe is noise (hundreds of carriage-return lines), so every
long-running command and benchmark takes its bar from :func:`progress_bar`, which tqdm disables
when stderr is not a terminal. A long benchmark whose stderr is a log file may ask for a few plain
lines there instead (:func:`run_progress`): one each time another fifth of the work is done.
"""

from __future__ import annotations

import sys
import time
from typing import Self

from tqdm import tqdm

LOG_LINES = 5  # progress lines of a long run whose stderr is a log file: one per fifth done


class LogLines:
    """Progress off a terminal: at most ``LOG_LINES`` plain lines on stderr, one each time another
    ``1/LOG_LINES`` of ``total`` is done (a bar's ``update``, ``close`` and ``with``)."""

    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self._label = label
        self._done = 0
        self._began = time.perf_counter()

    def update(self, n: int = 1) -> None:
        before = self._share()
        self._done += n
        if self._share() > before:
            elapsed = time.perf_counter() - self._began
            print(
                f"{self._label}: {self._done}/{self.total} done, {elapsed:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        """Nothing to clear: the lines stay in the log."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _share(self) -> int:
        return self._done * LOG_LINES // max(self.total, 1)


def progress_bar(
    total: int, *, desc: str | None = None, unit: str = "it", show: bool = True
) -> tqdm:
    """A tqdm bar on stderr, shown only if ``show`` and stderr is a terminal (a bar that is not
    shown still counts, so callers never branch)."""
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        disable=None if show else True,
        leave=False,
    )


def run_progress(total: int, *, desc: str, unit: str = "it", show: bool = True) -> tqdm | LogLines:
    """A long benchmark's progress: :func:`progress_bar` on a terminal; off it (a log file) at
    most ``LOG_LINES`` plain lines; nothing at all unless ``show``."""
    if show and not sys.stderr.isatty():
        return LogLines(total, desc)
    return progress_bar(total, desc=desc, unit=unit, show=show)


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun in the number it takes: "1 duplicate", "2 duplicates"."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"
