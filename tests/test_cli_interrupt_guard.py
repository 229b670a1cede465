"""The suite's guard on SIGINT's handling (``tests/conftest.py``): a test that leaves SIGINT
ignored, handled otherwise or blocked fails, named, and the state is restored for the tests that
follow in its process. Without the guard such a test made every command a later test started
deaf to Ctrl-C (children inherit both), and test_cli_interrupt failed far from the cause."""

from __future__ import annotations

import signal

from conftest import restore_sigint_handling, sigint_handling


def test_sigint_left_ignored_and_blocked_is_reported_and_restored() -> None:
    before = sigint_handling()
    # a run started as a background job of a script begins with SIGINT ignored: change it anyway
    other = signal.SIG_DFL if before[0] is signal.SIG_IGN else signal.SIG_IGN
    signal.signal(signal.SIGINT, other)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    changed = restore_sigint_handling()
    assert changed is not None
    assert f"SIGINT's handler is {other!r}" in changed
    assert "the blocked signals are [<Signals.SIGINT: 2>]" in changed
    assert sigint_handling() == before
    assert restore_sigint_handling() is None  # nothing left to restore


def test_a_handler_of_a_tests_own_is_reported_and_restored() -> None:
    def handler(_sig: int, _frame: object) -> None:
        """A test's own handler, left installed."""

    before = sigint_handling()
    signal.signal(signal.SIGINT, handler)
    changed = restore_sigint_handling()
    assert changed is not None and "handler" in changed and "blocked" not in changed
    assert sigint_handling() == before
