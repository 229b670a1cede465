"""The hold'em posterior's tilted prior (modeling/holdem/tilt.py, ``HoldemPosterior.refit``): the
fitted multipliers solve their likelihood equations; no hands leave the blueprint's prior; what an
opponent did where we saw it carries to the nodes and buckets of the same situation we did not
see; after a refit a hand's update is still the exact enumeration over hidden hole pairs (in
tests/test_holdem_posterior.py); and the models' evidence against the blueprint is the sum of the
hands' likelihood ratios."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest
from holdem_support import RecordingAgent, seeded_blueprint, small_spots

from oppmodel.modeling.holdem.match import HoldemGame, play_holdem_match
from oppmodel.modeling.holdem.posterior import AbstractSpots, HoldemPosterior
from oppmodel.modeling.holdem.styles import holdem_policy
from oppmodel.modeling.holdem.tilt import ITERATIONS, LIMIT, TiltMap, fit_level, fit_tilt, tilted
from oppmodel.modeling.mbbr.evidence import hand_likelihood
from oppmodel.modeling.observation import LimitObservation


@pytest.fixture(scope="module")
def spots() -> AbstractSpots:
    return small_spots()


def _hands(spots: AbstractSpots, opponent: str, hands: int, seed: int) -> list[LimitObservation]:
    """What a uniform player saw of ``hands`` hands against ``opponent``."""
    game = HoldemGame("holdem2p", spots.game.gamedef)
    us = RecordingAgent("uniform", holdem_policy("uniform", game.gamedef), seed)
    them = RecordingAgent(opponent, holdem_policy(opponent, game.gamedef), seed + 1)
    play_holdem_match(game, [us, them], game.deal_sequence(hands, seed))
    return us.seen


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_fitted_multipliers_solve_the_likelihood_equations(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows, groups, weight = 60, 4, 2.0
    legal = np.ones((rows, 3), dtype=bool)
    legal[: rows // 3, 0] = False  # a third of the rows may not fold (no bet to call)
    base = np.where(legal, rng.uniform(0.05, 1.0, (rows, 3)), 0.0)
    base /= base.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        log_base = np.where(legal, np.log(base), -np.inf)
    group = rng.integers(0, groups - 1, rows)  # the last group has no rows: it stays untilted
    truth = tilted(log_base, rng.normal(0.0, 1.0, (groups, 3))[group])
    visits = rng.integers(0, 30, rows).astype(float)
    counts = visits[:, None] * truth  # expected counts of a tilted opponent
    theta = fit_level(log_base, counts, group, groups, weight)
    assert np.abs(theta).max() < LIMIT and np.array_equal(theta[-1], np.zeros(3))
    assert np.array_equal(theta[:, 1], np.zeros(groups))  # call: the reference
    for g in range(groups - 1):
        m = group == g
        total = visits[m].sum()
        fitted = (visits[m, None] * tilted(log_base[m], theta[g])).sum(axis=0)
        prior = (visits[m, None] * base[m]).sum(axis=0) / total
        # the group's visits and its pseudo-visits, predicted at theta, are what was observed
        # plus the pseudo-visits' own prediction at theta = 0
        lhs = fitted * (1.0 + weight / total)
        rhs = counts[m].sum(axis=0) + weight * prior
        assert np.allclose(lhs, rhs, rtol=0, atol=1e-6)


def _scaling_steps(log_base, counts, group, groups, weight, iterations):
    """fit_level's scaling steps as whole-array numpy (the kernel's oracle)."""
    visits = counts.sum(axis=1)
    total = np.bincount(group, visits, groups)
    seen = total > 0.0
    total = np.where(seen, total, 1.0)[:, None]
    by_group = lambda v: np.stack([np.bincount(group, v[:, a], groups) for a in range(3)], 1)  # noqa: E731
    prior = weight * by_group(visits[:, None] * tilted(log_base, 0.0)) / total
    with np.errstate(divide="ignore"):
        log_target = np.log((by_group(counts) + prior) / total)
    theta = np.zeros((groups, 3))
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(iterations):
            predicted = by_group(visits[:, None] * tilted(log_base, theta[group]))
            step = log_target - np.log(predicted * ((1.0 + weight / total) / total))
            step[~np.isfinite(step) | ~seen[:, None]] = 0.0
            theta = np.clip(theta + step, -LIMIT, LIMIT)
            theta -= theta[:, 1:2].copy()
    return theta


@pytest.mark.parametrize("seed", [0, 1])
def test_the_scaling_kernel_steps_as_whole_array_numpy_does(seed: int) -> None:
    """The numba kernel (holdem/_tilt_kernels.py) against the same steps in numpy, with a group
    whose rows may never fold, one no hand visited and one with no rows: equal up to the last
    bits of exp and log."""
    rng = np.random.default_rng(seed)
    rows, groups = 40, 5
    group = rng.integers(0, groups - 1, rows)
    legal = np.ones((rows, 3), dtype=bool)
    legal[group == 0, 0] = False
    base = np.where(legal, rng.uniform(0.05, 1.0, (rows, 3)), 0.0)
    base /= base.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        log_base = np.where(legal, np.log(base), -np.inf)
    visits = np.where(group == 3, 0.0, rng.integers(1, 30, rows).astype(float))
    counts = visits[:, None] * tilted(log_base, rng.normal(0.0, 1.5, (groups, 3))[group])
    theta = fit_level(log_base, counts, group, groups, 2.0)
    want = np.zeros((groups, 3))
    present = np.unique(group)
    compact = np.searchsorted(present, group)
    want[present] = _scaling_steps(log_base, counts, compact, len(present), 2.0, ITERATIONS)
    assert np.allclose(theta, want, rtol=0, atol=1e-12)
    assert np.array_equal(theta[3:], np.zeros((2, 3)))  # unvisited, no rows: untilted


def test_fit_tilt_is_its_two_levels_fitted_one_after_the_other() -> None:
    """fit_tilt's one kernel call (both levels, the visited rows selected) gives the bits of
    the levels fitted by fit_level in turn on those rows (the way it was written before): rows
    no hand visited, a situation with none, nodes of no row, a set the opponent cannot fold."""
    rng = np.random.default_rng(7)
    rows, nodes = 30, 9
    node = rng.integers(0, nodes - 2, rows)  # the last two nodes have no rows
    situation_of_node = rng.integers(0, 3, nodes)  # situation 3 has no nodes
    legal = np.ones((rows, 3), dtype=bool)
    legal[situation_of_node[node] == 0, 0] = False
    base = np.where(legal, rng.uniform(0.05, 1.0, (rows, 3)), 0.0)
    base /= base.sum(axis=1, keepdims=True)
    expected = rng.integers(0, 4, (rows, 3)) * legal * rng.uniform(0.5, 2.0, (rows, 3))
    expected[::4] = 0.0  # never visited
    tilt_map = cast(TiltMap, SimpleNamespace(
        rows=np.arange(rows), node_of=node, situation_of_node=situation_of_node,
        num_nodes=nodes, num_situations=4, legal=legal,
    ))  # fmt: skip
    mean, theta, _ = fit_tilt(tilt_map, base, expected, situation_weight=3.0, node_weight=5.0)
    with np.errstate(divide="ignore"):
        log_base = np.where(legal, np.log(base), -np.inf)
    seen, situation = expected.sum(axis=1) > 0.0, situation_of_node[node]
    want = fit_level(log_base[seen], expected[seen], situation[seen], 4, 3.0)
    shifted = log_base + want[situation]
    delta = fit_level(shifted[seen], expected[seen], node[seen], nodes, 5.0)
    assert np.array_equal(theta, want) and np.array_equal(theta[3], np.zeros(3))
    assert np.array_equal(mean, tilted(shifted, delta[node]))


def test_with_no_hands_a_refit_leaves_the_blueprints_prior(spots) -> None:
    posterior = HoldemPosterior(spots, seeded_blueprint(spots, 3))
    before = [fit.alpha0.copy() for fit in posterior.fits]
    means = [posterior.models_profile(p).copy() for p in range(2)]
    posterior.refit()
    for p, fit in enumerate(posterior.fits):
        assert np.allclose(fit.alpha0, before[p], rtol=0, atol=1e-12)
        assert np.allclose(posterior.models_profile(p), means[p], rtol=0, atol=1e-12)


def test_what_an_always_raising_opponent_did_carries_to_the_sets_never_seen(spots) -> None:
    """The Dirichlet per set knows always-bet only where it met it; the tilt moves every set of
    the situations it showed, seen or not, toward raising."""
    posterior = HoldemPosterior(spots, seeded_blueprint(spots, 4))
    for obs in _hands(spots, "always-bet", 60, seed=6):
        posterior.observe(obs)
    game = spots.game
    rows, before = [], []
    for p in range(2):
        q = 1 - p
        situations, counts = TiltMap(spots.sets, q), posterior.fits[p].expected[0]
        situation = situations.situation_of_node[situations.node_of]
        raised = np.bincount(situation, counts[situations.rows, 2], situations.num_situations)
        shown = raised[situation] >= 5  # of a situation where it raised 5 times or more
        unseen = game.legal_mask[q, situations.rows, 2] & (counts[situations.rows].sum(1) == 0)
        rows.append(situations.rows[unseen & shown])
        assert len(rows[p]) > 0
        before.append(posterior.models_profile(p)[q, rows[p], 2].copy())
        assert np.median(before[p]) < 0.5  # the prior: the blueprint's rows
    assert len(rows[0]) + len(rows[1]) > 300
    posterior.refit()
    for p in range(2):
        after = posterior.models_profile(p)[1 - p, rows[p], 2]
        assert np.median(after) > 0.85 and (after > before[p]).mean() > 0.95


def test_the_evidence_against_the_blueprint_sums_each_hands_likelihood_ratio(spots) -> None:
    blueprint = seeded_blueprint(spots, 6)
    posterior = HoldemPosterior(spots, blueprint)
    expected = 0.0
    for k, obs in enumerate(_hands(spots, "calling-station", 30, seed=7)):
        if k == 15:
            posterior.refit()  # the ratio's predictions are whatever the models are at the hand
        model = posterior.models_profile(obs.position).copy()
        [evidence] = posterior.observe(obs)
        rows, weights = evidence.rows, evidence.weights
        ratio = hand_likelihood(rows, weights, obs.position, model) / hand_likelihood(
            rows, weights, obs.position, blueprint
        )
        expected += math.log(ratio)
        assert posterior.log_odds == pytest.approx(expected, rel=1e-9, abs=1e-9)
    # a calling station never raises: the blueprint, which does, falls behind the models
    assert posterior.log_odds > 5.0
