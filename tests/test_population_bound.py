"""experiments/population_bound.py: its response to a mixture of hypotheses is the best of every
pure strategy, it plays the default for its first hands, and it finds the true pair."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from experiments.population_bound import bound_trajectory, hypotheses, mixture_response
from oppmodel.modeling.evaluation.limit import best_response, expected_values
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.solved import default_profile
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.tournament import seated_profile


def _mixture_value(game, profiles, weights, p, strategy):
    total = 0.0
    for profile, weight in zip(profiles, weights, strict=True):
        profile = profile.copy()
        profile[p] = strategy
        total += weight * float(expected_values(game, profile)[p])
    return total


@pytest.mark.parametrize("p", [0, 2])
def test_the_mixture_response_is_the_best_pure_strategy_against_the_mixture(p):
    """Against three correlated pair hypotheses no pure strategy of position p beats the mixture
    response. Our sets for different cards never share a hand, so the value is a sum over our
    card and the best pure strategy is the best one per card: all 16 plays of each card's 4 sets
    (the other cards' sets as the response plays them) are enumerated."""
    game = limit_game("kuhn3p")
    names = [("n1", "maniac@0.35"), ("calling-station@0.35", "n3"), ("bluffer@0.35", "n2")]
    profiles = [
        seated_profile(game, p, None, [fixed_profile(game, name) for name in pair])
        for pair in names
    ]
    weights = np.array([0.5, 0.3, 0.2])
    start = default_profile(game, "default_strategy")[p]
    response = mixture_response(game, profiles, weights, p, start)
    value = _mixture_value(game, profiles, weights, p, response)
    cards = {}
    for i in game.infosets(p):
        cards.setdefault(game.infoset_string(p, i).split(":")[0], []).append(i)
    assert len(cards) == 4 and all(len(sets) == 4 for sets in cards.values())
    tried = 0
    for sets in cards.values():
        legal = [np.flatnonzero(game.legal_mask[p, i]) for i in sets]
        for choice in itertools.product(*legal):
            strategy = response.copy()
            strategy[sets] = 0.0
            strategy[sets, choice] = 1.0
            tried += 1
            assert _mixture_value(game, profiles, weights, p, strategy) <= value + 1e-12
    assert tried == 64
    # the mixture's answer is not one hypothesis' best response: the mixture matters here
    singles = [mixture_response(game, [q], [1.0], p, start) for q in profiles]
    assert all(not np.array_equal(response, single) for single in singles)


def test_it_plays_the_default_first_and_identifies_the_pair():
    """Its first hands are the default strategy's exact values; against n2 + tight-passive@0.35
    the true pair holds 99% of the posterior within the match, and later hands win exactly the
    oracle's value; the field has 56 seated pairs."""
    game = limit_game("kuhn3p")
    assert len(hypotheses(game)) == 56
    wide = hypotheses(game, (0.15, 0.35, 1.0))  # 3 N agents + 5 styles x 3 shares: 18 agents
    assert len(wide) == 18 * 17 and set(hypotheses(game)) < set(wide)
    pair = ("n2", "tight-passive@0.35")
    run = bound_trajectory((*pair, 0, 300, 30))
    default = default_profile(game, "default_strategy")
    others = [fixed_profile(game, name) for name in pair]
    for t in range(30):
        p = t % 3
        profile = seated_profile(game, p, default, others)
        assert run["values"][t] == pytest.approx(
            game.rate_unit.rate(float(expected_values(game, profile)[p])), abs=1e-9
        )
    assert run["identified"] is not None and run["identified"] < 300
    oracle = [
        game.rate_unit.rate(best_response(game, seated_profile(game, p, None, others), p)[1])
        for p in range(3)
    ]
    late = np.array(run["values"][200:])
    assert late == pytest.approx([oracle[t % 3] for t in range(200, 300)], abs=1e-9)
