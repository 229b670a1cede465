"""Exact evaluation of limit games: Kuhn's information sets are one instance's, every quantity
equals a pure-Python oracle on small random games, and best responses and deviation gains mean
what they say."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from limit_oracle import best_response_value, brute_force_best_response
from limit_oracle import expected_values as oracle_expected_values
from test_limit_game import game_text, small_games

from oppmodel.modeling.errors import InvalidArgumentError, InvalidStrategyError
from oppmodel.modeling.evaluation._limit_kernels import unpack_tree
from oppmodel.modeling.evaluation.limit import (
    best_response,
    deviation_gains,
    expected_values,
    improving_response,
    nash_conv,
    packed_tree,
)
from oppmodel.modeling.games.acpc.compiler import compile_limit_game, limit_game
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import kuhn_profile_on, random_profile, uniform_profile
from oppmodel.modeling.games.kuhn import KuhnGame, kuhn_game
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.play.tournament import seated_profile


def kuhn_infoset(kuhn: KuhnGame, game: LimitGame, position: int, index: int) -> int:
    """Our information set for one of KuhnGame's: "2ppb" is "Ks:ccr" in 3-player Kuhn."""
    text = kuhn.infoset_string(position, index)
    card, history = int(text[0]), text[1:]
    return game.infoset_from_string(position, f"{game.deck[card]}:{kuhn.history_to_acpc(history)}")


def policy(game: LimitGame, profile: np.ndarray) -> dict:
    return {
        (p, game.infoset_string(p, i)): tuple(profile[p, i])
        for p in range(game.num_players)
        for i in game.infosets(p)
    }


# --- Kuhn is one instance ------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4])
def test_kuhn_information_sets_map_one_to_one(n: int) -> None:
    kuhn, game = kuhn_game(n), limit_game(f"kuhn{n}p")
    for p in range(n):
        mapped = [kuhn_infoset(kuhn, game, p, i) for i in kuhn.infosets(p)]
        assert sorted(mapped) == list(game.infosets(p))


@pytest.mark.parametrize("name", ["kuhn3p", "leduc2p", "leduc3p"])
def test_the_packed_tree_unpacks_to_the_tree(name: str) -> None:
    """What the best-response kernel walks is the game's tree, array for array."""
    game = limit_game(name)
    unpacked = unpack_tree(*packed_tree(game))
    for field, want in zip(game.tree._fields, game.tree, strict=True):
        np.testing.assert_array_equal(getattr(unpacked, field), want, err_msg=field)


# --- a pure-Python oracle on small games ---------------------------------------------------


@settings(max_examples=12)
@given(small_games(), st.integers(0, 2**32 - 1))
def test_values_and_best_responses_equal_the_oracle(text: str, seed: int) -> None:
    gamedef = parse_game_def(text)
    game = compile_limit_game(gamedef, "small")
    profile = random_profile(game, np.random.default_rng(seed))
    table = policy(game, profile)
    np.testing.assert_allclose(
        expected_values(game, profile), oracle_expected_values(gamedef, table), atol=1e-9
    )
    for p in range(game.num_players):
        assert best_response(game, profile, p)[1] == pytest.approx(
            best_response_value(gamedef, table, p), abs=1e-9
        )


@pytest.mark.parametrize(
    "fields",
    [
        {"numRounds": "1", "raiseSize": "2", "firstPlayer": "2", "maxRaises": "1"},
        {"numRounds": "1", "blind": "1 2", "raiseSize": "2", "firstPlayer": "1", "maxRaises": "1"},
    ],
)
def test_best_response_beats_every_pure_strategy_in_tiny_games(fields) -> None:
    fields = {"numSuits": "1", "numRanks": "3", "numBoardCards": "0", **fields}
    gamedef = parse_game_def(game_text(**fields))
    game = compile_limit_game(gamedef, "tiny")
    rng = np.random.default_rng(5)
    for _ in range(3):
        profile = random_profile(game, rng)
        for p in range(game.num_players):
            assert best_response(game, profile, p)[1] == pytest.approx(
                brute_force_best_response(gamedef, policy(game, profile), p), abs=1e-12
            )


# --- properties ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["kuhn3p", "leduc2p", "leduc3p"])
def test_a_best_response_achieves_its_value_and_has_no_deviation_gain(name: str) -> None:
    game = limit_game(name)
    rng = np.random.default_rng(11)
    profile = random_profile(game, rng)
    for p in range(game.num_players):
        strategy, value = best_response(game, profile, p)
        assert set(np.unique(strategy[list(game.infosets(p))])) <= {0.0, 1.0}  # pure
        played = profile.copy()
        played[p] = strategy
        assert expected_values(game, played)[p] == pytest.approx(value, abs=1e-12)
        assert value >= expected_values(game, profile)[p] - 1e-12
        assert np.abs(deviation_gains(game, played, p)).max() < 1e-12


