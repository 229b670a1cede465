"""The Szafron-Gibson-Sturtevant family of 3p Kuhn equilibria, N1/N2/N3, and its bounds.

Values and bounds are those of Szafron, Gibson & Sturtevant (2013); every bound is checked from
both sides: the constructor rejects a parameter 1/64 outside (naming it), and the same table built
without validation has positive nash_conv while the boundary point itself has nash_conv 0.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation import limit
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.strategy import kuhn_profile_on
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.kuhn3p import (
    ROBUST_PARAMETERS,
    n2_as_printed,
    profile_from_tables,
    robust_profile,
    sgs_profile,
)

GAME = kuhn_game(3)
COMPILED = limit_game("kuhn3p")
STEP = F(1, 64)


def expected_values(profile: np.ndarray) -> np.ndarray:
    """A Kuhn profile's values on the compiled kuhn3p (the one evaluation there is)."""
    return limit.expected_values(COMPILED, kuhn_profile_on(COMPILED, profile))


def nash_conv(profile: np.ndarray) -> float:
    return limit.nash_conv(COMPILED, kuhn_profile_on(COMPILED, profile))


def unvalidated_profile(*, b11, b21, b32, c33, c34, c11=0, b23=0) -> np.ndarray:
    """The note's fixed table plus dependent entries, with no bound checks (the test oracle)."""
    b11, b21, b32, c33, c34, c11, b23 = (float(x) for x in (b11, b21, b32, c33, c34, c11, b23))
    beta = max(b11, b21)
    b33 = 0.5 + (b11 + b21) / 2 + beta / 2 - b23 * (1 - b21)
    a = np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0.5, 0], [0, 1, 1, 1]], dtype=float)
    b = np.array(
        [[b11, 0, 0, 0], [b21, 0, b23, 0], [0, b32, b33, 0], [2 * (b11 + b21), 1, 1, 1]],
        dtype=float,
    )
    c = np.array(
        [[c11, 0, 0, 0], [0.5 - c11, 0, 0, 0], [0, 0, c33, c34], [1, 1, 1, 1]], dtype=float
    )
    return profile_from_tables((a, b, c))


def family_values(beta: float) -> np.ndarray:
    return np.array([-(1 + 2 * beta) / 48, -1 / 48, (1 + beta) / 24])


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("N1", [F(-1, 48), F(-1, 48), F(1, 24)]),
        ("N2", [F(-1, 32), F(-1, 48), F(5, 96)]),
        ("N3", [F(-5, 192), F(-1, 48), F(3, 64)]),
    ],
)
def test_robust_profiles(name: str, values: list[F]) -> None:
    profile = robust_profile(name)
    np.testing.assert_allclose(expected_values(profile), [float(v) for v in values], atol=1e-12)
    assert nash_conv(profile) < 1e-12
    np.testing.assert_array_equal(robust_profile(name.lower()), profile)


def test_n2_with_dependent_entries_from_the_note() -> None:
    profile = robust_profile("N2")
    b = {s: profile[1, GAME.infoset_from_string(1, s), 1] for s in ("2ppbp", "3p", "2b")}
    assert b == {"2ppbp": 7 / 8, "3p": 1.0, "2b": 15 / 16}
    np.testing.assert_array_equal(profile, unvalidated_profile(**ROBUST_PARAMETERS["N2"]))


def test_n2_as_printed_in_the_paper_is_off_by_one_192nd() -> None:
    profile = n2_as_printed()
    assert abs(nash_conv(profile) - 1 / 192) < 1e-12
    np.testing.assert_allclose(
        expected_values(profile), expected_values(robust_profile("N2")), atol=1e-15
    )


def test_unknown_robust_profile() -> None:
    with pytest.raises(InvalidArgumentError) as err:
        robust_profile("N4")
    assert err.value.field == "profile"


def _draw(rng: np.random.Generator, low: F, high: F, *, open_low: bool = False) -> F:
    """A value in [low, high], the endpoints a quarter of the time each (exact fractions)."""
    u = rng.random()
    if u < 0.25 and not open_low:
        return low
    if u < 0.5:
        return high
    return low + (high - low) * F(int(rng.integers(1, 1024)), 1024)


