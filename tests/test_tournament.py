"""Match jobs: seeding, agent names, aggregation, exact ceilings against simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oppmodel.modeling.errors import InvalidArgumentError, NotFoundError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.strategy import random_profile
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import observe_limit_cards
from oppmodel.modeling.play.diluted import DilutedAgent, diluted_factory
from oppmodel.modeling.play.match import run_duplicate
from oppmodel.modeling.play.panel import named_profile
from oppmodel.modeling.play.tournament import (
    AgentSpec,
    Estimate,
    MatchJob,
    agent_factory,
    average_estimates,
    fixed_value,
    job_seed,
    mean_estimate,
    response_ceiling,
    run_job,
)


def kuhn_game(n: int):
    """n-player Kuhn: the bundled game file, compiled."""
    return limit_game(f"kuhn{n}p")


def test_job_seed_depends_on_base_and_stream_only() -> None:
    assert job_seed(1, 5) == job_seed(1, 5)
    seeds = {job_seed(b, s) for b in range(3) for s in range(50)}
    assert len(seeds) == 150
    assert all(0 <= s < 2**63 for s in seeds)


def test_run_job_is_one_seeded_duplicate() -> None:
    agents = (
        AgentSpec("mbbr", MBBRConfig(k=3, hands_default=5)),
        AgentSpec("n1"),
        AgentSpec("maniac"),
    )
    job = MatchJob(0, 42, agents, 40)
    result = run_job(job, base_seed=3)
    other_id = run_job(MatchJob(9, 42, agents, 40), base_seed=3)
    assert other_id.job_id == 9 and other_id.rate == result.rate  # the id does not seed anything
    game = kuhn_game(3)
    direct = run_duplicate(
        game,
        ["mbbr", "n1", "maniac"],
        [agent_factory(a) for a in agents],
        hands=40,
        duplicates=1,
        seed=job_seed(3, 42),
    )
    assert result.rate == tuple(a.rate for a in direct.agents)
    assert math.isclose(sum(result.rate), 0.0, abs_tol=1e-9)
    assert run_job(MatchJob(0, 43, agents, 40), base_seed=3).rate != result.rate


def test_agent_names() -> None:
    game = kuhn_game(3)
    assert agent_factory(AgentSpec("exploiter"))(game, 1).name == "exploiter"
    assert agent_factory(AgentSpec("n2", label="eq"))(game, 1).name == "eq"
    mbbr = agent_factory(AgentSpec("MBBR", MBBRConfig(k=2)))(game, 1)
    assert mbbr.model.config.k == 2
    with pytest.raises(NotFoundError):
        agent_factory(AgentSpec("nobody"))(game, 1)
    with pytest.raises(InvalidArgumentError):
        run_job(MatchJob(0, 0, (AgentSpec("n1"), AgentSpec("n2")), 10), 0)


def test_estimates() -> None:
    e = mean_estimate([1.0, 2.0, 3.0])
    assert e.mean == 2.0 and e.se == pytest.approx(1 / math.sqrt(3)) and e.samples == 3
    assert mean_estimate([5.0]).se is None
    both = average_estimates([Estimate(1.0, 3.0, 2), Estimate(3.0, 4.0, 2)])
    assert both.mean == 2.0 and both.se == pytest.approx(2.5) and both.samples == 4
    assert average_estimates([Estimate(1.0, None, 1), Estimate(2.0, 1.0, 2)]).se is None
    with pytest.raises(InvalidArgumentError):
        mean_estimate([])


def test_no_agent_beats_an_equilibrium_pair_of_one_kind() -> None:
    game = kuhn_game(3)
    for name in ("n1", "n2", "n3"):
        eq = named_profile(game, name)
        assert abs(response_ceiling(game, eq, eq)) < 1e-9
        assert abs(fixed_value(game, eq, eq, eq)) < 1e-9


def test_ceiling_bounds_every_fixed_strategy() -> None:
    game = kuhn_game(3)
    rng = np.random.default_rng(0)
    for _ in range(20):
        us, a, b = (random_profile(game, rng) for _ in range(3))
        assert fixed_value(game, us, a, b) <= response_ceiling(game, a, b) + 1e-9
        assert abs(fixed_value(game, a, a, a)) < 1e-9  # three copies of one strategy: zero-sum


def test_fixed_value_matches_simulated_duplicates() -> None:
    game = kuhn_game(3)
    names = ["bluffer", "n3", "maniac"]
    agents = tuple(AgentSpec(n) for n in names)
    result = run_duplicate(
        game, names, [agent_factory(a) for a in agents], hands=20_000, duplicates=4, seed=1
    )
    profiles = [named_profile(game, n) for n in names]
    exact = fixed_value(game, profiles[0], profiles[1], profiles[2])
    r = result.agents[0]
    assert abs(r.rate - exact) < 5 * r.standard_error


def test_two_player_values_match_simulated_duplicates_and_stay_below_the_ceiling() -> None:
    """Leduc 2p: the duplicate value has one seat order of the opponent; the ceiling bounds it."""
    game = limit_game("leduc2p")
    names = ["maniac", "cfr"]
    result = run_duplicate(
        game,
        names,
        [agent_factory(AgentSpec(n)) for n in names],
        hands=3000,
        duplicates=6,
        seed=2,
    )
    maniac, cfr = (named_profile(game, n) for n in names)
    exact = fixed_value(game, maniac, cfr)
    r = result.agents[0]
    assert abs(r.rate - exact) < 5 * r.standard_error
    assert exact == pytest.approx(-fixed_value(game, cfr, maniac))  # zero-sum, both seatings
    ceiling = response_ceiling(game, maniac)
    for name in ("cfr", "maniac", "calling-station", "bluffer"):
        assert fixed_value(game, named_profile(game, name), maniac) <= ceiling + 1e-9
    assert ceiling > fixed_value(game, cfr, maniac) > 0
    with pytest.raises(InvalidArgumentError, match="others"):
        response_ceiling(game, maniac, cfr)  # two opponents in a 2-player game


def test_diluted_fixed_style_is_the_mixed_profile():
    game = kuhn_game(3)
    agent = diluted_factory("maniac@0.25")(game, 1)
    mixed = 0.25 * named_profile(game, "maniac") + 0.75 * named_profile(game, "n2")
    np.testing.assert_allclose(agent.profile, mixed)


def test_diluted_adaptive_style_mixes_its_probabilities_with_n2():
    game = kuhn_game(3)
    agent = diluted_factory("exploiter@0.4")(game, 3)
    assert isinstance(agent, DilutedAgent)
    n2 = named_profile(game, "n2")
    rng = np.random.default_rng(0)
    for _ in range(200):  # the exploiter's probabilities move with what it sees
        view, betting = int(rng.integers(4)), ["", "c", "r", "cc"][int(rng.integers(4))]
        node = game.node(betting)
        position = len(betting)
        own = agent.inner.row(position, node, view)
        want = 0.4 * own + 0.6 * n2[position, int(game.tree.node_base[node]) + view]
        draws = np.bincount([agent.act(position, view, betting) for _ in range(400)], minlength=3)
        np.testing.assert_allclose(draws / 400, want, atol=0.1)
        hole = tuple(game.deck[int(c)] for c in rng.permutation(4)[:3])
        agent.end_hand(observe_limit_cards(game, 0, "crff", hole, ("",)))
    assert agent.inner.hands_played == 200


@pytest.mark.parametrize("name", ["maniac@0", "maniac@1.5", "maniac@x", "@0.3", "nobody@0.3"])
def test_bad_diluted_names_are_not_found(name):
    with pytest.raises(NotFoundError):
        diluted_factory(name)(kuhn_game(3), 0)
