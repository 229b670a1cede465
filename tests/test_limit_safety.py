"""The safety bankroll in limit games: its guarantee, checked exactly by enumerating every deal and
action of short matches of compiled 3-player Kuhn and of Leduc; the kernels that price a hole's
candidate; ruling the hypothesis out; what is played once it is out; validation."""

from __future__ import annotations

import copy
import functools
import math

import numpy as np
import pytest

from oppmodel.modeling.evaluation import _limit_kernels as evaluation_kernels
from oppmodel.modeling.evaluation.limit import deal_lines, payoff_range
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.strategy import kuhn_profile_on
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.mbbr import snapshot
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.holes import hole_split
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.mbbr.safety import RULE_OUT_ODDS
from oppmodel.modeling.observation import observe_limit_hand
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.match import sample_terminal
from oppmodel.modeling.play.tournament import seated_profile


@functools.cache
def _paths(game):
    """Every terminal's path as (T, L) arrays of the mover, round, first information set and
    action at each step (padded with a step of probability 1: mover -1)."""
    tree = game.tree
    paths = []
    for node in np.flatnonzero(tree.node_terminal >= 0):
        path, at = [], int(node)
        while at > 0:
            parent = int(tree.node_parent[at])
            path.append((int(tree.node_player[parent]), int(tree.node_round[parent]),
                         int(tree.node_base[parent]), int(tree.node_action[at])))  # fmt: skip
            at = parent
        paths.append(path)
    steps = max(len(path) for path in paths)
    table = np.full((len(paths), steps, 4), -1, dtype=np.int64)
    for t, path in enumerate(paths):
        table[t, : len(path)] = path
    terminals = tree.node_terminal[np.flatnonzero(tree.node_terminal >= 0)]
    return terminals, table


def _outcomes(game, profile):
    """(deal, terminal, probability given the deal) arrays of every outcome of one hand under
    ``profile`` with positive probability: the product of the movers' probabilities along each
    terminal's path, by brute force (no kernel)."""
    terminals, table = _paths(game)
    mover, rnd, base, action = (np.maximum(table[..., j], 0) for j in range(4))
    views = game.tree.deal_view[rnd, :, mover]  # (T, L, D)
    steps = profile[mover[..., None], base[..., None] + views, action[..., None]]
    steps[table[..., 0] < 0] = 1.0
    prob = steps.prod(axis=1)  # (T, D)
    t, deals = np.nonzero(prob > 0.0)
    return deals, terminals[t], prob[t, deals]


def _payoffs(game, deals, terminals, p):
    tree = game.tree
    cls = tree.terminal_class[terminals]
    won = tree.share[cls, deals, p] * tree.terminal_pot[terminals]
    return won - tree.terminal_spent[terminals, p]


def _value_by_hole(game, profile, p):
    """Position p's exact expected chips given each of its holes (hole_split's index)."""
    holes = hole_split(game).hole_of_deal[p]
    deals, terminals, probs = _outcomes(game, profile)
    total = np.bincount(holes[deals], probs * _payoffs(game, deals, terminals, p))
    return total / np.bincount(holes)


def _enumerate(game, model, pair, hands, budget, hand=0, spent=0.0, *, truth=None):
    """The exact expected chips MBBR wins over hands ``hand``..``hands - 1`` (position rotating)
    against ``pair`` from this model state, over every deal and action. Along every path on which
    the true hypothesis is alive (``truth``, an index into the bankroll's hypotheses; None: every
    hypothesis alive) it checks the guarantee: the exact expected gains over the default, each
    hand's over all deals (``spent``: the sum so far), sum to at least -budget per hand, and so
    does the sum with this hand's gain given any one hole (a plain model is checked too: it must
    fail)."""
    n = game.num_players
    p = hand % n
    us = model.default_strategy.copy()
    us[p] = model.policy(p)
    profile = seated_profile(game, p, us, pair)
    default = seated_profile(game, p, model.default_strategy, pair)
    gain_by_hole = _value_by_hole(game, profile, p) - _value_by_hole(game, default, p)
    holes = hole_split(game).hole_of_deal[p]
    deals, terminals, probs = _outcomes(game, profile)
    probs = probs / game.num_deals
    total = float(probs @ _payoffs(game, deals, terminals, p))
    gain = float(gain_by_hole @ np.bincount(holes)) / game.num_deals  # over every deal
    safety = model._safety
    if safety is None or (safety.alive.all() if truth is None else safety.alive[truth]):
        floor = -budget / 1000.0 * (hand + 1) - 1e-12
        assert spent + gain >= floor, (hand, spent + gain)
        for hole in np.unique(holes[deals]):
            assert spent + gain_by_hole[hole] >= floor, (hand, spent + gain_by_hole[hole])
    if hand + 1 == hands:
        return total
    by_observation: dict = {}
    for deal, t, prob in zip(deals, terminals, probs, strict=True):
        obs = observe_limit_hand(game, p, int(deal), int(t))
        by_observation[obs] = by_observation.get(obs, 0.0) + prob
    for obs, prob in by_observation.items():
        after = copy.deepcopy(model, {id(game): game, id(model._holes): model._holes})
        after.observe(obs)
        later = _enumerate(game, after, pair, hands, budget, hand + 1, spent + gain, truth=truth)
        total += prob * later
    return total


