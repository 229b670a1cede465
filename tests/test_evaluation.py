"""Exact evaluation against OpenSpiel, closed forms, and properties of best responses."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from open_spiel.python.algorithms import exploitability
from openspiel_oracle import (
    openspiel_best_response_value,
    openspiel_game,
    openspiel_values,
    random_profile,
    tabular_policy,
)

from oppmodel.modeling.errors import InvalidArgumentError, InvalidStrategyError
from oppmodel.modeling.evaluation.kuhn import (
    best_response,
    deviation_gains,
    expected_values,
    nash_conv,
)
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.strategy import uniform_profile

RANDOM_PROFILES = 100


@pytest.mark.parametrize("n", [2, 3])
def test_values_and_best_responses_agree_with_openspiel(n: int) -> None:
    game, os_game = kuhn_game(n), openspiel_game(n)
    rng = np.random.default_rng(1000 + n)
    for _ in range(RANDOM_PROFILES):
        profile = random_profile(game, rng)
        ours = expected_values(game, profile)
        theirs = openspiel_values(os_game, tabular_policy(game, os_game, profile))
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)
        for p in range(n):
            value = best_response(game, profile, p)[1]
            assert value == pytest.approx(
                openspiel_best_response_value(game, os_game, profile, p), abs=1e-9
            )


@pytest.mark.parametrize("n", [2, 3])
def test_nash_conv_agrees_with_openspiel(n: int) -> None:
    game, os_game = kuhn_game(n), openspiel_game(n)
    rng = np.random.default_rng(7 + n)
    for _ in range(5):
        profile = random_profile(game, rng)
        theirs = exploitability.nash_conv(os_game, tabular_policy(game, os_game, profile))
        assert nash_conv(game, profile) == pytest.approx(theirs, abs=1e-9)


def test_best_response_strategy_achieves_its_value() -> None:
    game = kuhn_game(3)
    rng = np.random.default_rng(3)
    for _ in range(20):
        profile = random_profile(game, rng)
        for p in range(3):
            strategy, value = best_response(game, profile, p)
            played = profile.copy()
            played[p] = strategy
            assert expected_values(game, played)[p] == pytest.approx(value, abs=1e-12)
            assert set(np.unique(strategy[game.infosets(p)])) <= {0.0, 1.0}


def test_two_player_uniform_nash_conv_is_eleven_twelfths() -> None:
    game = kuhn_game(2)
    assert nash_conv(game, uniform_profile(game)) == pytest.approx(11 / 12, abs=1e-12)


def _two_player_equilibrium(
    alpha: Fraction, p2_calls_queen: Fraction = Fraction(1, 3)
) -> np.ndarray:
    """Kuhn's 2p equilibrium family: P1 bluffs J with alpha, bets K with 3 alpha, calls Q with
    alpha + 1/3; P2 bets K, bluffs J with 1/3 after a check, calls Q with 1/3."""
    game = kuhn_game(2)
    bet = {
        (0, "0"): alpha, (0, "1"): 0, (0, "2"): 3 * alpha,
        (0, "0pb"): 0, (0, "1pb"): alpha + Fraction(1, 3), (0, "2pb"): 1,
        (1, "0p"): Fraction(1, 3), (1, "1p"): 0, (1, "2p"): 1,
        (1, "0b"): 0, (1, "1b"): p2_calls_queen, (1, "2b"): 1,
    }  # fmt: skip
    profile = uniform_profile(game)
    for (p, s), q in bet.items():
        profile[p, game.infoset_from_string(p, s)] = [1 - float(q), float(q)]
    return profile


@pytest.mark.parametrize("alpha", [Fraction(0), Fraction(1, 7), Fraction(1, 3)])
def test_two_player_equilibrium_value_is_minus_one_eighteenth(alpha: Fraction) -> None:
    game = kuhn_game(2)
    profile = _two_player_equilibrium(alpha)
    np.testing.assert_allclose(expected_values(game, profile), [-1 / 18, 1 / 18], atol=1e-12)
    assert nash_conv(game, profile) < 1e-12


def test_two_player_equilibrium_breaks_outside_the_family() -> None:
    game = kuhn_game(2)
    off = _two_player_equilibrium(Fraction(1, 7), p2_calls_queen=Fraction(1, 3) + Fraction(1, 64))
    assert nash_conv(game, off) > 1e-6


@pytest.mark.parametrize("n", [2, 3, 4])
def test_zero_sum(n: int) -> None:
    game = kuhn_game(n)
    profile = random_profile(game, np.random.default_rng(n))
    assert abs(expected_values(game, profile).sum()) < 1e-12


def test_invalid_profiles_are_rejected() -> None:
    game = kuhn_game(3)
    bad = uniform_profile(game)
    bad[1, 0] = [0.7, 0.7]
    with pytest.raises(InvalidStrategyError) as err:
        expected_values(game, bad)
    assert err.value.field == "profile[1]"
    with pytest.raises(InvalidStrategyError) as err:
        nash_conv(game, np.zeros((3, 2, 2)))
    assert err.value.field == "profile"
    with pytest.raises(InvalidArgumentError) as err:
        best_response(game, uniform_profile(game), 3)
    assert err.value.field == "position"


def _profile_strategy(n: int):
    game = kuhn_game(n)
    size = n * game.num_infosets
    return st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size).map(
        lambda qs: np.stack([1 - np.array(qs), np.array(qs)], axis=-1).reshape(
            n, game.num_infosets, 2
        )
    )


@settings(max_examples=60, deadline=None)
@given(n=st.sampled_from([2, 3, 4]), data=st.data())
def test_best_response_is_never_worse_than_any_strategy(n: int, data) -> None:
    game = kuhn_game(n)
    profile = data.draw(_profile_strategy(n))
    rival = data.draw(_profile_strategy(n))
    for p in range(n):
        _, value = best_response(game, profile, p)
        played = profile.copy()
        played[p] = rival[p]
        assert expected_values(game, played)[p] <= value + 1e-12


@settings(max_examples=60, deadline=None)
@given(n=st.sampled_from([2, 3, 4]), data=st.data())
def test_every_nash_conv_term_is_non_negative(n: int, data) -> None:
    game = kuhn_game(n)
    profile = data.draw(_profile_strategy(n))
    ev = expected_values(game, profile)
    terms = [best_response(game, profile, p)[1] - ev[p] for p in range(n)]
    assert min(terms) >= -1e-12
    assert nash_conv(game, profile) == pytest.approx(sum(terms), abs=1e-12)


def _switched_gain(game, profile: np.ndarray, p: int, i: int) -> float:
    """Brute force: the better of playing pass or bet at information set i, minus the profile."""
    base = expected_values(game, profile)[p]
    best = base
    for action in range(2):
        switched = profile.copy()
        switched[p, i] = np.eye(2)[action]
        best = max(best, expected_values(game, switched)[p])
    return best - base


@settings(max_examples=30, deadline=None)
@given(n=st.sampled_from([2, 3]), data=st.data())
def test_deviation_gains_equal_brute_force_switching(n: int, data) -> None:
    game = kuhn_game(n)
    profile = data.draw(_profile_strategy(n))
    for p in range(n):
        gains = deviation_gains(game, profile, p)
        assert gains.min() >= -1e-12
        regret = best_response(game, profile, p)[1] - expected_values(game, profile)[p]
        assert gains.max() <= regret + 1e-12
        for i in game.infosets(p):
            assert gains[i] == pytest.approx(_switched_gain(game, profile, p, i), abs=1e-12)


def test_deviation_gains_locate_a_single_mistake() -> None:
    """A best response has no gain anywhere; flip one reached action and the whole loss shows up
    at that information set."""
    game = kuhn_game(3)
    rng = np.random.default_rng(11)
    for _ in range(10):
        profile = random_profile(game, rng)
        for p in range(3):
            played = profile.copy()
            played[p] = best_response(game, profile, p)[0]
            assert np.abs(deviation_gains(game, played, p)).max() < 1e-12
            best_value = expected_values(game, played)[p]
            i = int(rng.choice(game.infosets(p)))
            played[p, i] = played[p, i][::-1]
            loss = best_value - expected_values(game, played)[p]
            gains = deviation_gains(game, played, p)
            assert gains[i] == pytest.approx(loss, abs=1e-12)
            assert gains.max() <= loss + 1e-12  # no switch can beat the best response
