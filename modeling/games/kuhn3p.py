"""The Szafron-Gibson-Sturtevant equilibrium family of 3-player Kuhn poker, and N1, N2, N3.

Szafron, Gibson & Sturtevant, "A Parameterized Family of Equilibrium Profiles for Three-Player Kuhn
Poker", AAMAS 2013; every fact used here is checked by exact best response in the tests.
Parameters a_jk, b_jk, c_jk are P(bet) in situation 1 and P(call) in situations 2-4 for positions
0, 1, 2 holding card j (1 = J ... 4 = A):

    situation   position 0   position 1   position 2
    1 unopened  ""           "p"          "pp"
    2 bet       "ppb"        "b"          "pb"
    3 bet, fold "pbp"        "ppbp"       "bp"
    4 bet, call "pbb"        "ppbb"       "bb"

Three sub-families by c11 (= 0, = 1/2, strictly between); every bound is tight (one step outside
gives positive nash_conv), so the constructor rejects any parameter outside its bound, naming it.
The robust profiles: N1 (lower), N2 (upper, b32 = 15/16: the 1 printed by Ganzfried et al. 2024
lies outside the family and gives nash_conv 1/192) and N3 (midpoint).
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import kuhn_profile_on
from oppmodel.modeling.games.kuhn import kuhn_game

SITUATION_HISTORIES = (
    ("", "ppb", "pbp", "pbb"),
    ("p", "b", "ppbp", "ppbb"),
    ("pp", "pb", "bp", "bb"),
)
TOLERANCE = 1e-12
KUHN3P = "kuhn3p"  # the bundled game whose named strategies these are

Number = float | Fraction


def _check(name: str, value: float, low: float, high: float, why: str) -> None:
    if not low - TOLERANCE <= value <= high + TOLERANCE:
        raise InvalidArgumentError(
            name, f"{float(value):.6g} is outside [{low:.6g}, {high:.6g}] ({why})"
        )


def sgs_tables(
    *,
    b11: Number,
    b21: Number,
    b32: Number,
    c33: Number,
    c34: Number,
    c11: Number = 0,
    b23: Number = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The a, b, c tables (4 cards x 4 situations) of a family member, after validation."""
    b11, b21, b32, c33, c34, c11, b23 = (float(x) for x in (b11, b21, b32, c33, c34, c11, b23))
    _check("c11", c11, 0.0, 0.5, "c11 picks the sub-family: 0, 1/2, or strictly between")
    if abs(c11) <= TOLERANCE:  # sub-family 1
        _check("b21", b21, 0.0, 0.25, "sub-family 1 (c11 = 0): b21 <= 1/4")
        _check("b11", b11, 0.0, b21, "sub-family 1 (c11 = 0): 0 <= b11 <= b21")
        _check("b23", b23, 0.0, 0.0, "sub-family 1 (c11 = 0) forces b23 = 0")
    elif abs(c11 - 0.5) <= TOLERANCE:  # sub-family 2
        _check("b11", b11, 0.0, 0.25, "sub-family 2 (c11 = 1/2): b11 <= 1/4")
        _check(
            "b21", b21, 0.0, min(b11, 0.5 - 2 * b11), "sub-family 2: b21 <= min(b11, 1/2 - 2 b11)"
        )
        _check(
            "b23",
            b23,
            0.0,
            (b11 - b21) / (2 * (1 - b21)),
            "sub-family 2: b23 <= (b11-b21)/(2(1-b21))",
        )
    else:  # sub-family 3
        _check("b11", b11, 0.0, 0.25, "sub-family 3 (0 < c11 < 1/2): b11 <= 1/4")
        _check("b21", b21, b11, b11, "sub-family 3 (0 < c11 < 1/2) forces b21 = b11")
        _check("b23", b23, 0.0, 0.0, "sub-family 3 (0 < c11 < 1/2) forces b23 = 0")
        if b11 > 1 / 6:
            _check("c11", c11, 0.0, (2 - b11) / (3 + 4 * b11), "sub-family 3 with b11 > 1/6")
    beta = max(b11, b21)
    _check(
        "b32", b32, 0.0, 0.5 + 3 * (b11 + b21) / 4 + beta / 4, "b32 <= 1/2 + 3(b11+b21)/4 + beta/4"
    )
    _check(
        "c33",
        c33,
        max(0.0, 0.5 - b32),
        0.5 - b32 + 3 * (b11 + b21) / 4 + beta / 4,
        "max(0, 1/2 - b32) <= c33 <= 1/2 - b32 + 3(b11+b21)/4 + beta/4",
    )
    _check("c34", c34, 0.0, 1.0, "0 <= c34 <= 1")
    b33 = 0.5 + (b11 + b21) / 2 + beta / 2 - b23 * (1 - b21)
    b41 = 2 * (b11 + b21)
    c21 = 0.5 - c11
    a = np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0.5, 0], [0, 1, 1, 1]], dtype=float)
    b = np.array([[b11, 0, 0, 0], [b21, 0, b23, 0], [0, b32, b33, 0], [b41, 1, 1, 1]], dtype=float)
    c = np.array([[c11, 0, 0, 0], [c21, 0, 0, 0], [0, 0, c33, c34], [1, 1, 1, 1]], dtype=float)
    return a, b, c