def _default_total(game, default, pair, hands):
    from oppmodel.modeling.evaluation.limit import expected_values

    n = game.num_players
    return sum(
        expected_values(game, seated_profile(game, t % n, default, pair))[t % n]
        for t in range(hands)
    )


@pytest.mark.parametrize(("name", "hands", "budget"), [("kuhn3p", 3, 0.0), ("kuhn3p", 3, 5.0)])
def test_the_bound_holds_on_every_path_against_the_default(name, hands, budget):
    """Compiled 3-player Kuhn with N3 as the default and prior mean (as the guard), against two
    N3 players: every deal and action of 3 hands enumerated. The running sum of exact gains per
    (position, hole) stays above -budget per hand on every path, and the expected winnings are
    the default's minus at most the budget; plain MBBR breaks the same bound."""
    game = limit_game(name)
    n3 = kuhn_profile_on(game, robust_profile("N3"))
    pair = (n3, n3)
    config = MBBRConfig(hands_default=0, safety_budget=budget)
    model = build_model(game, config, default_strategy=n3, prior_mean=n3)
    total = _enumerate(game, model, pair, hands, budget)
    floor = _default_total(game, n3, pair, hands) - budget / 1000.0 * hands
    assert total >= floor - 1e-12
    plain = build_model(
        game,
        MBBRConfig(hands_default=0, safety_budget=math.inf),
        default_strategy=n3,
        prior_mean=n3,
    )
    with pytest.raises(AssertionError):
        assert _enumerate(game, plain, pair, hands, budget) >= floor - 1e-12


def test_the_bound_holds_on_every_path_of_leduc():
    """Two-player Leduc, its bundled CFR strategy as the default and the opponent, the response
    from the first hand: every deal and action of 2 hands enumerated (the expectation allows
    for the hypothesis being ruled out on the paths where the opponent's rarest moves make it
    look unlike the default). Plain MBBR breaks the bound on the first hand."""
    game = limit_game("leduc2p")
    config = MBBRConfig(hands_default=0, safety_budget=1.0)
    model = build_model(game, config)
    pair = (model.default_strategy,)
    total = _enumerate(game, model, pair, 2, 1.0)
    ruled_out = 2 * payoff_range(game) / RULE_OUT_ODDS  # the docstring's second term
    floor = _default_total(game, model.default_strategy, pair, 2) - 1.0 / 1000.0 * 2
    assert total >= floor - ruled_out - 1e-12
    plain = build_model(game, MBBRConfig(hands_default=0, safety_budget=math.inf))
    with pytest.raises(AssertionError):
        _enumerate(game, plain, pair, 2, 1.0)


