"""The local best response (modeling/holdem/lbr.py): in Leduc, where the exact best response is
known, LBR's exact value is at most the best response's and equals it against a policy that only
checks and calls (LBR's assumption); its sampled estimate agrees with its exact value; in
hold'em it runs, seeded, in mbb/hand."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.limit import best_response
from oppmodel.modeling.games.acpc._hand_rank_kernels import CARD_BITS
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.hand_rank import card_index, hand_strength
from oppmodel.modeling.holdem import _lbr_kernels
from oppmodel.modeling.holdem.lbr import exact_lbr_value, local_best_response
from oppmodel.modeling.holdem.policy import CARD_NAMES, ProfilePolicy
from oppmodel.modeling.holdem.styles import holdem_policy
from oppmodel.modeling.play.panel import named_profile

DATA = Path(__file__).parent / "data" / "acpc"
LEDUC = limit_game("leduc2p")


def exact_values(name: str) -> tuple[float, float]:
    """(LBR's exact value, the best response's), chips per hand over both positions."""
    profile = named_profile(LEDUC, name)
    br = (best_response(LEDUC, profile, 0)[1] + best_response(LEDUC, profile, 1)[1]) / 2
    return exact_lbr_value(LEDUC.gamedef, ProfilePolicy(name, LEDUC, profile)), br


def test_against_a_calling_station_lbr_is_the_best_response():
    lbr, br = exact_values("calling-station")
    assert lbr == pytest.approx(br, rel=1e-12) and br > 1.0


@pytest.mark.parametrize("name", ["uniform", "tight-passive", "cfr"])
def test_lbr_is_a_lower_bound_on_the_best_response(name):
    lbr, br = exact_values(name)
    assert lbr <= br + 1e-12
    if name != "cfr":  # an exploitable policy: LBR finds most of it, not all
        assert 0.6 * br < lbr < br


def test_the_sampled_estimate_agrees_with_the_exact_value():
    profile = named_profile(LEDUC, "uniform")
    policy = ProfilePolicy("uniform", LEDUC, profile)
    exact = LEDUC.rate_unit.rate(exact_lbr_value(LEDUC.gamedef, policy))
    sampled = local_best_response(LEDUC.gamedef, policy, deals=200, seed=4)
    assert sampled.unit.label == "mA/h" and sampled.deals == 200
    assert abs(sampled.rate - exact) < 4 * sampled.standard_error


def test_win_probability_against_a_range_is_the_weighted_share_of_showdowns_won():
    own, board = ["Ah", "Kh"], ["Qh", "7c", "2d", "9s"]
    rng = np.random.default_rng(2)
    rest = [c for c in CARD_NAMES if c not in own + board]
    holes = [list(h) for h in itertools.combinations(rest, 2)]
    weights = rng.random(len(holes)) * (rng.random(len(holes)) < 0.3)
    won = total = 0.0
    for hole, w in zip(holes, weights, strict=True):
        for river in rest:
            if river in hole or w == 0:
                continue
            ours, theirs = (
                hand_strength([*own, *board, river]),
                hand_strength([*hole, *board, river]),
            )
            won += w * (1.0 if ours > theirs else 0.5 if ours == theirs else 0.0)
            total += w

    def bits(cards):
        return np.int64(np.bitwise_or.reduce(CARD_BITS[[card_index(c) for c in cards]]))

    hole_bits = np.array([bits(h) for h in holes])
    free = CARD_BITS[[card_index(c) for c in rest]]
    got = _lbr_kernels.win_probability(bits(own), bits(board), hole_bits, weights, free, 1, 0, 0)
    assert got == pytest.approx(won / total, abs=1e-12)


def test_holdem_lbr_is_seeded_and_in_mbb_per_hand():
    game = read_game_def(DATA / "holdem.limit.2p.reverse_blinds.game")
    first = local_best_response(game, holdem_policy("always-call", game), deals=4, seed=7)
    assert first == local_best_response(game, holdem_policy("always-call", game), deals=4, seed=7)
    assert first != local_best_response(game, holdem_policy("always-call", game), deals=4, seed=8)
    assert first.unit.label == "mbb/h" and first.standard_error > 0
    three = read_game_def(DATA / "holdem.limit.3p.game")
    with pytest.raises(InvalidArgumentError, match="game: local best response needs 2 players"):
        local_best_response(three, holdem_policy("uniform", three), deals=4, seed=7)
    with pytest.raises(InvalidArgumentError, match="deals: need at least 2"):
        local_best_response(game, holdem_policy("uniform", game), deals=1, seed=7)
