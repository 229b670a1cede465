"""MBBR in limit games (Leduc; Kuhn compiled from its game file) against brute-force oracles:
the sample posterior and the Bayesian response by enumeration of sample combinations and deals,
the Dirichlet posterior against the conjugate update, its fixed-point equations and the exact
posterior mean, the lazy per-hole response against the evaluation's best response."""

from __future__ import annotations

import functools
import itertools
import math

import limit_mbbr_oracle as oracle
import numpy as np
import pytest
from openspiel_oracle import openspiel_game, openspiel_values, tabular_policy
from scipy.special import gammaln

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.evaluation import limit as limit_evaluation
from oppmodel.modeling.games.acpc.bundled import strategy_path
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.strategy import kuhn_profile_on, load_profile
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.mbbr import _limit_kernels as limit_kernels
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.evidence import hand_evidence
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import HandObservation, LimitObservation, observe_limit_hand

# The posteriors themselves, under the informed prior (the eta mixture, a pair of these fits, is
# test_eta_mixture.py's; change detection, a bank of models, test_limit_change.py's)
PLAIN = functools.partial(MBBRConfig, change_hazard=0.0, prior="informed")
LEDUC2P = functools.partial(limit_game, "leduc2p")

# (betting, deal) of each kind of finished 2p Leduc hand; deals index game.deal_cards
HANDS_2P = [
    ("rf", 3),  # a round-0 fold: nothing shown, no board
    ("crf", 17),
    ("cc/rf", 40),  # a round-1 fold: the board is seen, the hole cards are not
    ("rc/crc", 55),  # showdown
    ("cc/cc", 80),
    ("rrc/rrf", 101),
    ("crrf", 7),
    ("rc/rrc", 64),
]


def hands_2p(game, positions=(0, 1)) -> list[LimitObservation]:
    terminal_of = {game.bettings[t]: int(game.tree.node_terminal[t]) for t in range(game.num_nodes)}
    return [
        observe_limit_hand(game, positions[h % len(positions)], deal, terminal_of[betting])
        for h, (betting, deal) in enumerate(HANDS_2P)
    ]


def random_hands(game, count: int, seed: int, profile=None, positions=None):
    """Hands played by ``profile`` (default: the game's bundled or uniform profile)."""
    rng = np.random.default_rng(seed)
    tree, n = game.tree, game.num_players
    profile = limit_evaluation.validate_profile(game, profile) if profile is not None else None
    out = []
    for h in range(count):
        deal = int(rng.integers(game.num_deals))
        node = 0
        while tree.node_player[node] >= 0:
            q = tree.node_player[node]
            infoset = tree.node_base[node] + tree.deal_view[tree.node_round[node], deal, q]
            probs = (
                profile[q, infoset] if profile is not None else game.legal_mask[q, infoset] / 1.0
            )
            probs = probs / probs.sum()
            node = tree.node_children[node, rng.choice(3, p=probs)]
        position = positions[h % len(positions)] if positions else h % n
        out.append(observe_limit_hand(game, position, deal, int(tree.node_terminal[node])))
    return out


# --- the sample posterior ---------------------------------------------------------------------


@pytest.mark.parametrize("prior", ["informed", "uninformed"])
def test_sample_posterior_equals_brute_force_leduc2p(prior):
    game = LEDUC2P()
    model = build_model(game, PLAIN(posterior="samples", k=4, seed=3, prior=prior))
    observations = hands_2p(game) + random_hands(game, 16, seed=1)
    for obs in observations:
        model.observe(obs)
    for p in range(2):
        expected = oracle.sample_posterior(game, model.tau[p], observations, p)
        np.testing.assert_allclose(model.posterior(p), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("name", "k", "count"), [("leduc3p", 3, 9), ("kuhn3p", 5, 30)])
def test_sample_posterior_equals_brute_force_3p(name, k, count):
    """Three players: the update is the low-rank fused pass (``pair_factors``)."""
    game = limit_game(name)
    model = build_model(game, PLAIN(posterior="samples", k=k, seed=4))
    observations = random_hands(game, count, seed=2)
    kinds = {sum(c is None for c in o.hole) for o in observations}
    assert kinds >= {0, 2}  # showdowns and hands won by folds
    for obs in observations:
        model.observe(obs)
    for p in range(3):
        expected = oracle.sample_posterior(game, model.tau[p], observations, p)
        np.testing.assert_allclose(model.posterior(p), expected, rtol=0, atol=1e-12)