@pytest.mark.parametrize("name", ["kuhn3p", "leduc2p", "leduc3p"])
def test_a_holes_value_from_the_leaf_table_is_the_sweeps(name):
    """own_strategy_value over fixed_others_leaf_values equals the full sweep's value and own
    reach, hole by hole, for random profiles."""
    game = limit_game(name)
    split = hole_split(game)
    rng = np.random.default_rng(3)
    profile = rng.dirichlet([1.0, 1.0, 1.0], size=(game.num_players, game.num_infosets))
    profile *= game.legal_mask
    profile /= profile.sum(axis=2, keepdims=True)
    for p in range(game.num_players):
        for h, tree in enumerate(split.subtrees[p][:3]):
            cfv = np.zeros((game.num_infosets, 3))
            want_reach = np.zeros(game.num_infosets)
            choice = np.empty(0, dtype=np.int64)
            want = evaluation_kernels.sweep(tree, profile, p, False, cfv, want_reach, choice)
            columns, views = deal_lines(game, p, tree)
            leaf = np.zeros((game.num_terminals, views.shape[1]))
            evaluation_kernels.fixed_others_leaf_values(tree, profile, p, columns, leaf)
            reach = np.empty((len(tree.node_player), views.shape[1]))
            got_reach = np.zeros(game.num_infosets)
            got = evaluation_kernels.own_strategy_value(
                game.tree, profile[p], p, views, leaf, reach, got_reach
            )
            assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
            rows = split.infosets_of_hole[p][h]
            np.testing.assert_allclose(got_reach[rows], want_reach[rows], rtol=0, atol=1e-15)


def _play(model, game, pair, hands, seed, *, twin=None):
    """A seeded match of ``model`` (and ``twin``, fed the same hands) against fixed ``pair``."""
    rng = np.random.default_rng(seed)
    n = game.num_players
    for t in range(hands):
        p = t % n
        us = model.default_strategy.copy()
        us[p] = model.policy(p)
        profile = seated_profile(game, p, us, pair)
        deal = int(rng.integers(game.num_deals))
        obs = observe_limit_hand(game, p, deal, sample_terminal(game, profile, deal, rng))
        model.observe(obs)
        if twin is not None:
            twin.observe(obs)


def test_against_the_default_pair_the_hypothesis_lives_and_the_bank_holds():
    game = limit_game("leduc3p")
    model = build_model(game, MBBRConfig(hands_default=10))
    pair = (model.default_strategy, model.default_strategy)
    _play(model, game, pair, 120, seed=5)
    safety = model._safety
    assert safety.alive.all()
    assert safety.bank[0] >= -1e-12
    assert safety.log_odds[0] < math.log(RULE_OUT_ODDS)


def test_a_maniac_is_ruled_out_and_then_the_response_is_played_in_full():
    """Against cfr + maniac the hypothesis "both play the default" dies within a few hands; from
    then on the policy is bit for bit the plain model's fed the same hands."""
    game = limit_game("leduc3p")
    model = build_model(game, MBBRConfig(hands_default=0))
    plain = build_model(game, MBBRConfig(hands_default=0, safety_budget=math.inf))
    pair = (fixed_profile(game, "cfr"), fixed_profile(game, "maniac"))
    _play(model, game, pair, 12, seed=2, twin=plain)
    assert not model._safety.alive.any()
    for p in range(3):
        np.testing.assert_array_equal(model.policy(p), plain.policy(p))
        assert model.safety_share(p, 0) == 1.0


def test_once_every_hypothesis_is_out_a_hand_books_the_budget_alone():
    """With no live hypothesis every share is 1 and every gain 0: observing a hand adds the
    budget to the bank and solves no response (the old code solved the hole played for its
    candidate rows, then discarded them)."""
    game = limit_game("leduc3p")
    model = build_model(game, MBBRConfig(hands_default=0))
    pair = (fixed_profile(game, "cfr"), fixed_profile(game, "maniac"))
    _play(model, game, pair, 12, seed=2)
    assert not model._safety.alive.any()
    model._lazy.clear()
    bank = model._safety.bank.copy()
    for deal, terminal in ((5, 3), (40, 17)):
        model.observe(observe_limit_hand(game, deal % 3, deal, terminal))
        bank = bank + model._safety.budget_chips
        assert not model._lazy  # no response solved
        np.testing.assert_array_equal(model._safety.bank, bank)


def test_the_mixture_is_played_and_its_share_reported():
    """With a zero budget and the response from the first hand, what is played at a hole whose
    response loses against the default is the default; safety_share says so."""
    game = limit_game("leduc2p")
    model = build_model(game, MBBRConfig(hands_default=0, safety_budget=0.0))
    split = hole_split(game)
    shares = [model.safety_share(0, int(rows[0])) for rows in split.infosets_of_hole[0]]
    assert all(0.0 <= s <= 1.0 for s in shares)
    policy = model.policy(0)
    for h, rows in enumerate(split.infosets_of_hole[0]):
        if shares[h] == 0.0:
            np.testing.assert_array_equal(policy[rows], model.default_strategy[0, rows])
        row = model.action_probabilities(0, int(rows[0]))
        np.testing.assert_array_equal(row, policy[rows[0]])


