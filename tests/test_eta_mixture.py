"""The eta mixture, an MBBR prior (``Prior.ETA_MIXTURE``, ``mixture_prior.py``): the
informed prior at eta or at weak_eta per opponent, weighed by the exact marginal likelihood of
its revealed moves. Its weights against a closed-form count in exact fractions, its weak
type's mean against the exact posterior mean, and which concentration the moves choose."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_limit_mbbr import exact_posterior_mean, random_hands
from test_mixture_prior import LOGS

from oppmodel.clients.acpc.log import read_log
from oppmodel.clients.acpc.replay_games import ReplayGame
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr import snapshot
from oppmodel.modeling.mbbr.change import GRID
from oppmodel.modeling.mbbr.config import FIELDS_ADDED_LATER, MBBRConfig, Prior
from oppmodel.modeling.mbbr.evidence import hand_evidence
from oppmodel.modeling.mbbr.mixture_prior import ETA_TYPES, ETA_WEIGHTS
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.mbbr.priors import create_samples

# the posterior itself (change detection, a bank of them, is test_limit_change.py's)
ETA_MIX = MBBRConfig(hands_default=0, seed=1, change_hazard=0.0, prior="eta-mixture")


def rising(start: Fraction, count: int) -> Fraction:
    """start (start + 1) ... (start + count - 1): Gamma(start + count) / Gamma(start)."""
    out = Fraction(1)
    for j in range(count):
        out *= start + j
    return out


def closed_form_weights(alpha0s, counts: dict) -> list[Fraction]:
    """The types' posterior probabilities from each information set's Dirichlet-multinomial
    marginal likelihood in closed form, prod_a Gamma(alpha_a + n_a) / Gamma(alpha_a) x
    Gamma(A) / Gamma(A + N), in exact fractions (no chain rule, no order of the moves)."""
    joint = []
    for prior, alpha0 in zip(ETA_WEIGHTS, alpha0s, strict=True):
        likelihood = Fraction(1)
        for infoset, n in counts.items():
            alpha = [Fraction(float(a)) for a in alpha0[infoset]]
            for a, k in zip(alpha, n, strict=True):
                likelihood *= rising(a, k)
            likelihood /= rising(sum(alpha), sum(n))
        joint.append(Fraction(prior) * likelihood)
    return [j / sum(joint) for j in joint]


def test_the_weights_are_the_exact_marginal_likelihood_of_the_revealed_moves():
    game = limit_game("leduc2p")
    rules = ReplayGame(game)
    model = build_model(game, ETA_MIX)
    p, counts = 0, {}
    for hand in read_log(LOGS["leduc2p"]).hands[:40]:
        obs = rules.observation(hand, p)
        for dec in rules.decisions(hand, obs):
            if dec.infoset is not None:  # revealed: the mover's cards were shown
                counts.setdefault(dec.infoset, [0, 0, 0])[dec.action] += 1
        model.observe(obs)
    assert sum(map(sum, counts.values())) > 40 and max(map(sum, counts.values())) > 3
    mixture = model._mixture[p]
    exact = closed_form_weights((mixture.informed_alpha0[0], mixture.second_alpha0[0]), counts)
    got = mixture.weights(1)
    assert 1e-6 < exact[0] < 1 - Fraction(1, 10**6)  # not yet decided: every digit counts
    for k in range(2):
        assert got[k] == pytest.approx(float(exact[k]), rel=1e-12, abs=1e-12), ETA_TYPES[k]


def means(alpha: np.ndarray) -> np.ndarray:
    return alpha / alpha.sum(axis=-1, keepdims=True)


@settings(max_examples=12)
@given(
    game_name=st.sampled_from(["kuhn3p", "leduc2p", "leduc3p"]),
    seed=st.integers(0, 2**16),
    count=st.integers(0, 3 * GRID),
)
def test_the_weights_and_means_kept_hand_by_hand_are_those_of_the_hands_seen(
    game_name, seed, count
):
    """Every run of the change-detection bank (the first, and those opened as copies of a
    model at the prior) keeps its weights and mixture means hand by hand from the hands' moves;
    they equal the weights recomputed from the revealed moves of the hands since the run
    began, in closed form (exact fractions), and the weighed means of its two types, on every
    row (1e-12): the informed fit's, and the weak prior's with the informed fit's counts."""
    game = limit_game(game_name)
    hands = random_hands(game, count, seed=seed)
    model = build_model(game, dataclasses.replace(ETA_MIX, change_hazard=1e-3))
    for obs in hands:
        model.observe(obs)
    n = game.num_players
    for run, start in zip(model.runs, model.starts, strict=True):
        for p in range(n):
            mixture, informed = run._mixture[p], run._dirichlet[p]
            counts: list[dict] = [{} for _ in range(n - 1)]
            for obs in hands[start:]:
                evidence = hand_evidence(game, obs)
                for d_1, i, a in evidence.rows[0] if obs.position == p else ():
                    if evidence.revealed[d_1]:
                        counts[d_1].setdefault(int(i), [0, 0, 0])[a] += 1
            profile = run.models_profile(p)
            for d in range(1, n):
                alpha0s = (mixture.informed_alpha0[d - 1], mixture.second_alpha0[d - 1])
                w = [float(x) for x in closed_form_weights(alpha0s, counts[d - 1])]
                np.testing.assert_allclose(mixture.weights(d), w, rtol=1e-12, atol=1e-300)
                rows = list(game.infosets((p + d) % n))
                strong = means(informed.alpha[d - 1])
                weak = means(mixture.second_alpha0[d - 1] + informed.expected[d - 1])
                mixed = means(w[0] * strong + w[1] * weak)
                np.testing.assert_allclose(
                    profile[(p + d) % n][rows], mixed[rows], rtol=0, atol=1e-12
                )


