"""The one MATCHSTATE parser on every kind of limit game: the three real dealer logs (their STATE
lines share the betting and cards grammar), hand-written Leduc and limit hold'em lines, and the
betting rules it replays against the reference dealer's logged hands."""

from __future__ import annotations

import pytest
from acpc_support import DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from oppmodel.clients.acpc.log import check_log, read_log
from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.gamedef import GameDef, parse_game_def, read_game_def
from oppmodel.modeling.games.acpc.matchstate import (
    MatchState,
    parse_matchstate,
    parse_matchstate_prefix,
)

LOGS = {
    "kuhn3p-seed42-example-players.log": "kuhn.limit.3p.game",
    "leduc2p-seed42-example-players.log": "leduc.limit.2p.game",
    "leduc3p-seed42-example-players.log": "leduc.limit.3p.game",
}
LEDUC2 = read_game_def(DATA / "leduc.limit.2p.game")
LEDUC3 = read_game_def(DATA / "leduc.limit.3p.game")
HOLDEM = parse_game_def(  # heads-up limit hold'em with the big blind in position 0
    "GAMEDEF\nlimit\nnumPlayers = 2\nnumRounds = 4\nblind = 10 5\nraiseSize = 10 10 20 20\n"
    "firstPlayer = 2 1 1 1\nmaxRaises = 3 4 4 4\nnumSuits = 4\nnumRanks = 13\nnumHoleCards = 2\n"
    "numBoardCards = 0 3 1 1\nEND GAMEDEF\n"
)


def state_lines(log: str) -> list[tuple[int, str, str]]:
    """(hand, betting, cards) of every STATE line, the fields cut out verbatim."""
    out = []
    for line in (DATA / log).read_text().splitlines():
        if line.startswith("STATE:"):
            _, hand, betting, cards, _, _ = line.split(":")
            out.append((int(hand), betting, cards))
    return out


def earlier_states(game: GameDef, final: MatchState) -> list[tuple[MatchState, int, int]]:
    """Every state the dealer sends ``final``'s viewer before the end of the hand (its own cards,
    the board of the rounds reached), with the position to act and the round there."""
    own = tuple(c if q == final.position else "" for q, c in enumerate(final.hole))
    hand = HandState(game)
    out = []
    for letter in final.betting.replace("/", ""):
        board = final.board[: hand.round + 1]
        state = MatchState(final.position, final.hand, hand.betting, own, board)
        out.append((state, hand.current, hand.round))
        hand.apply(letter)
    return out


# --- every line of the real logs ----------------------------------------------------------------


@pytest.mark.parametrize("log", LOGS)
def test_every_state_of_every_logged_hand_parses_and_prints_back(log: str) -> None:
    game = read_game_def(DATA / LOGS[log])
    lines = state_lines(log)
    assert len(lines) == 3000
    rounds_seen = set()
    for number, betting, cards in lines:
        for viewer in range(game.num_players):
            # the log's cards verbatim (every hole section shown) parse as a MATCHSTATE
            line = f"MATCHSTATE:{viewer}:{number}:{betting}:{cards}\r\n"
            full, hand = parse_matchstate(game, line)
            assert f"{full}\r\n" == line
            assert hand.finished and hand.betting == betting == full.betting
            assert all(len(h) == 2 * game.num_hole_cards for h in full.hole)
            assert set(full.hole) | set(full.board[1:]) <= set(game.deck)
            rounds_seen.add(full.round)
            # the final state as the dealer sends it: hidden where the viewer may not look
            visible = hand.visible_hole(full.hole, viewer)
            seen = MatchState(viewer, number, betting, visible, full.board)
            assert parse_matchstate(game, str(seen))[0] == seen
        # and every state before it, from one seat per hand (each position in turn)
        viewer = number % game.num_players
        final = MatchState(viewer, number, betting, full.hole, full.board)
        for state, current, round_ in earlier_states(game, final):
            parsed, replayed = parse_matchstate(game, f"{state}\n")
            assert parsed == state
            assert (replayed.current, replayed.round) == (current, round_)
    assert rounds_seen == set(range(game.num_rounds))


