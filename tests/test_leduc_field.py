"""MBBR as a player of 3-player Leduc, and the leduc3p field benchmark: tiny matches only."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments import leduc_field
from oppmodel.clients.cli import main
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play.agents import MBBRAgent, mbbr_factory
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.learning_cost import trajectory
from oppmodel.modeling.play.match import FixedStrategyAgent, play_match
from oppmodel.modeling.play.tournament import fixed_value

GAME = limit_game("leduc3p")


def test_mbbr_plays_its_models_action_probabilities_and_learns_from_every_hand() -> None:
    config = MBBRConfig(hands_default=5)
    agent = MBBRAgent(GAME, config, seed=3)
    others = [FixedStrategyAgent(nm, GAME, fixed_profile(GAME, nm), i) for i, nm in
              enumerate(["cfr", "maniac"])]  # fmt: skip
    asked = []
    act = agent.act

    def recording_act(position: int, private: int, history: str) -> int:
        node = GAME.node(history)
        infoset = int(GAME.tree.node_base[node]) + private
        asked.append(agent.model.action_probabilities(position, infoset))
        action = act(position, private, history)
        assert asked[-1][action] > 0  # only actions the model's strategy plays
        return action

    agent.act = recording_act
    play_match(GAME, [agent, *others], GAME.deal_sequence(12, seed=4))
    assert agent.model.hands_observed == 12 and asked


def test_mbbr_factory_is_seeded_by_the_match_seed() -> None:
    build = mbbr_factory(MBBRConfig(hands_default=3))
    cfr = fixed_profile(GAME, "cfr")

    def play(seed: int) -> np.ndarray:
        agents = [build(GAME, seed), *(FixedStrategyAgent("cfr", GAME, cfr, s) for s in (1, 2))]
        return play_match(GAME, agents, GAME.deal_sequence(10, seed=2))

    np.testing.assert_array_equal(play(5), play(5))
    # its best responses are pure: only its sampling while it plays the mixed default differs
    playing_default = mbbr_factory(MBBRConfig(hands_default=100))
    agents = [[playing_default(GAME, s), *(FixedStrategyAgent("cfr", GAME, cfr, 1) for _ in "ab")]
              for s in (6, 7)]  # fmt: skip
    deals = GAME.deal_sequence(60, seed=2)
    assert not np.array_equal(
        play_match(GAME, agents[0], deals), play_match(GAME, agents[1], deals)
    )


@pytest.mark.parametrize(
    ("game", "rows"),
    [("leduc3p", ["cfr+maniac", "cfr+cfr"]), ("leduc2p", ["maniac@0.35", "cfr"])],
)
def test_the_field_benchmark_is_what_oppmodel_match_prints(tmp_path, capsys, game, rows) -> None:
    out = tmp_path / "field.json"
    style = rows[0].removeprefix("cfr+")
    argv = ["--game", game, "--hands", "8", "--duplicates", "2", "--cost-seeds", "1"]
    assert leduc_field.main([*argv, "--styles", style, "--workers", "1", "--seed", "3",
                             "--out", str(out)]) == 0  # fmt: skip
    table = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert [row["opponents"] for row in report["rows"]] == rows
    assert f"| {rows[0]} |" in table and "field rank" in table
    for row in report["rows"]:
        agents = row["command"].split("--agents ")[1].split()[0]
        assert main(["match", "--game", game, "--agents", agents, "--hands", "8",
                     "--duplicates", "2", "--seed", "3", "--json"]) == 0  # fmt: skip
        printed = json.loads(capsys.readouterr().out)
        mbbr = next(r for r in printed["ranking"] if r["name"] == "mbbr")
        assert mbbr["per_duplicate"] == row["per_duplicate_mbbr"]
        assert row["ceiling"] >= -1e-9
    if game == "leduc3p":
        assert "learning cost" in table
        learning = report["rows"][-1]["learning"]
        assert learning["learning_cost"] == pytest.approx(
            report["rows"][-1]["ceiling"] - learning["mbbr_exact_mbb_per_hand"]
        )
    else:
        assert all("learning" not in row for row in report["rows"])


def test_the_field_ranks_every_agent_by_its_mean_over_the_groups_it_played() -> None:
    def row(opponents, agents):
        return {
            "opponents": opponents,
            "duplicates": 4,
            "agents": [{"name": n, "mbb_per_hand": m, "se": e} for n, m, e in agents],
            "ranking": [n for n, *_ in sorted(agents, key=lambda a: -a[1])],
        }

    rows = [
        row("cfr+maniac", [("mbbr", 90.0, 3.0), ("cfr", 10.0, 4.0), ("maniac", -100.0, 5.0)]),
        row("cfr+bluffer", [("mbbr", 30.0, 4.0), ("cfr", 20.0, 3.0), ("bluffer", -50.0, 5.0)]),
        row("cfr+cfr", [("mbbr", -9.0, 4.0), ("cfr", 4.0, 3.0), ("cfr#2", 5.0, 3.0)]),
    ]
    field = leduc_field.field_ranking(rows, "leduc3p")  # the pair of cfr agents stays apart
    assert [(a["name"], a["groups"]) for a in field] == [
        ("mbbr", 2), ("cfr", 2), ("bluffer", 1), ("maniac", 1)
    ]  # fmt: skip
    assert field[0]["mbb_per_hand"] == pytest.approx(60.0)
    assert field[0]["se"] == pytest.approx(np.hypot(3.0, 4.0) / 2)
    checks = leduc_field.checks(rows, field, "leduc3p")
    assert checks == {
        "mbbr_first_in_field_by_more_than_its_se": True,  # 60 - 15 > 2.5
        "mbbr_first_in_every_group": False,  # the cfr+cfr group
        "mbbr_against_cfr_not_below_even_by_2_se": False,  # -9 < -2 x 4
    }


def test_learning_cost_before_h_hands_is_exactly_the_bundled_strategys_value() -> None:
    """For the first H hands MBBR plays the bundled CFR strategy (its default in Leduc): over
    both seat orders and every position the trajectory's mean is cfr's exact duplicate value."""
    config = MBBRConfig(hands_default=100)
    pair = ("cfr", "maniac@0.35")
    values = [
        trajectory((*order, config, 3, 30, False, "leduc3p"))[0] for order in (pair, pair[::-1])
    ]
    cfr = fixed_profile(GAME, "cfr")
    expected = fixed_value(GAME, cfr, cfr, fixed_profile(GAME, "maniac@0.35"))
    assert np.mean(values) == pytest.approx(expected, abs=1e-9)
