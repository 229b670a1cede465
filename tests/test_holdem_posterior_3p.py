"""The hold'em opponent posterior in 3 players (modeling/holdem/posterior.py): a hand's update
against an exact enumeration of both opponents' hole pairs together (two pairs that share no
card, each bucketed one hand at a time by the card abstraction), with both hidden and with one
shown; on a 3-player hold'em of one raise a round, whose abstract game compiles, with its sets
numbered by the compiled game and as met (the ACPC 3-player game's way)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from holdem_support import (
    as_compiled,
    betting_moves,
    lazy_twin,
    one_raise_3p,
    seeded_blueprint,
    small_spots,
)

from oppmodel.modeling.games.acpc.abstraction import BOARD_SIZES
from oppmodel.modeling.holdem import posterior as holdem_posterior
from oppmodel.modeling.holdem.policy import CARD_NAMES
from oppmodel.modeling.holdem.posterior import AbstractSpots, HoldemPosterior, cards_of
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import LimitObservation, validate_limit_observation

# ~10^6 joint assignments summed in another order (merged rows) than the enumeration's
TOLERANCE = 1e-10
# seen from position 0 holding AsKd: both opponents fold to our turn raise (both hidden)
BOTH_FOLD = LimitObservation(0, "ccc/crcc/rff", ("AsKd", None, None), ("", "2c7h9s", "Td"))
# position 1 folds on the river, position 2 shows 8d8c at the showdown
ONE_SHOWN = LimitObservation(
    0, "rcc/ccc/ccc/rfc", ("QhQs", None, "8d8c"), ("", "3d4d5d", "Tc", "Jh")
)


@pytest.fixture(scope="module")
def spots(tmp_path_factory) -> AbstractSpots:
    return small_spots(one_raise_3p(tmp_path_factory.mktemp("game")))


def _moves(spots: AbstractSpots, obs: LimitObservation, q: int, hole: str) -> list[tuple[int, int]]:
    """Position ``q``'s (information set, action) in ``obs`` holding ``hole``: each round's
    bucket from ``CardAbstraction.bucket`` on that hand alone, the set from its string."""
    game = spots.game
    boards = [CARD_NAMES[c] for text in obs.board for c in cards_of(text)]
    out = []
    for before, r, mover, a in betting_moves(game.gamedef, obs.betting):
        if mover == q:
            bucket = spots.cards.bucket([hole[:2], hole[2:]], boards[: BOARD_SIZES[r]])
            out.append((game.infoset_from_string(q, f"{bucket}:{before}"), a))
    return out


def _enumerated(
    spots: AbstractSpots, obs: LimitObservation, alpha: np.ndarray, *, apart: bool = True
) -> np.ndarray:
    """(2, num_infosets, 3) the expected counts a hand adds for the opponents at offsets 1 and 2,
    by enumeration: every two hole pairs they may hold together (no card of ours, of the board
    or, with ``apart``, of each other; a shown pair is the one shown), weighed by the product of
    the Dirichlet means (``alpha``, by offset) of all their moves, normalised."""
    dead = {c for text in obs.board for c in cards_of(text)}
    dead |= {c for text in obs.hole if text is not None for c in cards_of(text)}
    mean = alpha / alpha.sum(axis=2, keepdims=True)
    free = [c for c in range(52) if c not in dead]
    ranges, weights, paths = [], [], []
    for d in (1, 2):
        q = (obs.position + d) % 3
        text = obs.hole[q]
        holes = [cards_of(text)] if text else [list(h) for h in itertools.combinations(free, 2)]
        moves = [_moves(spots, obs, q, "".join(CARD_NAMES[c] for c in h)) for h in holes]
        ranges.append(holes)
        paths.append(moves)
        weights.append([np.prod([mean[d - 1, i, x] for i, x in m]) for m in moves])
    first, second = (np.array(r) for r in ranges)
    # every pair of hole pairs, 0 where they share a card: compared card by card, not counted
    disjoint = ~(first[:, None, :, None] == second[None, :, None, :]).any(axis=(2, 3))
    joint = np.outer(weights[0], weights[1]) * (disjoint if apart else 1)
    out = np.zeros_like(alpha)
    for d, share in ((0, joint.sum(axis=1)), (1, joint.sum(axis=0))):
        for path, w in zip(paths[d], share, strict=True):
            for i, x in path:
                out[d, i, x] += w
    return out / joint.sum()


def test_the_observations_are_valid_hands(spots) -> None:
    for obs in (BOTH_FOLD, ONE_SHOWN):
        validate_limit_observation(spots.game, obs)


def test_two_hands_update_as_the_enumeration_of_both_opponents_hole_pairs(spots) -> None:
    blueprint = seeded_blueprint(spots, 0)
    posterior = HoldemPosterior(spots, blueprint, MBBRConfig(eta=4.0))
    # the same posterior on the sets numbered as hands meet them (modeling/holdem/sets.py)
    lazy = HoldemPosterior(lazy_twin(spots, blueprint, 64), None, MBBRConfig(eta=4.0))
    fit = posterior.fits[0]
    alpha0 = fit.alpha0.copy()
    lazy.observe(BOTH_FOLD)
    lazy_first = as_compiled(lazy.spots, spots.game, lazy.fits[0].expected, [1, 2])
    [evidence] = posterior.observe(BOTH_FOLD)
    assert evidence.revealed == (False, False)
    assert evidence.weights.sum() == 46 * 45 * 44 * 43 // 4  # two disjoint pairs of 46 cards
    first = _enumerated(spots, BOTH_FOLD, alpha0)
    assert np.allclose(fit.expected, first, rtol=0, atol=TOLERANCE)
    assert np.allclose(np.nan_to_num(lazy_first), first, rtol=0, atol=TOLERANCE)
    [shown] = posterior.observe(ONE_SHOWN)
    lazy.observe(ONE_SHOWN)
    assert shown.revealed == (False, True) and shown.weights.sum() == 903  # pairs of 43 cards
    second = _enumerated(spots, ONE_SHOWN, alpha0 + first)
    first_again = _enumerated(spots, BOTH_FOLD, alpha0 + second)
    assert np.allclose(fit.expected, second + first_again, rtol=0, atol=TOLERANCE)
    lazy_both = as_compiled(lazy.spots, spots.game, lazy.fits[0].expected, [1, 2])
    assert np.allclose(np.nan_to_num(lazy_both), second + first_again, rtol=0, atol=TOLERANCE)
    assert not posterior.fits[1].expected.any() and not posterior.fits[2].expected.any()
    means = posterior.models_profile(0)
    alpha = alpha0 + second + first_again
    for d, q in ((1, 1), (2, 2)):
        rows = spots.game.infosets(q)
        expected = alpha[d - 1] / alpha[d - 1].sum(axis=1, keepdims=True)
        assert np.allclose(means[q, rows], expected[rows], rtol=0, atol=TOLERANCE)


def test_above_the_joint_bound_each_hidden_opponent_is_a_class_of_its_own(
    spots, monkeypatch
) -> None:
    blueprint = seeded_blueprint(spots, 0)
    joint = HoldemPosterior(spots, blueprint, MBBRConfig(eta=4.0))
    [whole] = joint.observe(BOTH_FOLD)
    assert len(whole.weights) <= holdem_posterior.JOINT_ROWS  # stored whole at the default
    monkeypatch.setattr(holdem_posterior, "JOINT_ROWS", 0)
    factored = HoldemPosterior(spots, blueprint, MBBRConfig(eta=4.0))
    alpha0 = factored.fits[0].alpha0.copy()
    parts = factored.observe(BOTH_FOLD)
    assert [part.revealed for part in parts] == [(False, False)] * 2
    for d, part in enumerate(parts):  # each opponent's own moves, all of the joint's pairs
        assert np.all(part.rows[:, :, 0] == d) and part.weights.sum() == whole.weights.sum()
    # both hidden: each opponent's pairs as if the other's were independent of them
    independent = _enumerated(spots, BOTH_FOLD, alpha0, apart=False)
    assert np.allclose(factored.fits[0].expected, independent, rtol=0, atol=TOLERANCE)
    assert not np.allclose(independent, joint.fits[0].expected, atol=1e-6)  # exact: the above
    # the guard's likelihood stays the joint's
    assert np.isclose(factored.log_odds, joint.log_odds, rtol=1e-9, atol=0)
    # one opponent shown: the factors are the joint exactly
    shown = HoldemPosterior(spots, blueprint, MBBRConfig(eta=4.0))
    assert len(shown.observe(ONE_SHOWN)) == 2
    monkeypatch.undo()
    exact = HoldemPosterior(spots, blueprint, MBBRConfig(eta=4.0))
    assert len(exact.observe(ONE_SHOWN)) == 1
    assert np.allclose(shown.fits[0].expected, exact.fits[0].expected, rtol=0, atol=TOLERANCE)
