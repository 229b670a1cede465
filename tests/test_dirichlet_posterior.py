"""MBBR's Dirichlet posterior on 3-player Kuhn, compiled from its game file: its prior, what it
learns at every position, and the typed prior against its exact Dirichlet-multinomial weights.
The fit against the conjugate update, its CVB0 equations and the exact posterior mean, on Kuhn and
Leduc: ``test_limit_mbbr.py``."""

from __future__ import annotations

import limit_mbbr_oracle as oracle
import numpy as np
import pytest
from scipy.special import gammaln
from test_limit_mbbr import random_hands

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.limit import expected_values
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.kuhn3p import equilibria
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.mbbr.priors import prior_alpha
from oppmodel.modeling.observation import observe_limit_hand

GAME = limit_game("kuhn3p")
FAMILY = equilibria(GAME)
LEGAL = GAME.legal_mask


def dirichlet_model(**kwargs):
    """The Dirichlet posterior, by default under the informed prior (the eta mixture's types are
    test_eta_mixture.py's)."""
    config = {"hands_default": 0, "change_hazard": 0.0, "prior": "informed", **kwargs}
    return build_model(GAME, MBBRConfig(**config))


def showdowns(hands):
    return [obs for obs in hands if None not in obs.hole]


def seen_moves(obs) -> list[tuple[int, int, int]]:
    """(offset - 1, information set, action) of the opponent moves of a hand showing every card."""
    return oracle.opponent_moves(GAME, obs, oracle.consistent(GAME, obs)[0])


def support_alpha() -> np.ndarray:
    """The typed prior's in-support type: eta times the unclipped prior mean N3."""
    return prior_alpha(GAME, FAMILY["n3"], epsilon=0.0, eta=4.0, prior="informed")


def test_prior_alpha_is_the_samples_prior():
    n3 = FAMILY["n3"]
    alpha = prior_alpha(GAME, n3, epsilon=0.05, eta=4.0, prior="informed")
    for q in range(3):
        rows = GAME.infosets(q)
        np.testing.assert_allclose(alpha[q, rows].sum(axis=1), 4.0)
        mean = alpha[q, rows][LEGAL[q, rows]] / 4.0
        assert mean.min() >= 0.05 - 1e-12 and mean.max() <= 0.95 + 1e-12
        assert np.all(alpha[q, rows][~LEGAL[q, rows]] == 0.0)
    uninformed = prior_alpha(GAME, n3, epsilon=0.05, eta=4.0, prior="uninformed")
    rows = GAME.infosets(0)
    assert np.all(uninformed[0, rows][LEGAL[0, rows]] == 2.0)


def test_models_learn_the_opponents_at_every_position():
    n2 = FAMILY["n2"]
    model = dirichlet_model()
    for p in range(3):
        for obs in random_hands(GAME, 3000, seed=10 + p, profile=n2, positions=[p]):
            model.observe(obs)
    for p in range(3):
        for d in (1, 2):
            q = (p + d) % 3
            rows = np.asarray(GAME.infosets(q))
            probs, least_seen = model.opponent_model(p, q)
            concentration = model._dirichlet[p].concentration(d)
            seen = rows[concentration[rows] > 200]  # information sets with many expected visits
            assert len(seen) >= 4
            assert least_seen == pytest.approx(concentration[rows].min())
            assert np.abs(probs[seen] - n2[q][seen]).max() < 0.1


def revealed_counts(hands, d: int) -> np.ndarray:
    """(num_infosets, 3) moves of the opponent at offset d in the hands that show its cards."""
    counts = np.zeros((GAME.num_infosets, 3))
    for obs in hands:
        if obs.hole[(obs.position + d) % 3] is None:
            continue
        for d_1, infoset, action in oracle.opponent_moves(
            GAME, obs, oracle.consistent(GAME, obs)[0]
        ):
            if d_1 == d - 1:
                counts[infoset, action] += 1
    return counts


def log_beta(alpha: np.ndarray, legal: np.ndarray) -> float:
    """log of the multivariate Beta function of ``alpha`` over the ``legal`` actions."""
    return float(gammaln(alpha[legal]).sum() - gammaln(alpha[legal].sum()))


