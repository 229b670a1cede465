"""The load the service benchmarks send (oppmodel.clients.lab.serving): hands a session accepts."""

from __future__ import annotations

from oppmodel.clients.lab.serving import hands_of, limit_hands_of
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.kuhn_openspiel import kuhn_openspiel
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model


def test_kuhn_hands_are_maniacs_in_rotation_and_a_kuhn_session_takes_them() -> None:
    hands = hands_of(300, seed=1)
    assert [hand.position for hand in hands] == [(-h) % 3 for h in range(300)]
    first_bets = sum(hand.history[0] == "b" for hand in hands) / len(hands)
    assert 0.8 < first_bets < 0.97  # a maniac bets 9 times in 10
    model = kuhn_openspiel(3).build_model(MBBRConfig(seed=1))
    for hand in hands:
        model.observe(hand)
    assert model.hands_observed == 300


def test_limit_hands_rotate_and_a_limit_model_takes_them() -> None:
    game = limit_game("leduc2p")
    hands = limit_hands_of("leduc2p", 40, seed=2)
    assert [hand.position for hand in hands] == [(-h) % 2 for h in range(40)]
    model = build_model(game, MBBRConfig(seed=1))
    for hand in hands:
        model.observe(hand)
