"""The compiled Kuhn game against OpenSpiel's kuhn_poker, and the ACPC converters."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from openspiel_oracle import openspiel_game

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.kuhn import BET, PASS, kuhn_game

PLAYER_COUNTS = (2, 3, 4)


def _walk_openspiel(num_players: int):
    """Every (deal, betting history, state) reachable in OpenSpiel's game."""
    os_game = openspiel_game(num_players)
    out = []
    for deal in itertools.permutations(range(num_players + 1), num_players):
        state = os_game.new_initial_state()
        for card in deal:
            state.apply_action(card)
        stack = [(state, "")]
        while stack:
            s, history = stack.pop()
            out.append((deal, history, s))
            if not s.is_terminal():
                for a in s.legal_actions():
                    stack.append((s.child(a), history + "pb"[a]))
    return out


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_structure_matches_openspiel(n: int) -> None:
    game = kuhn_game(n)
    assert (game.num_players, game.num_cards, game.num_actions) == (n, n + 1, 2)
    terminals = set()
    for deal, history, state in _walk_openspiel(n):
        assert game.is_terminal(history) == state.is_terminal()
        if state.is_terminal():
            terminals.add(history)
            assert game.current_player(history) == -1
            assert game.legal_actions(history) == []
            np.testing.assert_array_equal(game.returns(history, deal), state.returns())
            continue
        p = state.current_player()
        assert game.current_player(history) == p
        assert game.legal_actions(history) == state.legal_actions() == [PASS, BET]
        idx = game.infoset_index(p, deal[p], history)
        assert game.infoset_string(p, idx) == state.information_state_string(p)
        assert game.infoset_from_string(p, state.information_state_string(p)) == idx
    ours = {game.histories[t] for t in game.terminal_nodes}
    assert ours == terminals


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_infoset_strings_round_trip_and_are_distinct(n: int) -> None:
    game = kuhn_game(n)
    for p in range(n):
        strings = [game.infoset_string(p, i) for i in game.infosets(p)]
        assert len(set(strings)) == len(strings)
        assert [game.infoset_from_string(p, s) for s in strings] == game.infosets(p)
    mask = game.valid_infoset_mask()
    assert mask.sum() == sum(len(game.infosets(p)) for p in range(n))


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_arrays_describe_the_tree(n: int) -> None:
    game = kuhn_game(n)
    for node, history in enumerate(game.histories):
        if game.node_player[node] >= 0:
            for a in (PASS, BET):
                child = game.node_children[node, a]
                assert child > node
                assert game.histories[child] == history + "pb"[a]
    for t, node in enumerate(game.terminal_nodes):
        history = game.histories[node]
        assert game.path_len[t] == len(history)
        for d in range(len(history)):
            assert game.histories[game.path_nodes[t, d]] == history[:d]
            assert "pb"[game.path_actions[t, d]] == history[d]
        for d, deal in enumerate(game.deals):
            np.testing.assert_array_equal(game.payoffs[t, d], game.returns(history, list(deal)))
    assert len(game.deals) == len(set(map(tuple, game.deals)))


@pytest.mark.parametrize("bad", [0, 1, 5, "3", 3.0])
def test_unknown_player_count(bad) -> None:
    with pytest.raises(UnknownGameError) as err:
        kuhn_game(bad)
    assert err.value.field == "num_players"


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_acpc_round_trip_every_history(n: int) -> None:
    game = kuhn_game(n)
    for history in game.histories:
        betting = game.history_to_acpc(history)
        assert set(betting) <= set("crf")
        assert game.acpc_to_history(betting) == history


def test_acpc_known_strings() -> None:
    game = kuhn_game(3)
    assert game.acpc_to_history("ccrfc") == "ppbpb"
    assert game.history_to_acpc("ppbpb") == "ccrfc"
    assert game.acpc_to_history("rcc") == "bbb"
    assert game.acpc_to_history("ccc") == "ppp"
    assert game.history_to_acpc("bpp") == "rff"


@pytest.mark.parametrize(
    "betting", ["f", "cf", "rr", "crr", "x", "cccc", "rccc", "rffc", "C", "c c"]
)
def test_acpc_illegal_strings_name_the_field(betting: str) -> None:
    with pytest.raises(IllegalActionError) as err:
        kuhn_game(3).acpc_to_history(betting)
    assert err.value.field == "betting"


@pytest.mark.parametrize("history", ["x", "pppp", "bppp", "pbpbp", "B"])
def test_invalid_histories(history: str) -> None:
    game = kuhn_game(3)
    with pytest.raises(IllegalActionError) as err:
        game.current_player(history)
    assert err.value.field == "history"
    with pytest.raises(IllegalActionError):
        game.history_to_acpc(history)


def test_returns_need_a_terminal_history_and_a_valid_deal() -> None:
    game = kuhn_game(3)
    with pytest.raises(IllegalActionError) as err:
        game.returns("pp", [0, 1, 2])
    assert err.value.field == "history"
    for cards, field in [([0, 1], "cards"), ([0, 0, 1], "cards"), ([0, 1, 4], "cards[2]")]:
        with pytest.raises(InvalidArgumentError) as err:
            game.returns("ppp", cards)
        assert err.value.field == field


def test_infoset_errors_name_the_field() -> None:
    game = kuhn_game(3)
    cases = [
        (lambda: game.infoset_index(3, 0, ""), "position"),
        (lambda: game.infoset_index(0, 4, ""), "card"),
        (lambda: game.infoset_index(1, 0, ""), "history"),
        (lambda: game.infoset_string(0, 99), "infoset"),
        (lambda: game.infoset_from_string(0, "x"), "infostate"),
        (lambda: game.infoset_from_string(0, ""), "infostate"),
    ]
    for call, field in cases:
        with pytest.raises(InvalidArgumentError) as err:
            call()
        assert err.value.field == field


def test_visible_cards_follow_acpc_rules() -> None:
    game = kuhn_game(3)
    cards = [2, 0, 3]
    # showdown after all check: everyone sees everything
    assert game.visible_cards("ppp", cards, 1) == (2, 0, 3)
    # position 1 folds, 0 and 2 show down: 1's card stays hidden from the others
    assert game.visible_cards("bpb", cards, 0) == (2, None, 3)
    assert game.visible_cards("bpb", cards, 1) == (2, 0, 3)
    # everyone folds to the bettor: nothing is revealed
    assert game.visible_cards("bpp", cards, 0) == (2, None, None)
    assert game.visible_cards("bpp", cards, 2) == (None, None, 3)
    with pytest.raises(IllegalActionError):
        game.visible_cards("bp", cards, 0)
    with pytest.raises(InvalidArgumentError) as err:
        game.visible_cards("ppp", cards, 3)
    assert err.value.field == "viewer"


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_visible_cards_against_a_direct_rule(n: int) -> None:
    game = kuhn_game(n)
    deal = list(range(n))
    for node in game.terminal_nodes:
        history = game.histories[node]
        first_bet = history.find("b")
        folded = {i % n for i in range(first_bet + 1, len(history)) if history[i] == "p"}
        folded = folded if first_bet >= 0 else set()
        for viewer in range(n):
            seen = game.visible_cards(history, deal, viewer)
            for i in range(n):
                expect_visible = i == viewer or (n - len(folded) >= 2 and i not in folded)
                assert (seen[i] is not None) == expect_visible