def test_a_run_opened_mid_match_answers_as_a_model_built_then():
    """A change-detection run after the first is a copy of the first's mixture at the prior
    (not a new build): fed the later hands it answers, bit for bit, as a model built then."""
    game = limit_game("leduc2p")
    config = dataclasses.replace(ETA_MIX, change_hazard=0.05)
    hands = random_hands(game, 2 * GRID, seed=7)
    model = build_model(game, config)
    for obs in hands[:GRID]:
        model.observe(obs)
    fresh = build_model(game, dataclasses.replace(config, change_hazard=0.0))
    for obs in hands[GRID:]:
        model.observe(obs)
        fresh.observe(obs)
    run = model.runs[model.starts.index(GRID)]
    for p in range(game.num_players):
        np.testing.assert_array_equal(run.models_profile(p), fresh.models_profile(p))
        np.testing.assert_array_equal(run._mixture[p].weights(1), fresh._mixture[p].weights(1))


def test_the_types_are_the_informed_prior_at_eta_and_at_weak_eta():
    game = limit_game("leduc2p")
    config = dataclasses.replace(ETA_MIX, eta=3.0, weak_eta=0.5)
    mixture = build_model(game, config)._mixture[0]
    for eta, alpha0 in ((3.0, mixture.informed_alpha0), (0.5, mixture.second_alpha0)):
        informed = build_model(game, dataclasses.replace(config, prior="informed", eta=eta))
        np.testing.assert_array_equal(alpha0, informed._dirichlet[0].alpha0)


@pytest.mark.parametrize(
    ("name", "seed"), [("leduc2p", seed) for seed in range(6)] + [("kuhn3p", s) for s in range(4)]
)
def test_the_weak_type_splits_hidden_cards_as_the_informed_fit_and_stays_near_exact(name, seed):
    """The weak type's mean is its prior plus the informed fit's expected counts (the hidden
    cards split as the informed fit splits them: one fit a hand). Against the exact posterior
    mean under the weak prior (every assignment of the hidden cards of 4 hands enumerated) it is
    no farther than the weak prior's own CVB0 fit, within 0.01 (its largest error 0-0.17, the
    own fit's 0-0.23 here), and it is no copy of the informed type's mean."""
    game = limit_game(name)
    pool = random_hands(game, 60, seed=20 + seed, positions=[0])
    hands = [o for o in pool if None in o.hole][:4]
    mixture = build_model(game, ETA_MIX)
    weak = build_model(game, dataclasses.replace(ETA_MIX, prior="informed", eta=1.0))
    for obs in hands:
        for model in (mixture, weak):
            model.observe(obs)
    for model in (mixture, weak):
        model.converge()
    types = mixture._mixture[0]
    exact = exact_posterior_mean(game, types.second_alpha0, hands)[0]
    shared = means(types.second_alpha0 + types.informed.expected)[0]
    own = weak._dirichlet[0].mean(1)
    assert np.abs(shared - exact).max() <= np.abs(own - exact).max() + 0.01
    rows = list(game.infosets(1))
    seen = types.informed.expected[0, rows].sum(axis=1) > 0
    assert np.abs(shared - types.informed.profile[1])[rows][seen].max() > 0.01


