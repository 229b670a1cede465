"""The panel of named strategies: names, validity, and each exploitable style's rule."""

from __future__ import annotations

import numpy as np
import pytest

from oppmodel.modeling.errors import NotFoundError
from oppmodel.modeling.evaluation.limit import nash_conv
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.strategy import kuhn_profile_on, validate_profile
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.play.panel import named_profile, panel_names

EXPLOITABLE = ["always-bet", "calling-station", "tight-passive", "maniac", "bluffer"]


def kuhn_game(n: int):
    """n-player Kuhn: the bundled game file, compiled."""
    return limit_game(f"kuhn{n}p")


def test_panel_names() -> None:
    assert panel_names() == ["n1", "n2", "n3", "cfr", "uniform", *EXPLOITABLE]
    assert panel_names(kuhn_game(3)) == panel_names()
    assert panel_names(kuhn_game(2)) == ["cfr", "uniform", *EXPLOITABLE]


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("name", ["uniform", *EXPLOITABLE, "bluffer:0.25"])
def test_named_profiles_are_valid_for_every_player_count(n: int, name: str) -> None:
    game = kuhn_game(n)
    profile = named_profile(game, name)
    np.testing.assert_array_equal(validate_profile(game, profile), profile)
    np.testing.assert_array_equal(named_profile(game, name.upper()), profile)
    if name != "uniform":
        assert nash_conv(game, profile) > 0.01  # exploitable, as the panel promises


def test_equilibria_by_name() -> None:
    """N1-N3 of 3-player Kuhn are the Szafron-Gibson-Sturtevant profiles on the compiled game,
    with nash_conv 0 there."""
    game = kuhn_game(3)
    for name in ("n1", "N2", "n3"):
        profile = named_profile(game, name)
        np.testing.assert_array_equal(profile, kuhn_profile_on(game, robust_profile(name)))
        assert nash_conv(game, profile) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(NotFoundError, match="n1"):
        named_profile(kuhn_game(2), "n1")


def _bet_probability(game, name: str, position: int, infostate: str) -> float:
    """P(bet) at a compiled Kuhn information state ("Js:c"): a raise unopened, a call facing a
    bet."""
    row = named_profile(game, name)[position, game.infoset_from_string(position, infostate)]
    return float(row[2] if row[0] == 0.0 and "r" not in infostate else row[1])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # (unopened with J, unopened with A, facing a bet with J, facing a bet with A)
        ("always-bet", (1, 1, 1, 1)),
        ("calling-station", (0, 0, 1, 1)),
        ("tight-passive", (0, 0, 0, 1)),
        ("maniac", (0.9, 0.9, 0.9, 0.9)),
        ("bluffer", (0.75, 1, 0, 1)),
        ("bluffer:0.1", (0.1, 1, 0, 1)),
    ],
)
def test_styles_follow_their_rule(name: str, expected: tuple) -> None:
    game = kuhn_game(3)
    got = (
        _bet_probability(game, name, 1, "Js:c"),
        _bet_probability(game, name, 1, "As:c"),
        _bet_probability(game, name, 2, "Js:cr"),
        _bet_probability(game, name, 0, "As:crf"),
    )
    assert got == pytest.approx(expected)
    middle = _bet_probability(game, name, 2, "Qs:cc")  # a middle card, unopened
    assert middle == {"always-bet": 1, "maniac": 0.9}.get(name, 0)


@pytest.mark.parametrize("name", ["nobody", "bluffer:2", "bluffer:x", "bluffer:-0.1", ""])
def test_unknown_names(name: str) -> None:
    with pytest.raises(NotFoundError):
        named_profile(kuhn_game(3), name)
