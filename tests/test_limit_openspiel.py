"""Limit games against OpenSpiel: expected values, best-response values and nash_conv on 50 random
profiles per game and peer (``kuhn_poker``, ``leduc_poker`` and ``universal_poker`` loaded from the
same game file), the policy converters, and the showdown against ``universal_poker``'s evaluator."""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import expected_game_score, exploitability
from openspiel_limit_oracle import FlatTree

from oppmodel.modeling.evaluation.limit import best_response, expected_values, nash_conv
from oppmodel.modeling.games.acpc.bundled import game_path
from oppmodel.modeling.games.acpc.compiler import compile_limit_game, limit_game, parse_game_def
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS
from oppmodel.modeling.games.acpc.hand_rank import hand_category, hand_strength
from oppmodel.modeling.games.acpc.openspiel import (
    openspiel_policy_table,
    openspiel_tabular_policy,
    pair_with_openspiel,
    profile_from_openspiel,
)
from oppmodel.modeling.games.acpc.strategy import random_profile, uniform_profile

RANDOM_PROFILES = 50
TOLERANCE = 1e-9


def universal_poker(name: str) -> pyspiel.Game:
    """OpenSpiel's ACPC engine loaded from the very game file we compile."""
    text = game_path(name).read_text()
    return pyspiel.universal_poker.load_universal_poker_from_acpc_gamedef(text)


def peer(name: str, kind: str) -> pyspiel.Game:
    if kind == "universal_poker":
        return universal_poker(name)
    players = limit_game(name).num_players
    return pyspiel.load_game(f"{kind}(players={players})")


PEERS = [
    ("kuhn2p", "kuhn_poker"),
    ("kuhn2p", "universal_poker"),
    ("kuhn3p", "kuhn_poker"),
    ("kuhn3p", "universal_poker"),
    ("kuhn4p", "kuhn_poker"),
    ("leduc2p", "leduc_poker"),
    ("leduc2p", "universal_poker"),
]


def check_against_openspiel(name: str, kind: str, *, cpp_best_responses: int, seed: int) -> None:
    """50 random profiles: expected values from OpenSpiel's C++ ``expected_returns`` (when the
    game is small enough for it to be quick) or its game tree, best-response values from its C++
    ``TabularBestResponse`` on the first ``cpp_best_responses`` profiles (it takes a fraction of a
    second per profile in 2-player Leduc, seconds in 3-player Leduc) and from OpenSpiel's game
    tree (:class:`FlatTree`) on all of them; nash_conv as their sum."""
    game, os_game = limit_game(name), peer(name, kind)
    tree, pairing = FlatTree(os_game), pair_with_openspiel(game, os_game)
    assert len(pairing.keys) == len(tree.info_ids) == sum(game.infosets_per_position)
    root = os_game.new_initial_state()
    rng = np.random.default_rng(seed)
    for k in range(RANDOM_PROFILES):
        profile = random_profile(game, rng)
        edge = tree.edge_probabilities_of(pairing, profile)
        ev = tree.expected_values(edge)
        theirs = [tree.best_response_value(edge, p) for p in range(game.num_players)]
        if k < cpp_best_responses:
            table = openspiel_policy_table(game, profile, os_game)
            cpp_ev = pyspiel.expected_returns(root, pyspiel.TabularPolicy(table), -1, True)
            np.testing.assert_allclose(ev, cpp_ev, rtol=0, atol=TOLERANCE)
            for p in range(game.num_players):
                cpp = pyspiel.TabularBestResponse(os_game, p, table).value_from_state(root)
                assert theirs[p] == pytest.approx(cpp, abs=TOLERANCE)
        np.testing.assert_allclose(expected_values(game, profile), ev, rtol=0, atol=TOLERANCE)
        for p in range(game.num_players):
            assert best_response(game, profile, p)[1] == pytest.approx(theirs[p], abs=TOLERANCE)
        assert nash_conv(game, profile) == pytest.approx(sum(theirs) - ev.sum(), abs=TOLERANCE)


@pytest.mark.parametrize(("name", "kind"), PEERS)
def test_values_best_responses_and_nash_conv_equal_openspiels(name: str, kind: str) -> None:
    cpp = RANDOM_PROFILES if name.startswith("kuhn") else 8
    check_against_openspiel(name, kind, cpp_best_responses=cpp, seed=sum(map(ord, name + kind)))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["leduc_poker", "universal_poker"])
def test_three_player_leduc_equals_openspiel(kind: str) -> None:
    """OpenSpiel's C++ best response takes seconds per profile and position here (16 s to
    build it, the first time): its values come from OpenSpiel's game tree, walked once."""
    check_against_openspiel("leduc3p", kind, cpp_best_responses=0, seed=33)


@pytest.mark.parametrize(("name", "kind"), [("kuhn3p", "kuhn_poker"), ("leduc2p", "leduc_poker")])
def test_values_and_nash_conv_equal_openspiels_python_algorithms(name: str, kind: str) -> None:
    """``expected_game_score.policy_value`` and ``exploitability.nash_conv`` (Python)."""
    game, os_game = limit_game(name), peer(name, kind)
    rng = np.random.default_rng(2)
    for _ in range(3):
        profile = random_profile(game, rng)
        policy = openspiel_tabular_policy(game, profile, os_game)
        values = expected_game_score.policy_value(
            os_game.new_initial_state(), [policy] * game.num_players
        )
        np.testing.assert_allclose(expected_values(game, profile), values, atol=TOLERANCE)
        theirs = exploitability.nash_conv(os_game, policy)
        assert nash_conv(game, profile) == pytest.approx(theirs, abs=TOLERANCE)


