"""The tilted prior (``Prior.TILTED``, ``modeling/tilted_prior.py``): the eta mixture whose prior
mean is refitted to the opponent every ``REFIT_EVERY`` hands by hold'em's tilt. The refit's prior
against ``tilt.fit_tilt`` of the untilted model's expected counts, what it predicts at the sets
the opponent never showed, the runs change detection opens later, and a snapshot's restore."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import RAISE
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.holdem.sets import CompiledSets
from oppmodel.modeling.holdem.tilt import TiltMap, fit_tilt
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.mbbr.priors import prior_alpha
from oppmodel.modeling.observation import LimitObservation, observe_limit_hand
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.match import sample_terminal
from oppmodel.modeling.play.tournament import seated_profile
from oppmodel.modeling.tilted_prior import NODE_WEIGHT, REFIT_EVERY, SITUATION_WEIGHT

TILTED = MBBRConfig(seed=3, change_hazard=0.0, prior=Prior.TILTED)


def hands(game: LimitGame, opponent: str, count: int, seed: int) -> list[LimitObservation]:
    """``count`` hands of ``opponent`` against the game's default strategy, our position
    rotating, as our seat sees them."""
    rng = np.random.default_rng(seed)
    others = [fixed_profile(game, opponent)]
    out = []
    for t in range(count):
        p = t % game.num_players
        profile = seated_profile(game, p, fixed_profile(game, "cfr"), others)
        deal = int(rng.integers(game.num_deals))
        out.append(observe_limit_hand(game, p, deal, sample_terminal(game, profile, deal, rng)))
    return out


def test_a_refit_makes_the_prior_the_tilt_of_the_expected_counts_at_both_concentrations():
    """At hand REFIT_EVERY the prior of both types is the tilt fitted to the expected counts the
    fit had then (those of the same hands under the untilted eta mixture: the fit does not read
    the mixture), at eta and at weak_eta; before it, the eta mixture's own prior."""
    game = limit_game("leduc2p")
    seen = hands(game, "maniac@0.35", REFIT_EVERY, seed=5)
    tilted = build_model(game, TILTED)
    untilted = build_model(game, dataclasses.replace(TILTED, prior=Prior.ETA_MIXTURE))
    for obs in seen[:-1]:
        tilted.observe(obs)
        untilted.observe(obs)
    fit, mixture = tilted._dirichlet[0], tilted._mixture[0]
    np.testing.assert_array_equal(fit.alpha0, untilted._dirichlet[0].alpha0)
    tilted.observe(seen[-1])
    untilted.observe(seen[-1])
    base = prior_alpha(game, tilted.prior_mean, epsilon=TILTED.epsilon, eta=1.0, prior="informed")
    sets, rows = CompiledSets(game), game.infosets(1)
    expected = untilted._dirichlet[0].expected[0]
    weights = {"situation_weight": SITUATION_WEIGHT, "node_weight": NODE_WEIGHT}
    mean = fit_tilt(TiltMap(sets, 1), base[1], expected, **weights)[0][rows]
    fit, mixture = tilted._dirichlet[0], tilted._mixture[0]
    assert fit is not untilted._dirichlet[0]
    np.testing.assert_allclose(fit.alpha0[0, rows], TILTED.eta * mean, rtol=1e-12)
    np.testing.assert_allclose(mixture.second_alpha0[0, rows], TILTED.weak_eta * mean, rtol=1e-12)
    assert np.abs(mean - base[1, rows]).max() > 0.05  # the prior moved


def test_the_tilt_predicts_the_sets_the_opponent_never_showed():
    """Against always-bet, after REFIT_EVERY hands, the prior raises more than the clipped
    default wherever a raise is legal, at the sets no hand has reached too."""
    game = limit_game("leduc2p")
    model = build_model(game, TILTED)
    for obs in hands(game, "always-bet", REFIT_EVERY, seed=6):
        model.observe(obs)
    rows = np.asarray(game.infosets(1))
    fit = model._dirichlet[0]
    prior = fit.alpha0[0, rows] / fit.alpha0[0, rows].sum(axis=1, keepdims=True)
    base = prior_alpha(game, model.prior_mean, epsilon=TILTED.epsilon, eta=1.0, prior="informed")
    raise_legal = game.legal_mask[1, rows, RAISE]
    unseen = raise_legal & (fit.expected[0, rows].sum(axis=1) == 0.0)
    assert unseen.sum() >= 50
    assert np.all(prior[raise_legal, RAISE] > base[1, rows][raise_legal, RAISE])
    # and the model (the mixture's mean) there is the tilted prior's
    model_rows = model.opponent_model(0, 1)[0][rows]
    np.testing.assert_allclose(model_rows[unseen], prior[unseen], rtol=1e-9)


