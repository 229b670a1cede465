"""ACPC hand state, MATCHSTATE lines, deals, conversions and the real 3000-hand dealer log."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from acpc_support import (
    DATA,
    full_view_observation,
    kuhn_to_card,
    log_observations,
    seat_observation,
)
from hypothesis import given
from hypothesis import strategies as st

from oppmodel.clients.acpc.convert import card_to_kuhn, kuhn_for
from oppmodel.clients.acpc.deal import CardDealer, init_genrand
from oppmodel.clients.acpc.log import (
    DealerLog,
    LoggedHand,
    check_log,
    format_log,
    format_number,
    hand_payoffs,
    parse_log,
    read_log,
    seat_totals,
)
from oppmodel.clients.acpc.protocol import format_reply, same_state
from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.gamedef import GameDef, parse_game_def, read_game_def
from oppmodel.modeling.games.acpc.matchstate import (
    MatchState,
    parse_matchstate,
    parse_matchstate_prefix,
)
from oppmodel.modeling.observation import validate_observation

LOG_TEXT = (DATA / "kuhn3p-seed42-example-players.log").read_text()
GAME = read_game_def(DATA / "kuhn.limit.3p.game")


def kuhn_game_def(players: int) -> GameDef:
    blinds = " ".join(["1"] * players)
    return parse_game_def(
        f"GAMEDEF\nlimit\nnumPlayers = {players}\nnumRounds = 1\nblind = {blinds}\n"
        f"raiseSize = 1\nfirstPlayer = 1\nmaxRaises = 1\nnumSuits = 1\nnumRanks = {players + 1}\n"
        "numHoleCards = 1\nnumBoardCards = 0\nEND GAMEDEF\n"
    )


def terminal_bettings(game: GameDef, prefix: str = "") -> list[str]:
    """Every finished ACPC betting string, by walking the valid actions."""
    state = HandState.from_betting(game, prefix)
    if state.finished:
        return [prefix]
    return [b for a in state.valid_actions() for b in terminal_bettings(game, prefix + a)]


# --- the hand state against the core's Kuhn game (an independent implementation) ---------------


@pytest.mark.parametrize("players", [2, 3, 4])
def test_every_terminal_and_deal_pays_what_the_core_kuhn_game_pays(players: int) -> None:
    game = kuhn_game_def(players)
    kuhn = kuhn_for(game)
    terminals = terminal_bettings(game)
    assert len(terminals) == len(set(terminals)) == kuhn.num_terminals
    for betting in terminals:
        history = kuhn.acpc_to_history(betting)
        assert kuhn.is_terminal(history)
        assert kuhn.history_to_acpc(history) == betting
        state = HandState.from_betting(game, betting)
        for deal in itertools.permutations(range(players + 1), players):
            hole = [kuhn_to_card(game, c) for c in deal]
            assert state.payoffs(hole) == tuple(kuhn.returns(history, deal))
            for viewer in range(players):
                visible = state.visible_hole(hole, viewer)
                expected = kuhn.visible_cards(history, deal, viewer)
                assert tuple(card_to_kuhn(game, c) if c else None for c in visible) == expected


def test_the_13_terminal_bettings_of_3p_kuhn_are_the_ones_in_the_note() -> None:
    expected = {"ccc"} | {p + "r" + a + b for p in ("", "c", "cc") for a in "cf" for b in "cf"}
    assert set(terminal_bettings(GAME)) == expected


def test_invalid_actions_are_the_references() -> None:
    opening = HandState(GAME)
    assert opening.valid_actions() == ["c", "r"]  # no fold with nothing to call
    after_bet = HandState.from_betting(GAME, "r")
    assert after_bet.valid_actions() == ["f", "c"]  # maxRaises 1: no re-raise
    assert HandState.from_betting(GAME, "ccrfc").valid_actions() == []
    for betting, index in (("f", 0), ("rr", 1), ("cx", 1), ("cccc", 3)):
        with pytest.raises(IllegalActionError) as info:
            HandState.from_betting(GAME, betting)
        assert info.value.field == f"betting[{index}]"


def test_turn_order_skips_folded_players() -> None:
    state = HandState.from_betting(GAME, "rf")
    assert state.current == 2
    state = HandState.from_betting(GAME, "crf")
    assert state.current == 0  # position 2 folded; back to position 0
    state.apply("c")
    assert state.finished and state.showdown()


# --- MATCHSTATE ---------------------------------------------------------------------------------


def test_matchstate_lines_from_the_captured_traffic_parse_and_print_back() -> None:
    for line in (
        "MATCHSTATE:0:0::Ks||",
        "MATCHSTATE:1:0::|As|",
        "MATCHSTATE:0:0:ccrcc:Ks|As|Js",
        "MATCHSTATE:2:1::||Qs",
        "MATCHSTATE:1:137:ccrfc:|Js|Ks",
        "MATCHSTATE:0:137:ccrfc:As|Js|Ks",
        "MATCHSTATE:0:260:rff:Js||",
    ):
        state, hand = parse_matchstate(GAME, line + "\r\n")
        assert str(state) == line
        assert hand.betting == state.betting


def test_hand_137_and_260_visibility_match_the_captured_traffic() -> None:
    state = HandState.from_betting(GAME, "ccrfc")
    hole = ("As", "Js", "Ks")
    assert state.visible_hole(hole, 1) == ("", "Js", "Ks")  # the folder's Ace is hidden
    assert state.visible_hole(hole, 0) == ("As", "Js", "Ks")
    state = HandState.from_betting(GAME, "rff")
    assert [state.visible_hole(("Js", "Qs", "Ks"), v) for v in range(3)] == [
        ("Js", "", ""),
        ("", "Qs", ""),
        ("", "", "Ks"),
    ]


def test_matchstate_accepts_the_reference_letter_variants_in_the_betting() -> None:
    state, _ = parse_matchstate(GAME, "MATCHSTATE:2:5:kB:||Ks")
    assert state.betting == "cr"


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("MATCHSTATE:3:0::||Ks", "position"),
        ("MATCHSTATE:x:0::||Ks", "position"),
        ("MATCHSTATE:0:4294967296::Ks||", "hand"),
        ("MATCHSTATE:0:0:cf:Ks||", "betting"),
        ("MATCHSTATE:0:0:c", "betting"),
        ("MATCHSTATE:0:0::Ks|", "cards"),
        ("MATCHSTATE:0:0::Kx||", "cards"),
        ("MATCHSTATE:0:0::Ks||:c", "matchstate"),
        ("HELLO", "matchstate"),
    ],
)
def test_bad_matchstates_are_refused_naming_the_part(line: str, field: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_matchstate(GAME, line)
    assert info.value.field == field


def test_a_reply_parses_as_state_then_action_and_equality_ignores_other_cards() -> None:
    current = MatchState(1, 7, "c", ("", "Qs", ""))
    reply = format_reply(current, "r")
    assert reply == "MATCHSTATE:1:7:c:|Qs|:r\r\n"
    echoed, _, end = parse_matchstate_prefix(GAME, reply)
    assert same_state(echoed, current) and reply[end:] == ":r\r\n"
    assert same_state(MatchState(1, 7, "c", ("As", "Qs", "")), current)
    assert not same_state(MatchState(1, 7, "c", ("", "Ks", "")), current)
    assert not same_state(MatchState(1, 8, "c", ("", "Qs", "")), current)
    with pytest.raises(IllegalActionError):
        format_reply(current, "x")


# --- deals --------------------------------------------------------------------------------------


def test_init_genrand_reproduces_the_mt19937_reference_outputs() -> None:
    rng = init_genrand(5489)  # the standard's default seed: known first and 10000th outputs
    outputs = [rng.getrandbits(32) for _ in range(10000)]
    assert outputs[0] == 3499211612
    assert outputs[-1] == 4123659995


def test_seed_42_deals_every_hand_of_the_real_log() -> None:
    dealer = CardDealer(GAME, 42)
    logged = parse_log(LOG_TEXT).hands
    assert [dealer.deal().hole for _ in logged] == [h.hole for h in logged]


# --- the real log -------------------------------------------------------------------------------


def test_the_real_log_parses_completely_and_writes_back_byte_for_byte() -> None:
    log = parse_log(LOG_TEXT)
    assert format_log(log) == LOG_TEXT
    assert len(log.hands) == 3000
    assert [h.hand for h in log.hands] == list(range(3000))
    header = log.header
    assert header is not None
    assert (header.match, header.game_file, header.hands, header.seed) == (
        "kuhn3p_seed42",
        "kuhn.limit.3p.game",
        3000,
        42,
    )
    assert (header.t_response, header.t_hand, header.t_per_hand) == (600000, 600000, 7000)
    assert log.score is not None
    assert log.score.totals == (-108, 66, 42)
    assert log.score.names == ("Alice", "Bob", "Carol")
    assert len(Counter(h.betting for h in log.hands)) == 13


def test_recomputed_payoffs_equal_the_logged_ones_for_all_3000_hands() -> None:
    log = read_log(DATA / "kuhn3p-seed42-example-players.log")
    for hand in log.hands:
        assert hand_payoffs(GAME, hand) == hand.payoffs
        assert sum(hand.payoffs) == 0
        # the rotation: position p sits in seat (p + h) mod 3
        seats = ("Alice", "Bob", "Carol")
        assert hand.names == tuple(seats[(p + hand.hand) % 3] for p in range(3))
    assert check_log(GAME, log) == []
    assert seat_totals(log.hands, ("Alice", "Bob", "Carol")) == (-108, 66, 42)


def test_check_log_finds_tampering() -> None:
    lines = LOG_TEXT.split("\n")
    lines[4] = "STATE:0:ccrcc:Ks|As|Js:-2|3|-1:Alice|Bob|Carol"  # wrong payoffs
    lines[5] = "STATE:1:rf:Ks|Js|Qs:3|-1|-2:Bob|Carol|Alice"  # unfinished betting
    lines[6] = "STATE:2:rfc:Js|Js|As:-2|-1|3:Carol|Alice|Bob"  # a card dealt twice
    problems = check_log(GAME, parse_log("\n".join(lines)))
    assert len(problems) == 5
    assert problems[0].startswith("hand 0: logged payoffs")
    assert problems[1].startswith("hand 1:") and "not finished" in problems[1]
    assert problems[2].startswith("hand 2: cards")
    # the SCORE must be the sum of the logged payoffs: hand 0's changes Bob's and Carol's
    assert problems[3:] == [
        "SCORE: Bob logged 66.0, recomputed 65.0",
        "SCORE: Carol logged 42.0, recomputed 43.0",
    ]
    renamed = LOG_TEXT.replace(
        "SCORE:-108|66|42:Alice|Bob|Carol", "SCORE:-108|66|42:Alice|Bob|Dave"
    )
    assert check_log(GAME, parse_log(renamed)) == [
        "SCORE: names ('Alice', 'Bob', 'Dave') are not the players ['Alice', 'Bob', 'Carol']"
    ]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("STATE:0:ccc:Ks|As|Js:-1|-1|2\n", "line 1"),
        ("# name/game/hands/seed m g 1 2\nSTATE:x:ccc:Ks|As|Js:-1|-1|2:a|b|c\n", "line 2"),
        ("STATE:0:ccc:Ks|As|Js:-1|-1|two:a|b|c\n", "line 1"),
        ("SCORE:1|2:a|b|c\n", "line 1"),
        ("hello\n", "line 1"),
        ("SCORE:1:a", "log"),
    ],
)
def test_malformed_logs_name_the_line(text: str, where: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_log(text)
    assert info.value.field == where


def test_numbers_print_as_the_reference_prints_them() -> None:
    assert [format_number(v) for v in (4.0, -2.0, 0.5, 0.0, -0.0, 1.25, 1 / 3)] == [
        "4",
        "-2",
        "0.5",
        "0",
        "0",
        "1.25",
        "0.333333",
    ]


def test_split_pots_pay_fractions_and_log_them() -> None:
    two_suits = parse_game_def(
        "GAMEDEF\nlimit\nnumPlayers = 3\nnumRounds = 1\nblind = 1 1 1\nraiseSize = 1\n"
        "maxRaises = 1\nnumSuits = 1\nnumRanks = 4\nnumHoleCards = 1\nnumBoardCards = 0\n"
        "END GAMEDEF\n"
    )
    state = HandState.from_betting(two_suits, "ccc")
    # ties cannot be dealt in Kuhn, but the pot split rule is the reference's
    assert state.payoffs(("Ks", "Kd", "Js")) == (0.5, 0.5, -1.0)
    hand = LoggedHand(0, "ccc", ("Ks", "Kd", "Js"), (), (0.5, 0.5, -1.0), ("a", "b", "c"))
    text = "STATE:0:ccc:Ks|Kd|Js:0.5|0.5|-1:a|b|c\n"
    assert format_log(parse_log(text)) == text
    assert parse_log(text).hands == (hand,)


# --- conversions to the core's observations -----------------------------------------------------


def test_cards_map_to_kuhn_numbers_in_deck_order() -> None:
    assert [card_to_kuhn(GAME, c) for c in ("Js", "Qs", "Ks", "As")] == [0, 1, 2, 3]
    assert kuhn_to_card(GAME, 3) == "As"
    with pytest.raises(InvalidArgumentError):
        card_to_kuhn(GAME, "Th")
    with pytest.raises(InvalidArgumentError):
        kuhn_to_card(GAME, 4)


def test_replayed_observations_never_hold_a_card_the_seat_could_not_see() -> None:
    kuhn = kuhn_for(GAME)
    log = parse_log(LOG_TEXT)
    for hand in log.hands:
        state = HandState.from_betting(GAME, hand.betting)
        for position in range(3):
            obs = full_view_observation(
                GAME, position=position, betting=hand.betting, hole=hand.hole
            )
            validate_observation(kuhn, obs)
            live = seat_observation(
                GAME,
                position=position,
                betting=hand.betting,
                hole=state.visible_hole(hand.hole, position),
            )
            assert obs == live
            for other in range(3):
                if other != position and state.folded[other]:
                    assert obs.cards[other] is None
    hand_137 = log.hands[137]
    obs = full_view_observation(GAME, position=1, betting=hand_137.betting, hole=hand_137.hole)
    assert obs.history == "ppbpb" and obs.cards == (None, 0, 2)


def test_log_observations_are_a_players_live_view_of_every_hand() -> None:
    log = parse_log(LOG_TEXT)
    seen = list(log_observations(GAME, log, "Bob"))
    assert len(seen) == 3000
    for hand, obs in seen:
        position = hand.names.index("Bob")
        state = HandState.from_betting(GAME, hand.betting)
        visible = state.visible_hole(hand.hole, position)
        assert obs.position == position
        assert obs.cards == tuple(card_to_kuhn(GAME, c) if c else None for c in visible)
    # hand 137: Carol (position 0) folded the Ace; Alice and Bob never see it
    assert [obs.cards for hand, obs in seen if hand.hand == 137] == [(None, 0, 2)]
    with pytest.raises(InvalidArgumentError) as info:
        list(log_observations(GAME, log, "Dave"))
    assert info.value.field == "name"


# --- properties ---------------------------------------------------------------------------------

PREFIXES = sorted({b[:i] for b in terminal_bettings(GAME) for i in range(len(b) + 1)})


@given(
    betting=st.sampled_from(PREFIXES),
    deal=st.permutations(GAME.deck),
    viewer=st.integers(0, 2),
    number=st.integers(0, 2**32 - 1),
)
def test_every_state_a_dealer_can_send_prints_and_parses_back(
    betting: str, deal: list[str], viewer: int, number: int
) -> None:
    hand = HandState.from_betting(GAME, betting)
    state = MatchState(viewer, number, betting, hand.visible_hole(deal[:3], viewer))
    parsed, replayed = parse_matchstate(GAME, f"{state}\r\n")
    assert parsed == state
    assert replayed.current == hand.current and replayed.finished == hand.finished
    reply = format_reply(state, "c")
    echoed, _, end = parse_matchstate_prefix(GAME, reply)
    assert same_state(echoed, state) and reply[end:] == ":c\r\n"


@given(
    betting=st.sampled_from(terminal_bettings(GAME)),
    deal=st.permutations(GAME.deck),
    number=st.integers(0, 10**6),
    names=st.permutations(["a", "bb", "c_c"]),
)
def test_any_logged_hand_writes_and_reads_back(
    betting: str, deal: list[str], number: int, names: list[str]
) -> None:
    hole = tuple(deal[:3])
    payoffs = HandState.from_betting(GAME, betting).payoffs(hole)
    hand = LoggedHand(number, betting, hole, (), payoffs, tuple(names))
    text = format_log(DealerLog((hand,)))
    assert parse_log(text).hands == (hand,)
    assert check_log(GAME, parse_log(text)) == []
