"""Ctrl-C in a command: one line saying what was interrupted and what was kept, exit status 130.

:func:`oppmodel.clients.cli.run_command` turns the KeyboardInterrupt that ends a command into
``oppmodel CMD: interrupted PROGRESS; KEPT`` on stderr and status 130 (128 + SIGINT, what a
shell reports for a program Ctrl-C stopped). A command says how far it got and what it leaves
behind by running its long part inside :func:`noting` (a command's progress counter,
:class:`oppmodel.clients.progress.Progress`, notes how far it got by itself); without a note the
line says "interrupted; nothing kept". :func:`sigint_handled` is the SIGINT handler a command
runs under, which keeps a Ctrl-C from being lost where C code calls back into Python.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

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


# Python functions that C code calls through ctypes, by their code's name and file: an exception
# raised in one is printed ("Exception ignored on calling ctypes callback function") and dropped,
# and the C code goes on. LLVM calls llvmlite's object-cache hooks while numba compiles a kernel
# (seconds at a time on a cold cache), so a Ctrl-C there was lost: the command went on to the end.
C_CALLBACKS = {
    "_raw_object_cache_notify": "llvmlite/binding/executionengine.py",
    "_raw_object_cache_getbuffer": "llvmlite/binding/executionengine.py",
}
RETRY_SECONDS = 0.01  # the callbacks above store or hand over a buffer: microseconds


def in_c_callback(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside one of C_CALLBACKS (its own or a caller's frame)."""
    while frame is not None:
        code = frame.f_code
        path = C_CALLBACKS.get(code.co_name)
        if path is not None and code.co_filename.replace("\\", "/").endswith(path):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def sigint_handled() -> Iterator[list[bool]]:
    """Within the block, SIGINT raises KeyboardInterrupt as Python's own handler does, but not
    inside a callback from C (C_CALLBACKS): there it is sent again a moment later, from another
    thread, until it lands outside one (tripped from the handler itself, Python would run the
    handler again at once, inside the callback still). Each SIGINT is noted in the
    list given (it gets True): one handled in Python code that C code called may not reach the
    caller as a KeyboardInterrupt (numpy's C-level import of ``datetime`` through
    ``PyCapsule_Import``, in a command's first ~0.1 s, replaces it with an ImportError). Nothing
    changes where SIGINT has another handler (ignored, as in a job a shell starts in the
    background) or where none can be set (off the main thread)."""
    noted: list[bool] = []
    main_thread = threading.current_thread() is threading.main_thread()
    if not main_thread or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield noted
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        noted.append(True)
        if in_c_callback(frame):
            retry = threading.Timer(RETRY_SECONDS, _thread.interrupt_main, (signum,))
            retry.daemon = True
            retry.start()
            return
        signal.default_int_handler(signum, frame)

    before = signal.signal(signal.SIGINT, handle)
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, before)


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