# --- converters ----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "kind"), [*PEERS, ("leduc3p", "leduc_poker")])
def test_policies_convert_both_ways(name: str, kind: str) -> None:
    game, os_game = limit_game(name), peer(name, kind)
    profile = random_profile(game, np.random.default_rng(4))
    table = openspiel_policy_table(game, profile, os_game)
    assert len(table) == sum(game.infosets_per_position)
    np.testing.assert_array_equal(profile_from_openspiel(game, os_game, table), profile)
    back = profile_from_openspiel(game, os_game, pyspiel.TabularPolicy(table))
    np.testing.assert_array_equal(back, profile)


def test_a_python_policy_converts_by_walking_openspiels_states() -> None:
    game = limit_game("leduc2p")
    os_game = peer("leduc2p", "leduc_poker")
    uniform = profile_from_openspiel(game, os_game, os_policy.UniformRandomPolicy(os_game))
    np.testing.assert_allclose(uniform, uniform_profile(game), atol=1e-15)
    profile = random_profile(game, np.random.default_rng(9))
    tabular = openspiel_tabular_policy(game, profile, os_game)
    np.testing.assert_allclose(profile_from_openspiel(game, os_game, tabular), profile)


def test_a_different_game_is_refused() -> None:
    with pytest.raises(ValueError, match="players"):
        openspiel_policy_table(
            limit_game("leduc2p"),
            uniform_profile(limit_game("leduc2p")),
            pyspiel.load_game("leduc_poker(players=3)"),
        )
    with pytest.raises(ValueError, match="differs"):  # 2p Kuhn rules, 2p Leduc cards
        openspiel_policy_table(
            limit_game("leduc2p"),
            uniform_profile(limit_game("leduc2p")),
            pyspiel.load_game("kuhn_poker(players=2)"),
        )


# --- showdowns -----------------------------------------------------------------------------


@pytest.mark.parametrize(("players", "board"), [(2, 3), (3, 5)])
def test_showdowns_equal_universal_pokers_hand_evaluator(players: int, board: int) -> None:
    """Five- and seven-card hands from a full deck: straights, flushes, full houses, splits."""
    text = (
        f"GAMEDEF\nlimit\nnumPlayers = {players}\nnumRounds = 1\nblind = {' '.join('1' * players)}"
        f"\nraiseSize = 1\nfirstPlayer = 1\nmaxRaises = 1\nnumSuits = 4\nnumRanks = 13\n"
        f"numHoleCards = 2\nnumBoardCards = {board}\nEND GAMEDEF\n"
    )
    os_game = pyspiel.universal_poker.load_universal_poker_from_acpc_gamedef(text)
    rng = np.random.default_rng(players)
    categories = set()
    for _ in range(400):
        cards = rng.permutation(52)[: 2 * players + board]
        state = os_game.new_initial_state()
        for card in cards:  # hole cards position by position, then the board
            state.apply_action(int(card))
        while not state.is_terminal():
            state.apply_action(1)  # everyone checks to the showdown
        names = [RANK_CHARS[c // 4] + SUIT_CHARS[c % 4] for c in cards]
        shown = [
            hand_strength(names[2 * p : 2 * p + 2] + names[2 * players :]) for p in range(players)
        ]
        categories.add(hand_category(max(shown)))
        winners = [p for p in range(players) if shown[p] == max(shown)]
        ours = [players / len(winners) * (p in winners) - 1 for p in range(players)]
        np.testing.assert_allclose(state.returns(), ours, atol=1e-12)
    assert len(categories) >= 6


def test_a_compiled_game_agrees_with_universal_poker_at_showdowns_with_two_hole_cards() -> None:
    text = (
        "GAMEDEF\nlimit\nnumPlayers = 2\nnumRounds = 2\nblind = 1 1\nraiseSize = 1 2\n"
        "firstPlayer = 1 1\nmaxRaises = 1 1\nnumSuits = 2\nnumRanks = 3\nnumHoleCards = 2\n"
        "numBoardCards = 0 2\nEND GAMEDEF\n"
    )
    game = compile_limit_game(parse_game_def(text), "twocards")
    os_game = pyspiel.universal_poker.load_universal_poker_from_acpc_gamedef(text)
    rng = np.random.default_rng(1)
    for _ in range(2):
        profile = random_profile(game, rng)
        table = openspiel_policy_table(game, profile, os_game)
        root = os_game.new_initial_state()
        ev = pyspiel.expected_returns(root, pyspiel.TabularPolicy(table), -1, True)
        np.testing.assert_allclose(expected_values(game, profile), ev, atol=TOLERANCE)
        br = pyspiel.TabularBestResponse(os_game, 0, table).value_from_state(root)
        assert best_response(game, profile, 0)[1] == pytest.approx(br, abs=TOLERANCE)