def profile_from_tables(tables: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """A 3p Kuhn profile from per-position (card x situation) P(aggressive action) tables."""
    game = kuhn_game(3)
    profile = np.full((3, game.num_infosets, 2), 0.5)
    for position, table in enumerate(tables):
        for card in range(4):
            for situation, history in enumerate(SITUATION_HISTORIES[position]):
                idx = game.infoset_index(position, card, history)
                profile[position, idx] = [1 - table[card, situation], table[card, situation]]
    return profile


def sgs_profile(**params: Number) -> np.ndarray:
    """A validated family member as a profile ``(3, 16, 2)``; see :func:`sgs_tables`."""
    return profile_from_tables(sgs_tables(**params))


ROBUST_PARAMETERS: dict[str, dict[str, Fraction]] = {
    "N1": dict(
        b11=Fraction(0), b21=Fraction(0), b32=Fraction(0), c33=Fraction(1, 2), c34=Fraction(0)
    ),
    "N2": dict(
        b11=Fraction(1, 4),
        b21=Fraction(1, 4),
        b32=Fraction(15, 16),
        c33=Fraction(0),
        c34=Fraction(1),
    ),
    "N3": dict(
        b11=Fraction(1, 8),
        b21=Fraction(1, 8),
        b32=Fraction(23, 64),
        c33=Fraction(1, 4),
        c34=Fraction(1, 2),
    ),
}


def robust_profile(name: str) -> np.ndarray:
    """N1, N2 or N3 (case-insensitive)."""
    key = name.upper()
    if key not in ROBUST_PARAMETERS:
        raise InvalidArgumentError("profile", f"unknown robust profile {name!r}; use N1, N2 or N3")
    return _robust_profile(key).copy()


@functools.cache
def _robust_profile(key: str) -> np.ndarray:
    """Built once per name: every MBBR model (and service session) asks for N1 and N3."""
    return sgs_profile(**ROBUST_PARAMETERS[key])


def n2_as_printed() -> np.ndarray:
    """N2 with b32 = 1 as Ganzfried et al. 2024 print it (outside the family; nash_conv 1/192)."""
    a, b, c = sgs_tables(**ROBUST_PARAMETERS["N2"])
    b[2, 1] = 1.0
    return profile_from_tables((a, b, c))


def equilibria(game: LimitGame) -> dict[str, np.ndarray]:
    """N1, N2 and N3 (keys ``"n1"``, ``"n2"``, ``"n3"``) as profiles of ``game`` (fold, call,
    raise) when it is the bundled 3-player Kuhn, else none: the named strategies of the games that
    have them (the panel's names, MBBR's default N1 and prior mean N3, the safety bankroll's
    guards)."""
    if game.name != KUHN3P:
        return {}
    return {key.lower(): kuhn_profile_on(game, _robust_profile(key)) for key in ROBUST_PARAMETERS}
