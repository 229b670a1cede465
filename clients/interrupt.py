"""Ctrl-C in a command: one line saying what was interrupted and what was kept, exit status 130.

:func:`oppmodel.clients.cli.run_command` turns the KeyboardInterrupt that ends a command into
``oppmodel CMD: interrupted PROGRESS; KEPT`` on stderr and status 130 (128 + SIGINT, what a
shell reports for a program Ctrl-C stopped). A command says how far it got and what it leaves
behind by running its long part inside :func:`noting` (a command's progress counter,
:class:`oppmodel.clients.progress.Progress`, notes how far it got by itself); without a note the
line says "interrupted; nothing kept".
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

INTERRUPTED_STATUS = 130


class Interrupted(KeyboardInterrupt):
    """A KeyboardInterrupt carrying how far the command got and what it kept ("" if unsaid)."""

    def __init__(self, progress: str = "", kept: str = "") -> None:
        super().__init__(progress, kept)
        self.progress = progress
        self.kept = kept


def interrupt_in(exc: BaseException | None) -> KeyboardInterrupt | None:
    """The Ctrl-C ``exc`` is or carries, else None. Ctrl-C while a compiled call loads its cache
    reaches Python as a SystemError of the call caused by the SystemError of numba's unpickling,
    caused by the KeyboardInterrupt: a block that notes how far a command got looks through them
    (a loaded machine spends seconds in such loads, and a Ctrl-C there lost the count)."""
    while isinstance(exc, SystemError):
        exc = exc.__cause__
    return exc if isinstance(exc, KeyboardInterrupt) else None


def annotated(exc: KeyboardInterrupt, *, progress: str = "", kept: str = "") -> Interrupted:
    """``exc`` with the parts given here replacing those it carried (an enclosing block knows
    more about the command than an inner one)."""
    inner = exc if isinstance(exc, Interrupted) else Interrupted()
    return Interrupted(progress or inner.progress, kept or inner.kept)


@contextlib.contextmanager
def noting(
    *, progress: Callable[[], str] | None = None, kept: Callable[[], str] | None = None
) -> Iterator[None]:
    """Within the block, Ctrl-C's line says ``progress()`` ("at iteration 812 of 5000") and
    ``kept()`` ("state saved to l3.npz ..."), both asked when the interrupt comes."""
    try:
        yield
    except (KeyboardInterrupt, SystemError) as exc:
        interrupt = interrupt_in(exc)
        if interrupt is None:
            raise
        raise annotated(
            interrupt, progress=progress() if progress else "", kept=kept() if kept else ""
        ) from None


def interrupted_line(prog: str, exc: KeyboardInterrupt) -> str:
    """The one line for an interrupted command: ``PROG: interrupted PROGRESS; KEPT``."""
    note = exc if isinstance(exc, Interrupted) else Interrupted()
    progress = f" {note.progress}" if note.progress else ""
    return f"{prog}: interrupted{progress}; {note.kept or 'nothing kept'}"
