"""Hand observations: what a seat sees, and the validation of what a client reports."""

from __future__ import annotations

import itertools

import pytest

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.observation import HandObservation, observe_hand, validate_observation


@pytest.mark.parametrize("n", [2, 3, 4])
def test_every_true_observation_is_valid(n: int) -> None:
    game = kuhn_game(n)
    for node in game.terminal_nodes:
        history = game.histories[node]
        for deal in itertools.permutations(range(n + 1), n):
            for position in range(n):
                obs = observe_hand(game, position, history, list(deal))
                validate_observation(game, obs)
                assert obs.cards[position] == deal[position]
                assert all(c is None or c == deal[i] for i, c in enumerate(obs.cards))


@pytest.mark.parametrize(
    ("obs", "field", "error"),
    [
        (HandObservation(3, "ppp", (0, 1, 2)), "position", InvalidArgumentError),
        (HandObservation(-1, "ppp", (0, 1, 2)), "position", InvalidArgumentError),
        (HandObservation(0, "pp", (0, 1, 2)), "history", IllegalActionError),
        (HandObservation(0, "pxp", (0, 1, 2)), "history", IllegalActionError),
        (HandObservation(0, None, (0, 1, 2)), "history", IllegalActionError),
        (HandObservation(0, "ppp", (0, 1)), "cards", InvalidArgumentError),
        (HandObservation(0, "ppp", (0, 1, 2, 3)), "cards", InvalidArgumentError),
        (HandObservation(0, "ppp", (0, 1, 4)), "cards[2]", InvalidArgumentError),
        (HandObservation(0, "ppp", (0, -1, 2)), "cards[1]", InvalidArgumentError),
        (HandObservation(0, "ppp", (0, True, 2)), "cards[1]", InvalidArgumentError),
        (HandObservation(0, "ppp", (0, 1.0, 2)), "cards[1]", InvalidArgumentError),
        (HandObservation(0, "ppp", (1, 1, 2)), "cards[1]", InvalidArgumentError),
        (HandObservation(1, "ppp", (0, None, 2)), "cards[1]", InvalidArgumentError),
        # showdown between 0 and 2; the folded position 1 stays hidden
        (HandObservation(0, "bpb", (0, 1, 2)), "cards[1]", InvalidArgumentError),
        (HandObservation(0, "bpb", (0, None, None)), "cards[2]", InvalidArgumentError),
        # everyone folds to the bettor: nobody's card is shown
        (HandObservation(0, "bpp", (0, 1, None)), "cards[1]", InvalidArgumentError),
        (HandObservation(1, "bpp", (3, 1, None)), "cards[0]", InvalidArgumentError),
    ],
)
def test_malformed_observations_name_the_field(obs, field: str, error) -> None:
    with pytest.raises(error) as err:
        validate_observation(kuhn_game(3), obs)
    assert err.value.field == field


def test_hidden_cards_are_allowed_where_the_rules_hide_them() -> None:
    game = kuhn_game(3)
    validate_observation(game, HandObservation(0, "bpb", (0, None, 2)))
    validate_observation(game, HandObservation(1, "bpp", (None, 1, None)))
    validate_observation(game, HandObservation(1, "pbpp", (None, 1, None)))
