"""Numbers in outside text are ASCII digits only, and every parser refuses the rest cleanly.

``'²'.isdigit()`` is true and ``int('²')`` raises ValueError; ``int('٣')`` is 3. Each parser of
outside text below used to check with one and convert with the other: it crashed (an INTERNAL
status, a dead dealer, a traceback) or accepted a numeral no peer writes. Each must now refuse
with its own domain error.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oppmodel.clients.acpc.dealer import VERSION_RE
from oppmodel.clients.acpc.log import parse_log
from oppmodel.modeling.errors import InvalidArgumentError, NotFoundError
from oppmodel.modeling.games.acpc.bundled import game_path
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.acpc.matchstate import parse_matchstate_prefix
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.kuhn_openspiel import kuhn_openspiel
from oppmodel.modeling.movepred.kuhn import parse_infoset
from oppmodel.modeling.numerals import is_numeral, numeral_end, parse_numeral
from oppmodel.modeling.play.adaptive import adaptive_factory
from oppmodel.server.conversion import parse_game

GAME_FILE = game_path("kuhn3p")
NOT_ASCII_DIGITS = ["²", "٣", "३", "３", "①"]  # superscript, Arabic-Indic, Devanagari, fullwidth


@given(st.text(max_size=8))
def test_parse_numeral_takes_exactly_ascii_digit_runs(text: str) -> None:
    ascii_run = text != "" and all(c in "0123456789" for c in text)
    assert is_numeral(text) == ascii_run
    if ascii_run:
        assert parse_numeral(text, "f") == int(text)
    else:
        with pytest.raises(InvalidArgumentError) as info:
            parse_numeral(text, "f")
        assert info.value.field == "f"


@given(st.text(max_size=8), st.integers(0, 8))
def test_numeral_end_stops_at_the_first_non_ascii_digit(text: str, start: int) -> None:
    start = min(start, len(text))
    end = numeral_end(text, start)
    assert all(c in "0123456789" for c in text[start:end])
    assert end == len(text) or text[end] not in "0123456789"


GAME_TEXT = GAME_FILE.read_text()
ACPC_GAME = parse_game_def(GAME_TEXT)
KUHN = kuhn_game(3)
# name -> (call with a digit, the domain error it must raise); with the digit "2" each is valid.
PARSERS = {
    "service matchstate": (
        lambda d: kuhn_openspiel(3).matchstate_decision(f"MATCHSTATE:{d}:0:cc:||Ks"),
        InvalidArgumentError),
    "service hand number": (
        lambda d: kuhn_openspiel(3).matchstate_decision(f"MATCHSTATE:2:{d}:cc:||Ks"),
        InvalidArgumentError),
    "service game": (lambda d: parse_game(f"kuhn_poker(players={d})"), InvalidArgumentError),
    "infostate string": (lambda d: KUHN.infoset_from_string(1, f"{d}p"), InvalidArgumentError),
    "dealer reading a reply": (
        lambda d: parse_matchstate_prefix(ACPC_GAME, f"MATCHSTATE:{d}:0::||Ks:c"),
        InvalidArgumentError),
    "game file": (
        lambda d: parse_game_def(GAME_TEXT.replace("numPlayers = 3", f"numPlayers = {d}")),
        InvalidArgumentError),
    "log line": (lambda d: parse_log(f"STATE:{d}:ccc:Ks|Qs|Js:-1|-1|2:A|B|C\n"),
                 InvalidArgumentError),
    "move-prediction infoset": (lambda d: parse_infoset(f"{d}p"), InvalidArgumentError),
    "switcher period": (lambda d: adaptive_factory(f"switcher:{d}"), NotFoundError),
}  # fmt: skip


@pytest.mark.parametrize("digit", NOT_ASCII_DIGITS)
@pytest.mark.parametrize("parser", PARSERS)
def test_every_parser_refuses_non_ascii_digits_with_its_domain_error(
    parser: str, digit: str
) -> None:
    call, error = PARSERS[parser]
    with pytest.raises(error):
        call(digit)  # a ValueError, or a value, here is the bug


@pytest.mark.parametrize("parser", PARSERS)
def test_the_same_parsers_accept_ascii_digits(parser: str) -> None:
    """The refusals above are about the digits, not the rest of each line."""
    call, _ = PARSERS[parser]
    assert call("2") is not None


def test_dealer_version_line_is_ascii_only() -> None:
    assert VERSION_RE.match("VERSION:2.0.0")
    assert VERSION_RE.match("VERSION:٢.0.0") is None
