"""MBBR's response in hold'em (modeling/holdem/response.py): the best response to the posterior
mean, its share of the hands within the safety budget against the blueprint's play on the check
sample, and the agent playing real hands through the match engine; in 2-player hold'em and in a
3-player hold'em of one raise a round (whose abstract game compiles)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from holdem_support import SMALL, SMALL_CARDS, one_raise_3p

from oppmodel.modeling.evaluation.limit import best_response, expected_values
from oppmodel.modeling.games.acpc.abstraction import card_abstraction
from oppmodel.modeling.games.acpc.holdem_abstract import AbstractGameConfig, abstract_game
from oppmodel.modeling.holdem import response
from oppmodel.modeling.holdem.match import HoldemGame, PolicyAgent, play_holdem_match
from oppmodel.modeling.holdem.posterior import AbstractSpots, HoldemPosterior
from oppmodel.modeling.holdem.response import HoldemMBBR, HoldemMBBRAgent
from oppmodel.modeling.holdem.styles import holdem_policy
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.solve.cfr import CFRSolver

CHECK = AbstractGameConfig(SMALL_CARDS, deals=200, seed=3)
ITERATIONS = 50


@pytest.fixture(scope="module", params=["holdem2p", "3p"])
def parts(request, tmp_path_factory) -> tuple[AbstractSpots, np.ndarray, object]:
    rules = request.param
    if rules == "3p":
        rules = one_raise_3p(tmp_path_factory.mktemp("game"))
    game = abstract_game(rules, SMALL)
    spots = AbstractSpots(game, SMALL, card_abstraction(SMALL_CARDS))
    solver = CFRSolver(game)  # a blueprint: near an equilibrium of the small abstract game
    solver.run(ITERATIONS)
    return spots, solver.average_profile(), abstract_game(rules, CHECK)


def _model(
    parts, budget: float, hands_default: int = 0, refresh: int = 20, lag: int = 0
) -> HoldemMBBR:
    spots, blueprint, check = parts
    config = MBBRConfig(hands_default=hands_default)
    posterior = HoldemPosterior(spots, blueprint, config)
    return HoldemMBBR(posterior, check, config, refresh=refresh, budget=budget, lag=lag)


def _play(model: HoldemMBBR, opponent: str, hands: int, seed: int) -> HoldemMBBRAgent:
    spots = model.posterior.spots
    game = HoldemGame("holdem", spots.game.gamedef)
    agent = HoldemMBBRAgent("mbbr", model, seed)
    policy = holdem_policy(opponent, game.gamedef)
    others = [PolicyAgent(opponent, policy, seed + d) for d in range(1, game.num_players)]
    play_holdem_match(game, [agent, *others], game.deal_sequence(hands, seed))
    return agent


@pytest.mark.parametrize("budget", [1.0, 1e6])
def test_the_response_is_the_best_response_to_the_posterior_and_keeps_the_budget(
    parts, budget: float
) -> None:
    model = _model(parts, budget, hands_default=20)
    _play(model, "maniac", 20, seed=1)
    assert model.solved_at == 20 and model.posterior.hands == 20
    spots, blueprint, check = parts
    chips = check.rate_unit.to_chips(budget)
    for p in range(spots.game.num_players):
        expected, _ = best_response(spots.game, model.posterior.models_profile(p), p)
        assert np.array_equal(model.strategies[p], expected)
        # per-hand mixing: what the share plays is worth share x response + rest x blueprint
        against = blueprint.copy()
        against[p] = model.strategies[p]
        own = expected_values(check, blueprint)[p]
        response = expected_values(check, against)[p]
        share, loss = model.shares[p], own - response
        assert model.losses[p] == pytest.approx(loss, rel=1e-12, abs=1e-12)
        assert 0.0 <= share <= 1.0
        # the blueprint hypothesis alive, the share is what the bank and this hand's budget
        # cover: the bank is 20 hands of budget, nothing spent before the first solve
        assert model.bank == pytest.approx(20 * chips, rel=1e-12)
        if model.ruled_out or loss <= 0.0:
            assert share == 1.0
        else:
            assert share == pytest.approx(min(1.0, 21 * chips / loss), rel=1e-12)
            assert share * response + (1 - share) * own >= own - 21 * chips - 1e-9


def test_the_bank_covers_every_hands_expected_loss_until_the_blueprint_is_ruled_out(
    parts,
) -> None:
    model = _model(parts, 1.0, hands_default=10, refresh=10)
    spent = 0.0
    n = parts[0].game.num_players
    for seed in range(40):
        p = seed % n
        share, loss, alive = model.shares[p], model.losses[p], not model.ruled_out
        _play(model, "calling-station", 1, seed=100 + seed)
        if alive:
            spent += share * loss
            assert spent <= model.hands * model.budget_chips + 1e-9
            assert model.bank == pytest.approx(model.hands * model.budget_chips - spent)
    # a calling station never raises where the blueprint does: 40 hands rule the blueprint out,
    # and the response then plays every hand
    assert model.ruled_out and model.shares == [1.0] * n


def test_the_agent_plays_the_blueprint_for_h_hands_then_solves_every_refresh(parts) -> None:
    model = _model(parts, 1e6, hands_default=10, refresh=15)
    _play(model, "calling-station", 9, seed=2)
    assert model.solved_at == -1
    assert np.array_equal(model.strategies[0], parts[1][0])
    _play(model, "calling-station", 1, seed=3)
    assert model.solved_at == 10
    _play(model, "calling-station", 14, seed=4)
    assert model.solved_at == 10
    _play(model, "calling-station", 1, seed=5)
    assert model.solved_at == 25 and model.posterior.hands == 25


class _Recorder(HoldemMBBRAgent):
    """The agent, keeping every hand it saw."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.seen: list = []

    def end_hand(self, obs) -> None:
        self.seen.append(obs)
        super().end_hand(obs)


