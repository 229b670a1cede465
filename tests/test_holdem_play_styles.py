"""Hold'em styles by hand strength (modeling/holdem/strength.py, styles.py): HS against a
brute-force oracle, the classes' shares, and each style's rule where it shows."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from oppmodel.modeling.errors import NotFoundError
from oppmodel.modeling.games.acpc.abstraction import ALL_HOLES
from oppmodel.modeling.games.acpc.gamedef import parse_game_def, read_game_def
from oppmodel.modeling.games.acpc.hand_rank import card_index, hand_strength
from oppmodel.modeling.holdem.policy import Spot, Uniform, check_rows, live_holes
from oppmodel.modeling.holdem.strength import hand_strength_share
from oppmodel.modeling.holdem.styles import Diluted, holdem_policy, strength_class, style_names
from oppmodel.modeling.play.panel import MIDDLE, NUTS, WORST

HOLDEM2P = read_game_def(
    Path(__file__).parent / "data" / "acpc" / "holdem.limit.2p.reverse_blinds.game"
)
HOLDEM3P = read_game_def("holdem3p")
# 3-player hold'em with a fourth raise preflop: hold'em rules no bundled blueprint was solved in
DEEP3P = parse_game_def(HOLDEM3P.to_text().replace("maxRaises = 3 4 4 4", "maxRaises = 4 4 4 4"))
DECK = [r + s for r in "23456789TJQKA" for s in "cdhs"]


def cards(text: str) -> list[int]:
    return [card_index(text[i : i + 2]) for i in range(0, len(text), 2)]


def oracle_hs(hole: list[str], board: list[str]) -> float:
    """The share of the opponent's two-card hands ``hole`` beats on ``board``, by the evaluator
    one hand at a time."""
    ours = hand_strength(hole + board)
    rest = [c for c in DECK if c not in hole + board]
    scores = []
    for other in itertools.combinations(rest, 2):
        theirs = hand_strength([*other, *board])
        scores.append(1.0 if ours > theirs else 0.5 if ours == theirs else 0.0)
    return float(np.mean(scores))


@pytest.mark.parametrize(
    ("hole", "board"),
    [("AsAh", "Kd7c2h"), ("7d2c", "Kd7c2h9s"), ("QhJh", "Th9h2c3d4s"), ("5c4d", "AsKsQsJsTs")],
)
def test_hs_on_a_board_is_the_share_of_hands_beaten(hole, board):
    got = hand_strength_share(np.array([cards(hole)]), cards(board))[0]
    assert got == pytest.approx(
        oracle_hs([hole[:2], hole[2:]], [board[i : i + 2] for i in range(0, len(board), 2)]),
        abs=1e-12,
    )


def test_preflop_hs_orders_hands_by_their_preflop_strength():
    hs = hand_strength_share(ALL_HOLES, [])
    by = {tuple(h): s for h, s in zip(ALL_HOLES.tolist(), hs, strict=True)}
    aces = by[tuple(sorted(cards("AsAh")))]
    seven_two = by[tuple(sorted(cards("7d2c")))]
    assert aces > 0.99 and seven_two < 0.1  # 72o: near the bottom (32o, 42o below it)
    assert by[tuple(sorted(cards("AsKs")))] > by[tuple(sorted(cards("AsKd")))]  # suited: more
    # suit names do not matter
    assert by[tuple(sorted(cards("KhQh")))] == by[tuple(sorted(cards("KcQc")))]
    # HS is spread over [0, 1]: about a quarter of the hands are the styles' nuts
    assert 0.2 < np.mean(strength_class(hs) == NUTS) < 0.3


def test_classes_are_bands_of_hs_on_every_street():
    rng = np.random.default_rng(5)
    for size in (3, 4, 5):
        board = rng.choice(52, size, replace=False).tolist()
        classes = strength_class(hand_strength_share(live_holes(board), board))
        assert 0.15 < np.mean(classes == NUTS) < 0.35
        assert 0.2 < np.mean(classes == WORST) < 0.4
        assert np.mean(classes == MIDDLE) > 0.3


def test_each_style_plays_its_rule():
    facing = Spot.of(HOLDEM2P, [], "")  # the small blind faces the big blind
    checked_to = Spot.of(HOLDEM2P, ["Kd", "7c", "2h"], "rc/")  # nothing to call on the flop
    capped = Spot.of(HOLDEM2P, [], "rrr")  # no raise left
    strong, weak = cards("AsAh"), cards("7d2c")  # on this flop: an overpair, bottom two pair
    flop_weak = cards("4s3s")
    holes = np.array([strong, weak])

    def rows(name, spot, hands=holes):
        return check_rows(spot, holdem_policy(name, HOLDEM2P).probabilities(spot, hands))

    assert rows("always-raise", facing).tolist() == [[0, 0, 1]] * 2
    assert rows("always-bet", capped).tolist() == [[0, 1, 0]] * 2
    assert rows("always-call", facing).tolist() == [[0, 1, 0]] * 2
    assert rows("calling-station", checked_to).tolist() == [[0, 1, 0]] * 2
    assert rows("tight-passive", facing).tolist() == [[0, 1, 0], [1, 0, 0]]
    assert rows("tight-passive", checked_to).tolist() == [[0, 1, 0]] * 2
    np.testing.assert_allclose(rows("maniac", facing), [[0.1, 0, 0.9]] * 2)
    np.testing.assert_allclose(rows("maniac", checked_to), [[0, 0.1, 0.9]] * 2)
    flop = np.array([strong, flop_weak])
    np.testing.assert_allclose(rows("bluffer", checked_to, flop), [[0, 0, 1], [0, 0.25, 0.75]])
    np.testing.assert_allclose(rows("bluffer:0.5", checked_to, flop), [[0, 0, 1], [0, 0.5, 0.5]])
    assert rows("bluffer", facing).tolist() == [[0, 0, 1], [1, 0, 0]]


def test_a_diluted_style_mixes_its_rows_with_the_base():
    spot = Spot.of(HOLDEM2P, [], "")
    holes = live_holes([])[:20]
    maniac = holdem_policy("maniac", HOLDEM2P)
    mixed = Diluted("maniac@0.3", maniac, Uniform(), 0.3)
    expected = 0.3 * maniac.probabilities(spot, holes) + 0.7 / 3
    np.testing.assert_allclose(check_rows(spot, mixed.probabilities(spot, holes)), expected)


def test_unknown_names_list_the_known_ones():
    with pytest.raises(NotFoundError, match="known: " + ", ".join(style_names())):
        holdem_policy("shark", HOLDEM2P)
    with pytest.raises(NotFoundError, match=r"no hold'em blueprint for .* yet: STYLE@S and cfr"):
        holdem_policy("cfr", DEEP3P)
    with pytest.raises(NotFoundError, match="no hold'em blueprint"):
        holdem_policy("maniac@0.35", DEEP3P)
    with pytest.raises(NotFoundError, match=r"\[0, 1\]"):
        holdem_policy("bluffer:2", HOLDEM2P)


def test_cfr_in_two_player_holdem_is_the_bundled_blueprint():
    """The bundled blueprint plays every hand of a range at any spot with a distribution over
    the legal actions; before the flop it raises aces and folds seven-deuce to a raise."""
    cfr = holdem_policy("cfr", HOLDEM2P)
    assert cfr.name == "cfr" and holdem_policy("maniac@0.35", HOLDEM2P).base is cfr
    board = cards("Ks7s2dTh4c")
    for betting, shown in [("", 0), ("r", 0), ("rc/", 3), ("rc/cr", 3), ("rc/cc/r", 4)]:
        spot = Spot.of(HOLDEM2P, [DECK[c] for c in board[:shown]], betting)
        check_rows(spot, cfr.probabilities(spot, live_holes(spot.board)))
    opening, raised = Spot.of(HOLDEM2P, [], ""), Spot.of(HOLDEM2P, [], "r")
    aces, seven_deuce = np.array([cards("AhAs")]), np.array([cards("7c2d")])
    assert cfr.probabilities(opening, aces)[0, 2] > 0.5
    assert cfr.probabilities(raised, seven_deuce)[0, 0] > 0.5


def test_cfr_in_three_player_holdem_is_the_bundled_blueprint():
    """The bundled 3-player blueprint (the visited sets it lists, the rest calling) answers a
    distribution over the legal actions for every hand at any spot; before the flop the first to
    act raises aces and folds seven-deuce, and seven-deuce folds to a raise."""
    cfr = holdem_policy("cfr", HOLDEM3P)
    assert cfr.name == "cfr" and cfr.unvisited == "call"
    assert holdem_policy("maniac@0.35", HOLDEM3P).base is cfr
    board = cards("Ks7s2dTh4c")
    for betting, shown in [("", 0), ("rc", 0), ("rcc/", 3), ("rcc/cr", 3), ("ccc/c", 3)]:
        spot = Spot.of(HOLDEM3P, [DECK[c] for c in board[:shown]], betting)
        check_rows(spot, cfr.probabilities(spot, live_holes(spot.board)))
    spot = Spot.of(HOLDEM3P, [DECK[c] for c in board], "rcc/ccc/ccc/rrrr")  # capped: rarely met
    check_rows(spot, cfr.probabilities(spot, live_holes(spot.board)))
    opening, raised = Spot.of(HOLDEM3P, [], ""), Spot.of(HOLDEM3P, [], "r")
    aces, seven_deuce = np.array([cards("AhAs")]), np.array([cards("7c2d")])
    assert cfr.probabilities(opening, aces)[0, 2] > 0.5
    assert cfr.probabilities(opening, seven_deuce)[0, 0] > 0.5
    assert cfr.probabilities(raised, seven_deuce)[0, 0] > 0.5
