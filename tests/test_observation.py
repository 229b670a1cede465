"""Hand observations: what a seat sees, and the validation of what a client reports."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.observation import (
    HandObservation,
    LimitObservation,
    observe_hand,
    observe_limit_cards,
    observe_limit_hand,
    validate_limit_observation,
    validate_observation,
)


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


# --- limit games: LimitObservation ------------------------------------------------------------


def _limit_truth(game, deal: int, terminal: int, position: int):
    """The observation by way of the betting rules' own replay (``HandState.visible_hole``)."""
    node = int(np.flatnonzero(game.tree.node_terminal == terminal)[0])
    hand = HandState.from_betting(game.gamedef, game.bettings[node])
    row, n = game.deal_cards[deal], game.num_players
    hole = [game.deck[c] for c in row[:n]]  # one hole card in every bundled game
    shown = hand.visible_hole(hole, position)
    board = [""] + [game.deck[c] for c in row[n:]]
    return (
        game.bettings[node],
        tuple(text or None for text in shown),
        tuple(board[: hand.round + 1]),
    )


@pytest.mark.parametrize("name", ["kuhn3p", "leduc2p"])
def test_every_limit_observation_is_what_the_dealer_shows(name: str) -> None:
    game = limit_game(name)
    for terminal in range(game.num_terminals):
        for deal in range(game.num_deals):
            for position in range(game.num_players):
                obs = observe_limit_hand(game, position, deal, terminal)
                validate_limit_observation(game, obs)
                assert (obs.betting, obs.hole, obs.board) == _limit_truth(
                    game, deal, terminal, position
                )


def test_leduc3p_observations_on_random_hands() -> None:
    game = limit_game("leduc3p")
    rng = np.random.default_rng(5)
    for _ in range(3000):
        deal, terminal = int(rng.integers(game.num_deals)), int(rng.integers(game.num_terminals))
        position = int(rng.integers(3))
        obs = observe_limit_hand(game, position, deal, terminal)
        validate_limit_observation(game, obs)
        assert (obs.betting, obs.hole, obs.board) == _limit_truth(game, deal, terminal, position)


def test_compiled_kuhn_hides_what_kuhn_hides() -> None:
    """Kuhn compiled from its game file and ``KuhnGame`` agree on every hidden card."""
    kuhn, compiled = kuhn_game(3), limit_game("kuhn3p")
    for terminal in range(compiled.num_terminals):
        for deal, cards in enumerate(compiled.deal_cards.tolist()):
            for position in range(3):
                obs = observe_limit_hand(compiled, position, deal, terminal)
                history = kuhn.acpc_to_history(obs.betting)
                visible = kuhn.visible_cards(history, cards, position)
                assert [c is None for c in visible] == [c is None for c in obs.hole]


LEDUC3P_FOLDS = "rff"  # position 0 raises, both others fold: nothing is shown
LEDUC3P_SHOWDOWN = "rfc/cc"  # position 1 folds; 0 and 2 show down after a checked round 1