def test_pair_factors_sum_the_assignments_that_share_the_second_opponents_cards():
    game = limit_game("kuhn3p")
    model = build_model(game, PLAIN(posterior="samples", k=4, seed=1))
    tau = model.tau[0]
    won_by_folds = next(o for o in random_hands(game, 60, seed=4) if o.hole.count(None) == 2)
    rows = hand_evidence(game, won_by_folds).rows
    assert len(rows) == 6  # the two hidden hands: 3 x 2 assignments of the other cards
    f1, f2 = np.empty((4, 6)), np.empty((4, 6))
    limit_kernels.sample_factors(tau[0], rows, 1, f1)
    limit_kernels.sample_factors(tau[1], rows, 2, f2)
    a, bt = np.empty((4, 6)), np.empty((6, 4))
    g = limit_kernels.pair_factors(tau[0], tau[1], rows, a, bt)
    assert g == 3  # one term per card of the second opponent
    np.testing.assert_allclose(a[:, :g] @ bt[:g], f1 @ f2.T, rtol=1e-14, atol=0)


def test_samples_give_illegal_actions_no_weight():
    game = LEDUC2P()
    model = build_model(game, PLAIN(posterior="samples", k=5, seed=0))
    legal = game.legal_mask
    for p, d in itertools.product(range(2), range(1)):
        q = (p + d + 1) % 2
        rows = list(game.infosets(q))
        tau = model.tau[p, d][:, rows]
        assert np.all(tau[:, ~legal[q, rows]] == 0.0)
        np.testing.assert_allclose(tau.sum(axis=2), 1.0)


def _assert_best_response(game, p, strategy, value, leaf):
    sums, oracle_value = oracle.best_response(game, p, leaf)
    assert value == pytest.approx(oracle_value, abs=1e-12)
    for i, total in sums.items():
        chosen = int(np.argmax(strategy[i]))
        assert strategy[i, chosen] == 1.0
        assert total[chosen] >= total.max() - 1e-12, game.infoset_string(p, i)


@pytest.mark.parametrize(("name", "k"), [("leduc2p", 4), ("kuhn3p", 4), ("kuhn4p", 3)])
def test_bayes_response_equals_brute_force(name, k):
    """One, two and three opponents: the expectation over every joint sample combination."""
    game = limit_game(name)
    n = game.num_players
    model = build_model(game, PLAIN(posterior="samples", k=k, seed=5))
    observations = random_hands(game, 10, seed=3)
    if name == "leduc2p":
        observations = hands_2p(game) + observations
    for obs in observations:
        model.observe(obs)
    for p in range(n):
        posterior = model.posterior(p)
        opponents = [(p + d) % n for d in range(1, n)]

        def leaf(betting, deal, p=p, posterior=posterior, opponents=opponents):
            reach = sum(
                posterior[s]
                * oracle.reach_of_opponents(
                    game,
                    p,
                    betting,
                    deal,
                    {q: model.tau[p, i, s[i]] for i, q in enumerate(opponents)},
                )
                for s in itertools.product(range(k), repeat=n - 1)
            )
            return reach * oracle.payoff(game, p, betting, deal)

        strategy, value = model.response(p, "bayes")
        _assert_best_response(game, p, strategy, value, leaf)


def test_mean_response_equals_brute_force_leduc2p():
    game = LEDUC2P()
    model = build_model(game, PLAIN(hands_default=0))
    for obs in random_hands(game, 40, seed=4):
        model.observe(obs)
    for p in range(2):
        profile = model.models_profile(p)

        def leaf(betting, deal, p=p, profile=profile):
            reach = oracle.reach_of_opponents(game, p, betting, deal, profile)
            return reach * oracle.payoff(game, p, betting, deal)

        strategy, value = model.response(p)
        _assert_best_response(game, p, strategy, value, leaf)