def test_a_snapshot_holding_the_weak_types_own_fit_is_refused():
    """Snapshots of the eta mixture written when its weak type had a fit of its own hold that fit
    (``p<p>.u.*``); their means and change detection's masses were that fit's, so the model
    refuses them (the service then rebuilds the session from its stored hands and logs why)."""
    game = limit_game("leduc2p")
    model = build_model(game, MBBRConfig(seed=5))
    for obs in random_hands(game, 30, seed=11):
        model.observe(obs)
    meta, arrays = snapshot.decode(model.snapshot())
    weak = {k.replace(".p0.", ".p0.u."): a for k, a in arrays.items() if ".p0.expected" in k}
    assert weak
    build_model(game, MBBRConfig(seed=5)).restore(snapshot.encode(meta, arrays))
    with pytest.raises(snapshot.SnapshotError, match="eta mixture"):
        build_model(game, MBBRConfig(seed=5)).restore(snapshot.encode(meta, arrays | weak))


def kings_raise_profile(game):
    """Always raise with a king, always call otherwise: card-aware, far from the solved
    strategy."""
    profile = np.where(game.legal_mask, 1e-9, 0.0)
    for q in range(game.num_players):
        for i in game.infosets(q):
            act = 2 if game.infoset_string(q, i).startswith("K") else 1
            profile[q, i, act if game.legal_mask[q, i, act] else 1] = 1.0
    return profile / profile.sum(axis=2, keepdims=True)


@pytest.mark.parametrize(("player", "chosen"), [("kings-raise", "weak_eta"), ("solved", "eta")])
def test_the_revealed_moves_choose_the_concentration_that_fits_the_player(player, chosen):
    """A player unlike the prior mean scatters its moves away from it: the weak concentration
    explains them better (its weight 1 - 1e-60 after these hands). One who plays the prior mean
    (the solved strategy) repeats its moves where the mean does: the strong one, though by less
    (0.96 and 0.99 here, 0.95 and 0.97 after 2,000 hands): where the solved strategy is pure
    the clipped mean gives its move 0.95, and a repeat of it is likelier under the weak prior
    ((0.95 + 1) / 2 against (3.8 + 1) / 5), so only its mixed information sets favour eta."""
    game = limit_game("leduc2p")
    profile = kings_raise_profile(game) if player == "kings-raise" else build_model(game).prior_mean
    model = build_model(game, ETA_MIX)
    for obs in random_hands(game, 1000, seed=3, profile=profile):
        model.observe(obs)
    for p in range(2):
        assert model._mixture[p].weights(1)[ETA_TYPES.index(chosen)] > 0.95


def test_the_defaults_and_stored_configs_read_as_before():
    """The eta mixture is the sample posterior's default prior (the Dirichlet posterior's is the
    tilted prior, the eta mixture refitted: session 50); a config stored before weak_eta existed
    fills in the value its absence means, which snapshots leave out of their header."""
    samples = MBBRConfig(posterior="samples")
    assert (samples.prior, samples.eta, samples.weak_eta) == (Prior.ETA_MIXTURE, 4.0, 1.0)
    assert FIELDS_ADDED_LATER["weak_eta"] == MBBRConfig().weak_eta
    with pytest.raises(ValueError) as info:
        MBBRConfig(weak_eta=0.0).validate()
    assert info.value.field == "weak_eta"


def test_the_samples_draw_alternately_at_eta_and_at_weak_eta():
    """The sample posterior's form of the same prior: half its samples from each type."""
    game = limit_game("kuhn3p")
    mean = build_model(game).prior_mean
    args = {"k": 4000, "epsilon": 0.05, "prior": "eta-mixture", "weak_eta": 1.0}
    tau = create_samples(game, mean, eta=9.0, rng=np.random.default_rng(0), **args)
    rows = game.infosets(1)
    legal = game.legal_mask[1, rows]
    first = tau[0, 0][:, rows][:, legal].reshape(4000, len(rows), 2)[:, :, 0]
    m = np.clip(mean[1, rows][legal].reshape(len(rows), 2), 0.05, 0.95)
    m = (m / m.sum(axis=1, keepdims=True))[:, 0]
    for parity, eta in ((0, 9.0), (1, 1.0)):
        draws = first[parity::2]
        np.testing.assert_allclose(draws.mean(axis=0), m, atol=0.03)
        # Beta(eta m, eta (1 - m)) variance m (1 - m) / (eta + 1); 2000 draws
        np.testing.assert_allclose(draws.var(axis=0), m * (1 - m) / (eta + 1), atol=0.015)