def test_a_bad_observation_leaves_the_bankroll_as_it_was():
    game = limit_game("leduc2p")
    model = build_model(game, MBBRConfig(hands_default=0))
    good = observe_limit_hand(game, 0, 7, 3)
    model.observe(good)
    before = model._safety.state()
    bad = type(good)(0, good.betting, ("Zz", None), good.board)
    with pytest.raises(Exception):  # noqa: B017  the error type is test_limit_mbbr's subject
        model.observe(bad)
    after = model._safety.state()
    for key, value in before.items():
        np.testing.assert_array_equal(after[key], value)


def test_payoff_range_of_leduc3p():
    """The most a Leduc 3p hand can swing one position: win the others' 2 x 13 chips or lose
    one's own 13 (ante 1, two raises of 2, two of 4)."""
    assert payoff_range(limit_game("leduc3p")) == 39.0


def test_the_bankroll_is_in_the_snapshot():
    """Restore after 25 hands the default played (the hypothesis alive: the bank binds), observe
    the rest: the bankroll and the policy equal the model's that saw every hand; a snapshot
    without the bankroll (taken before limit games had one) is refused and changes nothing."""
    game = limit_game("leduc2p")
    config = MBBRConfig(hands_default=0)
    whole = build_model(game, config)
    part = build_model(game, config)
    rng = np.random.default_rng(8)
    hands = []
    for t in range(40):
        deal = int(rng.integers(game.num_deals))
        terminal = sample_terminal(game, whole.default_strategy, deal, rng)
        hands.append(observe_limit_hand(game, t % 2, deal, terminal))
    for obs in hands:
        whole.observe(obs)
    for obs in hands[:25]:
        part.observe(obs)
    blob = part.snapshot()
    restored = build_model(game, config)
    restored.restore(blob)
    for obs in hands[25:]:
        restored.observe(obs)
    assert whole._safety.alive.all()
    for name, array in whole._safety.state().items():
        np.testing.assert_array_equal(restored._safety.state()[name], array)
    for p in range(2):
        np.testing.assert_array_equal(restored.policy(p), whole.policy(p))
    meta, arrays = snapshot.decode(blob)
    without = snapshot.encode(meta, {k: a for k, a in arrays.items() if not k.startswith("safety")})
    fresh = build_model(game, config)
    with pytest.raises(snapshot.SnapshotError):
        fresh.restore(without)
    assert fresh.hands_observed == 0
    assert fresh._safety.bank[0] == 0.0


def test_the_bankroll_counts_in_the_models_memory():
    game = limit_game("leduc3p")
    safe = build_model(game, MBBRConfig())
    plain = build_model(game, MBBRConfig(safety_budget=math.inf))
    leaf_tables = game.num_terminals * 8 * sum(len(h) for h in hole_split(game).subtrees)
    assert safe.nbytes() - plain.nbytes() >= leaf_tables


def test_in_compiled_kuhn3p_the_hypotheses_are_the_equilibrium_family():
    """3-player Kuhn keeps the paper's guard set on the one stack: every opponent at each seat
    offset plays N1, N2 or N3 (9 hypotheses). Against N2 at offset 1 and N3 at offset 2 that
    hypothesis stays alive, its bankroll holds, and others die."""
    game = limit_game("kuhn3p")
    model = build_model(game, MBBRConfig(hands_default=10))
    n = {name: kuhn_profile_on(game, robust_profile(name)) for name in ("N1", "N2", "N3")}
    _play(model, game, (n["N2"], n["N3"]), 400, seed=4)
    safety = model._safety
    assert len(safety) == 9
    alive = {safety.hypotheses[h] for h in np.flatnonzero(safety.alive)}
    assert (1, 2) in alive  # N2 at offset 1, N3 at offset 2
    assert len(alive) < len(safety)
    assert (safety.bank >= -1e-12)[safety.alive].all()


