"""CFR+ and discounted CFR: exact against a pure-Python reference, convergence, resumable state,
the ``oppmodel solve`` command, and OpenSpiel's nash_conv of what it writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyspiel
import pytest
from limit_oracle import cfr_reference
from open_spiel.python.algorithms import exploitability
from test_limit_game import game_text

from oppmodel.clients.cli import main
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.limit import expected_values, nash_conv
from oppmodel.modeling.games.acpc.bundled import strategy_path
from oppmodel.modeling.games.acpc.compiler import compile_limit_game, limit_game
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.acpc.openspiel import (
    openspiel_policy_table,
    openspiel_tabular_policy,
    profile_from_openspiel,
)
from oppmodel.modeling.games.acpc.strategy import load_json, load_profile
from oppmodel.modeling.solve.cfr import CFRSolver, SolverConfig, strategy_label

SMALL_TWO_ROUNDS = game_text(
    blind="1 2", raiseSize="1 2", firstPlayer="2 1", maxRaises="1 2", numRanks="2"
)


@pytest.mark.parametrize("text", [game_text(numRounds="1", raiseSize="1", firstPlayer="1",
                                             maxRaises="1", numSuits="1", numBoardCards="0"),
                                  SMALL_TWO_ROUNDS])  # fmt: skip
@pytest.mark.parametrize(
    "config", [SolverConfig("cfr+", delay=2), SolverConfig("dcfr"), SolverConfig("cfr+", delay=0)]
)
def test_iterations_equal_the_published_update_rules_run_in_pure_python(text, config) -> None:
    gamedef = parse_game_def(text)
    game = compile_limit_game(gamedef, "small")
    solver = CFRSolver(game, config)
    solver.run(6)
    current, average = cfr_reference(
        gamedef, 6, algorithm=config.algorithm, delay=config.delay,
        alpha=config.alpha, beta=config.beta, gamma=config.gamma,
    )  # fmt: skip
    ours_current, ours_average = solver.current_profile(), solver.average_profile()
    for p in range(game.num_players):
        for i in game.infosets(p):
            key = (p, game.infoset_string(p, i))
            np.testing.assert_allclose(ours_current[p, i], current[key], atol=1e-12)
            np.testing.assert_allclose(ours_average[p, i], average[key], atol=1e-12)


@pytest.mark.parametrize(
    ("name", "os_name"),
    [("kuhn3p", "kuhn_poker(players=3)"), ("leduc2p", "leduc_poker(players=2)")],
)
def test_cfr_plus_without_delay_equals_openspiels_cfr_plus_solver(name: str, os_name: str) -> None:
    """OpenSpiel's C++ CFRPlusSolver (alternating updates, regret matching+, linear averaging
    from the first iteration): the same average strategy after every iteration."""
    game, os_game = limit_game(name), pyspiel.load_game(os_name)
    ours, theirs = CFRSolver(game, SolverConfig("cfr+", delay=0)), pyspiel.CFRPlusSolver(os_game)
    for _ in range(8):
        ours.run(1)
        theirs.evaluate_and_update_policy()
        average = profile_from_openspiel(game, os_game, theirs.average_policy())
        np.testing.assert_allclose(ours.average_profile(), average, rtol=0, atol=1e-12)


def test_cfr_plus_solves_two_player_kuhn() -> None:
    game = limit_game("kuhn2p")
    solver = CFRSolver(game)
    solver.run(3000)
    assert solver.nash_conv() < 2e-4
    value = expected_values(game, solver.average_profile())[0]
    assert value == pytest.approx(-1 / 18, abs=1e-3)  # the game's value for the first player


@pytest.mark.parametrize("algorithm", ["cfr+", "dcfr"])
def test_both_algorithms_bring_two_player_leduc_below_1e3(algorithm: str) -> None:
    solver = CFRSolver(limit_game("leduc2p"), SolverConfig(algorithm))
    seen = []
    solver.run(1500, every=500, callback=lambda s: seen.append(s.nash_conv()))
    assert seen == sorted(seen, reverse=True)
    assert seen[-1] < 1e-3


def test_a_resumed_run_equals_an_uninterrupted_one_bit_for_bit(tmp_path: Path) -> None:
    game = limit_game("leduc3p")
    for algorithm in ("cfr+", "dcfr"):
        whole = CFRSolver(game, SolverConfig(algorithm, delay=1))
        whole.run(5)
        part = CFRSolver(game, SolverConfig(algorithm, delay=1))
        part.run(2)
        part.save(tmp_path / "state.npz")
        resumed = CFRSolver.load(game, tmp_path / "state.npz")
        assert resumed.iteration == 2 and resumed.config == part.config
        resumed.run(3)
        np.testing.assert_array_equal(resumed.average_profile(), whole.average_profile())
        np.testing.assert_array_equal(resumed.regrets, whole.regrets)


def test_a_state_of_another_game_or_no_state_is_refused(tmp_path: Path) -> None:
    solver = CFRSolver(limit_game("kuhn2p"))
    solver.run(3)
    solver.save(tmp_path / "kuhn.npz")
    with pytest.raises(InvalidArgumentError, match="belongs to kuhn2p, not to kuhn3p"):
        CFRSolver.load(limit_game("kuhn3p"), tmp_path / "kuhn.npz")
    (tmp_path / "junk.npz").write_text("junk")
    with pytest.raises(InvalidArgumentError, match="is not a solver state"):
        CFRSolver.load(limit_game("kuhn2p"), tmp_path / "junk.npz")
    with pytest.raises(InvalidArgumentError, match="algorithm"):
        SolverConfig("cfr")


def test_three_players_are_labelled_without_an_equilibrium_guarantee() -> None:
    assert "no equilibrium guarantee" in strategy_label(limit_game("leduc3p"), SolverConfig())
    assert "Nash equilibrium" in strategy_label(limit_game("leduc2p"), SolverConfig("dcfr"))


# --- the command ---------------------------------------------------------------------------


def solve(capsys, *argv: str) -> dict:
    assert main(["solve", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_solve_leduc2p_below_1e3_and_openspiel_agrees_on_the_file(tmp_path, capsys) -> None:
    out = tmp_path / "leduc2p.json"
    summary = solve(capsys, "leduc2p", "--iterations", "1500", "--out", str(out))
    assert summary["iterations"] == 1500 and summary["nash_conv"] < 1e-3
    game = limit_game("leduc2p")
    profile = load_profile(game, out)
    assert nash_conv(game, profile) == summary["nash_conv"]
    _, doc = load_json(game, out)
    assert doc["solver"]["nash_conv"] == summary["nash_conv"]
    assert doc["solver"]["strategy"].startswith("CFR+ average strategy")
    os_game = pyspiel.load_game("leduc_poker(players=2)")
    theirs = exploitability.nash_conv(os_game, openspiel_tabular_policy(game, profile, os_game))
    assert theirs == pytest.approx(summary["nash_conv"], abs=1e-9)


def test_solve_resumes_from_its_state_file(tmp_path, capsys) -> None:
    state, out = tmp_path / "s.npz", tmp_path / "s.json"
    first = solve(capsys, "kuhn3p", "--iterations", "40", "--out", str(out), "--resume", str(state))
    again = solve(
        capsys, "kuhn3p", "--iterations", "100", "--out", str(out), "--resume", str(state)
    )
    assert (first["iterations"], again["iterations"]) == (40, 100)
    assert "no equilibrium guarantee" in again["strategy"]
    straight = solve(capsys, "kuhn3p", "--iterations", "100", "--out", str(tmp_path / "t.json"))
    assert straight["nash_conv"] == again["nash_conv"]
    assert main(["solve", "kuhn3p", "--iterations", "5", "--out", str(out), "--resume",
                 str(state), "--algorithm", "dcfr"]) == 2  # fmt: skip
    assert "was run with cfr+, not dcfr" in capsys.readouterr().err


def test_solve_prints_a_readable_summary(tmp_path, capsys) -> None:
    assert main(["solve", "kuhn2p", "--iterations", "50", "--out", str(tmp_path / "k.json")]) == 0
    text = capsys.readouterr().out
    assert "kuhn2p: cfr+ 50 iterations" in text and "nash_conv" in text
    assert "written to" in text


# --- the bundled strategies ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["leduc2p", "leduc3p"])
def test_the_bundled_strategies_are_what_their_files_say(name: str) -> None:
    game = limit_game(name)
    found, doc = load_json(game, strategy_path(name))
    profile = np.stack([found[p] for p in range(game.num_players)])
    solver = doc["solver"]
    assert solver["command"].startswith(f"oppmodel solve {name} --iterations ")
    assert solver["nash_conv"] == pytest.approx(nash_conv(game, profile), abs=1e-12)
    if game.num_players == 2:
        assert solver["nash_conv"] < 1e-5
        os_game = pyspiel.load_game("leduc_poker(players=2)")
        theirs = pyspiel.nash_conv(os_game, openspiel_policy_table(game, profile, os_game))
        assert theirs == pytest.approx(solver["nash_conv"], abs=1e-9)
    else:
        assert "no equilibrium guarantee" in solver["strategy"]
