"""The population prior as a mixture over opponent types (``oppmodel.modeling.population_types``):
the type weights against the exact posterior over fixed strategies, the fit's types and
clusters, a fitted type carried to rows never seen, and snapshots of a model on types."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math

import numpy as np
import pytest
from test_limit_mbbr import random_hands

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.limit import validate_profile
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.solved import default_profile
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior
from oppmodel.modeling.mbbr.evidence import hand_evidence, hand_likelihood
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.mbbr.priors import prior_alpha
from oppmodel.modeling.play.panel import named_profile
from oppmodel.modeling.population import MAX_CONCENTRATION, Population, fit_population
from oppmodel.modeling.population_types import TYPE_SHARE, with_types

PLAIN = MBBRConfig(
    prior=Prior.POPULATION, hands_default=0, change_hazard=0.0, safety_budget=math.inf, seed=5
)
STYLES = ("maniac", "calling-station", "n2", "tight-passive")


def softened(game, name: str) -> np.ndarray:
    """``name``'s profile mixed with uniform play (every legal move possible)."""
    uniform = game.legal_mask / game.legal_mask.sum(axis=2, keepdims=True)
    return 0.8 * named_profile(game, name) + 0.2 * uniform


def point_types(game, names) -> Population:
    """A population whose types are the strategies ``names`` known exactly (concentration 1e12),
    equally likely."""
    mean = default_profile(game, "prior_mean")
    alpha = prior_alpha(game, mean, epsilon=0.05, eta=4.0, prior=Prior.INFORMED)
    types = np.stack([1e12 * softened(game, name) * game.legal_mask for name in names])
    weights = np.full(len(names), 1 / len(names))
    return Population(alpha, np.zeros(alpha.shape[:2], bool), 0, types, weights)


def test_the_weights_are_the_exact_posterior_over_strategies_known_in_advance():
    game = limit_game("kuhn3p")
    population = point_types(game, STYLES)
    rows = [softened(game, name)[q] for q, name in enumerate(("n3", "maniac", "calling-station"))]
    profile = validate_profile(game, np.stack(rows))
    model = build_model(game, PLAIN, population=population)
    hands = random_hands(game, 60, 11, profile, positions=[0])
    log_posterior = {c: 0.0 for c in itertools.product(range(len(STYLES)), repeat=2)}
    for obs in hands:
        model.observe(obs)
        evidence = hand_evidence(game, obs)
        for c in log_posterior:  # the opponents at positions 1 and 2 playing types c
            hypothesis = profile.copy()
            hypothesis[1], hypothesis[2] = (
                softened(game, STYLES[t])[q] for q, t in zip((1, 2), c, strict=True)
            )
            log_posterior[c] += math.log(
                hand_likelihood(evidence.rows, evidence.weights, 0, hypothesis)
            )
    top = max(log_posterior.values())
    weight = {c: math.exp(v - top) for c, v in log_posterior.items()}
    total = sum(weight.values())
    for d in (1, 2):
        marginal = [
            sum(w for c, w in weight.items() if c[d - 1] == t) / total for t in range(len(STYLES))
        ]
        assert np.allclose(model._mixture[0].weights(d), marginal, rtol=1e-6, atol=1e-12)
    # the hands found the pair, and each model is its marginal mixture of the types
    assert model._mixture[0].weights(1)[0] > 0.99 and model._mixture[0].weights(2)[1] > 0.99
    w = model._mixture[0].weights(1)
    expected = sum(w[t] * softened(game, s)[1] for t, s in enumerate(STYLES))
    assert np.allclose(model.opponent_model(0, 1)[0], expected, atol=1e-9)


def member_counts(game, names, hands: int, seed: int) -> np.ndarray:
    """Counts of one session per name (kuhn2p, the opponent playing it)."""
    out = []
    for j, name in enumerate(names):
        model = build_model(game, dataclasses.replace(PLAIN, prior=Prior.INFORMED))
        for obs in random_hands(game, hands, seed + j, softened(game, name)):
            model.observe(obs)
        out.append(model.opponent_counts()[0])
    return np.array(out)


