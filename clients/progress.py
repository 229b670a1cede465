"""Progress for commands and benchmarks: a bar on a terminal, a few plain lines off it.

A bar redrawn into a log file or a pipe is noise (hundreds of carriage-return lines), so every
long-running command and benchmark takes its bar from :func:`progress_bar`, which tqdm disables
when stderr is not a terminal. A long benchmark whose stderr is a log file may ask for a few plain
lines there instead (:func:`run_progress`): one each time another fifth of the work is done. A
command counts its work with :class:`Progress`: the bar on a terminal; off it, nothing for a run
of a few seconds and a line now and then for a long one (which would otherwise be silent for
minutes or days); and if Ctrl-C stops it, how far it got (:mod:`oppmodel.clients.interrupt`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Self

from tqdm import tqdm

from oppmodel.clients.interrupt import annotated, interrupt_in

LOG_LINES = 5  # progress lines of a long run whose stderr is a log file: one per fifth done
# a command off a terminal: no line in its first LINE_SECONDS, then one at most every
# LINE_SECONDS, when another fifth is done or QUIET_LINES x LINE_SECONDS passed without one
LINE_SECONDS = 5.0
QUIET_LINES = 12


class LogLines:
    """Progress off a terminal as plain lines on stderr (a bar's ``update``, ``close`` and
    ``with``): one each time another ``1/LOG_LINES`` of ``total`` is done, or with ``every``
    (seconds) the first after ``every`` seconds, then at most one every ``every`` seconds, when
    another fifth is done or ``QUIET_LINES * every`` seconds passed without a line."""

    def __init__(
        self, total: int, label: str, *, unit: str = "", every: float | None = None
    ) -> None:
        self.total = total
        self._label = label
        self._unit = f" {unit}s" if unit else ""
        self._every = every
        self._done = 0
        self._began = self._last = time.perf_counter()
        self._lines = 0
        self._share_then = 0  # the fifths done at the last line

    def update(self, n: int = 1) -> None:
        self._done += n
        share, now = self._share(), time.perf_counter()
        if self._every is None:
            due = share > self._share_then
        else:
            quiet = now - self._last
            due = quiet >= self._every and (
                self._lines == 0 or share > self._share_then or quiet >= QUIET_LINES * self._every
            )
        if due:
            self._lines, self._share_then, self._last = self._lines + 1, share, now
            print(
                f"{self._label}: {self._done}/{self.total}{self._unit} done, "
                f"{now - self._began:.0f} s",
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


class Progress:
    """A command's count of ``total`` units of work: a bar on a terminal, :class:`LogLines`
    (``every`` LINE_SECONDS) off it, nothing at all unless ``show``; it counts in every case,
    and Ctrl-C within ``with`` says "after N of TOTAL UNITs" in the command's interrupted line."""

    def __init__(self, total: int, *, desc: str, unit: str, show: bool = True) -> None:
        self.total, self.n, self.unit = total, 0, unit
        self._bar: tqdm | LogLines | None = None
        if show and sys.stderr.isatty():
            self._bar = progress_bar(total, desc=desc, unit=unit)
        elif show:
            self._bar = LogLines(total, desc, unit=unit, every=LINE_SECONDS)

    def update(self, n: int = 1) -> None:
        """Count ``n`` more units done."""
        self.n += n
        if self._bar is not None:
            self._bar.update(n)

    def postfix(self, text: Callable[[], str]) -> None:
        """Show ``text()`` after the bar; asked only on a terminal (it may be costly)."""
        if isinstance(self._bar, tqdm):
            self._bar.set_postfix_str(text())

    def done(self) -> str:
        """How far the work got: "after 1200 of 36000 hands"."""
        return f"after {self.n} of {counted(self.total, self.unit)}"

    def close(self) -> None:
        """Clear the bar (a terminal's)."""
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        self.close()
        interrupt = interrupt_in(exc)
        if interrupt is not None:
            raise annotated(interrupt, progress=self.done()) from None
