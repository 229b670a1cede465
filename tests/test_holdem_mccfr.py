"""The sampled solver (external-sampling MCCFR) and the hold'em abstract game: convergence toward
the exact solution where one exists (Leduc, Kuhn), seeded determinism, resuming bit for bit, and
the abstract game's information sets, strategy files and size bound."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from holdem_support import SMALL, SMALL_CARDS

from oppmodel.clients.cli import main
from oppmodel.clients.commands import solve_cmd
from oppmodel.modeling.errors import InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.acpc.abstraction import (
    BOARD_SIZES,
    card_abstraction,
)
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.hand_rank import card_index
from oppmodel.modeling.games.acpc.holdem_abstract import (
    RECALLS,
    AbstractGameConfig,
    abstract_game,
)
from oppmodel.modeling.games.acpc.solved import CACHE_ENV
from oppmodel.modeling.games.acpc.strategy import load_profile, save_profile
from oppmodel.modeling.holdem.blueprint import Blueprint
from oppmodel.modeling.holdem.policy import CARD_NAMES, HoldemPolicy, Spot, action_row, live_holes
from oppmodel.modeling.solve.mccfr import MCCFRConfig, MCCFRSolver


def _solved(game: str, iterations: int, seed: int) -> MCCFRSolver:
    solver = MCCFRSolver(limit_game(game), MCCFRConfig(seed=seed))
    solver.run(iterations)
    return solver


@pytest.mark.parametrize(
    ("game", "iterations", "bound"), [("kuhn2p", 100_000, 0.02), ("leduc2p", 300_000, 0.35)]
)
def test_mccfr_approaches_the_equilibrium_of_a_game_solved_exactly(
    game: str, iterations: int, bound: float
) -> None:
    early = _solved(game, iterations // 30, seed=3).nash_conv()
    late = _solved(game, iterations, seed=3).nash_conv()
    assert late < bound < early  # uniform play's nash_conv is far above: kuhn 0.46, leduc 4.7


def test_a_seed_fixes_the_run_and_another_seed_changes_it() -> None:
    a, b, c = (_solved("leduc2p", 2_000, seed) for seed in (5, 5, 6))
    assert np.array_equal(a.regrets, b.regrets) and np.array_equal(a.sums, b.sums)
    assert not np.array_equal(a.regrets, c.regrets)


def test_a_saved_run_resumes_bit_for_bit(tmp_path: Path) -> None:
    whole = _solved("leduc2p", 3_000, seed=7)
    first = _solved("leduc2p", 1_000, seed=7)
    first.save(tmp_path / "state.npz")
    resumed = MCCFRSolver.load(limit_game("leduc2p"), tmp_path / "state.npz")
    assert resumed.config == MCCFRConfig(seed=7) and resumed.iteration == 1_000
    resumed.run(2_000)
    for name in ("regrets", "sums", "current"):
        assert np.array_equal(getattr(resumed, name), getattr(whole, name))


def test_the_abstract_games_information_sets_are_buckets_and_exact_betting() -> None:
    game = abstract_game("holdem2p", SMALL)
    assert game.name.startswith("holdem2p@") and game.num_deals == 200
    assert game.sizes()["decision_nodes"] == 6_378  # heads-up limit hold'em's betting, exact
    # imperfect recall: a round's bucket of 3, whatever the betting
    strings = [game.infoset_string(p, i) for p in range(2) for i in game.infosets(p)]
    assert len(strings) == 3 * 6_378 == len(set(strings))
    assert {"0:", "2:", "1:cc/", "2:cc/rc/crrrrc/r"} <= set(strings)
    perfect = abstract_game("holdem2p", AbstractGameConfig(SMALL_CARDS, 200, 2, "perfect"))
    assert perfect.name != game.name
    assert perfect.infoset_from_string(0, "2/0/1:cc/cc/") >= 0
    with pytest.raises(InvalidArgumentError):
        game.infoset_from_string(0, "2/0/1:cc/cc/")  # three rounds' buckets: perfect recall's


def test_a_blueprint_of_the_abstract_game_improves_and_its_file_reads_back(tmp_path: Path) -> None:
    game = abstract_game("holdem2p", SMALL)
    solver = MCCFRSolver(game, MCCFRConfig(seed=1))
    solver.run(500)
    early = solver.nash_conv()
    solver.run(30_000)
    assert solver.nash_conv() < early / 3  # exploitability inside the abstraction and sample
    save_profile(game, solver.average_profile(), tmp_path / "blueprint.json")
    assert np.allclose(load_profile(game, tmp_path / "blueprint.json"), solver.average_profile())
    solver.save(tmp_path / "state.npz")
    other = abstract_game("holdem2p", AbstractGameConfig(SMALL_CARDS, deals=201, seed=2))
    with pytest.raises(InvalidArgumentError, match="belongs to holdem2p@"):
        MCCFRSolver.load(other, tmp_path / "state.npz")  # same rules, another abstract game


def test_three_player_holdems_betting_tree_is_refused_with_its_size() -> None:
    with pytest.raises(UnknownGameError, match="23,937,308 public nodes"):
        abstract_game("holdem3p", SMALL)
    with pytest.raises(UnknownGameError, match="no hold'em game"):
        abstract_game("leduc2p", SMALL)


def small_solve(
    game: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., dict]:
    """``oppmodel solve GAME --iterations N ARGS --json`` in the small abstraction (SMALL): its
    summary; ``resume=True`` resumes from and saves to the test's state file."""
    monkeypatch.setattr(solve_cmd, "HOLDEM_DEFAULTS", AbstractGameConfig(SMALL_CARDS, 100, 0))
    common = ["--out", str(tmp_path / "bp.json"), "--deals", "200", "--seed", "2", "--json"]

    def solve(iterations: int, *, resume: bool = False) -> dict:
        state = ["--resume", str(tmp_path / "bp.npz")] if resume else []
        assert main(["solve", game, "--iterations", str(iterations), *state, *common]) == 0
        return json.loads(capsys.readouterr().out)

    return solve


