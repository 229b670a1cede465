"""The safety bankroll: its guarantee, checked exactly by enumerating every hand of short matches,
the mixture it plays, the hypotheses it rules out, its snapshots and its validation."""

from __future__ import annotations

import argparse
import copy
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mbbr_support import kuhn_named_profile
from service_support import connected, kuhn_library, random_observations

from oppmodel.clients.cli import build_parser, main
from oppmodel.clients.commands._mbbr_options import add_mbbr_arguments, mbbr_config
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.kuhn import expected_values
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.mbbr.config import SAFETY_BUDGET, MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.mbbr.safety import mix_strategies
from oppmodel.modeling.observation import observe_hand
from oppmodel.modeling.play.tournament import seated_profile
from oppmodel.modeling.strategy import sample_history
from oppmodel.v1 import opponent_model_pb2 as pb

GAME = kuhn_game(3)
N = {name: robust_profile(name) for name in ("N1", "N2", "N3")}


def _outcomes(profile: np.ndarray, p: int):
    """Every (probability, chips won by position p, observation of p) of one hand."""
    out = []
    for k, deal in enumerate(GAME.deals):
        for t, node in enumerate(GAME.terminal_nodes):
            prob = 1.0 / len(GAME.deals)
            for i in range(int(GAME.path_len[t])):
                nd, a = int(GAME.path_nodes[t, i]), int(GAME.path_actions[t, i])
                prob *= profile[
                    GAME.node_player[nd], GAME.infoset_of[nd, deal[GAME.node_player[nd]]], a
                ]
            if prob > 0.0:
                history = GAME.histories[node]
                obs = observe_hand(GAME, p, history, [int(c) for c in deal])
                out.append((prob, float(GAME.payoffs[t, k, p]), obs))
    return out


def _enumerate(model, pair, hands: int, budget: float, hand: int = 0, spent: float = 0.0):
    """The exact expected chips MBBR wins over hands ``hand``..``hands - 1`` (position rotating
    hand % 3) against ``pair`` from this model state, summed over every deal and action. Along
    every path it checks the guarantee: the exact expected gains over the default so far sum to at
    least -budget per hand."""
    if hand == hands:
        return 0.0
    p = hand % 3
    us = model.default_strategy.copy()
    us[p] = model.policy(p)
    profile = seated_profile(GAME, p, us, pair)
    default = seated_profile(GAME, p, model.default_strategy, pair)
    gain = expected_values(GAME, profile)[p] - expected_values(GAME, default)[p]
    spent += gain
    assert spent >= -budget / 1000.0 * (hand + 1) - 1e-12, (hand, spent)
    by_observation: dict = {}
    total = 0.0
    for prob, won, obs in _outcomes(profile, p):
        total += prob * won
        by_observation[obs] = by_observation.get(obs, 0.0) + prob
    if hand + 1 < hands:
        for obs, prob in by_observation.items():
            after = copy.deepcopy(model)
            after.observe(obs)
            total += prob * _enumerate(after, pair, hands, budget, hand + 1, spent)
    return total


def _default_total(pair, hands: int) -> float:
    n1 = N["N1"]
    return sum(
        expected_values(GAME, seated_profile(GAME, t % 3, n1, pair))[t % 3] for t in range(hands)
    )


@pytest.mark.parametrize(
    ("first", "second", "budget"),
    [("N3", "N3", 0.0), ("N3", "N3", 5.0), ("N2", "N3", 5.0), ("N2", "N1", 20.0)],
)
def test_the_bound_holds_on_every_path_of_a_short_match(first, second, budget):
    """Every deal and action sequence of 3 hands, enumerated: the expected winnings are at least
    the default's minus the budget, and the running sum of exact gains stays above it on every
    path; plain MBBR (no budget) breaks the same bound, so the check can fail."""
    pair, hands = (N[first], N[second]), 3
    config = MBBRConfig(hands_default=0, safety_budget=budget)
    total = _enumerate(build_model(GAME, config), pair, hands, budget)
    floor = _default_total(pair, hands) - budget / 1000.0 * hands
    assert total >= floor - 1e-12
    with pytest.raises(AssertionError):
        plain = build_model(GAME, MBBRConfig(hands_default=0, safety_budget=math.inf))
        assert _enumerate(plain, pair, hands, budget) >= floor - 1e-12


