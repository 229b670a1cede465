"""The exact learning-cost benchmark: its trajectories against exact values it must reproduce."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.learning_cost import main
from experiments.safety_frontier import collect, markdown
from oppmodel.modeling.evaluation.limit import deviation_gains
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play.learning_cost import trajectory
from oppmodel.modeling.play.panel import named_profile
from oppmodel.modeling.play.tournament import fixed_value, seated_profile

GAME = limit_game("kuhn3p")


@pytest.mark.parametrize("pair", [("n2", "n3"), ("maniac", "bluffer")])
def test_before_h_hands_the_policy_is_worth_exactly_the_default_strategy(pair):
    # For the first H hands MBBR plays N1: over both seat orders and every position the
    # trajectory's mean is the exact duplicate value of N1 against the pair.
    config = MBBRConfig(posterior="dirichlet", prior="typed", hands_default=100)
    values = [trajectory((*order, config, 3, 30, False))[0] for order in (pair, pair[::-1])]
    expected = fixed_value(
        GAME, named_profile(GAME, "n1"), named_profile(GAME, pair[0]), named_profile(GAME, pair[1])
    )
    assert np.mean(values) == pytest.approx(expected, abs=1e-9)


def test_a_switch_plays_the_second_pair_from_its_hand_on():
    """A switch at hand 0 is the second pair from the start; at hand 20 the first 20 values are
    the first pair's (the same cards and draws)."""
    config = MBBRConfig(posterior="dirichlet", hands_default=5)
    after = trajectory(("maniac", "n1", config, 2, 40, False))[0]
    before = trajectory(("n2", "n3", config, 2, 40, False))[0]
    switched = trajectory(("n2", "n3", config, 2, 40, False, "kuhn3p", (0, "maniac", "n1")))[0]
    np.testing.assert_array_equal(switched, after)
    late = trajectory(("n2", "n3", config, 2, 40, False, "kuhn3p", (20, "maniac", "n1")))[0]
    np.testing.assert_array_equal(late[:20], before[:20])
    assert not np.array_equal(late[20:], before[20:])


def test_same_seed_same_trajectory():
    config = MBBRConfig(posterior="dirichlet", hands_default=5)
    first = trajectory(("n1", "maniac@0.35", config, 1, 40, False))[0]
    np.testing.assert_array_equal(first, trajectory(("n1", "maniac@0.35", config, 1, 40, False))[0])


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


def test_attribution_sums_the_default_strategys_gains_over_the_hands():
    # Playing N1 throughout, each position's gains are its hands times N1's exact deviation gains
    # there: zero against n1+n1 (N1 is a best response to it), not against n2+n3.
    config = MBBRConfig(posterior="dirichlet", hands_default=1000)
    n1 = named_profile(GAME, "n1")
    for first, second in (("n1", "n1"), ("n2", "n3")):
        gains = trajectory((first, second, config, 0, 30, True))[1]
        pair = (named_profile(GAME, first), named_profile(GAME, second))
        expected = np.array(
            [
                10_000.0 * deviation_gains(GAME, seated_profile(GAME, p, n1, pair), p)
                for p in range(3)
            ]
        )
        np.testing.assert_allclose(gains, expected, atol=1e-9)
        assert (gains.max() > 1.0) == (first != second)


def test_attribution_report_names_our_information_sets(tmp_path):
    out = tmp_path / "cost.json"
    argv = ["--pairs", "n2+n3", "--priors", "informed", "--hands", "150", "--seeds", "1"]
    assert main([*argv, "--workers", "1", "--attribute", "--out", str(out)]) == 0
    gains = json.loads(out.read_text())["rows"][0]["deviation_gains"]
    assert gains and all(v > 0 for v in gains.values())
    for key in gains:
        position, infostate = key.split(" ")
        assert position in ("P1", "P2", "P3")
        GAME.infoset_from_string(int(position[1]) - 1, infostate)  # raises if not ours


def test_every_trajectory_is_within_its_safety_budget(tmp_path):
    """With a budget B the exact cost against a pair of N1, N2, N3 is at most B on every seed
    (the bound holds path by path), and the frontier reads the rows back as within it."""
    out = tmp_path / "cost.json"
    argv = ["--pairs", "n3+n3,n2+n3", "--priors", "informed", "--hands", "300"]
    argv += ["--seeds", "2", "--workers", "1", "--safety-budgets", "1,inf", "--out", str(out)]
    assert main([*argv, "--json"]) == 0
    report = json.loads(out.read_text())
    rows = {(r["pair"], r["safety_budget"]): r for r in report["rows"]}
    assert set(rows) == {("n3+n3", 1.0), ("n3+n3", None), ("n2+n3", 1.0), ("n2+n3", None)}
    for seed in range(3):  # each match on its own: 100 hands in each position, N1 worth 0
        values = trajectory(("n3", "n2", MBBRConfig(safety_budget=1.0), seed, 300, False))[0]
        assert values.mean() >= -1.0 - 1e-9
    assert rows["n3+n3", 1.0]["match"] >= -1.0 - 1e-9
    frontier = {r["setting"]: r for r in collect([report], [])}
    assert frontier["informed, B = 1"]["within_bound"] is True
    assert frontier["informed, no budget"]["within_bound"] is None
    assert "| informed, B = 1 |" in markdown(list(frontier.values()))


def test_leduc2p_has_one_opponent_and_one_seat_order(tmp_path):
    """In a 2-player limit game the opponent is named alone; before H hands the policy is the
    default strategy, worth exactly cfr's value against itself (0: the positions alternate),
    and with the budget the exact cost stays within it."""
    out = tmp_path / "cost.json"
    argv = ["--game", "leduc2p", "--priors", "informed", "--hands", "160", "--seeds", "2"]
    argv += ["--workers", "1", "--safety-budgets", "0.5,inf", "--out", str(out), "--json"]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    rows = {(r["pair"], r["safety_budget"]): r for r in report["rows"]}
    assert set(rows) == {("cfr", 0.5), ("cfr", None)}
    assert 0.0 <= rows["cfr", None]["ceiling"] < 0.01  # cfr is within 1e-3 of an equilibrium
    values = trajectory(("cfr", None, MBBRConfig(hands_default=100), 1, 160, False, "leduc2p"))[0]
    assert values[:100].mean() == pytest.approx(0.0, abs=1e-9)  # the default: cfr against cfr
    assert rows["cfr", 0.5]["match"] >= -0.5 - 1e-9
    assert rows["cfr", None]["match"] < rows["cfr", 0.5]["match"]  # plain MBBR pays more
    with pytest.raises(SystemExit):  # a pair is for 3 players
        main(["--game", "leduc2p", "--pairs", "cfr+cfr", "--hands", "10"])