def test_a_solve_beside_the_model_plays_lag_hands_after_it_began_what_it_solved(
    parts, monkeypatch
) -> None:
    """With ``lag``, a solve begun after hand s runs on a thread of its own from a copy of the
    fits and takes effect after hand s + lag exactly, whatever its thread's timing: the responses,
    losses and refitted prior the inline solve of a posterior fed the same hands gives (the
    earlier solve's prior made its prior after hand s + lag); until then the old response plays
    and nothing waits for the solve (the first one is held back here till hand 14)."""
    spots, blueprint, check = parts
    recorder = _Recorder("mbbr", _model(parts, 1e6, hands_default=10), 5)
    game = HoldemGame("holdem", spots.game.gamedef)
    others = [
        PolicyAgent("maniac", holdem_policy("maniac", game.gamedef), 5 + d)
        for d in range(1, game.num_players)
    ]
    play_holdem_match(game, [recorder, *others], game.deal_sequence(40, 5))
    lagged = _model(parts, 1e6, hands_default=10, refresh=20, lag=5)
    oracle: dict[int, response.Solution] = {}
    for began in (10, 30):  # the oracle: a posterior fed the hands, the solve inline
        posterior = HoldemPosterior(spots, blueprint, lagged.config)
        for hand, obs in enumerate(recorder.seen[:began], start=1):
            posterior.observe(obs)
            if hand == 15:
                posterior.set_prior(oracle[10][0], oracle[10][1])
        oracle[began] = response.solved(posterior, check, lagged._blueprint_ev)
    held = threading.Event()
    real = response.best_response

    def held_back(*args):
        assert held.wait(60)
        return real(*args)

    monkeypatch.setattr(response, "best_response", held_back)
    for hand, obs in enumerate(recorder.seen, start=1):
        lagged.observe(obs)
        if hand in (10, 30):
            assert lagged.pending is not None and lagged.pending.started_at == hand
        if hand < 15:  # the first solve is held: the blueprint plays on
            assert lagged.solved_at == -1 and lagged.shares == [0.0] * len(blueprint)
            for strategy, row in zip(lagged.strategies, blueprint, strict=True):
                assert np.array_equal(strategy, row)
        if hand == 14:
            held.set()
        if hand in (15, 35):
            prior, _, strategies, losses = oracle[hand - 5]
            assert lagged.solved_at == hand - 5 and lagged.pending is None
            for strategy, want in zip(lagged.strategies, strategies, strict=True):
                assert np.array_equal(strategy, want)
            assert lagged.losses == losses
            for fit, want in zip(lagged.posterior.fits, prior, strict=True):
                assert np.array_equal(fit.alpha0, want)
        if 15 <= hand < 35:
            assert lagged.solved_at == 10
    assert not np.array_equal(oracle[10][2][0], oracle[30][2][0])  # the second solve differs