def _random_member(rng: np.random.Generator, subfamily: int) -> dict[str, F]:
    if subfamily == 1:
        c11, b23 = F(0), F(0)
        b21 = _draw(rng, F(0), F(1, 4))
        b11 = _draw(rng, F(0), b21)
    elif subfamily == 2:
        c11 = F(1, 2)
        b11 = _draw(rng, F(0), F(1, 4))
        b21 = _draw(rng, F(0), min(b11, F(1, 2) - 2 * b11))
        b23 = _draw(rng, F(0), (b11 - b21) / (2 * (1 - b21)))
    else:
        b11 = _draw(rng, F(0), F(1, 4))
        b21, b23 = b11, F(0)
        high = (2 - b11) / (3 + 4 * b11) if b11 > F(1, 6) else F(1, 2)
        c11 = _draw(rng, F(0), high, open_low=True)
        if c11 == F(1, 2):
            c11 = F(1, 4)
    beta = max(b11, b21)
    slack = 3 * (b11 + b21) / 4 + beta / 4
    b32 = _draw(rng, F(0), F(1, 2) + slack)
    c33 = _draw(rng, max(F(0), F(1, 2) - b32), F(1, 2) - b32 + slack)
    c34 = _draw(rng, F(0), F(1))
    return dict(b11=b11, b21=b21, b32=b32, c33=c33, c34=c34, c11=c11, b23=b23)


@pytest.mark.parametrize("subfamily", [1, 2, 3])
def test_random_members_are_equilibria_with_the_notes_values(subfamily: int) -> None:
    rng = np.random.default_rng(subfamily)
    for _ in range(60):
        params = _random_member(rng, subfamily)
        profile = sgs_profile(**params)
        np.testing.assert_array_equal(profile, unvalidated_profile(**params))
        assert nash_conv(profile) < 1e-12, params
        beta = float(max(params["b11"], params["b21"]))
        np.testing.assert_allclose(
            expected_values(profile), family_values(beta), atol=1e-12, err_msg=str(params)
        )


# (parameter named in the error, boundary point, the same point with that parameter 1/64 outside)
def _bound_cases():
    base = dict(b11=F(0), b21=F(0), b32=F(0), c33=F(1, 2), c34=F(0))
    cases = [
        # sub-family 1
        ("b21", dict(base, b21=F(1, 4)), dict(b21=F(1, 4) + STEP)),
        ("b11", dict(base, b11=F(1, 8), b21=F(1, 8)), dict(b11=F(1, 8) + STEP)),
        ("b23", base, dict(b23=STEP)),
        ("b32", dict(base, b32=F(1, 2), c33=F(0)), dict(b32=F(1, 2) + STEP)),
        ("c33", base, dict(c33=F(1, 2) + STEP)),
        ("c33", base, dict(c33=F(1, 2) - STEP)),
        # sub-family 2
        ("b21", dict(base, c11=F(1, 2), b11=F(1, 8), b21=F(1, 8)), dict(b21=F(1, 8) + STEP)),
        ("b21", dict(base, c11=F(1, 2), b11=F(1, 4)), dict(b21=STEP)),
        ("b23", dict(base, c11=F(1, 2), b11=F(1, 4), b23=F(1, 8)), dict(b23=F(1, 8) + STEP)),
        # sub-family 3
        (
            "c11",
            dict(base, c11=F(7, 16), b11=F(1, 4), b21=F(1, 4)),
            dict(c11=F(7, 16) + STEP),
        ),
    ]
    return cases


@pytest.mark.parametrize(("name", "boundary", "change"), _bound_cases())
def test_every_bound_is_tight_and_enforced(name: str, boundary: dict, change: dict) -> None:
    assert nash_conv(sgs_profile(**boundary)) < 1e-12
    outside = dict(boundary, **change)
    with pytest.raises(InvalidArgumentError) as err:
        sgs_profile(**outside)
    assert err.value.field == name
    # the note: one step outside any bound costs between 1/1536 and 1/192
    assert 1 / 1536 - 1e-12 <= nash_conv(unvalidated_profile(**outside)) <= 1 / 192 + 1e-12


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("c34", dict(c34=1 + STEP)),
        ("c34", dict(c34=-STEP)),
        ("b32", dict(b32=-STEP)),
        ("b11", dict(c11=F(1, 2), b11=F(1, 4) + STEP)),
        ("b11", dict(c11=F(1, 4), b11=F(1, 4) + STEP, b21=F(1, 4) + STEP)),
        ("b21", dict(c11=F(1, 4), b11=F(1, 8), b21=F(1, 16))),
        ("c11", dict(c11=F(1, 2) + STEP)),
    ],
)
def test_other_bounds_are_enforced(name: str, change: dict) -> None:
    params = {**dict(b11=F(0), b21=F(0), b32=F(0), c33=F(1, 2), c34=F(0)), **change}
    with pytest.raises(InvalidArgumentError) as err:
        sgs_profile(**params)
    assert err.value.field == name
