"""The mixture prior of limit games (``modeling/mbbr/mixture_prior.py``): its type weights against
exact fractions, its mean against the three types' own posteriors, which type wins against
which player, and the criterion it was built for: on the real Leduc logs MBBR predicts the
card-blind example players at least as well as counts by the end of the log."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from acpc_support import DATA
from test_limit_mbbr import random_hands

from oppmodel.clients.acpc.log import read_log
from oppmodel.clients.acpc.replay import LocalModels, replay
from oppmodel.clients.acpc.replay_games import ReplayGame
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.mixture_prior import TYPE_WEIGHTS, TYPES
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.server.session_spec import SessionSpec

# the posteriors themselves (change detection, a bank of them, is test_limit_change.py's)
MIXTURE = MBBRConfig(hands_default=0, prior="mixture", seed=1, change_hazard=0.0)
LOGS = {name: DATA / f"{name}-seed42-example-players.log" for name in ("leduc2p", "leduc3p")}


def card_blind_profile(game):
    """The ACPC example player: fold, call, raise with weights 0.06, 0.47, 0.47 over the legal
    actions, whatever its cards."""
    weights = np.where(game.legal_mask, [0.06, 0.47, 0.47], 0.0)
    return weights / weights.sum(axis=2, keepdims=True)


def exact_weights(game, informed_alpha0, decisions) -> list[Fraction]:
    """The types' posterior probabilities by the chain rule in exact fractions: each revealed
    move's predictive probability under each type given the revealed moves before it, from
    the replay's own list of decisions (information set and betting node)."""
    legal = game.legal_mask
    likelihood = [Fraction(1)] * 3
    counts: list[dict] = [{}, {}, {}]  # per type: row -> action counts
    for q, infoset, node, action in decisions:
        rows = [infoset, infoset, node]
        alphas = [
            [Fraction(float(a)) for a in informed_alpha0[infoset]],
            [Fraction(2) if ok else Fraction(0) for ok in legal[q, infoset]],
            [Fraction(2) if ok else Fraction(0) for ok in legal[q, infoset]],
        ]
        for k in range(3):
            seen = counts[k].setdefault(rows[k], [0, 0, 0])
            total = sum(alphas[k]) + sum(seen)
            likelihood[k] *= (alphas[k][action] + seen[action]) / total
            seen[action] += 1
    joint = [Fraction(w) * lk for w, lk in zip(TYPE_WEIGHTS, likelihood, strict=True)]
    return [j / sum(joint) for j in joint]


def test_the_type_weights_are_the_exact_posterior_of_the_revealed_moves():
    game = limit_game("leduc2p")
    rules = ReplayGame(game)
    hands = read_log(LOGS["leduc2p"]).hands[:60]
    model = build_model(game, MIXTURE)
    p = 0
    revealed = []
    for hand in hands:
        obs = rules.observation(hand, p)
        for dec in rules.decisions(hand, obs):
            if dec.infoset is not None:
                revealed.append((dec.position, dec.infoset, dec.node, dec.action))
        model.observe(obs)
    assert len(revealed) > 60 and len({r[2] for r in revealed}) < len({r[1] for r in revealed})
    mixture = model._mixture[p]
    exact = exact_weights(game, mixture.informed_alpha0[0], revealed)
    got = mixture.weights(1)
    assert got.sum() == pytest.approx(1.0, abs=1e-12)
    for k in range(3):
        assert got[k] == pytest.approx(float(exact[k]), rel=1e-9, abs=1e-300), TYPES[k]
    assert max(exact) > Fraction(999, 1000)  # the evidence decides, here for a card-blind player
    assert int(np.argmax(got)) == TYPES.index("card-blind")


@pytest.mark.parametrize("game_name", ["leduc2p", "leduc3p"])
def test_the_model_is_the_weighted_mean_of_the_three_types_posteriors(game_name):
    game = limit_game(game_name)
    hands = random_hands(game, 120, seed=4, profile=card_blind_profile(game))
    mixture = build_model(game, MIXTURE)
    plain = MBBRConfig(hands_default=0, seed=1, change_hazard=0.0)
    informed = build_model(game, plain)
    uninformed = build_model(game, dataclasses.replace(plain, prior="uninformed"))
    n, p = game.num_players, 1
    blind = np.zeros((n, game.num_nodes, 3))  # every move of each opponent, by node
    rules_tree = game.tree
    for obs in hands:
        for model in (mixture, informed, uninformed):
            model.observe(obs)
        if obs.position != p:
            continue
        node = 0
        for letter in obs.betting.replace("/", ""):
            q, action = int(rules_tree.node_player[node]), "fcr".index(letter)
            blind[q, node, action] += q != p
            node = int(rules_tree.node_children[node, action])
    for d in range(1, n):
        q = (p + d) % n
        w = mixture._mixture[p].weights(d)
        rows = list(game.infosets(q))
        nodes = game.infoset_node[q][rows]
        counts = np.where(game.legal_mask[q, rows], 2.0, 0.0) + blind[q, nodes]
        expected = (
            w[0] * informed.opponent_model(p, q)[0][rows]
            + w[1] * uninformed.opponent_model(p, q)[0][rows]
            + w[2] * counts / counts.sum(axis=1, keepdims=True)
        )
        got = mixture.opponent_model(p, q)[0][rows]
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-12)
        assert np.all(got[~game.legal_mask[q, rows]] == 0.0)