@pytest.mark.parametrize("name", ["kuhn3p", "leduc2p", "leduc3p"])
def test_lazy_per_hole_response_is_the_full_best_response(name):
    """Solving hole by hole gives exactly the evaluation's best response to the models."""
    game = limit_game(name)
    model = build_model(game, PLAIN(hands_default=0))
    for obs in random_hands(game, 30, seed=5):
        model.observe(obs)
    for p in range(game.num_players):
        lazy = [model.action_probabilities(p, i) for i in game.infosets(p)]
        strategy, value = model.response(p)
        full, full_value = limit_evaluation.best_response(game, model.models_profile(p), p)
        np.testing.assert_array_equal(strategy, full)
        np.testing.assert_array_equal(np.array(lazy), full[: len(lazy)])
        assert value == pytest.approx(full_value, abs=1e-12)


def test_bayes_is_mean_with_one_sample_and_for_the_dirichlet_posterior():
    game = LEDUC2P()
    observations = random_hands(game, 30, seed=6)
    for config in (PLAIN(posterior="samples", k=1), PLAIN()):
        model = build_model(game, config)
        for obs in observations:
            model.observe(obs)
        for p in range(2):
            bayes, bayes_value = model.response(p, "bayes")
            mean, mean_value = model.response(p, "mean")
            np.testing.assert_array_equal(bayes, mean)
            assert bayes_value == pytest.approx(mean_value, abs=1e-12)


# --- the Dirichlet posterior ------------------------------------------------------------------


def dirichlet(game, **kwargs):
    return build_model(game, PLAIN(hands_default=0, **kwargs))


@pytest.mark.parametrize("name", ["kuhn3p", "leduc3p"])
def test_fully_observed_hands_give_the_conjugate_posterior_exactly(name):
    game = limit_game(name)
    hands = [o for o in random_hands(game, 400, seed=7, positions=[1]) if None not in o.hole]
    assert len(hands) > 30
    model = dirichlet(game)
    posterior = model._dirichlet[1]
    counts = np.zeros_like(posterior.alpha0)
    for obs in hands:
        model.observe(obs)
        for d_1, infoset, action in oracle.opponent_moves(
            game, obs, oracle.consistent(game, obs)[0]
        ):
            counts[d_1, infoset, action] += 1
    np.testing.assert_allclose(posterior.alpha, posterior.alpha0 + counts, rtol=0, atol=1e-9)


def check_the_classes(game, posterior, hands, *, fixed_point: bool) -> None:
    """alpha = alpha0 + sum over distinct observations of count x responsibilities x moves, the
    moves enumerated by the oracle; with ``fixed_point``, every class's responsibilities solve
    the CVB0 equations: proportional to the product over its moves of alpha less one copy of the
    class's own contribution, divided by the row total less the same."""
    distinct = list(dict.fromkeys(hands))  # the posterior numbers classes in first-seen order
    counts = [hands.count(obs) for obs in distinct]
    _, tables = posterior.state()
    starts = tables["row_start"]
    resp = [tables["resp"][starts[o] : starts[o + 1]] for o in range(len(distinct))]
    options = [oracle.assignments(game, obs) for obs in distinct]
    expected = np.zeros_like(posterior.alpha0)
    for count, weights, explanations in zip(counts, resp, options, strict=True):
        for weight, moves in zip(weights, explanations, strict=True):
            for m in moves:
                expected[m] += count * weight
    alpha = posterior.alpha
    np.testing.assert_allclose(alpha, posterior.alpha0 + expected, rtol=0, atol=1e-9)
    if not fixed_point:
        return
    for weights, explanations in zip(resp, options, strict=True):
        if len(explanations) == 1:
            continue
        own = np.zeros_like(alpha)
        for weight, moves in zip(weights, explanations, strict=True):
            for m in moves:
                own[m] += weight
        rest = alpha - own
        predictive = rest / rest.sum(axis=2, keepdims=True)
        scores = np.array([np.prod([predictive[m] for m in moves]) for moves in explanations])
        np.testing.assert_allclose(weights, scores / scores.sum(), rtol=0, atol=1e-6)


def test_every_hand_counts_through_its_class():
    game = limit_game("leduc3p")
    hands = random_hands(game, 150, seed=8, positions=[2])
    model = dirichlet(game)
    for obs in hands:
        model.observe(obs)
    check_the_classes(game, model._dirichlet[2], hands, fixed_point=False)


