"""The hold'em policy interface (modeling/holdem/policy.py): spots replay the real rules, ranges
hold every live two-card hand, the simplest policies answer distributions over the legal actions."""

from __future__ import annotations

from math import comb
from pathlib import Path

import numpy as np
import pytest

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.abstraction import ALL_HOLES
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.hand_rank import card_index
from oppmodel.modeling.holdem.policy import (
    AlwaysCall,
    HoldemPolicy,
    Spot,
    Uniform,
    action_row,
    check_rows,
    live_holes,
)
from oppmodel.modeling.holdem.strength import hole_rows

DATA = Path(__file__).parent / "data" / "acpc"
HOLDEM2P = read_game_def(DATA / "holdem.limit.2p.reverse_blinds.game")
HOLDEM3P = read_game_def(DATA / "holdem.limit.3p.game")


def test_spot_replays_the_betting_and_its_legal_actions():
    # reverse blinds: position 1 (the small blind) opens preflop, may fold, call or raise
    opening = Spot.of(HOLDEM2P, [], "")
    assert opening.position == 1 and opening.round == 0 and opening.facing_bet()
    assert opening.legal().tolist() == [True, True, True]
    # preflop capped at 3 raises: after rrr the big blind may only fold or call
    capped = Spot.of(HOLDEM2P, [], "rrr")
    assert capped.position == 0 and capped.legal().tolist() == [True, True, False]
    # the flop opens with position 0, nothing to call: no fold
    flop = Spot.of(HOLDEM2P, ["As", "Kd", "2c"], "rc/")
    assert flop.position == 0 and flop.round == 1 and not flop.facing_bet()
    assert flop.legal().tolist() == [False, True, True]
    assert flop.board == (card_index("As"), card_index("Kd"), card_index("2c"))
    # three players: the button (position 2) opens preflop
    assert Spot.of(HOLDEM3P, [], "").position == 2


def test_spot_refuses_bad_betting():
    with pytest.raises(IllegalActionError, match=r"betting\[1\]"):
        Spot.of(HOLDEM2P, [], "cx")
    with pytest.raises(InvalidArgumentError, match="betting: 'f': the hand is over"):
        Spot.of(HOLDEM2P, [], "f")


def test_live_holes_are_every_two_card_hand_without_the_dead_cards():
    assert ALL_HOLES.shape == (comb(52, 2), 2)
    assert len({tuple(h) for h in ALL_HOLES.tolist()}) == comb(52, 2)
    dead = [card_index(c) for c in ("As", "Kd", "2c", "7h", "7s")]
    live = live_holes(dead)
    assert live.shape == (comb(47, 2), 2)
    assert not np.isin(live, dead).any()
    rng = np.random.default_rng(7)  # the hands kept are those of a plain filter, in its order
    for size in range(9):
        dead = rng.choice(52, size, replace=False).tolist()
        kept = [h for h in ALL_HOLES.tolist() if not set(h) & set(dead)]
        assert live_holes(dead).tolist() == kept
    with pytest.raises(InvalidArgumentError, match="dead: card 52"):
        live_holes([3, 52])


@pytest.mark.parametrize("betting", ["", "rrr", "rc/", "rc/r"])
def test_always_call_and_uniform_answer_distributions_over_the_legal_actions(betting):
    board = ["As", "Kd", "2c"] if "/" in betting else []
    spot = Spot.of(HOLDEM2P, board, betting)
    holes = live_holes(spot.board)[:50]
    legal = spot.legal()
    for policy in (AlwaysCall(), Uniform()):
        assert isinstance(policy, HoldemPolicy)
        rows = check_rows(spot, policy.probabilities(spot, holes))
        assert rows.shape == (50, 3)
    assert action_row(AlwaysCall(), spot, holes[0]).tolist() == [0.0, 1.0, 0.0]
    np.testing.assert_allclose(action_row(Uniform(), spot, holes[0]), legal / legal.sum())


def test_check_rows_names_the_first_bad_row():
    spot = Spot.of(HOLDEM2P, ["As", "Kd", "2c"], "rc/")  # no fold here
    with pytest.raises(InvalidArgumentError, match=r"probabilities: row 1 \[1.0, 0.0, 0.0\]"):
        check_rows(spot, np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))


def test_hole_rows_finds_each_pair_in_either_order_and_names_the_first_bad_row() -> None:
    shuffled = np.random.default_rng(2).permutation(len(ALL_HOLES))
    pairs = ALL_HOLES[shuffled].copy()
    pairs[::2] = pairs[::2, ::-1]  # every other pair high card first
    assert np.array_equal(hole_rows(pairs), shuffled)
    for bad in ([5, 5], [-1, 4], [52, 0], [0, 53]):
        with pytest.raises(InvalidArgumentError, match=rf"row 1 \{bad}") as caught:
            hole_rows(np.array([[0, 1], bad]))
        assert caught.value.field == "holes"