def test_oppmodel_solve_holdem2p_runs_the_abstract_game_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    solve = small_solve("holdem2p", tmp_path, capsys, monkeypatch)
    first, again, straight = solve(1000, resume=True), solve(3000, resume=True), solve(3000)
    assert first["game"] == abstract_game("holdem2p", SMALL).name == straight["game"]
    assert (first["algorithm"], again["iterations"]) == ("es-mccfr", 3000)
    assert again["nash_conv"] == straight["nash_conv"] < first["nash_conv"]
    assert "--buckets 3 3 3 3 --deals 200 --recall imperfect --seed 2" in again["command"]
    game = abstract_game("holdem2p", SMALL)
    assert load_profile(game, tmp_path / "bp.json").shape == (2, game.num_infosets, 3)
    for argv, message in [
        (["leduc2p", "--deals", "5"], "deals: applies to hold'em only, not leduc2p"),
        (["holdem2p", "--algorithm", "dcfr"], "hold'em is solved by external-sampling MCCFR"),
        (["holdem2p", "--min-reach", "0.1"], "min_reach: applies to 3-player hold'em only"),
    ]:
        out = str(tmp_path / "x.json")
        assert main(["solve", *argv, "--iterations", "1", "--out", out]) == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize("recall", RECALLS)
def test_the_blueprint_plays_real_cards_and_whole_ranges_through_the_abstract_games_buckets(
    tmp_path: Path, recall: str
) -> None:
    config = AbstractGameConfig(SMALL_CARDS, 200, 2, recall)
    game = abstract_game("holdem2p", config)
    solver = MCCFRSolver(game, MCCFRConfig(seed=1))
    solver.run(3_000)
    profile = solver.average_profile()
    save_profile(game, profile, tmp_path / "bp.json", solver={"abstract_game": asdict(config)})
    blueprint = Blueprint.from_file(tmp_path / "bp.json")
    assert isinstance(blueprint, HoldemPolicy)
    tree = game.tree
    for d in range(0, 200, 10):
        cards = [game.deck[c] for c in game.deal_cards[d]]
        for betting in ["", "r", "cc/", "cc/r", "cc/cc/", "cc/cc/cr", "cc/cc/cc/", "cc/cc/cc/rr"]:
            node = game.node(betting)
            rnd, p = int(tree.node_round[node]), int(tree.node_player[node])
            spot = Spot.of(game.gamedef, cards[4 : 4 + BOARD_SIZES[rnd]], betting)
            hole = [card_index(c) for c in cards[2 * p : 2 * p + 2]]
            expected = profile[p, tree.node_base[node] + tree.deal_view[rnd, d, p]]
            assert action_row(blueprint, spot, hole).tolist() == expected.tolist()

    # every live hand of a range at once (what the local best response asks): each row is the
    # profile's row at the information set the abstract game's own key of that hand names
    abstraction = card_abstraction(SMALL_CARDS)
    board = [card_index(c) for c in ("Ks", "7s", "2s", "Td", "4s")]  # a monotone flop
    for betting in ["", "cc/r", "cc/cc/c", "cc/cc/cc/rr"]:
        state = HandState.from_betting(game.gamedef, betting).state
        spot = Spot(game.gamedef, tuple(board[: BOARD_SIZES[state.round]]), state)
        holes = live_holes(spot.board)
        rows = blueprint.probabilities(spot, holes)
        first = 0 if recall == "perfect" else spot.round
        for k in range(0, len(holes), 37):
            names = [CARD_NAMES[c] for c in holes[k]]
            view = "/".join(
                str(abstraction.bucket(names, [CARD_NAMES[c] for c in board[: BOARD_SIZES[r]]]))
                for r in range(first, spot.round + 1)
            )
            infoset = game.infoset_from_string(spot.position, f"{view}:{betting}")
            assert rows[k].tolist() == profile[spot.position, infoset].tolist()


def test_a_solved_file_records_its_cut_points_and_plays_without_rebuilding_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(solve_cmd, "HOLDEM_DEFAULTS", AbstractGameConfig(SMALL_CARDS, 100, 0))
    out = tmp_path / "bp.json"
    assert main(["solve", "holdem2p", "--iterations", "200", "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    recorded = json.loads(out.read_text())["solver"]["abstract_game"]
    built = card_abstraction(SMALL_CARDS)
    assert recorded["cuts"] == [c.tolist() for c in built.cuts]
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "empty-cache"))  # nothing to read them from
    blueprint = Blueprint.from_file(out)
    assert not (tmp_path / "empty-cache" / "abstractions").exists()  # not rebuilt
    assert all(np.array_equal(a, b) for a, b in zip(blueprint.cards.cuts, built.cuts, strict=True))