@settings(max_examples=40, deadline=None)
@given(
    position=st.integers(0, 2),
    share=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_mixture_is_worth_the_mixture_of_the_values(position, share, seed):
    """Playing the candidate with probability ``share`` once per hand: the behaviour strategy's
    value is linear in the share, against any opponents."""
    rng = np.random.default_rng(seed)
    profile = rng.dirichlet([1.0, 1.0], size=(3, GAME.num_infosets))
    default = N["N1"][position]
    candidate = np.eye(2)[rng.integers(0, 2, GAME.num_infosets)]  # pure, as a best response is
    mixed = mix_strategies(GAME, position, default, candidate, share)

    def value(strategy):
        table = profile.copy()
        table[position] = strategy
        return expected_values(GAME, table)[position]

    want = (1.0 - share) * value(default) + share * value(candidate)
    assert value(mixed) == pytest.approx(want, abs=1e-12)


def _match(model, pair, hands: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for t in range(hands):
        p = t % 3
        us = model.default_strategy.copy()
        us[p] = model.policy(p)
        profile = seated_profile(GAME, p, us, pair)
        deal = [int(c) for c in rng.permutation(GAME.num_cards)[:3]]
        model.observe(observe_hand(GAME, p, sample_history(GAME, profile, deal, rng), deal))


def test_the_true_pair_stays_alive_and_the_others_can_die():
    model = build_model(GAME, MBBRConfig(hands_default=10))
    _match(model, (N["N2"], N["N3"]), 400, seed=4)
    safety = model._safety
    alive = {safety.hypotheses[h] for h in np.flatnonzero(safety.alive)}
    assert (1, 2) in alive  # N2 at offset 1, N3 at offset 2
    assert len(alive) < len(safety)
    assert (safety.bank >= -1e-12)[safety.alive].all()


def test_opponents_outside_the_family_lift_the_limit():
    """A first-position bet, which no member of the family makes, rules out every hypothesis
    about that seat: from then on the response is played in full."""
    model = build_model(GAME, MBBRConfig(hands_default=0, safety_budget=0.0))
    assert model.safety_share(0) == 0.0  # the prior's response is not safe to play at once
    model.observe(observe_hand(GAME, 2, "bpp", [0, 1, 2]))  # position 0 (offset 1) opens
    assert not model._safety.alive.any()
    for p in range(3):
        assert model.safety_share(p) == 1.0
        np.testing.assert_array_equal(model.policy(p), model.response(p)[0])


def test_a_budget_that_never_binds_plays_the_response():
    hands = 150
    pair = (kuhn_named_profile(GAME, "maniac"), N["N3"])
    loose = build_model(GAME, MBBRConfig(hands_default=20, safety_budget=1e12))
    plain = build_model(GAME, MBBRConfig(hands_default=20, safety_budget=math.inf))
    _match(loose, pair, hands, seed=1)
    _match(plain, pair, hands, seed=1)
    for p in range(3):
        np.testing.assert_array_equal(loose.policy(p), plain.policy(p))


def test_a_snapshot_restores_the_bankroll():
    config = MBBRConfig(hands_default=5)
    pair = (N["N3"], N["N2"])
    replayed = build_model(GAME, config)
    _match(replayed, pair, 60, seed=2)
    restored = build_model(GAME, config)
    restored.restore(replayed.snapshot())
    np.testing.assert_array_equal(restored._safety.bank, replayed._safety.bank)
    np.testing.assert_array_equal(restored._safety.alive, replayed._safety.alive)
    for p in range(3):
        np.testing.assert_array_equal(restored.policy(p), replayed.policy(p))
    plain = build_model(GAME, MBBRConfig(hands_default=5, safety_budget=math.inf))
    with pytest.raises(ValueError, match="other settings"):
        plain.restore(replayed.snapshot())


@pytest.mark.parametrize("budget", [-0.1, math.nan, "1", True, None])
def test_a_bad_budget_is_refused_naming_the_field(budget):
    with pytest.raises(InvalidArgumentError) as info:
        MBBRConfig(safety_budget=budget).validate()
    assert info.value.field == "safety_budget"


# --- exposure: CLI, API, service ------------------------------------------------------------------


def test_every_mbbr_command_takes_the_budget():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("match", "acpc-agent", "replay"):
        text = " ".join(subparsers.choices[command].format_help().split())
        assert "--mbbr-safety-budget" in text and "'inf': off" in text
    flags = argparse.ArgumentParser()
    add_mbbr_arguments(flags)
    assert mbbr_config(flags.parse_args([])).safety_budget == SAFETY_BUDGET
    assert mbbr_config(flags.parse_args(["--mbbr-safety-budget", "inf"])).safety_budget == math.inf
    assert mbbr_config(flags.parse_args(["--mbbr-safety-budget", "2"])).safety_budget == 2.0


def test_a_negative_budget_on_the_command_line_names_the_flag(capsys):
    with pytest.raises(SystemExit):
        main(["match", "--agents", "mbbr,n2,n3", "--mbbr-safety-budget", "-1"])
    assert "argument --mbbr-safety-budget: must be a number >= 0" in capsys.readouterr().err


def test_the_service_takes_keeps_and_checks_the_budget(tmp_path: Path):
    hands = random_observations(12, seed=3, profile="n3")
    with connected(tmp_path / "s.sqlite") as (client, _):
        stub = client._stub
        unset = stub.CreateSession(
            pb.CreateSessionRequest(
                config=pb.SessionConfig(
                    game="kuhn_poker(players=3)", our_label="us", opponent_labels=["a", "b"]
                )
            ),
            timeout=10,
        ).session
        assert unset.config.mbbr.safety_budget == SAFETY_BUDGET  # filled in
        off = client.create_session(config=MBBRConfig(safety_budget=math.inf, hands_default=0))
        tight = client.create_session(config=MBBRConfig(safety_budget=0.0, hands_default=0))
        assert (off.config.safety_budget, tight.config.safety_budget) == (math.inf, 0.0)
        with pytest.raises(InvalidArgumentError) as info:
            client.create_session(config=MBBRConfig(safety_budget=-2.0))
        assert info.value.field == "config.mbbr.safety_budget"
        for session in (off, tight):
            client.observe(session.session_id, hands, first_sequence=1)
    local = {  # a Kuhn session's model: the compiled kuhn3p's
        name: kuhn_library(MBBRConfig(safety_budget=budget, hands_default=0), hands)
        for name, budget in (("off", math.inf), ("tight", 0.0))
    }
    with connected(tmp_path / "s.sqlite") as (client, _):  # after a restart, as created
        assert client.get_session(off.session_id).config.safety_budget == math.inf
        assert client.get_session(tight.session_id).config.safety_budget == 0.0
        for name, session in (("off", off), ("tight", tight)):
            want = local[name].policy(0)
            for card in range(GAME.num_cards):
                got = client.action(session.session_id, position=0, card=card).probabilities
                np.testing.assert_allclose(got, want[GAME.infoset_index(0, card, "")], atol=1e-12)
