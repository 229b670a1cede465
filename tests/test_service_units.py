"""Units of the server that tests through the client cannot pin down exactly."""

from __future__ import annotations

import functools
from fractions import Fraction

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st
from service_support import GAME, random_observations

from oppmodel.clients.client import observation_message
from oppmodel.modeling import errors
from oppmodel.modeling.games import kuhn_openspiel as presentation
from oppmodel.server import conversion
from oppmodel.server.action_draw import draw_action, uniform_draw
from oppmodel.server.errors import STATUS_BY_ERROR, error_details, status_of
from oppmodel.v1 import opponent_model_pb2 as pb

KUHN = presentation.kuhn_openspiel(3)  # GAME in OpenSpiel's conventions, as the service reads it


def test_uniform_draw_is_a_fixed_function_in_unit_interval() -> None:
    values = [uniform_draw(7, h, 1, 3, d) for h in range(50) for d in range(40)]
    assert values == [uniform_draw(7, h, 1, 3, d) for h in range(50) for d in range(40)]
    assert all(0.0 <= v < 1.0 for v in values)
    assert len(set(values)) == len(values)
    # Roughly uniform: each tenth of [0, 1) gets 10% +- 2.5% of 2000 draws (about 5 sigma).
    counts = [sum(int(v * 10) == b for v in values) for b in range(10)]
    assert all(150 <= c <= 250 for c in counts), counts


@given(
    weights=st.lists(st.integers(0, 8), min_size=2, max_size=4).filter(lambda w: sum(w) > 0),
)
def test_draw_action_inverts_the_cumulative_distribution(weights) -> None:
    total = sum(weights)
    probabilities = tuple(w / total for w in weights)
    grid = 120 * total  # each interval [a/total, b/total) holds exactly 120 (b - a) midpoints
    counts = [0] * len(weights)
    for j in range(grid):
        action = draw_action(probabilities, (j + 0.5) / grid)
        assert probabilities[action] > 0
        counts[action] += 1
    assert [Fraction(c, grid) for c in counts] == [Fraction(w, total) for w in weights]


def test_every_domain_error_has_one_code() -> None:
    domain = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, Exception)]
    for cls in domain:
        if cls is errors.OppModelError:
            continue
        assert cls in STATUS_BY_ERROR, cls
    assert status_of(errors.UnauthenticatedError("x")) is grpc.StatusCode.UNAUTHENTICATED
    assert status_of(errors.IllegalActionError("h", "m")) is grpc.StatusCode.INVALID_ARGUMENT


def test_unexpected_errors_are_internal_and_generic(caplog: pytest.LogCaptureFixture) -> None:
    code, message, metadata = error_details(ZeroDivisionError("secret detail"))
    assert code is grpc.StatusCode.INTERNAL
    assert "secret" not in message and metadata == ()
    assert "ZeroDivisionError" in caplog.text
    code, message, metadata = error_details(errors.InvalidArgumentError("k", "too big"))
    assert (code, message) == (grpc.StatusCode.INVALID_ARGUMENT, "k: too big")
    assert dict(metadata) == {"oppmodel-error": "InvalidArgumentError", "oppmodel-field": "k"}


def _outcome(call):
    try:
        return call()
    except errors.InvalidArgumentError as exc:
        return type(exc), str(exc)


@given(
    position=st.integers(-1, 3),
    our_card=st.none() | st.integers(-1, 4),
    betting=st.none() | st.tuples(st.sampled_from(["history", "acpc_betting"]), st.text("pbcrfx")),
    revealed=st.lists(st.tuples(st.integers(-1, 3), st.integers(-1, 4)), max_size=3),
)
def test_observations_read_through_the_cache_are_those_read_without_it(
    position, our_card, betting, revealed
) -> None:
    """Kuhn observations are validated once per distinct hand: a cached read (the first or any
    later one) gives the observation or the error that reading it afresh gives."""
    message = pb.Observation(sequence=7, position=position, our_card=our_card)
    if betting is not None:
        setattr(message, *betting)
    for seat, card in revealed:
        message.revealed.add(position=seat, card=card)
    game = presentation.kuhn_openspiel(3)
    uncached = functools.partial(
        presentation._field_hand.__wrapped__,
        game,
        position,
        our_card,
        None if betting is None else betting[0],
        "" if betting is None else betting[1],
        tuple(revealed),
    )
    expected = _outcome(uncached)
    if not isinstance(expected, tuple):
        expected = (7, expected)
    for _ in range(2):
        assert _outcome(lambda: conversion.observation_from_proto(game, message)) == expected


def test_valid_observations_read_through_the_cache_are_the_hands_sent() -> None:
    hands = random_observations(200, seed=5)
    for sequence, hand in enumerate([*hands, *hands], start=1):  # the second round: all cached
        message = observation_message(sequence, hand)
        assert conversion.observation_from_proto(KUHN, message) == (sequence, hand)


@given(
    position=st.integers(-1, 3),
    card=st.integers(-1, 4),
    betting=st.none() | st.tuples(st.sampled_from(["history", "acpc_betting"]), st.text("pbcrx")),
)
def test_information_states_read_through_the_cache_are_those_read_without_it(
    position, card, betting
) -> None:
    state = pb.InfoState(position=position, card=card)
    if betting is not None:
        setattr(state, *betting)
    request = pb.GetActionRequest(session_id="s", info_state=state)
    which, text = betting if betting is not None else (None, "")
    uncached = functools.partial(
        presentation._field_decision.__wrapped__, KUHN, position, card, which, text
    )
    expected = _outcome(uncached)
    for _ in range(2):
        assert _outcome(lambda: conversion.info_state_from_proto(KUHN, request)) == expected


def test_every_decision_reads_as_its_information_set_twice() -> None:
    for position in range(GAME.num_players):
        for index in GAME.infosets(position):
            infostring = GAME.infoset_string(position, index)  # card digit, then the history
            card, history = int(infostring[0]), infostring[1:]
            state = pb.InfoState(position=position, card=card, history=history)
            request = pb.GetActionRequest(session_id="s", info_state=state)
            for _ in range(2):
                got = conversion.info_state_from_proto(KUHN, request)
                assert got == (position, index, history)