def test_typed_prior_weighs_the_types_by_their_dirichlet_multinomial_likelihoods():
    # N2 never makes a move N3 never makes: only the in-support evidence grows.
    hands = random_hands(GAME, 300, seed=11, profile=FAMILY["n2"], positions=[0])
    model = dirichlet_model(prior="typed")
    for obs in hands:
        model.observe(obs)
    clipped = prior_alpha(GAME, FAMILY["n3"], epsilon=0.05, eta=4.0, prior="informed")
    support = support_alpha()
    for d in (1, 2):
        q, counts = d, revealed_counts(hands, d)
        forbidden = (support[q] == 0.0) & LEGAL[q]
        pure = [i for i in GAME.infosets(q) if forbidden[i].any()]
        assert len(pure) > 4 and counts[pure].sum() > 50
        assert counts[forbidden].sum() == 0
        log_odds = np.log(0.05 / 0.95) + sum(
            log_beta(clipped[q, i] + counts[i], LEGAL[q, i]) - log_beta(clipped[q, i], LEGAL[q, i])
            for i in pure
        )
        weight = 1.0 / (1.0 + np.exp(-log_odds))
        assert model._mixture[0].weights(d)[0] == pytest.approx(weight, rel=1e-12)
        assert weight < 0.05  # below the prior: the evidence favours the in-support type


def test_typed_prior_model_is_the_mixture_of_the_two_types_posterior_means():
    hands = showdowns(random_hands(GAME, 200, seed=12, profile=FAMILY["n1"], positions=[0]))
    model = dirichlet_model(prior="typed")
    alpha0 = model._dirichlet[0].alpha0
    counts = np.zeros_like(alpha0)
    for obs in hands:
        model.observe(obs)
        for d_1, infoset, action in seen_moves(obs):
            counts[d_1, infoset, action] += 1
    support = support_alpha()
    for d in (1, 2):
        rows = GAME.infosets(d)
        error_prone = alpha0[d - 1, rows] + counts[d - 1, rows]
        in_support = support[d, rows] + counts[d - 1, rows]
        w = model._mixture[0].weights(d)[0]
        expected = w * error_prone / error_prone.sum(axis=1, keepdims=True) + (
            1 - w
        ) * in_support / in_support.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(
            model.opponent_model(0, d)[0][rows], expected, rtol=0, atol=1e-12
        )


def test_one_revealed_mistake_makes_the_opponent_error_prone():
    # We bet the K, position 1 calls with the J, position 2 folds, and the J is shown: N3 never
    # calls a bet with the J, so the in-support type is ruled out for position 1 and its model is
    # the informed prior's.
    deal = next(
        d for d in range(GAME.num_deals) if oracle.cards_of(GAME, d)[0] == ["Ks", "Js", "As"]
    )
    terminal = next(
        int(GAME.tree.node_terminal[t]) for t in range(GAME.num_nodes) if GAME.bettings[t] == "rcf"
    )
    hand = observe_limit_hand(GAME, 0, deal, terminal)
    assert hand.hole == ("Ks", "Js", None)
    typed, informed = dirichlet_model(prior="typed"), dirichlet_model()
    call_with_the_jack = GAME.infoset_from_string(1, "Js:r")
    assert support_alpha()[1, call_with_the_jack, 1] == 0.0
    for model in (typed, informed):
        model.observe(hand)
    assert typed._mixture[0].weights(1)[0] == 1.0
    assert typed._mixture[0].weights(2)[0] == pytest.approx(0.05)  # its card stayed hidden
    np.testing.assert_array_equal(typed.opponent_model(0, 1)[0], informed.opponent_model(0, 1)[0])


@pytest.mark.parametrize("position", range(3))
def test_typed_prior_all_but_ignores_the_phantom_mistakes_of_the_floor(position):
    # The prior mean N3 is an equilibrium: no deviation gains against it. The informed prior's
    # 5% phantom mistakes promise gains; the typed prior weighs them by 0.05 before any data.
    n3_value = expected_values(GAME, FAMILY["n3"])[position]
    informed = dirichlet_model().response(position)[1]
    typed = dirichlet_model(prior="typed").response(position)[1]
    assert n3_value - 1e-12 <= typed < n3_value + 0.1 * (informed - n3_value)


def test_typed_prior_needs_the_dirichlet_posterior():
    with pytest.raises(InvalidArgumentError) as info:
        build_model(GAME, MBBRConfig(prior="typed", posterior="samples"))
    assert info.value.field == "prior"