@pytest.mark.parametrize("name", ["kuhn3p", "leduc2p"])
def test_an_improving_response_is_a_best_response_that_keeps_the_rows_already_best(name) -> None:
    """From a random profile it reaches a best response's value with no gainful switch left; from
    a best response whose ties are mixed it changes nothing (a pure best response breaks them)."""
    game = limit_game(name)
    profile = random_profile(game, np.random.default_rng(5))
    for p in range(game.num_players):
        played = profile.copy()
        played[p] = improving_response(game, profile, p)
        value = best_response(game, profile, p)[1]
        assert expected_values(game, played)[p] == pytest.approx(value, abs=1e-12)
        assert np.abs(deviation_gains(game, played, p)).max() < 1e-12
    kuhn = limit_game("kuhn3p")
    n1, n2, n3 = (kuhn_profile_on(kuhn, robust_profile(f"N{i}")) for i in (1, 2, 3))
    for p in (1, 2):  # N1 is a best response there to N2 and N3 (their pair's regret is P1's)
        seated, rows = seated_profile(kuhn, p, n1, (n2, n3)), list(kuhn.infosets(p))
        assert best_response(kuhn, seated, p)[1] == pytest.approx(expected_values(kuhn, seated)[p])
        np.testing.assert_array_equal(improving_response(kuhn, seated, p), n1[p])
        assert not np.array_equal(best_response(kuhn, seated, p)[0][rows], n1[p, rows])


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["kuhn2p", "kuhn3p", "kuhn4p"]), st.integers(0, 2**32 - 1))
def test_no_strategy_beats_a_best_response_and_every_nash_conv_term_is_non_negative(
    name: str, seed: int
) -> None:
    """Against a random profile, a random rival strategy in each seat is worth at most the best
    response; the values sum to zero (poker is zero-sum) and nash_conv sums non-negative terms."""
    game = limit_game(name)
    rng = np.random.default_rng(seed)
    profile, rival = random_profile(game, rng), random_profile(game, rng)
    ev = expected_values(game, profile)
    assert abs(ev.sum()) < 1e-12
    terms = []
    for p in range(game.num_players):
        value = best_response(game, profile, p)[1]
        played = profile.copy()
        played[p] = rival[p]
        assert expected_values(game, played)[p] <= value + 1e-12
        terms.append(value - ev[p])
    assert min(terms) >= -1e-12
    assert nash_conv(game, profile) == pytest.approx(sum(terms), abs=1e-12)


def test_deviation_gains_locate_a_single_mistake() -> None:
    """Flip one action of a best response to another legal one: the whole loss shows up as the
    gain at that information set, and no gain anywhere exceeds it."""
    game = limit_game("kuhn3p")
    rng = np.random.default_rng(11)
    for _ in range(10):
        profile = random_profile(game, rng)
        for p in range(3):
            played = profile.copy()
            played[p] = best_response(game, profile, p)[0]
            best_value = expected_values(game, played)[p]
            i = int(rng.choice(list(game.infosets(p))))
            legal = np.flatnonzero(game.legal_mask[p, i])
            other = [a for a in legal if played[p, i, a] == 0.0]
            played[p, i] = np.eye(3)[rng.choice(other)]
            loss = best_value - expected_values(game, played)[p]
            gains = deviation_gains(game, played, p)
            assert gains[i] == pytest.approx(loss, abs=1e-12)
            assert gains.max() <= loss + 1e-12


@pytest.mark.parametrize("name", ["kuhn2p", "kuhn3p", "leduc2p"])
def test_a_deviation_gain_is_what_switching_at_that_information_set_gains(name: str) -> None:
    """Each gain is the better of the legal actions at that one information set (brute force),
    and none exceeds what a whole best response gains."""
    game = limit_game(name)
    rng = np.random.default_rng(3)
    profile = random_profile(game, rng, pure_share=0.0)
    for p in range(game.num_players):
        gains = deviation_gains(game, profile, p)
        assert (gains >= -1e-12).all() and gains.max() > 0
        base = expected_values(game, profile)[p]
        assert gains.max() <= best_response(game, profile, p)[1] - base + 1e-12
        infosets = list(game.infosets(p))
        for i in rng.choice(infosets, size=min(12, len(infosets)), replace=False):
            best = None
            for a in np.flatnonzero(game.legal_mask[p, i]):
                switched = profile.copy()
                switched[p, i] = np.eye(3)[a]
                value = expected_values(game, switched)[p]
                best = value if best is None else max(best, value)
            assert gains[i] == pytest.approx(best - base, abs=1e-12)


