"""The limit-game compiler: sizes, betting rules, information-state strings, the dealer's payoffs
(every hand of two real Leduc logs), hand ranking, and refusals of games it cannot model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from limit_oracle import infostates

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES, game_path
from oppmodel.modeling.games.acpc.compiler import MAX_STATES, compile_limit_game, limit_game
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.acpc.hand_rank import (
    FLUSH,
    FULL_HOUSE,
    HIGH_CARD,
    PAIR,
    QUADS,
    STRAIGHT,
    STRAIGHT_FLUSH,
    TRIPS,
    TWO_PAIR,
    hand_category,
    hand_strength,
)

DATA = Path(__file__).resolve().parent / "data" / "acpc"


def game_text(**fields: str) -> str:
    """A game definition: 2-player Leduc unless a field says otherwise."""
    base = {
        "numPlayers": "2",
        "numRounds": "2",
        "blind": "1 1",
        "raiseSize": "2 4",
        "firstPlayer": "1 1",
        "maxRaises": "2 2",
        "numSuits": "2",
        "numRanks": "3",
        "numHoleCards": "1",
        "numBoardCards": "0 1",
        **fields,
    }
    betting = base.pop("betting", "limit")
    body = "\n".join(f"{k} = {v}" for k, v in base.items())
    return f"GAMEDEF\n{betting}\n{body}\nEND GAMEDEF\n"


# --- sizes and structure -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "nodes", "terminals", "deals", "infosets"),
    [
        ("kuhn2p", 9, 5, 6, 12),
        ("kuhn3p", 25, 13, 24, 48),
        ("kuhn4p", 65, 33, 120, 160),
        ("leduc2p", 85, 49, 120, 936),  # OpenSpiel's leduc_poker has 936 information states
        ("leduc3p", 1120, 631, 1680, 25800),  # ... and 25,800 with three players
    ],
)
def test_bundled_games_compile_to_their_known_sizes(name, nodes, terminals, deals, infosets):
    sizes = limit_game(name).sizes()
    assert (sizes["nodes"], sizes["terminals"], sizes["deals"], sizes["infosets"]) == (
        nodes,
        terminals,
        deals,
        infosets,
    )


def test_every_bundled_game_name_resolves_to_a_file_and_a_path_works_too() -> None:
    for name in BUNDLED_GAMES:
        assert game_path(name).is_file()
    game = limit_game(DATA / "leduc.limit.3p.game")
    assert game.name == "leduc.limit.3p.game" and game.num_deals == 1680
    with pytest.raises(InvalidArgumentError, match="nor a bundled game"):
        limit_game("leduc9p")


def test_children_come_after_parents_and_rounds_only_grow() -> None:
    tree = limit_game("leduc3p").tree
    for node, parent in enumerate(tree.node_parent):
        if parent >= 0:
            assert parent < node
            assert tree.node_children[parent, tree.node_action[node]] == node
            assert tree.node_round[node] >= tree.node_round[parent]
            assert tree.node_depth[node] == tree.node_depth[parent] + 1


def test_leduc_betting_follows_the_reference_rules() -> None:
    game = limit_game("leduc3p")
    assert game.legal_actions("") == [1, 2]  # nothing to call: no fold
    assert game.legal_actions("r") == [0, 1, 2]
    assert game.legal_actions("rr") == [0, 1]  # two raises: the cap
    assert game.child("rrc", 1) == "rrcc/"  # round over: a "/" and round 1 begins ...
    assert game.current_player("rrcc/") == 0  # ... with position 0
    assert game.current_player("crf") == 0  # the check before the raise does not count
    assert game.current_player("crfc/") == 0  # two left, both acted since the raise
    assert game.current_player("rf") == 2
    assert game.current_player("rff") == -1  # one player left
    assert game.current_player("ccc/ccc") == -1  # showdown
    with pytest.raises(IllegalActionError, match="not a legal betting"):
        game.node("rrr")
    with pytest.raises(IllegalActionError):
        game.child("", 0)  # fold with nothing to call


def test_first_player_and_blinds_shape_the_tree() -> None:
    # heads-up limit hold'em style: blinds 1 2, position 1 opens round 0, position 0 round 1
    game = compile_limit_game(
        parse_game_def(game_text(blind="2 1", firstPlayer="2 1", maxRaises="3 3")), "hu"
    )
    assert game.current_player("") == 1
    assert game.legal_actions("") == [0, 1, 2]  # the small blind faces the big blind
    assert game.current_player("c") == 0  # the big blind may still raise
    assert game.current_player("cc/") == 0
    assert game.current_player("f") == -1
    assert game.returns("f", ["Qh", "Kh"]).tolist() == [1.0, -1.0]


# --- information-state strings ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["kuhn3p", "leduc2p", "leduc3p"])
def test_information_state_strings_are_one_to_one(name: str) -> None:
    game = limit_game(name)
    for p in range(game.num_players):
        strings = [game.infoset_string(p, i) for i in game.infosets(p)]
        assert len(set(strings)) == len(strings)
        assert [game.infoset_from_string(p, s) for s in strings] == list(game.infosets(p))


def test_information_state_strings_read_as_documented() -> None:
    game = limit_game("leduc2p")
    assert game.infoset_from_string(1, "Ks:r") >= 0
    assert game.infoset_from_string(0, "Ks/Qh:rc/cr") >= 0
    with pytest.raises(IllegalActionError, match="position 1 is not to act"):
        game.infoset_from_string(1, "Ks:")
    with pytest.raises(InvalidArgumentError, match="not what a player sees"):
        game.infoset_from_string(0, "Ks/Ks:cc/")
    with pytest.raises(InvalidArgumentError, match="'<cards>:<betting>'"):
        game.infoset_from_string(0, "Ks")


@st.composite
def small_games(draw) -> str:
    """Small limit games the pure-Python oracle enumerates in well under a second."""
    players = draw(st.integers(2, 3))
    rounds = draw(st.integers(1, 2))
    most = 5 if players + rounds < 5 else 4  # 3 players, 2 rounds: at most 4 x 3 x 2 deals
    boards = [draw(st.integers(0, 1)) for _ in range(rounds)]
    boards[0] = min(boards[0], most - players - sum(boards[1:]))
    deck = players + sum(boards) + draw(st.integers(0, most - players - sum(boards)))
    suits = draw(st.sampled_from([s for s in (1, 2) if deck % s == 0]))
    fields = {
        "numPlayers": str(players),
        "numRounds": str(rounds),
        "blind": " ".join(str(draw(st.integers(0, 2))) for _ in range(players)),
        "raiseSize": " ".join(str(draw(st.integers(1, 4))) for _ in range(rounds)),
        "firstPlayer": " ".join(str(draw(st.integers(1, players))) for _ in range(rounds)),
        "maxRaises": " ".join(str(draw(st.integers(1, 3 - players + 1))) for _ in range(rounds)),
        "numSuits": str(suits),
        "numRanks": str(deck // suits),
        "numBoardCards": " ".join(map(str, boards)),
    }
    return game_text(**fields)


@settings(max_examples=25)
@given(small_games())
def test_information_sets_are_those_an_independent_rules_engine_finds(text: str) -> None:
    gamedef = parse_game_def(text)
    game = compile_limit_game(gamedef, "small")
    found = infostates(gamedef)
    for p in range(game.num_players):
        assert {game.infoset_string(p, i) for i in game.infosets(p)} == found[p]


# --- payoffs ---------------------------------------------------------------------------------


def logged_hands(path: Path):
    """(betting, hole cards by position, board by round, payoffs) of every hand of a log."""
    for line in path.read_text().splitlines():
        if not line.startswith("STATE:"):
            continue
        _, _, betting, cards, values, _ = line.split(":")
        hole, *board = cards.split("/")
        yield betting, hole.split("|"), ["", *board] if board else [], values.split("|")


@pytest.mark.parametrize("players", [2, 3])
def test_payoffs_equal_every_hand_of_the_reference_dealers_leduc_log(players: int) -> None:
    game = limit_game(f"leduc{players}p")
    hands = list(logged_hands(DATA / f"leduc{players}p-seed42-example-players.log"))
    assert len(hands) == 3000
    splits = 0
    for betting, hole, board, values in hands:
        expected = [float(v) for v in values]
        splits += any(v % 1 for v in expected)
        np.testing.assert_allclose(game.returns(betting, hole, board), expected, atol=5e-7)
    assert splits > 100 if players == 3 else splits == 0  # odd pots split three ways: x.5


def test_split_pots_and_folds_pay_as_the_dealer_pays() -> None:
    game = limit_game("leduc3p")
    # two kings split 2 x 6.5 after the ace-holder folded in round 1
    np.testing.assert_allclose(
        game.returns("rrcc/ccrcrcc", ["Ks", "Kh", "Qh"], ["", "Ah"]), [6.5, 6.5, -13]
    )
    # a pair with the board beats the ace
    np.testing.assert_allclose(game.returns("ccc/ccc", ["Ah", "Js", "Qs"], ["", "Jh"]), [-1, 2, -1])
    # the hand ended before the board: its card does not matter and may be left out
    np.testing.assert_allclose(game.returns("ccrrff", ["Ah", "Js", "Qs"]), [4, -1, -3])
    with pytest.raises(InvalidArgumentError, match="repeats a card"):
        game.returns("ccc/ccc", ["Ah", "Ah", "Qs"], ["", "Jh"])
    with pytest.raises(IllegalActionError, match="not a finished hand"):
        game.returns("ccc/", ["Ah", "Js", "Qs"], ["", "Jh"])


# --- hand ranking ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cards", "category"),
    [
        ("AsKsQsJsTs", STRAIGHT_FLUSH),
        ("5d4d3d2dAd9c", STRAIGHT_FLUSH),
        ("9s9h9d9c2s", QUADS),
        ("9s9h9d2c2s", FULL_HOUSE),
        ("9s9h9d2c2s2h", FULL_HOUSE),
        ("As9s7s5s3s", FLUSH),
        ("5c4d3h2sAc", STRAIGHT),
        ("9s9h9d", TRIPS),
        ("9s9h2d2c", TWO_PAIR),
        ("KsKh", PAIR),
        ("AsKh", HIGH_CARD),
        ("AsKsQsJs", HIGH_CARD),  # four cards: no flush, no straight
    ],
)
def test_hand_categories(cards: str, category: int) -> None:
    assert (
        hand_category(hand_strength([cards[i : i + 2] for i in range(0, len(cards), 2)]))
        == category
    )


def test_hand_order_kickers_and_ties() -> None:
    def s(cards: str) -> int:
        return hand_strength([cards[i : i + 2] for i in range(0, len(cards), 2)])

    assert s("AsQh") > s("KsQh") > s("QsJh")  # Leduc without a pair: the higher card
    assert s("JsQh") == s("JhQs")  # suits never order hands: a split
    assert s("2s2h") > s("AsKh")
    assert s("6c5d4h3s2c") > s("5c4d3h2sAc")  # the wheel is the lowest straight
    assert s("AsAhKd2c3c") > s("AsAhQdJcTc")  # kicker
    assert s("KsKhQdQc2c") > s("KsKhJdJcAc")  # two pair: the second pair before the kicker
    with pytest.raises(InvalidArgumentError, match="distinct"):
        s("AsAs")
    with pytest.raises(InvalidArgumentError, match="bad card"):
        s("1s")


# --- refusals --------------------------------------------------------------------------------


def test_a_game_too_large_to_enumerate_is_refused_with_its_size_and_the_bound() -> None:
    holdem = game_text(
        numRounds="4",
        blind="1 2",
        raiseSize="2 2 4 4",
        firstPlayer="2 1 1 1",
        maxRaises="3 4 4 4",
        numSuits="4",
        numRanks="13",
        numHoleCards="2",
        numBoardCards="0 3 1 1",
    )
    with pytest.raises(UnknownGameError, match=r"deals, above the bound of 2,000,000"):
        compile_limit_game(parse_game_def(holdem), "holdem")
    many_rounds = game_text(
        numPlayers="3",
        numRounds="4",
        blind="1 1 1",
        raiseSize="1 1 1 1",
        firstPlayer="1 1 1 1",
        maxRaises="4 4 4 4",
        numRanks="5",
        numBoardCards="0 1 1 1",
    )
    with pytest.raises(UnknownGameError, match=f"above the bound of {MAX_STATES:,} states"):
        compile_limit_game(parse_game_def(many_rounds), "deep")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"betting": "nolimit"}, "no-limit"),
        ({"maxRaises": "2"}, "no raise cap"),
        ({"stack": "10 10"}, "a stack below 13 chips"),
    ],
)
def test_games_outside_the_model_are_refused_by_rule(fields, message) -> None:
    with pytest.raises(UnknownGameError, match=message):
        compile_limit_game(parse_game_def(game_text(**fields)), "odd")