@pytest.mark.parametrize("name", ["kuhn3p", "leduc2p"])
def test_converged_fit_solves_the_cvb0_equations(name):
    game = limit_game(name)
    model = dirichlet(game)
    hands = random_hands(game, 300, seed=8, positions=[0])
    assert sum(None in o.hole for o in hands) > 100
    for obs in hands:
        model.observe(obs)
    model.converge()
    check_the_classes(game, model._dirichlet[0], hands, fixed_point=True)


@pytest.mark.parametrize("name", ["kuhn3p", "leduc2p"])
def test_the_order_of_the_hands_does_not_matter_once_converged(name):
    game = limit_game(name)
    hands = random_hands(game, 300, seed=10, positions=[1])
    forward, backward = dirichlet(game), dirichlet(game)
    for obs in hands:
        forward.observe(obs)
    for obs in reversed(hands):
        backward.observe(obs)
    forward.converge()
    backward.converge()
    np.testing.assert_allclose(
        forward._dirichlet[1].alpha, backward._dirichlet[1].alpha, rtol=0, atol=1e-6
    )


def test_the_incremental_fit_stays_near_its_fixed_point():
    """Hand by hand the fit refreshes only a few classes; solving the mean-field equations from
    where it stands after 1000 hands moves no model by much, and a best response to the
    incremental models loses next to nothing against the solved ones."""
    game = LEDUC2P()
    model = dirichlet(game)
    for obs in random_hands(game, 1000, seed=9, positions=[0]):
        model.observe(obs)
    incremental = model.models_profile(0).copy()
    response, _ = model.response(0)
    model.converge()
    converged = model.models_profile(0)
    assert np.abs(incremental - converged).max() < 0.03
    _, best = limit_evaluation.best_response(game, converged, 0)
    played = converged.copy()
    played[0] = response
    assert best - limit_evaluation.expected_values(game, played)[0] < 1e-3


def test_expected_counts_are_the_sum_of_the_classes():
    """The sufficient statistics kept up to date hand by hand equal their sum from scratch, and
    the models profile holds their posterior means."""
    game = limit_game("leduc3p")
    model = dirichlet(game)
    for obs in random_hands(game, 500, seed=11):
        model.observe(obs)
    for p, posterior in enumerate(model._dirichlet):
        _, tables = posterior.state()
        counts, resp, entries = tables["counts"], tables["resp"], tables["entries"]
        rows, starts = tables["row_start"], tables["entry_start"]
        expected = np.zeros_like(tables["expected"])
        for o, count in enumerate(counts):
            for r in range(rows[o], rows[o + 1]):
                np.add.at(expected, entries[starts[r] : starts[r + 1]], count * resp[r])
        np.testing.assert_allclose(tables["expected"], expected, rtol=0, atol=1e-9)
        alpha = posterior.alpha
        seats = [(p + d) % 3 for d in (1, 2)]
        np.testing.assert_allclose(
            model.models_profile(p)[seats], alpha / alpha.sum(axis=2, keepdims=True), atol=1e-12
        )
        np.testing.assert_array_equal(model.models_profile(p)[p], model.default_strategy[p])


def exact_posterior_mean(game, alpha0, hands) -> np.ndarray:
    """E[tau | hands] under the product-Dirichlet prior, every joint assignment enumerated."""
    legal = alpha0 > 0
    options = [oracle.assignments(game, obs) for obs in hands]

    def log_beta(a):
        return np.where(legal, gammaln(np.where(legal, a, 1.0)), 0.0).sum(axis=2) - gammaln(
            a.sum(axis=2)
        )

    log_weights, means = [], []
    for choice in itertools.product(*options):
        counts = np.zeros_like(alpha0)
        for moves in choice:
            for m in moves:
                counts[m] += 1
        post = alpha0 + counts
        log_weights.append(float(np.sum(log_beta(post) - log_beta(alpha0))))
        means.append(post / post.sum(axis=2, keepdims=True))
    w = np.exp(np.array(log_weights) - max(log_weights))
    return np.tensordot(w / w.sum(), np.array(means), axes=1)