@pytest.mark.parametrize("log", LOGS)
def test_the_betting_rules_pay_what_the_reference_dealer_paid(log: str) -> None:
    game = read_game_def(DATA / LOGS[log])
    assert check_log(game, read_log(DATA / log)) == []


# --- hand-written lines -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("game", "line", "hole", "board", "to_act"),
    [
        (LEDUC2, "MATCHSTATE:0:0::Qh|", ("Qh", ""), ("",), 0),
        (LEDUC2, "MATCHSTATE:1:0:r:|Ah", ("", "Ah"), ("",), 1),
        (LEDUC2, "MATCHSTATE:1:0:rrc/:|Ah/As", ("", "Ah"), ("", "As"), 0),
        (LEDUC2, "MATCHSTATE:1:0:rrc/r:|Ah/As", ("", "Ah"), ("", "As"), 1),
        (LEDUC2, "MATCHSTATE:1:0:rrc/rf:|Ah/As", ("", "Ah"), ("", "As"), -1),  # won by a fold
        (LEDUC2, "MATCHSTATE:0:1:crc/cc:Ks|Kh/Qs", ("Ks", "Kh"), ("", "Qs"), -1),  # showdown
        (LEDUC2, "MATCHSTATE:0:36:rrf:Kh|", ("Kh", ""), ("",), -1),  # over before the board
        (LEDUC3, "MATCHSTATE:2:0:crcrcc/crf:||Js/Qs", ("", "", "Js"), ("", "Qs"), 0),
        (LEDUC3, "MATCHSTATE:2:0:crcrcc/crfrc:Ks|Kh|Js/Qs", ("Ks", "Kh", "Js"), ("", "Qs"), -1),
        (HOLDEM, "MATCHSTATE:1:30::|9s8h", ("", "9s8h"), ("",), 1),
        (HOLDEM, "MATCHSTATE:0:30:rc/crc/:TdAs|/8c8d5c/6s", ("TdAs", ""), ("", "8c8d5c", "6s"), 0),
        (
            HOLDEM,
            "MATCHSTATE:0:30:rc/crc/cc/cc:TdAs|9s8h/8c8d5c/6s/2d",
            ("TdAs", "9s8h"),
            ("", "8c8d5c", "6s", "2d"),
            -1,
        ),
    ],
)
def test_multi_round_lines_parse_into_rounds_and_boards(
    game: GameDef, line: str, hole: tuple, board: tuple, to_act: int
) -> None:
    state, hand = parse_matchstate(game, line + "\r\n")
    assert (state.hole, state.board, hand.current) == (hole, board, to_act)
    assert state.round == hand.round == len(board) - 1
    assert str(state) == line


def test_a_reply_with_the_letter_variants_is_the_state_it_answers() -> None:
    state, hand, _end = parse_matchstate_prefix(LEDUC2, "MATCHSTATE:1:0:RbK/B:|Ah/As:c\r\n")
    assert state == MatchState(1, 0, "rrc/r", ("", "Ah"), ("", "As"))
    assert hand.valid_actions() == ["f", "c", "r"]


def test_a_leduc_showdown_pays_the_pair_and_splits_equal_hands() -> None:
    _, hand = parse_matchstate(LEDUC3, "MATCHSTATE:2:0:crcrcc/crfrc:Ks|Kh|Js/Qs")
    assert hand.payoffs(("Ks", "Kh", "Js"), ("", "Qs")) == (2.5, 2.5, -5.0)  # the log's hand 0
    _, hand = parse_matchstate(LEDUC2, "MATCHSTATE:0:0:rrc/rrc:Qh|Ah/Qs")
    assert hand.payoffs(("Qh", "Ah"), ("", "Qs")) == (13.0, -13.0)  # a pair of queens wins
    with pytest.raises(InvalidArgumentError) as info:
        hand.payoffs(("Qh", "Ah"))
    assert info.value.field == "board"


