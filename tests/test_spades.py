"""Rules, bidding and scoring of 3-player perfect-information Spades: known answers, properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.spades.bidding import bid, bids
from oppmodel.modeling.games.spades.cards import (
    card_str,
    deal,
    mask_to_cards,
    parse_card,
    parse_hand,
)
from oppmodel.modeling.games.spades.scoring import Scoreboard, hand_score, utility, utility_table
from oppmodel.modeling.games.spades.state import SpadesState, trick_winner


def c(text: str) -> int:
    return parse_card(text)


def test_card_names_round_trip():
    assert card_str(0) == "2C" and card_str(51) == "AS" and card_str(c("TH")) == "TH"
    assert all(parse_card(card_str(k)) == k for k in range(52))
    assert parse_card("10d") == c("TD")
    with pytest.raises(InvalidArgumentError, match="card"):
        parse_card("1X")


def test_trick_winner_known_answers():
    # leader 0 leads hearts; a low spade trumps the ace of the led suit
    assert trick_winner([c("KH"), c("AH"), c("2S")], leader=0) == 2
    # highest spade wins among several
    assert trick_winner([c("3S"), c("AH"), c("QS")], leader=1) == 2
    # off-suit non-trump card never wins, even if higher
    assert trick_winner([c("5D"), c("AC"), c("9D")], leader=0) == 2
    assert trick_winner([c("5D"), c("AC"), c("4D")], leader=0) == 0
    # the led suit is the leader's, not seat 0's
    assert trick_winner([c("AD"), c("2C"), c("3C")], leader=1) == 2


def test_legal_moves_follow_suit():
    # seat 0 led the 7H from three cards; seats 1 and 2 still hold three each
    hands = (parse_hand("2C AH"), parse_hand("5H KS 9H"), parse_hand("3D 4D 6D"))
    pos = SpadesState(hands=hands, trick=(c("7H"), -1, -1), leader=0, turn=1)
    pos.validate()
    assert pos.legal_moves() == [c("5H"), c("9H")]
    assert not pos.can_play(c("KS"))
    with pytest.raises(IllegalActionError, match="does not follow"):
        pos.play(c("KS"))
    nxt = pos.play(c("9H"))
    assert nxt.turn == 2 and nxt.legal_moves() == [c("3D"), c("4D"), c("6D")]  # void: anything
    done = nxt.play(c("4D"))
    assert done.tricks == (0, 1, 0) and done.leader == 1 and done.turn == 1
    assert done.trick == (-1, -1, -1)
    assert done.legal_moves() == [c("5H"), c("KS")]  # leading: any card


def test_position_validation_names_the_field():
    with pytest.raises(InvalidArgumentError, match="hands"):
        SpadesState.start((parse_hand("2C"), parse_hand("2C"), parse_hand("3C")))
    with pytest.raises(InvalidArgumentError, match="hands"):
        SpadesState.start((parse_hand("2C 3C"), parse_hand("4C"), parse_hand("5C")))
    with pytest.raises(InvalidArgumentError, match="turn"):
        SpadesState(
            hands=(parse_hand("2C"), parse_hand("3C"), parse_hand("4C")), leader=0, turn=1
        ).validate()
    with pytest.raises(IllegalActionError, match="does not hold"):
        SpadesState.start((parse_hand("2C"), parse_hand("3C"), parse_hand("4C"))).play(c("3C"))


def test_scoring_known_answers():
    assert hand_score(3, 3) == 30
    assert hand_score(3, 4) == 31  # Sturtevant et al. 2006, Figure 4: bid + 1 pays 31
    assert hand_score(3, 2) == -30
    assert hand_score(1, 7) == 16


def test_utilities_match_paper_figure_4_and_5():
    # Figure 4: payoff 31 with one overtrick is worth 31 to MT and 29 to mOT
    assert utility("MT", 3, 4) == 31 and utility("mOT", 3, 4) == 29
    # Figure 5: making the bid exactly (payoff 30) is worth 30 to both
    assert utility("MT", 3, 3) == 30 and utility("mOT", 3, 3) == 30
    # missing is -10 x bid for both
    assert utility("MT", 3, 1) == utility("mOT", 3, 1) == -30
    # MT increases with tricks; mOT peaks at the bid
    mt = utility_table("MT", 2, 7)
    mot = utility_table("mOT", 2, 7)
    assert list(mt) == [-20, -20, 20, 21, 22, 23, 24, 25]
    assert list(mot) == [-20, -20, 20, 19, 18, 17, 16, 15]


def test_bag_penalty_every_ten_overtricks():
    board = Scoreboard(scores=(100, 50, 0), bags=(9, 0, 8))
    board = board.after_hand(bids_=(1, 2, 1), tricks=(3, 2, 2))
    # seat 0: 10 + 2 = 12 points, bags 9 + 2 = 11 -> -100, bags 1
    # seat 1: exact bid, 20 points; seat 2: 10 + 1, bags 9, no penalty yet
    assert board.scores == (12, 70, 11) and board.bags == (1, 0, 9)
    board = board.after_hand(bids_=(3, 1, 1), tricks=(1, 1, 5))
    # seat 0 misses: -30, bags unchanged; seat 2: 10 + 4, bags 13 -> -100, bags 3
    assert board.scores == (-18, 80, -75) and board.bags == (1, 0, 3)


def test_game_end_at_300_and_shared_wins():
    board = Scoreboard(scores=(295, 280, 100))
    assert not board.is_over()
    after = board.after_hand(bids_=(1, 2, 1), tricks=(1, 2, 4))
    assert after.scores == (305, 300, 113) and after.is_over()
    assert after.win_shares() == (1.0, 0.0, 0.0)
    tie = Scoreboard(scores=(310, 310, 200))
    assert tie.win_shares() == (0.5, 0.5, 0.0)


def test_bidding_rule_known_answers():
    hands = (
        parse_hand("AS KS 2S AH 3H 4C 5C"),
        parse_hand("QS KH 2H 7H 6C 7C 8C"),
        parse_hand("JS QH 5H 6H 9C TC JC"),
    )
    # seat 0, spades ranked AS KS QS JS 2S: AS (k=1) and KS (k=2) are guarded by 3 spades, 2S (k=5)
    # is not -> 2; long trumps 3 - 1 = 2 -> 2. Hearts: AH (k=1) -> 1, capped by the shorter
    # opponent's 3 hearts -> 1. Clubs 4C 5C rank 7th and 8th -> 0. Total 3.
    assert bid(hands, 0) == 3
    # seat 1: QS is 3rd with 1 spade -> 0; KH is 2nd with 3 hearts -> 1 (cap 2); 8C is 4th with
    # 3 clubs -> 0. Total 1.
    assert bid(hands, 1) == 1
    # seat 2: JS 4th of 1 -> 0; QH 3rd with 3 hearts -> 1 (cap 2); JC TC 9C are 1st-3rd with 3
    # clubs -> 3, capped by seat 0's 2 clubs -> 2. Total 3.
    assert bid(hands, 2) == 3
    assert bids(hands) == (3, 1, 3)


def test_bidding_long_trumps_and_the_ruff_cap():
    hands = (
        parse_hand("2S 3S 4S 5S"),
        parse_hand("AS 2C 3C 4C"),
        parse_hand("KS 5C 6C 7C"),
    )
    # seat 0: 5S (3rd) and 4S (4th) guarded by 4 spades -> 2, but 4 spades against at most 1
    # opposing spade -> 3 long trumps.
    assert bid(hands, 0) == 3
    # seat 1: AS -> 1; seat 2: KS unguarded, and its three top clubs are capped at 0 because
    # seat 0 holds no club (it would trump them).
    assert bids(hands) == (3, 1, 1)


def test_bidding_caps_side_suit_winners_by_opponent_length():
    hands = (
        parse_hand("AD KD QD"),
        parse_hand("2D 3C 4C"),
        parse_hand("5C 6C 7C"),
    )
    # three top diamonds, but seat 2 has no diamond (could trump or discard): capped at 0 -> bid 1
    assert bid(hands, 0) == 1


def test_deal_is_seeded_and_disjoint():
    a = deal(np.random.default_rng(5), 7)
    b = deal(np.random.default_rng(5), 7)
    assert a == b
    assert all(h.bit_count() == 7 for h in a)
    assert a[0] & a[1] == 0 and a[0] & a[2] == 0 and a[1] & a[2] == 0
    with pytest.raises(InvalidArgumentError, match="hand_size"):
        deal(np.random.default_rng(5), 18)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), hand_size=st.integers(1, 13), leader=st.integers(0, 2))
def test_random_playouts_tricks_sum_to_hand_size(seed, hand_size, leader):
    rng = np.random.default_rng(seed)
    hands = deal(rng, hand_size)
    pos = SpadesState.start(hands, leader)
    n_moves = 0
    while not pos.is_terminal:
        moves = pos.legal_moves()
        assert moves and all(pos.can_play(m) for m in moves)
        # following suit: if the mover holds the led suit, every legal move is of that suit
        if pos.lead_suit >= 0 and any(
            k // 13 == pos.lead_suit for k in mask_to_cards(pos.hands[pos.turn])
        ):
            assert all(m // 13 == pos.lead_suit for m in moves)
        pos = pos.play(moves[int(rng.integers(len(moves)))])
        n_moves += 1
    assert n_moves == 3 * hand_size
    assert sum(pos.tricks) == hand_size
    # the same bids made or missed always score consistently with the scoreboard
    b = bids(hands)
    board = Scoreboard().after_hand(b, pos.tricks)
    for p in range(3):
        ot = max(0, pos.tricks[p] - b[p]) if pos.tricks[p] >= b[p] else 0
        assert board.bags[p] == ot % 10
        assert board.scores[p] == hand_score(b[p], pos.tricks[p]) - 100 * (ot // 10)
