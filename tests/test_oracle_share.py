"""experiments/oracle_share.py: the static oracle is the exact best response of the field's
ceiling, and MBBR's share of it is the ratio of exact values (here over hands where MBBR still
plays its default, whose value is known exactly)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.oracle_share import field_groups, main, oracle_by_position, seat_orders
from oppmodel.modeling.evaluation.limit import expected_values
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.tournament import response_ceiling, seated_profile


def test_the_kuhn_field_has_28_stationary_groups_and_names_the_adaptive_styles():
    groups, skipped = field_groups("kuhn3p")
    assert len(groups) == 28 and ("n2", "n3") in groups
    assert sorted(skipped) == ["exploiter@0.35", "switcher@0.35", "tilter@0.35"]


@pytest.mark.parametrize("group", [("n1", "calling-station@0.35"), ("n2", "n3")])
def test_the_oracle_by_position_averages_to_the_response_ceiling(group):
    game = limit_game("kuhn3p")
    by_order = [oracle_by_position(game, order) for order in seat_orders(group)]
    profiles = [fixed_profile(game, name) for name in group]
    assert np.mean(by_order) == pytest.approx(response_ceiling(game, *profiles), abs=1e-9)


def test_before_mbbr_leaves_its_default_its_share_is_the_defaults(tmp_path):
    """For the first hands MBBR plays its default strategy, so its share at hand t is exactly the
    default's exact value over the oracle's, hand by hand in the rotating position."""
    game = limit_game("kuhn3p")
    group = ("n2", "maniac@0.35")
    out = tmp_path / "share.json"
    assert main(["--hands", "9", "--seeds", "1", "--groups", "+".join(group), "--workers", "1",
                 "--out", str(out), "--json"]) == 0  # fmt: skip
    row = json.loads(out.read_text())["tables"][0]["rows"][0]
    default = build_model(game, MBBRConfig()).default_strategy
    ours, oracle = 0.0, 0.0
    for order in seat_orders(group):
        profiles = [fixed_profile(game, name) for name in order]
        best = oracle_by_position(game, order)
        for t in range(9):
            p = t % 3
            ours += expected_values(game, seated_profile(game, p, default, profiles))[p]
            oracle += best[p]
    assert row["share"] == pytest.approx(game.rate_unit.rate(ours) / oracle, rel=1e-9)
    assert row["oracle"] == pytest.approx(oracle / 18, rel=1e-9)


@pytest.mark.parametrize(
    ("game", "groups", "new"),
    [
        (
            "kuhn3p",
            "n2+maniac@0.35,n1+n3",
            [("maniac@0.35", "n2", 1), ("n1", "n3", 1), ("n2", "maniac@0.35", 1), ("n3", "n1", 1)],
        ),
        ("leduc2p", "cfr,maniac@0.35", [("cfr", None, 1), ("maniac@0.35", None, 1)]),
    ],
)
def test_a_journalled_run_reports_again_without_playing_and_resumes_seed_by_seed(
    tmp_path, monkeypatch, game, groups, new
):
    """Each finished trajectory is journalled: the same run again plays nothing and gives the
    same report; a run with more seeds plays only the new seed's trajectories."""
    import experiments.oracle_share as oracle_share

    journal = tmp_path / "share.jobs.jsonl"
    common = ["--game", game, "--hands", "7", "--groups", groups, "--workers", "1",
              "--journal", str(journal), "--json"]  # fmt: skip
    first, again, more = (tmp_path / f"{name}.json" for name in ("first", "again", "more"))
    assert main([*common, "--seeds", "1", "--out", str(first)]) == 0
    assert len(journal.read_text().splitlines()) == len(new)  # seed 0's trajectories
    played = []
    real = oracle_share.trajectory

    def counted(task):
        played.append(task)
        return real(task)

    monkeypatch.setattr(oracle_share, "trajectory", counted)
    assert main([*common, "--seeds", "1", "--out", str(again)]) == 0
    assert played == []
    tables = [json.loads(path.read_text())["tables"] for path in (first, again)]
    assert tables[0][0]["rows"] == tables[1][0]["rows"]
    assert main([*common, "--seeds", "2", "--out", str(more)]) == 0
    assert sorted((task[0], task[1], task[3]) for task in played) == new
    assert len(journal.read_text().splitlines()) == 2 * len(new)
