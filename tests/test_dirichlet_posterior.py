"""MBBR's Dirichlet (variational Bayes) posterior against exact oracles.

With every card seen the posterior is conjugate and must equal prior + counts exactly; with hidden
cards it must satisfy the mean-field fixed-point equations (checked with scipy's digamma) and stay
close to the exact posterior mean, enumerated over every hidden-card assignment of every hand.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import betaln
from scipy.special import digamma as scipy_digamma

from oppmodel.modeling.errors import FailedPreconditionError, InvalidArgumentError
from oppmodel.modeling.evaluation.kuhn import expected_values
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.mbbr import _dirichlet_kernels
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import MBBRModel, build_model
from oppmodel.modeling.mbbr.priors import prior_alpha
from oppmodel.modeling.observation import observe_hand
from oppmodel.modeling.strategy import sample_history

GAME = kuhn_game(3)


def random_hands(profile: np.ndarray, count: int, seed: int, position: int = 0):
    rng = np.random.default_rng(seed)
    hands = []
    for _ in range(count):
        deal = [int(c) for c in rng.permutation(GAME.num_cards)[: GAME.num_players]]
        hands.append(observe_hand(GAME, position, sample_history(GAME, profile, deal, rng), deal))
    return hands


def moves_of(obs, deal) -> list[tuple[int, int, int]]:
    """(offset, information set, action) of every opponent move in ``obs`` under ``deal``."""
    out = []
    for i, letter in enumerate(obs.history):
        q = i % GAME.num_players
        if q != obs.position:
            node = GAME.node(obs.history[:i])
            d = (q - obs.position) % GAME.num_players
            out.append((d - 1, int(GAME.infoset_of[node, deal[q]]), "pb".index(letter)))
    return out


def consistent_deals(obs) -> list[tuple[int, ...]]:
    return [
        tuple(deal)
        for deal in GAME.deals
        if all(c is None or c == deal[i] for i, c in enumerate(obs.cards))
    ]


def dirichlet_model(**kwargs) -> MBBRModel:
    return build_model(
        GAME, MBBRConfig(posterior="dirichlet", hands_default=0, change_hazard=0.0, **kwargs)
    )


def fitted_alpha(model: MBBRModel, p: int) -> np.ndarray:
    return model._dirichlet[p].alpha


def prior_of(model: MBBRModel, p: int) -> np.ndarray:
    return model._dirichlet[p].alpha0


def test_digamma_matches_scipy():
    xs = np.concatenate([np.linspace(1e-3, 1, 50), np.linspace(1, 50, 200), [1e3, 1e6]])
    ours = np.array([_dirichlet_kernels.digamma(x) for x in xs])
    np.testing.assert_allclose(ours, scipy_digamma(xs), rtol=1e-12, atol=1e-12)


def test_prior_alpha_is_the_samples_prior():
    n3 = robust_profile("N3")
    alpha = prior_alpha(GAME, n3, epsilon=0.05, eta=4.0, prior="informed")
    for q in range(3):
        rows = GAME.infosets(q)
        np.testing.assert_allclose(alpha[q, rows].sum(axis=1), 4.0)
        mean = alpha[q, rows] / 4.0
        assert mean.min() >= 0.05 / 1.0 - 1e-12 and mean.max() <= 0.95 + 1e-12
    uninformed = prior_alpha(GAME, n3, epsilon=0.05, eta=4.0, prior="uninformed")
    assert np.all(uninformed[0, GAME.infosets(0)] == 2.0)


def test_fully_observed_hands_give_the_conjugate_posterior_exactly():
    hands = [h for h in random_hands(robust_profile("N2"), 600, seed=1) if None not in h.cards]
    assert len(hands) > 100
    model = dirichlet_model()
    counts = np.zeros_like(prior_of(model, 0))
    for obs in hands:
        model.observe(obs)
        for d, infoset, action in moves_of(obs, obs.cards):
            counts[d, infoset, action] += 1
    np.testing.assert_allclose(fitted_alpha(model, 0), prior_of(model, 0) + counts, atol=1e-9)


def test_hidden_cards_satisfy_the_mean_field_equations():
    """alpha = alpha0 + sum over hands of sum_a r(a) counts(a), r(a) ~ exp(E[log lik(a)])."""
    model = dirichlet_model()
    hands = random_hands(robust_profile("N1"), 400, seed=2)
    assert any(None in h.cards for h in hands)
    for obs in hands:
        model.observe(obs)
    alpha, alpha0 = fitted_alpha(model, 0), prior_of(model, 0)
    elog = scipy_digamma(alpha) - scipy_digamma(alpha.sum(axis=2, keepdims=True))
    expected = np.zeros_like(alpha)
    for obs in hands:
        explanations = [moves_of(obs, deal) for deal in consistent_deals(obs)]
        scores = np.array([sum(elog[m] for m in moves) for moves in explanations])
        r = np.exp(scores - scores.max())
        r /= r.sum()
        for weight, moves in zip(r, explanations, strict=True):
            for m in moves:
                expected[m] += weight
    np.testing.assert_allclose(alpha, alpha0 + expected, atol=1e-6)


def exact_posterior_mean(alpha0: np.ndarray, hands) -> np.ndarray:
    """E[tau | hands] under the product-Dirichlet prior, enumerating every joint assignment."""
    options = [[moves_of(obs, deal) for deal in consistent_deals(obs)] for obs in hands]
    log_weights, means = [], []
    for choice in itertools.product(*options):
        counts = np.zeros_like(alpha0)
        for moves in choice:
            for m in moves:
                counts[m] += 1
        post = alpha0 + counts
        log_weights.append(
            float(
                np.sum(betaln(post[..., 0], post[..., 1]) - betaln(alpha0[..., 0], alpha0[..., 1]))
            )
        )
        means.append(post[..., 1] / post.sum(axis=2))
    w = np.exp(np.array(log_weights) - max(log_weights))
    return np.tensordot(w / w.sum(), np.array(means), axes=1)


@pytest.mark.parametrize("seed", range(4))
def test_close_to_the_exact_posterior_mean_with_hidden_cards(seed):
    hands = [h for h in random_hands(robust_profile("N1"), 200, seed=seed) if None in h.cards][:4]
    model = dirichlet_model()
    for obs in hands:
        model.observe(obs)
    exact = exact_posterior_mean(prior_of(model, 0), hands)
    ours = fitted_alpha(model, 0)[..., 1] / fitted_alpha(model, 0).sum(axis=2)
    assert np.abs(ours - exact).max() < 0.03  # mean-field: about 0.02 off with 4 hands


@settings(max_examples=10)
@given(seed=st.integers(0, 2**16))
def test_the_order_of_the_hands_does_not_matter(seed):
    hands = random_hands(robust_profile("N3"), 150, seed=seed)
    forward, backward = dirichlet_model(), dirichlet_model()
    for obs in hands:
        forward.observe(obs)
    for obs in reversed(hands):
        backward.observe(obs)
    np.testing.assert_allclose(fitted_alpha(forward, 0), fitted_alpha(backward, 0), atol=1e-6)


def test_models_learn_the_opponents_at_every_position():
    n2 = robust_profile("N2")
    model = dirichlet_model()
    for p in range(3):
        for obs in random_hands(n2, 3000, seed=10 + p, position=p):
            model.observe(obs)
    for p in range(3):
        for d in (1, 2):
            q = (p + d) % 3
            probs, least_seen = model.opponent_model(p, q)
            alpha = fitted_alpha(model, p)[d - 1]
            seen = alpha.sum(axis=1) > 200  # information sets with many expected visits
            assert seen[GAME.infosets(q)].sum() >= 4
            assert least_seen == pytest.approx(alpha[GAME.infosets(q)].sum(axis=1).min())
            assert np.abs(probs[seen] - n2[q][seen]).max() < 0.1


def test_response_is_the_best_response_to_the_models_whatever_the_kind():
    model = dirichlet_model()
    for obs in random_hands(robust_profile("N1"), 300, seed=5):
        model.observe(obs)
    mean, value = model.response(0, "mean")
    bayes, bayes_value = model.response(0, "bayes")
    np.testing.assert_array_equal(mean, bayes)
    assert value == bayes_value


def test_sample_queries_are_a_failed_precondition():
    model = dirichlet_model()
    with pytest.raises(FailedPreconditionError, match="posterior"):
        model.posterior(0)
    with pytest.raises(FailedPreconditionError, match="effective_sample_size"):
        model.effective_sample_size(0)


def test_unknown_posterior_names_the_field():
    with pytest.raises(InvalidArgumentError) as info:
        build_model(GAME, MBBRConfig(posterior="particles"))
    assert info.value.field == "posterior"


def test_k_is_not_limited_without_samples():
    build_model(GAME, MBBRConfig(posterior="dirichlet", k=10**6))


def revealed_counts(hands, d: int) -> np.ndarray:
    """(num_infosets, 2) moves of the opponent at offset d in the hands that show its card."""
    counts = np.zeros((GAME.num_infosets, 2))
    for obs in hands:
        q = (obs.position + d) % GAME.num_players
        if obs.cards[q] is not None:
            for i in range(q, len(obs.history), GAME.num_players):
                infoset = GAME.infoset_of[GAME.node(obs.history[:i]), obs.cards[q]]
                counts[infoset, "pb".index(obs.history[i])] += 1
    return counts


def test_typed_prior_weighs_the_types_by_their_beta_binomial_likelihoods():
    # N2 never makes a move N3 never makes: only the in-support evidence grows.
    hands = random_hands(robust_profile("N2"), 300, seed=11)
    model = dirichlet_model(prior="typed")
    for obs in hands:
        model.observe(obs)
    clipped = prior_alpha(GAME, robust_profile("N3"), epsilon=0.05, eta=4.0, prior="informed")
    support = prior_alpha(GAME, robust_profile("N3"), epsilon=0.0, eta=4.0, prior="informed")
    for d in (1, 2):
        q, counts = d, revealed_counts(hands, d)
        pure = [i for i in GAME.infosets(q) if support[q, i].min() == 0.0]
        assert len(pure) > 4 and counts[pure].sum() > 50
        assert counts[pure][support[q, pure] == 0.0].sum() == 0
        log_odds = np.log(0.05 / 0.95) + sum(
            betaln(*(clipped[q, i] + counts[i])) - betaln(*clipped[q, i]) for i in pure
        )
        weight = 1.0 / (1.0 + np.exp(-log_odds))
        assert model._types[0].error_prone(d) == pytest.approx(weight, rel=1e-9)
        assert weight < 0.05  # below the prior: the evidence favours the in-support type


def test_typed_prior_model_is_the_mixture_of_the_two_types_posterior_means():
    hands = [h for h in random_hands(robust_profile("N1"), 200, seed=12) if None not in h.cards]
    model = dirichlet_model(prior="typed")
    counts = np.zeros_like(prior_of(model, 0))
    for obs in hands:
        model.observe(obs)
        for d, infoset, action in moves_of(obs, obs.cards):
            counts[d, infoset, action] += 1
    support = prior_alpha(GAME, robust_profile("N3"), epsilon=0.0, eta=4.0, prior="informed")
    for d in (1, 2):
        rows = GAME.infosets(d)
        error_prone = prior_of(model, 0)[d - 1, rows] + counts[d - 1, rows]
        in_support = support[d, rows] + counts[d - 1, rows]
        w = model._types[0].error_prone(d)
        expected = w * error_prone / error_prone.sum(axis=1, keepdims=True) + (
            1 - w
        ) * in_support / in_support.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(model.opponent_model(0, d)[0][rows], expected, atol=1e-9)


def test_one_revealed_mistake_makes_the_opponent_error_prone():
    # We bet the K, position 1 calls with the J, position 2 folds, and the J is shown: N3 never
    # calls a bet with the J, so the in-support type is ruled out for position 1 and its model is
    # the informed prior's.
    hand = observe_hand(GAME, 0, "bbp", [2, 0, 3])
    typed, informed = dirichlet_model(prior="typed"), dirichlet_model()
    support = prior_alpha(GAME, robust_profile("N3"), epsilon=0.0, eta=4.0, prior="informed")
    assert support[1, GAME.infoset_index(1, card=0, history="b"), 1] == 0.0
    for model in (typed, informed):
        model.observe(hand)
    assert typed._types[0].error_prone(1) == 1.0
    assert typed._types[0].error_prone(2) == pytest.approx(0.05)  # its card stayed hidden
    np.testing.assert_array_equal(typed.opponent_model(0, 1)[0], informed.opponent_model(0, 1)[0])


@pytest.mark.parametrize("position", range(3))
def test_typed_prior_all_but_ignores_the_phantom_mistakes_of_the_floor(position):
    # The prior mean N3 is an equilibrium: no deviation gains against it. The informed prior's
    # 5% phantom mistakes promise gains; the typed prior weighs them by 0.05 before any data.
    n3_value = expected_values(GAME, robust_profile("N3"))[position]
    informed = dirichlet_model().response(position)[1]
    typed = dirichlet_model(prior="typed").response(position)[1]
    assert n3_value <= typed < n3_value + 0.1 * (informed - n3_value)


def test_typed_prior_needs_the_dirichlet_posterior():
    with pytest.raises(InvalidArgumentError) as info:
        build_model(GAME, MBBRConfig(prior="typed", posterior="samples"))
    assert info.value.field == "prior"