@pytest.mark.parametrize(
    ("name", "seed"), [("leduc2p", seed) for seed in range(6)] + [("kuhn3p", s) for s in range(4)]
)
def test_close_to_the_exact_posterior_mean_with_hidden_cards(name, seed):
    game = limit_game(name)
    pool = random_hands(game, 60, seed=20 + seed, positions=[0])
    hands = [o for o in pool if None in o.hole][:4]
    model = dirichlet(game)
    for obs in hands:
        model.observe(obs)
    posterior = model._dirichlet[0]
    exact = exact_posterior_mean(game, posterior.alpha0, hands)
    incremental = posterior.mean(1).copy()
    model.converge()
    assert np.abs(posterior.mean(1) - exact[0]).max() < 0.035  # Kuhn's fit: up to 0.2 here
    assert np.abs(incremental - exact[0]).max() < 0.035


def test_typed_prior_in_leduc_weighs_revealed_moves_only():
    game = LEDUC2P()
    model = dirichlet(game, prior="typed")
    for obs in random_hands(game, 200, seed=12):
        model.observe(obs)
    for p in range(2):
        strategy, _ = model.opponent_model(p, 1 - p)
        rows = list(game.infosets(1 - p))
        assert np.all(np.isfinite(strategy))
        np.testing.assert_allclose(strategy[rows].sum(axis=1), 1.0)
        assert np.all(strategy[rows][~game.legal_mask[1 - p, rows]] == 0.0)
    # the uniform players of random_hands make the bundled strategy's never-made moves
    assert model._mixture[0].weights(1)[0] == 1.0


# --- defaults, validation, the default phase ---------------------------------------------------


@pytest.mark.parametrize("name", ["leduc2p", "leduc3p"])
def test_leduc_defaults_are_the_bundled_cfr_strategy(name):
    game = limit_game(name)
    model = build_model(game)
    bundled = load_profile(game, strategy_path(name))
    np.testing.assert_array_equal(model.default_strategy, bundled)
    np.testing.assert_array_equal(model.prior_mean, bundled)


def test_compiled_kuhn_defaults_are_n1_and_n3():
    game = limit_game("kuhn3p")
    model = build_model(game)
    for role, name in (("default_strategy", "N1"), ("prior_mean", "N3")):
        ours = limit_evaluation.expected_values(game, getattr(model, role))
        named = limit_evaluation.expected_values(game, kuhn_profile_on(game, robust_profile(name)))
        np.testing.assert_allclose(ours, named, rtol=0, atol=1e-12)


def test_kuhn_profiles_map_onto_the_compiled_game():
    """A KuhnGame profile keeps its values (OpenSpiel's, on the profile as it was) on kuhn3p."""
    game, kuhn, os_game = limit_game("kuhn3p"), kuhn_game(3), openspiel_game(3)
    rng = np.random.default_rng(0)
    for _ in range(5):
        profile = rng.dirichlet([1, 1], size=(3, kuhn.num_infosets))
        mapped = kuhn_profile_on(game, profile)
        theirs = openspiel_values(os_game, tabular_policy(kuhn, os_game, profile))
        np.testing.assert_allclose(
            limit_evaluation.expected_values(game, mapped), theirs, rtol=0, atol=1e-9
        )


@pytest.mark.parametrize(
    ("obs", "field", "error"),
    [
        (LimitObservation(2, "rf", ("Ks", None), ("",)), "position", InvalidArgumentError),
        (LimitObservation(0, "r", ("Ks", None), ("",)), "betting", IllegalActionError),
        (LimitObservation(0, "rf", ("Ks", "Qs"), ("",)), "hole[1]", InvalidArgumentError),
        (LimitObservation(0, "rc/cc", ("Ks", None), ("", "Qs")), "hole[1]", InvalidArgumentError),
        (LimitObservation(0, "rf", ["Ks", None], ("",)), "hole", InvalidArgumentError),
        (HandObservation(0, "bp", (0, None)), "observation", InvalidArgumentError),
    ],
)
@pytest.mark.parametrize("posterior", ["dirichlet", "samples"])
def test_a_bad_observation_names_the_field_and_changes_nothing(obs, field, error, posterior):
    game = LEDUC2P()
    model = build_model(game, PLAIN(posterior=posterior, hands_default=0))
    for good in hands_2p(game):
        model.observe(good)
    before = [model.response(p)[0] for p in range(2)]
    models = [model.opponent_model(p, 1 - p)[0] for p in range(2)]
    with pytest.raises(error) as err:
        model.observe(obs)
    assert err.value.field == field
    assert model.hands_observed == len(HANDS_2P)
    for p in range(2):
        np.testing.assert_array_equal(model.response(p)[0], before[p])
        np.testing.assert_array_equal(model.opponent_model(p, 1 - p)[0], models[p])


