"""Match jobs: seeding, agent names, aggregation, exact ceilings against simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from modeling.errors import InvalidArgumentError, NotFoundError
from modeling.kuhn import kuhn_game
from modeling.match import run_duplicate
from modeling.mbbr import MBBRConfig
from modeling.panel import named_profile
from modeling.strategy import uniform_profile
from modeling.tournament import (
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


def _random_profile(game, rng) -> np.ndarray:
    profile = uniform_profile(game)
    q = rng.random(profile.shape[:2])
    profile[..., 1], profile[..., 0] = q, 1.0 - q
    return profile


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
    assert other_id.job_id == 9 and other_id.mbb == result.mbb  # the id does not seed anything
    game = kuhn_game(3)
    direct = run_duplicate(
        game,
        ["mbbr", "n1", "maniac"],
        [agent_factory(a) for a in agents],
        hands=40,
        duplicates=1,
        seed=job_seed(3, 42),
    )
    assert result.mbb == tuple(a.mbb_per_hand for a in direct.agents)
    assert math.isclose(sum(result.mbb), 0.0, abs_tol=1e-9)
    assert run_job(MatchJob(0, 43, agents, 40), base_seed=3).mbb != result.mbb


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
        us, a, b = (_random_profile(game, rng) for _ in range(3))
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
    assert abs(r.mbb_per_hand - exact) < 5 * r.standard_error