@pytest.mark.parametrize(
    ("obs", "field", "error"),
    [
        (LimitObservation(3, LEDUC3P_FOLDS, ("Ks", None, None), ("",)), "position", None),
        (LimitObservation(0, "rf", ("Ks", None, None), ("",)), "betting", IllegalActionError),
        (LimitObservation(0, "rxf", ("Ks", None, None), ("",)), "betting", IllegalActionError),
        (LimitObservation(0, None, ("Ks", None, None), ("",)), "betting", IllegalActionError),
        (LimitObservation(0, LEDUC3P_FOLDS, ("Ks", None), ("",)), "hole", None),
        (LimitObservation(0, LEDUC3P_FOLDS, ["Ks", None, None], ("",)), "hole", None),
        (LimitObservation(0, LEDUC3P_FOLDS, ("Ks", None, None), ()), "board", None),
        (LimitObservation(0, LEDUC3P_FOLDS, ("Ks", None, None), ("", "Qs")), "board", None),
        (LimitObservation(0, LEDUC3P_FOLDS, ("Ts", None, None), ("",)), "hole[0]", None),
        (LimitObservation(0, LEDUC3P_FOLDS, ("Kd", None, None), ("",)), "hole[0]", None),
        (LimitObservation(0, LEDUC3P_FOLDS, ("KsQs", None, None), ("",)), "hole[0]", None),
        (LimitObservation(0, LEDUC3P_FOLDS, (7, None, None), ("",)), "hole[0]", None),
        (LimitObservation(0, LEDUC3P_FOLDS, (None, None, None), ("",)), "hole[0]", None),
        (LimitObservation(0, LEDUC3P_FOLDS, ("Ks", "Qs", None), ("",)), "hole[1]", None),
        (LimitObservation(0, LEDUC3P_FOLDS, ("Ks", None, None), ("Qs",)), "board[0]", None),
        (LimitObservation(0, LEDUC3P_SHOWDOWN, ("Ks", None, "Qs"), ("", "Ks")), "board[1]", None),
        (LimitObservation(0, LEDUC3P_SHOWDOWN, ("Ks", None, "Qs"), ("", "")), "board[1]", None),
        (LimitObservation(0, LEDUC3P_SHOWDOWN, ("Ks", "Jh", "Qs"), ("", "Ah")), "hole[1]", None),
        (LimitObservation(0, LEDUC3P_SHOWDOWN, ("Ks", None, None), ("", "Ah")), "hole[2]", None),
        (LimitObservation(1, LEDUC3P_SHOWDOWN, (None, "Jh", "Qs"), ("", "Ah")), "hole[0]", None),
    ],
)
def test_malformed_limit_observations_name_the_field(obs, field: str, error) -> None:
    with pytest.raises(error or InvalidArgumentError) as err:
        validate_limit_observation(limit_game("leduc3p"), obs)
    assert err.value.field == field


def test_limit_observations_hidden_where_the_rules_hide_them() -> None:
    game = limit_game("leduc3p")
    validate_limit_observation(game, LimitObservation(1, LEDUC3P_FOLDS, (None, "Js", None), ("",)))
    validate_limit_observation(
        game, LimitObservation(1, LEDUC3P_SHOWDOWN, ("Ks", "Jh", "Qs"), ("", "Ah"))
    )


@pytest.mark.parametrize(
    ("args", "field"), [((3, 0, 0), "position"), ((0, 1680, 0), "deal"), ((0, 0, -1), "terminal")]
)
def test_observe_limit_hand_refuses_bad_indices(args, field: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        observe_limit_hand(limit_game("leduc3p"), *args)
    assert err.value.field == field


@pytest.mark.parametrize("name", ["leduc2p", "leduc3p"])
def test_a_hand_with_every_card_known_is_observed_as_the_dealer_shows_it(name: str) -> None:
    """``observe_limit_cards`` (a log's hands) hides what ``observe_limit_hand`` hides."""
    game = limit_game(name)
    n, rounds = game.num_players, game.num_rounds
    rng = np.random.default_rng(8)
    for _ in range(500):
        deal, terminal = int(rng.integers(game.num_deals)), int(rng.integers(game.num_terminals))
        position = int(rng.integers(n))
        cards = [game.deck[c] for c in game.deal_cards[deal]]
        hole, board = tuple(cards[:n]), ("", *cards[n:])
        node = int(np.flatnonzero(game.tree.node_terminal == terminal)[0])
        obs = observe_limit_cards(game, position, game.bettings[node], hole, board[:rounds])
        assert obs == observe_limit_hand(game, position, deal, terminal)
    with pytest.raises(IllegalActionError, match="betting"):
        observe_limit_cards(game, 0, "r", hole, board)  # not a finished hand


def test_a_limit_observations_kept_hash_is_its_fields_and_stays_out_of_its_pickle() -> None:
    """The hash is computed once and kept on the object; it is the fields' (equal observations
    hash alike), and a pickle carries the fields only (a string's hash differs by process)."""
    obs = LimitObservation(1, "rcc", ("Ks", None, None), ("",))
    fields = (1, "rcc", ("Ks", None, None), ("",))
    assert hash(obs) == hash(obs) == hash(fields)
    copy = pickle.loads(pickle.dumps(obs))
    assert copy == obs and "_hash" not in vars(copy) and hash(copy) == hash(fields)
    assert {obs: 1}[LimitObservation(*fields)] == 1
    with pytest.raises(TypeError):  # an unhashable field still refuses, as the dataclass did
        hash(LimitObservation(1, "rcc", ["Ks", None, None], ("",)))  # type: ignore[arg-type]
