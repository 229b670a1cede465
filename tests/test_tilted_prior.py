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
from oppmodel.modeling.games.acpc.solved import default_profile
from oppmodel.modeling.holdem.sets import CompiledSets
from oppmodel.modeling.holdem.tilt import TiltMap, fit_tilt
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.mbbr.priors import prior_alpha
from oppmodel.modeling.observation import LimitObservation, observe_limit_hand
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.match import sample_terminal
from oppmodel.modeling.play.tournament import seated_profile
from oppmodel.modeling.population import Population, fit_population
from oppmodel.modeling.population_types import with_types
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
        assert_plays_on_the_same(game, model, into, seen[-10:])


def assert_plays_on_the_same(game: LimitGame, model, into, more: list[LimitObservation]) -> None:
    """``into`` (restored from ``model``'s snapshot) models and plays as ``model`` through
    ``more`` hands."""
    for obs in more:
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


def leduc_population(game: LimitGame, members: tuple[str, ...]) -> Population:
    """A population with types fitted from one 150-hand session against each of ``members``."""
    counts = []
    for j, name in enumerate(members):
        model = build_model(game, dataclasses.replace(TILTED, prior=Prior.INFORMED))
        for obs in hands(game, name, 150, seed=20 + j):
            model.observe(obs)
        counts.append(model.opponent_counts()[0])
    mean = default_profile(game, "prior_mean")
    return with_types(fit_population(game, counts, prior_mean=mean), game, counts, prior_mean=mean)


POPULATION = dataclasses.replace(TILTED, prior=Prior.POPULATION, safety_budget=float("inf"))


def test_a_refit_tilts_the_informed_parts_of_a_populations_types_and_keeps_its_members_rows():
    """With a population's type mixture the refit fits the same tilt, to the fit's expected counts
    around the informed type's mean, and makes it the mean of every informed part of the types
    (the two informed types, and a fitted type's rows its members never reached) at their own
    concentrations; the rows the members reached keep the population's parameters. Against an
    opponent unlike every member the model then raises more than the informed prior at the sets
    neither the members nor this opponent showed."""
    game = limit_game("leduc2p")
    population = leduc_population(game, ("calling-station", "calling-station@0.5"))
    model = build_model(game, POPULATION, population=population)
    assert type(model).__name__ == "TiltedModel"
    seen = hands(game, "always-bet", REFIT_EVERY, seed=11)
    for obs in seen[:-1]:
        model.observe(obs)
    types = model._mixture[0]
    np.testing.assert_array_equal(types.types, population.types[:, [1]])
    model.observe(seen[-1])
    fit, untilted = model._dirichlet[0], population.types[:, 1]
    np.testing.assert_array_equal(fit.alpha0, population.alpha[[1]])  # the fit keeps its prior
    informed = untilted[-2]
    base = informed / informed.sum(axis=1, keepdims=True)
    mean = fit_tilt(TiltMap(CompiledSets(game), 1), base, fit.expected[0],
                    situation_weight=SITUATION_WEIGHT, node_weight=NODE_WEIGHT)[0]  # fmt: skip
    rows = np.asarray(game.infosets(1))
    reached = ~np.all(untilted == informed, axis=2)  # (types, infosets): a member's row
    reached[-2:] = False
    assert reached[:-2, rows].any() and (~reached[:-2, rows]).any()
    tilted = types.types[:, 0]
    for t in range(len(untilted)):
        own, informed_rows = rows[reached[t, rows]], rows[~reached[t, rows]]
        np.testing.assert_array_equal(tilted[t, own], untilted[t, own])
        concentration = untilted[t, informed_rows].sum(axis=1, keepdims=True)
        np.testing.assert_allclose(tilted[t, informed_rows], concentration * mean[informed_rows],
                                   rtol=1e-12)  # fmt: skip
    unseen = game.legal_mask[1, rows, RAISE] & ~reached[:-2, rows].any(axis=0)
    unseen &= fit.expected[0, rows].sum(axis=1) == 0.0
    assert unseen.sum() >= 20
    model_rows = model.opponent_model(0, 1)[0][rows]
    gain = model_rows[unseen, RAISE] - base[rows][unseen, RAISE]
    assert np.all(gain > 0.0) and gain.mean() > 0.05


def test_a_population_model_is_guarded_restored_and_reset_untilted():
    """No tilt of the types while the bankroll guards ``cfr``; a snapshot restores the tilt and
    plays on the same; a run change detection opens after a refit starts from the population's
    types; the Polya fit alone (no types) has nothing to tilt."""
    game = limit_game("leduc2p")
    population = leduc_population(game, ("maniac", "tight-passive"))
    guarded = build_model(game, dataclasses.replace(TILTED, prior=Prior.POPULATION),
                          population=population)  # fmt: skip
    for obs in hands(game, "cfr", REFIT_EVERY, seed=12):
        guarded.observe(obs)
    assert guarded._safety.live
    np.testing.assert_array_equal(guarded._mixture[0].types, population.types[:, [1]])
    config = dataclasses.replace(POPULATION, hands_default=0, change_hazard=1e-5)
    seen = hands(game, "always-bet@0.5", REFIT_EVERY + 30, seed=13)
    model = build_model(game, config, population=population)
    for obs in seen[:-10]:
        model.observe(obs)
    first, newest = model.runs[0], model.runs[-1]
    assert not np.array_equal(first._mixture[0].types, population.types[:, [1]])
    assert newest.hands_observed < REFIT_EVERY  # opened after the first run's refit
    np.testing.assert_array_equal(newest._mixture[0].types, population.types[:, [1]])
    into = build_model(game, config, population=population)
    into.restore(model.snapshot())
    np.testing.assert_array_equal(into.runs[0]._mixture[0].types, first._mixture[0].types)
    assert_plays_on_the_same(game, model, into, seen[-10:])
    polya = dataclasses.replace(population, types=None, type_weights=None)
    alone = build_model(game, POPULATION, population=polya)
    for obs in seen[:REFIT_EVERY]:
        alone.observe(obs)
    np.testing.assert_array_equal(alone._dirichlet[0].alpha0, polya.alpha[[1]])