@pytest.mark.parametrize("change_hazard", [0.0, 1e-5])
def test_no_refit_while_the_bankroll_guards_an_equilibrium_the_opponent_may_play(change_hazard):
    """Against ``cfr`` (the bankroll's one hypothesis, never ruled out) the prior stays the eta
    mixture's through a refit's hand, with its own bankroll or change detection's; plain MBBR
    (no bankroll) tilts it."""
    game = limit_game("leduc2p")
    config = dataclasses.replace(TILTED, change_hazard=change_hazard)
    guarded = build_model(game, config)
    plain = build_model(game, dataclasses.replace(config, safety_budget=float("inf")))
    untilted = build_model(game, dataclasses.replace(TILTED, prior=Prior.ETA_MIXTURE))
    for obs in hands(game, "cfr", REFIT_EVERY, seed=9):
        guarded.observe(obs)
        plain.observe(obs)
    assert guarded._safety.live
    prior = untilted._dirichlet[0].alpha0
    runs = [model.runs[0] if change_hazard else model for model in (guarded, plain)]
    np.testing.assert_array_equal(runs[0]._dirichlet[0].alpha0, prior)
    assert np.abs(runs[1]._dirichlet[0].alpha0 - prior).max() > 1e-3


def test_a_run_opened_after_a_refit_starts_from_the_untilted_prior():
    game = limit_game("leduc2p")
    model = build_model(game, dataclasses.replace(TILTED, change_hazard=1e-5))
    fresh = build_model(game, dataclasses.replace(TILTED, change_hazard=0.0))
    for obs in hands(game, "always-bet", REFIT_EVERY + 10, seed=7):
        model.observe(obs)
    first, newest = model.runs[0], model.runs[-1]
    assert newest.hands_observed < REFIT_EVERY
    for p in range(game.num_players):
        np.testing.assert_array_equal(newest._dirichlet[p].alpha0, fresh._dirichlet[p].alpha0)
        np.testing.assert_array_equal(
            newest._mixture[p].second_alpha0, fresh._mixture[p].second_alpha0
        )
        assert not np.array_equal(first._dirichlet[p].alpha0, fresh._dirichlet[p].alpha0)


def test_a_snapshot_restores_the_tilt_or_its_absence_and_plays_on_the_same():
    game = limit_game("leduc2p")
    config = dataclasses.replace(TILTED, hands_default=0, change_hazard=1e-5)
    seen = hands(game, "calling-station@0.35", REFIT_EVERY + 30, seed=8)
    before, after = build_model(game, config), build_model(game, config)
    for t, obs in enumerate(seen[: REFIT_EVERY + 20]):
        after.observe(obs)
        if t < REFIT_EVERY - 20:
            before.observe(obs)
    # a tilted snapshot into a model at the prior, an untilted one into a tilted model
    for model, into in ((after, build_model(game, config)), (before, after)):
        into.restore(model.snapshot())
        for obs in seen[-10:]:
            model.observe(obs)
            into.observe(obs)
        for p in range(game.num_players):
            np.testing.assert_array_equal(into.opponent_model(p, 1 - p)[0],
                                          model.opponent_model(p, 1 - p)[0])  # fmt: skip
            np.testing.assert_array_equal(into.policy(p), model.policy(p))


def test_the_tilted_prior_needs_the_dirichlet_posterior_and_is_its_default():
    """The default prior is the posterior's: tilted with the Dirichlet posterior, the eta mixture
    with the samples (drawn once at the prior, they have no form of a refitted prior mean); the
    tilted prior named with the samples is refused, naming the prior."""
    with pytest.raises(InvalidArgumentError, match="prior"):
        MBBRConfig(prior="tilted", posterior="samples").validate()
    game = limit_game("leduc2p")
    assert build_model(game, MBBRConfig(change_hazard=0.0)).config.prior == Prior.TILTED
    assert type(build_model(game, MBBRConfig(change_hazard=0.0))).__name__ == "TiltedModel"
    samples = build_model(game, MBBRConfig(k=2, change_hazard=0.0, posterior="samples"))
    assert (type(samples).__name__, samples.config.prior) == ("SampleModel", Prior.ETA_MIXTURE)
    # a config changed to the samples keeps its resolved prior: refused, not silently another
    with pytest.raises(InvalidArgumentError, match="prior"):
        dataclasses.replace(MBBRConfig(), posterior="samples").validate()