def _observation_probabilities(game, profile, p):
    """Every observation position ``p`` can make of one hand under ``profile``, with its
    probability."""
    deals, terminals, probs = _outcomes(game, profile)
    out: dict = {}
    for deal, t, prob in zip(deals, terminals, probs / game.num_deals, strict=True):
        obs = observe_limit_hand(game, p, int(deal), int(t))
        out[obs] = out.get(obs, 0.0) + prob
    return out


@pytest.mark.parametrize("truth", [(1, 2), (2, 2)])
def test_the_rule_out_odds_are_the_models_and_the_other_hypotheses_half_and_half(truth):
    """After one hand of compiled 3-player Kuhn the odds against the true pair (N2 + N3, N3 + N3)
    are exactly 1/2 the models' likelihood ratio plus 1/16 of each other hypothesis's, each
    computed here from that profile's own probability of what was seen; under the truth their
    expectation is at most 1, which is what Ville's bound needs."""
    game = limit_game("kuhn3p")
    model = build_model(game, MBBRConfig())
    safety = model._safety
    us = model.default_strategy.copy()
    us[0] = model.policy(0)
    models = model._models_profile(0).copy()
    models[0] = us[0]
    chances = [
        _observation_probabilities(
            game, seated_profile(game, 0, us, [safety.guards[g] for g in hypothesis]), 0
        )
        for hypothesis in safety.hypotheses
    ]
    by_models = _observation_probabilities(game, models, 0)
    o = safety.hypotheses.index(truth)
    expectation = 0.0
    for obs, prob in chances[o].items():
        others = sum(c.get(obs, 0.0) for j, c in enumerate(chances) if j != o)
        want = (by_models[obs] / 2 + others / 16) / prob
        after = copy.deepcopy(model, {id(game): game, id(model._holes): model._holes})
        after.observe(obs)
        got = math.exp(after._safety.mixture_log_odds(o))
        assert got == pytest.approx(want, rel=1e-9), obs
        expectation += prob * got
    assert expectation <= 1.0 + 1e-12
    assert expectation > 0.5  # the models and the pairs that contain the truth's support


def test_against_two_different_guards_the_mixture_rules_out_the_pairs_they_are_not_early():
    """Against N1 + N3 the models alone need hundreds of hands to make N3 + N3 a billion times
    less likely than themselves (N1 never bets in the second position, N3 sometimes does); with
    the true pair among the alternatives it is ruled out within 450 hands, and the truth lives."""
    game = limit_game("kuhn3p")
    model = build_model(game, MBBRConfig())
    n = {name: kuhn_profile_on(game, robust_profile(name)) for name in ("N1", "N3")}
    _play(model, game, (n["N1"], n["N3"]), 450, seed=3)
    safety = model._safety
    alive = {safety.hypotheses[h] for h in np.flatnonzero(safety.alive)}
    assert alive == {(0, 2)}


def test_a_pair_of_different_members_left_alone_anchors_what_the_bank_holds_back():
    """Against N2 + N3 every other hypothesis is out by hand 450, and the bank of the true pair
    (near 0) holds the response back. What is then played in the first position is mixed not
    with the default but with a best response to that pair (no Nash profile, whatever we play):
    exactly, it wins at least the best response's value less the bank and the hand's budget,
    most of the 1/48 chip a hand the pair is worth there (the old rule played the default's
    -31.2 mA/h less 1.5: -32.7, where the best response wins -10.4)."""
    from oppmodel.modeling.evaluation.limit import best_response, expected_values

    game = limit_game("kuhn3p")
    model = build_model(game, MBBRConfig())
    n = {name: kuhn_profile_on(game, robust_profile(name)) for name in ("N2", "N3")}
    pair = (n["N2"], n["N3"])
    _play(model, game, pair, 450, seed=3)
    safety = model._safety
    (truth,) = np.flatnonzero(safety.alive)
    assert safety.hypotheses[truth] == (1, 2)  # N2 at offset 1, N3 at offset 2
    p = 0
    at_default = seated_profile(game, p, model.default_strategy, pair)
    default, best = expected_values(game, at_default)[p], best_response(game, at_default, p)[1]
    us = model.default_strategy.copy()
    us[p] = model.policy(p)
    played = expected_values(game, seated_profile(game, p, us, pair))[p]
    assert best - default == pytest.approx(1 / 48)  # the pair's worth in the first position
    assert played >= best - (max(safety.bank[truth], 0.0) + safety.budget_chips) - 1e-12
    assert played - default > 0.5 * (best - default)
