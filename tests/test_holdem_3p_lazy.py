"""The lazy-table MCCFR (betting walked by its rules, information sets made as visited) and
3-player hold'em's abstract game on it: the array solver's regrets bit for bit where both apply,
the compiled trees node for node, nash_conv falling in 3-player Kuhn, resuming bit for bit, and
``oppmodel solve holdem3p`` with its blueprint playing the real game."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from test_holdem_mccfr import SMALL, small_solve  # the same small abstraction (cached once)

from oppmodel.modeling.evaluation.limit import nash_conv
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.holdem_abstract import (
    lazy_abstract_game,
    public_nodes,
)
from oppmodel.modeling.games.acpc.lazy_game import lazy_game_of
from oppmodel.modeling.games.acpc.strategy import uniform_profile
from oppmodel.modeling.holdem.blueprint import Blueprint
from oppmodel.modeling.holdem.match import HoldemGame, PolicyAgent, play_holdem_match
from oppmodel.modeling.holdem.policy import AlwaysCall
from oppmodel.modeling.solve.lazy_mccfr import LazyMCCFRSolver, quantized
from oppmodel.modeling.solve.mccfr import MCCFRConfig, MCCFRSolver


def _lazy(game: str, iterations: int, seed: int) -> LazyMCCFRSolver:
    solver = LazyMCCFRSolver(lazy_game_of(limit_game(game)), MCCFRConfig(seed=seed))
    solver.run(iterations)
    return solver


@pytest.mark.parametrize("game", ["kuhn2p", "kuhn3p", "leduc2p", "leduc3p"])
def test_the_lazy_tables_hold_the_array_solvers_regrets_bit_for_bit(game: str) -> None:
    compiled = limit_game(game)
    arrays = MCCFRSolver(compiled, MCCFRConfig(seed=4))
    arrays.run(3_000)
    lazy = _lazy(game, 3_000, seed=4)
    visited = np.zeros(compiled.valid_infoset_mask.shape, dtype=bool)
    t = lazy.tables
    bettings = lazy.bettings()
    for r in range(lazy.num_infosets):
        node, view = int(t.row_node[r]), int(t.row_view[r])
        player = int(t.node_info[node, 0])
        i = compiled.infoset_from_string(
            player, f"{compiled.view_strings[t.node_info[node, 1]][view]}:{bettings[node]}"
        )
        visited[player, i] = True
        assert arrays.regrets[player, i].tolist() == t.regrets[r].tolist()
        assert arrays.sums[player, i].tolist() == t.sums[r].tolist()
    # the sets the lazy tables never made were never touched by the array solver either
    assert not arrays.regrets[~visited].any() and not arrays.sums[~visited].any()
    assert lazy.nash_conv() == pytest.approx(arrays.nash_conv(), abs=1e-12)


def test_the_kernels_rules_build_the_compiled_betting_tree_node_for_node() -> None:
    compiled = limit_game("leduc3p")
    lazy = _lazy("leduc3p", 3_000, seed=1)
    assert lazy.num_nodes == compiled.num_nodes  # every node reached: 1,120
    bettings = lazy.bettings()
    assert len(set(bettings)) == compiled.num_nodes
    for node, betting in enumerate(bettings):
        info = lazy.tables.node_info[node]
        assert int(info[0]) == compiled.current_player(betting)
        made = [a for a in range(3) if lazy.tables.node_children[node, a] >= 0]
        assert made == compiled.legal_actions(betting)
        if info[0] < 0:  # chips in at the end: the compiled terminal's
            t = compiled.tree.node_terminal[compiled.node(betting)]
            assert info[5:].tolist() == compiled.tree.terminal_spent[t].tolist()


def test_lazy_mccfr_approaches_equilibrium_play_in_three_player_kuhn() -> None:
    compiled = limit_game("kuhn3p")
    uniform = nash_conv(compiled, uniform_profile(compiled))
    early = _lazy("kuhn3p", 300, seed=2).nash_conv()
    late = _lazy("kuhn3p", 100_000, seed=2).nash_conv()
    assert late is not None and early is not None
    assert late < 0.02 < early < uniform  # uniform play: 0.89 chips a hand


def test_a_saved_lazy_run_resumes_bit_for_bit_across_table_growth(tmp_path: Path) -> None:
    whole = _lazy("leduc3p", 3_000, seed=6)
    first = _lazy("leduc3p", 40, seed=6)
    room = len(first.tables.row_node)
    first.save(tmp_path / "state.npz")
    resumed = LazyMCCFRSolver.load(first.game, tmp_path / "state.npz")
    assert resumed.iteration == 40 and resumed.config == MCCFRConfig(seed=6)
    resumed.run(2_960)
    assert whole.num_infosets > room  # the tables grew during the run
    for name in ("regrets", "sums", "row_node", "row_view"):
        rows = whole.num_infosets
        assert np.array_equal(
            getattr(resumed.tables, name)[:rows], getattr(whole.tables, name)[:rows]
        )
    assert resumed.bettings() == whole.bettings()


def test_a_state_larger_than_the_first_tables_loads_and_resumes_bit_for_bit(
    tmp_path: Path,
) -> None:
    # load sizes the tables from the saved counts: it once rehashed the saved rows from the
    # first, smaller tables, reading past their end (a crash on a 3-player hold'em state; here
    # the read lands in mapped memory, so only the interpreted kernels, whose every index is
    # checked, see it: the load runs in a child under NUMBA_DISABLE_JIT and saves what it read)
    whole = _lazy("leduc3p", 400, seed=6)
    first = _lazy("leduc3p", 200, seed=6)
    assert first.num_infosets > len(LazyMCCFRSolver(first.game).tables.row_node)
    first.save(tmp_path / "state.npz")
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            _LOAD_AND_SAVE,
            str(tmp_path / "state.npz"),
            str(tmp_path / "again.npz"),
        ],
        env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    with np.load(tmp_path / "state.npz") as saved, np.load(tmp_path / "again.npz") as again:
        assert sorted(saved.files) == sorted(again.files)
        for name in saved.files:
            assert np.array_equal(saved[name], again[name]), name
    resumed = LazyMCCFRSolver.load(first.game, tmp_path / "state.npz")
    resumed.run(200)
    rows = whole.num_infosets
    assert resumed.num_infosets == rows
    assert np.array_equal(resumed.tables.sums[:rows], whole.tables.sums[:rows])
    assert np.array_equal(resumed.tables.regrets[:rows], whole.tables.regrets[:rows])


_LOAD_AND_SAVE = """
import sys
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.lazy_game import lazy_game_of
from oppmodel.modeling.solve.lazy_mccfr import LazyMCCFRSolver
game = lazy_game_of(limit_game("leduc3p"))
LazyMCCFRSolver.load(game, sys.argv[1]).save(sys.argv[2])
"""


def test_three_player_holdem_is_solved_over_the_information_sets_it_visits(tmp_path: Path) -> None:
    game = lazy_abstract_game("holdem3p", SMALL)
    assert game.name.startswith("holdem3p@") and game.num_deals == 200
    solver = LazyMCCFRSolver(game, MCCFRConfig(seed=1))
    solver.run(500)
    assert 0 < solver.regret_bound() < np.inf
    assert solver.num_nodes < public_nodes(game.gamedef) / 100  # made: what sampling visits
    solver.save_strategy(tmp_path / "bp.json", solver={"abstract_game": asdict(SMALL)})
    doc = json.loads((tmp_path / "bp.json").read_text())
    assert doc["unvisited"] == "call" and len(doc["positions"]) == 3
    first, second, third = (set(doc["positions"][p]) for p in (2, 0, 1))  # preflop order
    assert {"0:", "1:", "2:"} <= first and "1:c" in second and "2:cc" in third
    # the blueprint plays the real game: real cards through the buckets, unvisited sets call
    blueprint = Blueprint.from_file(tmp_path / "bp.json")
    holdem = HoldemGame("holdem3p", game.gamedef)
    agents = [
        PolicyAgent(f"a{k}", p, k) for k, p in enumerate([blueprint, AlwaysCall(), blueprint])
    ]
    chips = play_holdem_match(holdem, agents, holdem.deal_sequence(60, seed=3))
    assert chips.sum() == pytest.approx(0.0) and chips.any()


def test_oppmodel_solve_holdem3p_runs_lazily_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    solve = small_solve("holdem3p", tmp_path, capsys, monkeypatch)
    first, again, straight = solve(200, resume=True), solve(500, resume=True), solve(500)
    assert first["game"] == lazy_abstract_game("holdem3p", SMALL).name == straight["game"]
    assert (again["algorithm"], again["iterations"], again["players"]) == ("es-mccfr", 500, 3)
    assert again["regret_bound"] == straight["regret_bound"]  # resumed: the same run
    assert again["infosets"] == straight["infosets"] > first["infosets"]
    assert "--buckets 3 3 3 3 --deals 200 --recall imperfect --seed 2" in again["command"]
    doc = json.loads((tmp_path / "bp.json").read_text())
    listed = sum(map(len, doc["positions"]))
    assert 0 < listed < again["infosets"]  # the sets the average play reaches, not all visited


def test_a_lazy_strategy_file_lists_the_sets_play_reaches_on_a_grid(tmp_path: Path) -> None:
    solver = LazyMCCFRSolver(lazy_abstract_game("holdem3p", SMALL), MCCFRConfig(seed=1))
    solver.run(500)
    full = solver.strategy_tables()
    reach = solver.reach_rows()
    assert (reach == 0).any() and (reach > 0).any() and reach.max() <= 1.0
    opening = solver.tables.row_node[: solver.num_infosets] == 0  # one set per view
    assert reach[opening].sum() == pytest.approx(1.0, abs=1e-12)  # reached every time
    cut = float(np.quantile(reach[reach > 0], 0.9))
    recorded = {"abstract_game": asdict(SMALL)}
    solver.save_strategy(tmp_path / "bp.json.gz", solver=recorded, min_reach=cut)
    blueprint = Blueprint.from_file(tmp_path / "bp.json.gz")
    assert blueprint.unvisited == "call"
    kept = sum(map(len, blueprint.positions))
    assert 0 < kept <= (reach > cut).sum() < len(reach) // 5
    for p, table in enumerate(blueprint.positions):
        for key, row in table.items():
            exact = np.array(full[p][key])
            assert sum(row) == pytest.approx(1.0, abs=1e-12) and row != [0.0, 1.0, 0.0]
            assert np.abs(np.array(row) - exact).max() <= 1e-3
            assert all(abs(v * 1000 - round(v * 1000)) < 1e-9 for v in row)


def test_quantized_rows_stay_distributions_on_the_grid() -> None:
    rows = np.random.default_rng(0).dirichlet(np.ones(3), size=2000)
    rows[:5] = [
        [0.0, 1.0, 0.0],
        [0.0, 0.5, 0.5],
        [1 / 3, 1 / 3, 1 / 3],
        [0.0, 0.9996, 0.0004],
        [0.0, 0.0, 1.0],
    ]
    out = quantized(rows, 1000)
    assert np.allclose(out.sum(axis=1), 1.0, atol=1e-12)
    assert np.allclose(out * 1000, np.round(out * 1000), atol=1e-9)
    assert np.abs(out - rows).max() < 1e-3
    assert (out[rows == 0] == 0).all()  # nothing given to an action the row never takes
    assert out[2].tolist() == [0.334, 0.333, 0.333] and out[3].tolist() == [0.0, 1.0, 0.0]
