"""The hold'em posterior on information sets numbered as met (modeling/holdem/sets.py's
``LazySets``, what the ACPC 3-player game needs: its tree does not compile) against the same
posterior on the compiled abstract game: on a 3-player hold'em of one raise a round, the same
hands give the same prior, expected counts, means and evidence set by set, through the arrays'
growth and a refit of the tilted prior (sets first met after it get the tilt the compiled game
gave them); the numbering is restored from its bettings; on the real 3-player game its rows are
the bundled blueprint's play."""

from __future__ import annotations

import numpy as np
import pytest
from holdem_support import (
    RecordingAgent,
    as_compiled,
    lazy_twin,
    one_raise_3p,
    seeded_blueprint,
    small_spots,
)

from oppmodel.modeling.games.acpc.bundled import game_path
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.holdem.match import HoldemGame, play_holdem_match
from oppmodel.modeling.holdem.policy import CARD_NAMES, Spot
from oppmodel.modeling.holdem.posterior import AbstractSpots, HoldemPosterior, cards_of
from oppmodel.modeling.holdem.sets import LazySets
from oppmodel.modeling.holdem.styles import bundled_blueprint, holdem_policy
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import LimitObservation

CONFIG = MBBRConfig(eta=4.0)
TOLERANCE = 1e-12  # the same sums in another order (a class's rows sort by their indices)


def _hands(gamedef, names: list[str], hands: int, seed: int) -> list[LimitObservation]:
    """Every seat's observations of a seeded match, hand by hand."""
    game = HoldemGame("holdem", gamedef)
    seats = [
        RecordingAgent(name, holdem_policy(name, game.gamedef), seed + k)
        for k, name in enumerate(names)
    ]
    play_holdem_match(game, seats, game.deal_sequence(hands, seed))
    return [obs for hand in zip(*(s.seen for s in seats), strict=True) for obs in hand]


@pytest.fixture(scope="module")
def spots(tmp_path_factory) -> AbstractSpots:
    return small_spots(one_raise_3p(tmp_path_factory.mktemp("game")))


def _assert_same(compiled: HoldemPosterior, lazy: HoldemPosterior, *, every: bool) -> None:
    """Each table of ``lazy`` on its numbered sets equals ``compiled``'s on the same sets (with
    ``every``: every set of the compiled game is numbered)."""
    game = compiled.spots.game
    for p in range(game.num_players):
        seats = compiled.seats[p]
        pairs = [  # the profile first: it takes the sets numbered since the last hand
            (compiled.models_profile(p), lazy.models_profile(p), range(game.num_players)),
            (compiled.fits[p].alpha0, lazy.fits[p].alpha0, seats),
            (compiled.fits[p].expected, lazy.fits[p].expected, seats),
        ]
        for want, got, positions in pairs:
            mapped = as_compiled(lazy.spots, game, got, positions)
            for k, q in enumerate(positions):
                rows = game.infosets(q)
                met = ~np.isnan(mapped[k, rows, 0])
                assert met.all() if every else met.sum() > 10
                assert np.allclose(mapped[k, rows][met], want[k, rows][met], rtol=0, atol=TOLERANCE)
    assert lazy.log_odds == pytest.approx(compiled.log_odds, rel=TOLERANCE)


def test_lazy_numbering_gives_the_compiled_posterior_through_growth_and_a_refit(spots) -> None:
    blueprint = seeded_blueprint(spots, 0)
    lazy_spots = lazy_twin(spots, blueprint, capacity=16)
    compiled = HoldemPosterior(spots, blueprint, CONFIG)
    lazy = HoldemPosterior(lazy_spots, None, CONFIG)
    hands = _hands(spots.game.gamedef, ["uniform", "maniac", "calling-station"], 12, seed=3)
    for k, obs in enumerate(hands):
        compiled.observe(obs)
        lazy.observe(obs)
        if k == len(hands) // 2:
            compiled.refit()
            lazy.refit()
    assert lazy.capacity > 16 and lazy.sets.size < spots.game.num_infosets * 3 // 2
    _assert_same(compiled, lazy, every=False)
    # numbering every other node now: each gets its situation's tilt of the refit
    tree = spots.game.tree
    for node in np.flatnonzero(tree.node_player >= 0):
        lazy_spots.sets.node(spots.game.bettings[node])
    _assert_same(compiled, lazy, every=True)


def test_a_numbering_is_restored_from_its_bettings(spots) -> None:
    lazy = lazy_twin(spots, seeded_blueprint(spots, 1), capacity=8)
    posterior = HoldemPosterior(lazy, None, CONFIG)
    for obs in _hands(spots.game.gamedef, ["maniac", "uniform", "tight-passive"], 3, seed=5):
        posterior.observe(obs)
    sets = lazy.sets
    assert isinstance(sets, LazySets)
    again = LazySets(sets.gamedef, sets.config, sets.source, sets.bettings)
    assert again.size == sets.size and again.bettings == sets.bettings
    for betting in sets.bettings:
        assert again.node(betting) == sets.node(betting)
    for name in ("legal_mask", "blueprint", "situation"):
        before, after = getattr(sets, name), getattr(again, name)
        axis = 1 if before.ndim == 3 else 0  # (n, capacity, 3) or (capacity,)
        numbered = np.arange(sets.size)
        assert np.array_equal(before.take(numbered, axis), after.take(numbered, axis))


def test_on_the_acpc_3p_game_the_numbered_rows_are_the_bundled_blueprints_play() -> None:
    gamedef = parse_game_def(game_path("holdem3p").read_text(encoding="ascii"))
    blueprint = bundled_blueprint("holdem3p")
    sets = LazySets.of_blueprint(gamedef, blueprint)
    spots = AbstractSpots(None, blueprint.config, blueprint.cards, blueprint.flops, sets=sets)
    posterior = HoldemPosterior(spots, None, MBBRConfig())
    hands = _hands(gamedef, ["cfr", "maniac", "calling-station"], 2, seed=11)
    for obs in hands:
        posterior.observe(obs)
    assert posterior.log_odds > 0 and 0 < sets.size < 20_000  # styles, not the blueprint
    checked = 0
    for obs in hands:  # each seat's own moves: its row is the blueprint's at its real cards
        hole = cards_of(obs.hole[obs.position] or "")
        board = [c for text in obs.board for c in cards_of(text)]
        for before, round_, mover, _ in posterior.spots.moves(obs.betting):
            if mover != obs.position:
                continue
            betting = next(b for b in sets.bettings if sets.node(b)[0] == before)
            dealt = sum(gamedef.num_board_cards[: round_ + 1])
            spot = Spot.of(gamedef, [CARD_NAMES[c] for c in board[:dealt]], betting)
            row = blueprint.probabilities(spot, np.array([hole]))[0]
            index = spots.infosets(betting, tuple(board), np.array([hole]))[0]
            assert np.array_equal(posterior.blueprint[mover, index], row)
            assert np.allclose(posterior.models_profile(obs.position)[mover, index], row)
            checked += 1
    assert checked >= 4
