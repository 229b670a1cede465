"""ASCII numerals: the one way to read a number out of text that came from outside the process.

Requests, ACPC protocol lines, log and game files and command-line names are written with the
digits 0-9. Python's own tests are wider: ``str.isdigit`` is true for ``'²'`` and ``'٣'``, ``int``
accepts ``'٣'`` (as 3) but raises ValueError on ``'²'``, and ``re``'s ``\\d`` matches any decimal
digit of any script. Checking with one and converting with another either crashes on text it has
just approved (an INTERNAL status, a dead dealer) or accepts numerals no peer writes. Every parse of
a number from outside text goes through here, and only 0-9 counts as a digit.
"""

from __future__ import annotations

from oppmodel.modeling.errors import InvalidArgumentError

DIGITS = "0123456789"


def is_numeral(text: str) -> bool:
    """Whether ``text`` is a non-empty run of the ASCII digits 0-9 (and nothing else)."""
    return text.isascii() and text.isdigit()


def parse_numeral(text: str, field: str) -> int:
    """The non-negative integer ``text`` writes in ASCII digits; InvalidArgumentError naming
    ``field`` for anything else (signs, spaces, other scripts' digits, superscripts, '')."""
    if not is_numeral(text):
        raise InvalidArgumentError(
            field, f"expected a non-negative integer in digits 0-9, got {text!r}"
        )
    return int(text)


def numeral_end(text: str, start: int) -> int:
    """The index just past the run of ASCII digits that starts at ``start`` (``start`` if none)."""
    end = start
    while end < len(text) and text[end] in DIGITS:
        end += 1
    return end