def test_nash_conv_is_the_sum_of_the_best_response_gains() -> None:
    game = limit_game("leduc3p")
    profile = random_profile(game, np.random.default_rng(8))
    ev = expected_values(game, profile)
    gains = [best_response(game, profile, p)[1] - ev[p] for p in range(3)]
    assert nash_conv(game, profile) == pytest.approx(sum(gains), abs=1e-12)
    assert all(g > 0 for g in gains)


# --- validation ----------------------------------------------------------------------------


def test_bad_profiles_are_refused_and_named() -> None:
    game = limit_game("leduc2p")
    good = uniform_profile(game)
    with pytest.raises(InvalidStrategyError, match="shape"):
        expected_values(game, good[:, :-1])
    bad = good.copy()
    bad[0, 0] = [0.5, 0.25, 0.25]  # folding with nothing to call
    with pytest.raises(InvalidStrategyError, match=r"'Qh:'.*illegal action 'f'"):
        expected_values(game, bad)
    bad = good.copy()
    bad[1, 5, 1] += 0.01
    with pytest.raises(InvalidStrategyError, match="sum to"):
        best_response(game, bad, 0)
    bad = good.copy()
    bad[1, 5] = [np.nan, 0.5, 0.5]
    with pytest.raises(InvalidStrategyError, match="not a probability vector"):
        nash_conv(game, bad)
    with pytest.raises(InvalidStrategyError):
        deviation_gains(game, bad, 0)


def test_bad_profiles_and_positions_name_their_field() -> None:
    game = limit_game("kuhn3p")
    bad = uniform_profile(game)
    bad[1, 0] = [0.0, 0.7, 0.7]
    with pytest.raises(InvalidStrategyError) as err:
        expected_values(game, bad)
    assert err.value.field.startswith("profile[1] at ")
    with pytest.raises(InvalidStrategyError) as err:
        nash_conv(game, np.zeros((3, 2, 2)))
    assert err.value.field == "profile"
    for call in (best_response, deviation_gains):
        with pytest.raises(InvalidArgumentError) as err:
            call(game, uniform_profile(game), 3)
        assert err.value.field == "position"


# --- Kuhn's closed forms on the compiled game ---------------------------------------------


def _kuhn2p_equilibrium(game: LimitGame, alpha: float, calls_queen: float = 1 / 3) -> np.ndarray:
    """Kuhn's 2-player equilibrium family on the compiled kuhn2p (J, Q, K are Qs, Ks, As): the
    first player bluffs J with alpha, bets K with 3 alpha, calls Q with alpha + 1/3; the second
    bets K, bluffs J with 1/3 after a check, calls Q with ``calls_queen`` (1/3)."""
    bet = {
        (0, "Qs:"): alpha, (0, "Ks:"): 0.0, (0, "As:"): 3 * alpha,
        (0, "Qs:cr"): 0.0, (0, "Ks:cr"): alpha + 1 / 3, (0, "As:cr"): 1.0,
        (1, "Qs:c"): 1 / 3, (1, "Ks:c"): 0.0, (1, "As:c"): 1.0,
        (1, "Qs:r"): 0.0, (1, "Ks:r"): calls_queen, (1, "As:r"): 1.0,
    }  # fmt: skip
    profile = uniform_profile(game)
    for (p, key), q in bet.items():
        i = game.infoset_from_string(p, key)
        profile[p, i] = [1 - q, q, 0.0] if game.legal_mask[p, i, 0] else [0.0, 1 - q, q]
    return profile


@pytest.mark.parametrize("alpha", [0.0, 1 / 7, 1 / 3])
def test_kuhn2p_closed_forms(alpha: float) -> None:
    """Uniform play's nash_conv is 11/12; the equilibrium family is worth -1/18 to the first
    player with nash_conv 0, and one step outside it (the second player calling Q a little more)
    is exploitable."""
    game = limit_game("kuhn2p")
    assert nash_conv(game, uniform_profile(game)) == pytest.approx(11 / 12, abs=1e-12)
    profile = _kuhn2p_equilibrium(game, alpha)
    np.testing.assert_allclose(expected_values(game, profile), [-1 / 18, 1 / 18], atol=1e-12)
    assert nash_conv(game, profile) < 1e-12
    assert nash_conv(game, _kuhn2p_equilibrium(game, alpha, 1 / 3 + 1 / 64)) > 1e-6