def test_policy_is_the_default_for_the_first_h_hands():
    """Then the response, in full without a safety budget (the bankroll's mixture:
    test_limit_safety.py)."""
    game = LEDUC2P()
    model = build_model(game, PLAIN(hands_default=3, safety_budget=math.inf))
    hands = hands_2p(game)
    for obs in hands[:3]:
        np.testing.assert_array_equal(model.policy(0), model.default_strategy[0])
        np.testing.assert_array_equal(
            model.action_probabilities(1, 5), model.default_strategy[1, 5]
        )
        model.observe(obs)
    np.testing.assert_array_equal(model.policy(0), model.response(0)[0])
    np.testing.assert_array_equal(model.action_probabilities(1, 5), model.response(1)[0][5])


def test_same_seed_same_posterior():
    game = limit_game("leduc3p")
    hands = random_hands(game, 60, seed=13)
    models = [build_model(game, PLAIN(posterior="samples", k=3, seed=9)) for _ in "ab"]
    for model in models:
        for obs in hands:
            model.observe(obs)
    for p in range(3):
        np.testing.assert_array_equal(models[0].posterior(p), models[1].posterior(p))


def _as_restored(array: np.ndarray, how: str) -> np.ndarray:
    """``array`` as a restored snapshot may hold it: read-only, or a strided view."""
    if how == "read-only":
        copy = array.copy()
        copy.setflags(write=False)
        return copy
    if how == "strided":
        wide = np.zeros((*array.shape[:-1], 2 * array.shape[-1]))
        wide[..., ::2] = array
        return wide[..., ::2]
    return array.copy()


def test_the_joint_update_gives_the_same_bits_whatever_the_arrays_layout():
    """A session restored from a snapshot holds its weights in other arrays (read-only or
    strided: numba compiles another version of the kernel for each): the two-opponent update must
    give the same bits in every version, or the restored session parts from a fresh replay in the
    last bits (a reordered, vectorised sum differs between versions)."""
    rng = np.random.default_rng(7)
    k, r = 100, 3
    weights, a, bt = rng.random((k, k)), rng.random((k, r)), rng.random((r, k))
    results = []
    for how in ("plain", "read-only", "strided"):
        out, row, col = np.empty((k, k)), np.empty(k), np.empty(k)
        args = (_as_restored(weights, how), out, _as_restored(a, how), bt, 0.37, 1e-300, row, col)
        total = limit_kernels.update_joint2(*args)
        results.append((total, out.tobytes(), row.tobytes(), col.tobytes()))
    assert all(result == results[0] for result in results)


def test_the_joint_update_stores_no_subnormal_weight():
    """A floored weight times a likelihood below ~2e-8 falls under the smallest normal double, and
    every later operation on such a subnormal weight costs ~100x on x86 (the k = 100 sample
    posterior in 3p Kuhn ran at half its speed): the update stores it at the smallest normal
    double instead; every other weight has the plain arithmetic's bits."""
    rng = np.random.default_rng(8)
    k, tiny = 60, np.finfo(np.float64).tiny
    weights = np.where(rng.random((k, k)) < 0.5, rng.random((k, k)), 1e-310)
    a = rng.random((k, 2)) * 10.0 ** -rng.integers(0, 14, size=(k, 2))
    bt = rng.random((2, k))
    out, row, col = np.empty((k, k)), np.empty(k), np.empty(k)
    limit_kernels.update_joint2(weights, out, a, bt, 0.37, 1e-300, row, col)
    z = (0.0 + a[:, :1] * bt[:1]) + a[:, 1:] * bt[1:]  # the kernel's order of the rank terms
    plain = np.maximum(weights * 0.37, 1e-300) * z
    assert np.sum(plain < tiny) > 100  # the case is met
    np.testing.assert_array_equal(out, np.maximum(plain, tiny))
