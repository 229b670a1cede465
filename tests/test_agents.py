"""The MBBR agent adapter: its policy cache, its actions, and MBBR in matches."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play.agents import MBBRAgent, mbbr_factory
from oppmodel.modeling.play.match import (
    deal_sequence,
    fixed_strategy_factory,
    play_match,
    run_duplicate,
)
from oppmodel.modeling.play.panel import named_profile

GAME = kuhn_game(3)
CONFIG = MBBRConfig(k=8, hands_default=20)


class CheckedAgent(MBBRAgent):
    """After every hand, the cached policy of each position must equal the model's own."""

    checks = 0

    def end_hand(self, obs) -> None:
        super().end_hand(obs)
        for p in range(GAME.num_players):
            np.testing.assert_array_equal(self.policy(p), self.model.policy(p))
            CheckedAgent.checks += 1


def _opponents(seed: int):
    return [
        fixed_strategy_factory(nm, named_profile(GAME, nm))(GAME, seed + i)
        for i, nm in enumerate(["maniac", "n3"])
    ]


def test_cached_policy_always_equals_the_models() -> None:
    agent = CheckedAgent(GAME, CONFIG, seed=1)
    play_match(GAME, [agent, *_opponents(5)], deal_sequence(GAME, 120, seed=2))
    assert CheckedAgent.checks == 3 * 120
    assert agent.model.hands_observed == 120


def test_policy_recomputed_only_after_a_hand() -> None:
    agent = MBBRAgent(GAME, CONFIG, seed=1)
    play_match(GAME, [agent, *_opponents(5)], deal_sequence(GAME, 30, seed=2))
    calls = []
    model_policy = agent.model.policy
    agent.model.policy = lambda p: calls.append(p) or model_policy(p)
    for p in range(3):
        agent.policy(p)
    calls.clear()
    for _ in range(3):
        for p in range(3):
            agent.policy(p)
    assert calls == []
    # one more hand: it moves the safety bankroll, which every position's policy depends on
    play_match(GAME, [agent, *_opponents(6)], deal_sequence(GAME, 1, seed=3))
    calls.clear()
    for p in range(3):
        agent.policy(p)
        agent.policy(p)
    assert calls == [0, 1, 2]


def test_actions_follow_the_policy() -> None:
    agent = MBBRAgent(GAME, CONFIG, seed=1)
    play_match(GAME, [agent, *_opponents(5)], deal_sequence(GAME, 40, seed=2))
    for p in range(3):
        strategy = agent.policy(p)
        assert set(np.unique(strategy)) <= {0.0, 1.0}  # past H: a pure best response
        for i in GAME.infosets(p):
            s = GAME.infoset_string(p, i)
            assert agent.act(p, int(s[0]), s[1:]) == int(strategy[i, 1])


def test_factory_seeds_model_and_actions_from_the_match_seed() -> None:
    factory = mbbr_factory(replace(CONFIG, posterior="samples", change_hazard=0.0))  # samples
    a, b, c = factory(GAME, 3), factory(GAME, 3), factory(GAME, 4)
    assert a.model.config.seed == 3 and c.model.config.seed == 4
    np.testing.assert_array_equal(a.model.tau, b.model.tau)
    assert not np.array_equal(a.model.tau, c.model.tau)
    assert a.rng.random() == b.rng.random()
    with pytest.raises(InvalidArgumentError) as err:
        mbbr_factory(MBBRConfig(k=0))
    assert err.value.field == "k"
    with pytest.raises(InvalidArgumentError) as err:
        a.begin_match(kuhn_game(2), 0, ("mbbr", "other"))
    assert err.value.field == "game"


@pytest.mark.parametrize("style", ["always-bet", "calling-station", "maniac"])
def test_mbbr_wins_against_exploitable_opponents(style: str) -> None:
    names = ["mbbr", style, "n3"]
    factories = [mbbr_factory(MBBRConfig(k=10, hands_default=50))]
    factories += [fixed_strategy_factory(nm, named_profile(GAME, nm)) for nm in names[1:]]
    result = run_duplicate(GAME, names, factories, hands=400, duplicates=1, seed=11)
    mbbr, exploitable, _ = result.agents
    assert mbbr.rate > 50
    assert mbbr.rate > exploitable.rate
