"""The MBBR agent adapter: it feeds its model, plays the model's probabilities, and wins."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play.agents import MBBRAgent, mbbr_factory
from oppmodel.modeling.play.match import (
    fixed_strategy_factory,
    play_match,
    run_duplicate,
)
from oppmodel.modeling.play.panel import named_profile

GAME = limit_game("kuhn3p")
CONFIG = MBBRConfig(k=8, hands_default=20)


def _opponents(seed: int):
    return [
        fixed_strategy_factory(nm, named_profile(GAME, nm))(GAME, seed + i)
        for i, nm in enumerate(["maniac", "n3"])
    ]


def test_every_hand_goes_to_the_model() -> None:
    agent = MBBRAgent(GAME, CONFIG, seed=1)
    play_match(GAME, [agent, *_opponents(5)], GAME.deal_sequence(120, seed=2))
    assert agent.model.hands_observed == 120


def test_actions_follow_the_models_probabilities() -> None:
    """Past H hands against a maniac the response is played in full (the safety bankroll's
    hypotheses are ruled out): at every information set where the model's probabilities are pure,
    the agent plays that action, whatever it draws."""
    agent = MBBRAgent(GAME, CONFIG, seed=1)
    play_match(GAME, [agent, *_opponents(5)], GAME.deal_sequence(40, seed=2))
    pure = 0
    for p in range(3):
        for i in GAME.infosets(p):
            row = agent.model.action_probabilities(p, i)
            if row.max() < 1.0:
                continue
            pure += 1
            node, view = int(GAME.infoset_node[p][i]), int(GAME.infoset_view[p][i])
            actions = {agent.act(p, view, GAME.bettings[node]) for _ in range(5)}
            assert actions == {int(np.argmax(row))}
    assert pure >= GAME.num_infosets


def test_factory_seeds_model_and_actions_from_the_match_seed() -> None:
    # the samples, and a prior they have (CONFIG's, the Dirichlet posterior's default, has none)
    samples = replace(CONFIG, posterior="samples", prior="eta-mixture", change_hazard=0.0)
    factory = mbbr_factory(samples)
    a, b, c = factory(GAME, 3), factory(GAME, 3), factory(GAME, 4)
    assert a.model.config.seed == 3 and c.model.config.seed == 4
    np.testing.assert_array_equal(a.model.tau, b.model.tau)
    assert not np.array_equal(a.model.tau, c.model.tau)
    assert a.rng.random() == b.rng.random()
    with pytest.raises(InvalidArgumentError) as err:
        mbbr_factory(MBBRConfig(k=0))
    assert err.value.field == "k"
    with pytest.raises(InvalidArgumentError) as err:
        a.begin_match(limit_game("kuhn2p"), 0, ("mbbr", "other"))
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
