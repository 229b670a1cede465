"""The exact learning-cost benchmark: its trajectories against exact values it must reproduce."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.learning_cost import main, trajectory
from modeling.kuhn import kuhn_game
from modeling.kuhn3p import robust_profile
from modeling.mbbr import MBBRConfig
from modeling.panel import named_profile
from modeling.tournament import fixed_value

GAME = kuhn_game(3)


@pytest.mark.parametrize("pair", [("n2", "n3"), ("maniac", "bluffer")])
def test_before_h_hands_the_policy_is_worth_exactly_the_default_strategy(pair):
    # For the first H hands MBBR plays N1: over both seat orders and every position the
    # trajectory's mean is the exact duplicate value of N1 against the pair.
    config = MBBRConfig(posterior="dirichlet", prior="typed", hands_default=100)
    values = [trajectory((*order, config, 3, 30)) for order in (pair, pair[::-1])]
    expected = fixed_value(
        GAME, robust_profile("N1"), named_profile(GAME, pair[0]), named_profile(GAME, pair[1])
    )
    assert np.mean(values) == pytest.approx(expected, abs=1e-9)


def test_same_seed_same_trajectory():
    config = MBBRConfig(posterior="dirichlet", hands_default=5)
    first = trajectory(("n1", "maniac@0.35", config, 1, 40))
    np.testing.assert_array_equal(first, trajectory(("n1", "maniac@0.35", config, 1, 40)))


def test_report_rows_and_ceiling(tmp_path, capsys):
    out = tmp_path / "cost.json"
    argv = ["--pairs", "n2+n2", "--hands", "40", "--seeds", "2", "--workers", "1"]
    assert main([*argv, "--out", str(out), "--json"]) == 0
    report = json.loads(out.read_text())
    assert [(r["pair"], r["prior"]) for r in report["rows"]] == [
        ("n2+n2", "informed"),
        ("n2+n2", "typed"),
    ]
    assert all(r["ceiling"] == pytest.approx(0.0, abs=1e-9) for r in report["rows"])
    assert json.loads(capsys.readouterr().out) == report
