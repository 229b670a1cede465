"""Progress bars for commands and benchmarks: drawn on stderr only when it is a terminal.

A bar redrawn into a log file or a pipe is noise (hundreds of carriage-return lines), so every
long-running command and benchmark takes its bar from :func:`progress_bar`, which tqdm disables
when stderr is not a terminal.
"""

from __future__ import annotations

import sys

from tqdm import tqdm


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