def test_each_member_is_a_type_capped_and_more_members_are_clustered():
    game = limit_game("kuhn2p")
    mean = default_profile(game, "prior_mean")
    counts = member_counts(game, ["maniac"] * 3 + ["calling-station"] * 3, 600, 40)
    base = fit_population(game, counts, prior_mean=mean)
    population = with_types(base, game, counts, prior_mean=mean)
    informed = prior_alpha(game, mean, epsilon=0.05, eta=4.0, prior=Prior.INFORMED)
    weak = prior_alpha(game, mean, epsilon=0.05, eta=1.0, prior=Prior.INFORMED)
    assert population.types is not None and population.type_weights is not None
    assert len(population.types) == 8  # six members, then the informed types
    assert np.array_equal(population.types[-2], informed)
    assert np.array_equal(population.types[-1], weak)
    for j in range(6):  # the informed prior plus the member's counts, at most the cap a row
        own = informed + counts[j]
        scale = np.minimum(1.0, MAX_CONCENTRATION / own.sum(axis=2, keepdims=True))
        assert np.allclose(population.types[j], own * scale, rtol=1e-12)
    assert population.types[:6].sum(axis=3).max() <= MAX_CONCENTRATION + 1e-9
    assert np.allclose(population.type_weights, [TYPE_SHARE / 6] * 6 + [(1 - TYPE_SHARE) / 2] * 2)
    # two clusters: the maniacs and the calling stations, each the informed prior plus the
    # mean of its members' counts
    two = with_types(base, game, counts, prior_mean=mean, max_types=2)
    assert two.types is not None and len(two.types) == 4
    assert np.allclose(two.type_weights, [TYPE_SHARE / 2] * 2 + [(1 - TYPE_SHARE) / 2] * 2)
    found = sorted(tuple(np.round(t.ravel(), 9)) for t in two.types[:2])
    for group in (counts[:3], counts[3:]):
        own = informed + group.mean(axis=0)
        own *= np.minimum(1.0, MAX_CONCENTRATION / own.sum(axis=2, keepdims=True))
        assert tuple(np.round(own.ravel(), 9)) in found
    with pytest.raises(InvalidArgumentError):
        with_types(base, game, counts[:, 0], prior_mean=mean)


def test_a_type_found_at_some_rows_is_expected_at_rows_not_yet_seen():
    # 2-player Kuhn: the population is maniacs and calling stations; a new maniac seen raising
    # with the queen only is expected to raise the ace too, where the per-row fit (the Polya
    # population) still holds the population's average
    game = limit_game("kuhn2p")
    mean = default_profile(game, "prior_mean")
    counts = member_counts(game, ["maniac"] * 3 + ["calling-station"] * 3, 300, 50)
    base = fit_population(game, counts, prior_mean=mean)
    typed = build_model(game, PLAIN, population=with_types(base, game, counts, prior_mean=mean))
    polya = build_model(game, PLAIN, population=base)
    ace = game.infoset_from_string(0, "As:")
    maniac = softened(game, "maniac")
    # the opponent (position 0) opened with the queen, was called and showed it
    hands = random_hands(game, 400, 3, maniac, positions=[1])
    shown = [o for o in hands if o.betting == "rc" and o.hole[0] == "Qs"][:4]
    assert len(shown) == 4
    for obs in shown:
        typed.observe(obs)
        polya.observe(obs)
    raise_ = 2
    assert typed._mixture[1].weights(1)[:3].sum() > 0.9  # one of the three maniacs
    ace_typed = typed.opponent_model(1, 0)[0][ace, raise_]
    ace_polya = polya.opponent_model(1, 0)[0][ace, raise_]
    assert ace_typed > maniac[0, ace, raise_] - 0.1
    assert ace_polya < ace_typed - 0.1


def test_a_model_on_types_restores_its_snapshot_and_the_population_its_bytes():
    game = limit_game("kuhn3p")
    mean = default_profile(game, "prior_mean")
    rng = np.random.default_rng(4)
    counts = rng.integers(0, 20, (5, *game.legal_mask.shape)) * game.legal_mask
    base = fit_population(game, counts, prior_mean=mean)
    population = with_types(base, game, counts, prior_mean=mean)
    again = Population.from_bytes(game, population.to_bytes())
    assert np.array_equal(again.types, population.types)
    assert again.digest() == population.digest() != base.digest()
    # a population without types keeps the digest of the parameters alone (stored snapshots)
    assert base.digest() == hashlib.sha256(base.alpha.astype(np.float64).tobytes()).hexdigest()
    config = MBBRConfig(prior=Prior.POPULATION, hands_default=10, seed=2)  # detection, bankroll
    model = build_model(game, config, population=population)
    hands = random_hands(game, 80, 6)
    for obs in hands[:40]:
        model.observe(obs)
    restored = build_model(game, config, population=again)
    restored.restore(model.snapshot())
    for obs in hands[40:]:
        model.observe(obs)
        restored.observe(obs)
    for p in range(3):
        assert np.array_equal(model.models_profile(p), restored.models_profile(p))
        assert np.array_equal(model.policy(p), restored.policy(p))
