"""Tests of tic-tac-toe, its players, logged games, encodings and the top-N experiment."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oppmodel.clients.commands import movepred_cmd
from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.movepred.tictactoe import (
    EMPTY_BOARD,
    ENCODINGS,
    LEGAL_FEATURE_NAMES,
    STATE_FEATURE_NAMES,
    MinimaxPlayer,
    RandomPlayer,
    apply_move,
    best_moves,
    is_terminal,
    legal_mask,
    legal_moves,
    log_games,
    minimax_examples,
    minimax_value,
    run_topn_experiment,
    state_features,
    state_legal_features,
    to_move,
    winner,
)


def _reachable() -> set[tuple[int, ...]]:
    seen = {EMPTY_BOARD}
    frontier = [EMPTY_BOARD]
    while frontier:
        board = frontier.pop()
        for move in legal_moves(board):
            child = apply_move(board, move)
            if child not in seen:
                seen.add(child)
                frontier.append(child)
    return seen


REACHABLE = _reachable()


def test_rules_known_answers():
    assert len(REACHABLE) == 5478  # the well-known count of legal tic-tac-toe positions
    assert sum(1 for b in REACHABLE if is_terminal(b)) == 958  # and of finished ones
    board = (1, 1, 1, 2, 2, 0, 0, 0, 0)
    assert winner(board) == 1 and legal_moves(board) == () and is_terminal(board)
    assert to_move((1, 0, 0, 0, 0, 0, 0, 0, 0)) == 2
    with pytest.raises(IllegalActionError, match=r"^move:"):
        apply_move((1, 0, 0, 0, 0, 0, 0, 0, 0), 0)
    with pytest.raises(InvalidArgumentError, match=r"^board:"):
        winner((2, 0, 0, 0, 0, 0, 0, 0, 0))


def test_minimax_values():
    assert minimax_value(EMPTY_BOARD) == 0  # perfect play draws
    # X to move can win at once in cell 2 (row 1) or later; the quickest win is worth 1 + 4 empties.
    board = (1, 1, 0, 2, 2, 0, 0, 0, 0)
    assert minimax_value(board) == 5 and best_moves(board) == (2,)
    # O to move must block at cell 2 or lose.
    board = (1, 1, 0, 0, 2, 0, 0, 0, 0)
    assert best_moves(board) == (2,)


def test_best_moves_preserve_the_value_everywhere():
    # Every move offered by best_moves keeps the minimax value, so both tie-breaks are optimal.
    for board in REACHABLE:
        if is_terminal(board):
            continue
        value = minimax_value(board)
        for move in best_moves(board):
            assert -minimax_value(apply_move(board, move)) == value
        others = set(legal_moves(board)) - set(best_moves(board))
        assert all(-minimax_value(apply_move(board, m)) < value for m in others)


@pytest.mark.parametrize("tie_break", ["first", "random"])
@pytest.mark.parametrize("mark", [1, 2])
def test_minimax_never_loses_to_any_move_sequence(mark, tie_break):
    """Exhaustive: from the empty board, every opponent reply at every turn."""
    player = MinimaxPlayer(tie_break, seed=5)
    finished = 0
    stack = [EMPTY_BOARD]
    while stack:
        board = stack.pop()
        if is_terminal(board):
            assert winner(board) in (0, mark)
            finished += 1
        elif to_move(board) == mark:
            stack.append(apply_move(board, player(board)))
        else:
            stack.extend(apply_move(board, m) for m in legal_moves(board))
    assert finished > 10


def test_minimax_first_tie_break_is_the_lowest_best_cell():
    player = MinimaxPlayer("first")
    assert all(player(b) == best_moves(b)[0] for b in REACHABLE if not is_terminal(b))


def test_logged_games_are_seeded_and_minimax_never_loses():
    games = log_games(30, seed=4, tie_break="random")
    assert games == log_games(30, seed=4, tie_break="random")
    assert games != log_games(30, seed=5, tie_break="random")
    assert [g.minimax_mark for g in games[:4]] == [1, 2, 1, 2]
    assert all(g.winner in (0, g.minimax_mark) for g in games)
    assert {g.minimax_mark for g in log_games(4, seed=0, minimax_role="o")} == {2}
    player = RandomPlayer(seed=1)
    moves = [player(EMPTY_BOARD) for _ in range(200)]
    assert set(moves) == set(range(9))
    with pytest.raises(InvalidArgumentError, match=r"^minimax_role:"):
        log_games(1, minimax_role="both")
    with pytest.raises(InvalidArgumentError, match=r"^tie_break:"):
        MinimaxPlayer("last")


def test_examples_are_the_minimax_turns():
    games = log_games(6, seed=2)
    ex = minimax_examples(games)
    assert ex.boards.shape == (ex.moves.size, 9)
    assert ex.moves.size == sum((len(g.moves) + (g.minimax_mark == 1)) // 2 for g in games)
    player = MinimaxPlayer("first")
    for board, move in zip(ex.boards, ex.moves, strict=True):
        assert player(tuple(int(v) for v in board)) == move


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(REACHABLE)))
def test_encodings(board):
    b = np.array([board])
    x = state_features(b)[0]
    assert x.shape == (len(STATE_FEATURE_NAMES),)
    names = {STATE_FEATURE_NAMES[j] for j in np.flatnonzero(x)}
    expected = {f"cell({c // 3 + 1},{c % 3 + 1})={'bxo'[v]}" for c, v in enumerate(board)}
    expected.add("control=x" if to_move(board) == 1 else "control=o")
    assert names == expected
    mask = legal_mask(b)[0]
    assert np.flatnonzero(mask).tolist() == list(legal_moves(board))
    xl = state_legal_features(b)[0]
    assert xl.shape == (len(STATE_FEATURE_NAMES) + len(LEGAL_FEATURE_NAMES),)
    assert np.array_equal(xl[: len(STATE_FEATURE_NAMES)], x) and np.array_equal(xl[-9:], mask)


def test_experiment_legal_only_dominates_state_only():
    result = run_topn_experiment(train_games=40, test_games=10, repeats=2, seed=1)
    again = run_topn_experiment(train_games=40, test_games=10, repeats=2, seed=1)
    assert result == again
    for encoding in ENCODINGS:
        curve = np.array(result.curves[encoding])
        assert np.all(np.diff(curve) >= 0) and curve[-1] == 1.0
    # Ranking among legal moves removes competitors only: no position's rank can get worse.
    assert all(
        legal >= state
        for legal, state in zip(result.curves["legal-only"], result.curves["state"], strict=True)
    )
    # and the learned model beats a uniformly random legal ranking at top-1.
    assert result.top("legal-only", 1) > result.chance_legal[0]
    out = result.to_json()
    assert out["top3"]["state"] == result.curves["state"][2]
    with pytest.raises(InvalidArgumentError, match=r"^repeats:"):
        run_topn_experiment(repeats=0)


def test_cli_json(capsys):
    parser = argparse.ArgumentParser()
    movepred_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["movepred", "--games", "20", "--test-games", "5", "--json"])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["curves"]) == set(ENCODINGS)
    assert out["config"]["train_games"] == 20
    assert set(out["top1"]) == set(ENCODINGS)