@pytest.mark.parametrize(
    ("game", "line", "field"),
    [
        (LEDUC2, "MATCHSTATE:0:0:rrc:Qh|", "betting"),  # round 0 is over: '/' must follow
        (LEDUC2, "MATCHSTATE:0:0:rr/c:Qh|", "betting"),  # no round ended there
        (LEDUC2, "MATCHSTATE:0:0:/:Qh|", "betting"),
        (LEDUC2, "MATCHSTATE:0:0:rrr:Qh|", "betting"),  # maxRaises 2
        (LEDUC2, "MATCHSTATE:0:0:rrc/rrrc:Qh|/As", "betting"),
        (LEDUC2, "MATCHSTATE:0:0:rf/:Qh|", "betting"),  # the hand ended with the fold
        (LEDUC2, "MATCHSTATE:0:0:rrc/:Qh|", "cards"),  # round 1's board is missing
        (LEDUC2, "MATCHSTATE:0:0:rrc/:Qh|/", "cards"),
        (LEDUC2, "MATCHSTATE:0:0:rrc/:Qh|/Ax", "cards"),
        (LEDUC2, "MATCHSTATE:0:0:rrc/:QhKh|/As", "cards"),  # two hole cards in a one-card game
        (LEDUC2, "MATCHSTATE:0:0::Qh|/As", "matchstate"),  # a board before its round
        (LEDUC2, "MATCHSTATE:0:0:rrc/:Qh|/AsKs", "matchstate"),
        (LEDUC2, "MATCHSTATE:2:0::Qh|", "position"),
        (HOLDEM, "MATCHSTATE:0:30:rc/:Td|/8c8d5c", "cards"),  # one of two hole cards
        (HOLDEM, "MATCHSTATE:0:30:rc/:TdAs|/8c8d", "cards"),  # the flop has three cards
        (HOLDEM, "MATCHSTATE:0:30:rc/:TdAs|/8c8d5c/6s", "matchstate"),  # the turn is not out
    ],
)
def test_lines_that_break_the_game_are_refused_naming_the_part(
    game: GameDef, line: str, field: str
) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_matchstate(game, line)
    assert info.value.field == field, str(info.value)
    if field == "betting":
        assert isinstance(info.value, IllegalActionError)


def test_games_whose_betting_the_rules_do_not_play_are_refused() -> None:
    nolimit = LEDUC2.to_text().replace("limit\n", "nolimit\n", 1)
    short_stacks = LEDUC2.to_text().replace("stack = 2147483647 2147483647", "stack = 12 12")
    for text, message in ((nolimit, "no-limit"), (short_stacks, "a stack below 13 chips")):
        with pytest.raises(UnknownGameError, match=message):
            parse_matchstate(parse_game_def(text), "MATCHSTATE:0:0::Qh|")


# --- properties ---------------------------------------------------------------------------------


def every_betting(game: GameDef) -> list[str]:
    """Every betting string of the game, by walking the valid actions from the opening."""
    out, stack = [], [""]
    while stack:
        betting = stack.pop()
        out.append(betting)
        hand = HandState.from_betting(game, betting)
        for action in hand.valid_actions():
            after = HandState.from_betting(game, betting)
            after.apply(action)
            stack.append(after.betting)
    return out


@pytest.mark.parametrize("name", ["kuhn3p", "leduc2p", "leduc3p"])
def test_the_readable_bettings_are_the_compiled_games_nodes(name: str) -> None:
    game = limit_game(name)
    assert sorted(every_betting(game.gamedef)) == sorted(game.bettings)


LEDUC3_BETTINGS = every_betting(LEDUC3)


@settings(max_examples=200, deadline=None)
@given(
    betting=st.sampled_from(LEDUC3_BETTINGS),
    deal=st.permutations(LEDUC3.deck),
    viewer=st.integers(0, 2),
    number=st.integers(0, 2**32 - 1),
)
def test_any_leduc_state_a_dealer_can_send_prints_and_parses_back(
    betting: str, deal: list[str], viewer: int, number: int
) -> None:
    hand = HandState.from_betting(LEDUC3, betting)
    board = ("", deal[3])[: hand.round + 1]
    state = MatchState(viewer, number, betting, hand.visible_hole(deal[:3], viewer), board)
    parsed, replayed = parse_matchstate(LEDUC3, f"{state}\r\n")
    assert parsed == state
    assert (replayed.current, replayed.finished) == (hand.current, hand.finished)
    echoed, _, end = parse_matchstate_prefix(LEDUC3, f"{state}:r")
    assert echoed == state and end == len(str(state))