@pytest.mark.parametrize(
    ("player", "winner"),
    [("cfr", "informed"), ("card-blind", "card-blind"), ("uniform", "card-blind")],
)
def test_the_revealed_moves_pick_the_type_that_plays_like_the_opponent(player, winner):
    game = limit_game("leduc2p")
    profile = {"cfr": build_model(game).prior_mean, "card-blind": card_blind_profile(game)}
    hands = random_hands(game, 300, seed=8, profile=profile.get(player))
    model = build_model(game, MIXTURE)
    for obs in hands:
        model.observe(obs)
    for p in range(2):
        assert model._mixture[p].weights(1)[TYPES.index(winner)] > 0.99


@pytest.mark.parametrize("eta", [4.0, 1.0])
def test_a_player_who_looks_at_its_cards_unlike_the_prior_mean_is_uninformed(eta):
    """Always raise with a king, always call otherwise: card-aware, far from the CFR strategy
    (early on its pure moves fit the card-blind type best, node by node; the data then tells).
    Whatever eta, the informed prior's pull: were the informed type Dirichlet(1 x the mean) it
    would put its mass near pure strategies and explain this player better than the uninformed
    type (whose weight fell to 4e-52 when the type followed eta)."""
    game = limit_game("leduc2p")
    profile = np.where(game.legal_mask, 1e-9, 0.0)
    for q in range(2):
        for i in game.infosets(q):
            act = 2 if game.infoset_string(q, i).startswith("K") else 1
            profile[q, i, act if game.legal_mask[q, i, act] else 1] = 1.0
    profile /= profile.sum(axis=2, keepdims=True)
    model = build_model(game, dataclasses.replace(MIXTURE, eta=eta))
    for obs in random_hands(game, 1000, seed=3, profile=profile):
        model.observe(obs)
    assert model._mixture[0].weights(1)[TYPES.index("uninformed")] > 0.99


def test_the_informed_type_has_a_concentration_of_its_own():
    """Dirichlet(mixture_eta x the clipped mean), eta left to the informed prior; a session
    stored before mixture_eta existed (its spec without the key) keeps eta's, as it was built."""
    game = limit_game("leduc2p")

    def informed_alpha0(config: MBBRConfig) -> np.ndarray:
        return build_model(game, config)._mixture[0].informed_alpha0

    legal = game.legal_mask[1]
    assert MIXTURE.mixture_eta == 4.0
    for eta in (1.0, 4.0, 9.0):
        alpha = informed_alpha0(dataclasses.replace(MIXTURE, eta=eta))
        np.testing.assert_allclose(alpha[0].sum(axis=1)[legal.any(axis=1)], 4.0)
    alpha = informed_alpha0(dataclasses.replace(MIXTURE, eta=1.0, mixture_eta=2.5))
    np.testing.assert_allclose(alpha[0].sum(axis=1)[legal.any(axis=1)], 2.5)
    spec = SessionSpec("leduc2p", 2, "us", ("them",), dataclasses.replace(MIXTURE, eta=3.0))
    stored = spec.to_json()
    del stored["config"]["mixture_eta"]
    config = SessionSpec.from_json(stored).config
    assert config.mixture_eta == 3.0
    np.testing.assert_allclose(informed_alpha0(config)[0].sum(axis=1)[legal.any(axis=1)], 3.0)
    with pytest.raises(InvalidArgumentError) as info:
        dataclasses.replace(MIXTURE, mixture_eta=0.0).validate()
    assert info.value.field == "mixture_eta"


def test_the_mixture_needs_the_dirichlet_posterior():
    with pytest.raises(InvalidArgumentError, match="'mixture' needs the 'dirichlet' posterior"):
        build_model(limit_game("leduc2p"), MBBRConfig(prior="mixture", posterior="samples"))


@pytest.mark.parametrize(("name", "hands"), [("leduc2p", 1200), ("leduc3p", 600)])
def test_on_the_real_logs_mbbr_predicts_at_least_as_well_as_counts_by_the_end(name, hands):
    """Replay from Alice's seat; the last third of the hands, every opponent decision (hidden
    cards predicted by each method's marginal). The whole logs are in experiments/RESULTS.md."""
    game = limit_game(name)
    logged = read_log(LOGS[name]).hands[:hands]
    config = MBBRConfig(seed=2, prior="mixture", safety_budget=math.inf)  # no response asked
    report = replay(game, logged, "Alice", lambda labels: LocalModels(game, config), config=config)
    late = report.late_every
    assert late["mbbr"].decisions > 500
    assert late["mbbr"].log_loss < late["counts"].log_loss - 0.02
    assert math.isfinite(late["prior"].log_loss)
