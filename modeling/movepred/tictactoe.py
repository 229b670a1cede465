"""Tic-tac-toe, a random and a minimax player, logged games, and a top-N move-prediction test.

Hicks-Wright & Schkufza (2006, section 5.1.2 and Figure 5) logs 100 games of a random
player against a minimax player, trains a naive Bayes move model
(``oppmodel.modeling.movepred.naive_bayes``) on the minimax player's moves and ranks its moves in 10
test games. Figure 5 compares three set-ups, named here:

``state``        GDL-style state facts only, every one of the 9 moves assumed legal (blue curve);
``state+legal``  the state facts plus one "legal move" fact per cell, all 9 moves ranked (pink);
``legal-only``   the state facts, only the legal moves of the state ranked (maroon).

Board: a tuple of 9 cells in row-major order (cell ``3 * row + col``), 0 empty, 1 X, 2 O; X moves
first. State features follow GDL's facts (``cell(r,c)=x|o|b`` for all 9 cells, then
``control=x|o``): 29 binary features. The move vocabulary is the 9 cells.

Minimax. A finished game is worth ``+(1 + e)`` to the winner and ``-(1 + e)`` to the loser, ``e``
being the number of empty cells left, and 0 for a draw, so among winning moves the player prefers
the quickest win and among losing ones the slowest loss (plain +1/0/-1 minimax may dawdle before a
win it cannot miss). Values are exact over the whole game tree (memoised). Ties among best moves go
to the lowest cell index (``tie_break="first"``, deterministic, so the opponent is a fixed function
of the state as in the paper), or to a seeded uniform choice (``tie_break="random"``).

Training rows are the positions where the minimax player is to move (the paper's own fix for its
Mummy Maze errors, section 5.3.1: no rows for the other player's turns). By default the minimax
player takes X in even-numbered games and O in odd ones, so it is seen in both roles.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.choice import Choice
from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.movepred.naive_bayes import move_ranks, top_n_curve, train_move_model

__all__ = [
    "CELLS",
    "EMPTY_BOARD",
    "ENCODINGS",
    "LEGAL_FEATURE_NAMES",
    "MOVE_NAMES",
    "STATE_FEATURE_NAMES",
    "GameRecord",
    "MinimaxPlayer",
    "MoveExamples",
    "RandomPlayer",
    "TopNResult",
    "apply_move",
    "best_moves",
    "is_terminal",
    "legal_mask",
    "legal_moves",
    "log_games",
    "minimax_examples",
    "minimax_value",
    "play_game",
    "run_topn_experiment",
    "state_features",
    "state_legal_features",
    "to_move",
    "winner",
]

Board = tuple[int, ...]
Player = Callable[[Board], int]

CELLS = 9
EMPTY_BOARD: Board = (0,) * CELLS
_LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
_MARK_NAMES = ("b", "x", "o")

MOVE_NAMES: tuple[str, ...] = tuple(f"mark({c // 3 + 1},{c % 3 + 1})" for c in range(CELLS))
STATE_FEATURE_NAMES: tuple[str, ...] = (
    *tuple(f"cell({c // 3 + 1},{c % 3 + 1})={m}" for c in range(CELLS) for m in ("x", "o", "b")),
    "control=x",
    "control=o",
)
LEGAL_FEATURE_NAMES: tuple[str, ...] = tuple(f"legal {name}" for name in MOVE_NAMES)
ENCODINGS: tuple[str, ...] = ("state", "state+legal", "legal-only")


def _check_board(board: Sequence[int]) -> Board:
    b = tuple(int(v) for v in board)
    if len(b) != CELLS or any(v not in (0, 1, 2) for v in b):
        raise InvalidArgumentError("board", "must be 9 cells, each 0 (empty), 1 (X) or 2 (O)")
    n_x, n_o = b.count(1), b.count(2)
    if n_x - n_o not in (0, 1):
        raise InvalidArgumentError(
            "board", f"X count ({n_x}) must equal or exceed O's ({n_o}) by 1"
        )
    return b


def winner(board: Sequence[int]) -> int:
    """1 if X has three in a line, 2 if O has, else 0."""
    b = _check_board(board)
    return _winner(b)


def _winner(b: Board) -> int:
    for i, j, k in _LINES:
        if b[i] and b[i] == b[j] == b[k]:
            return b[i]
    return 0


def to_move(board: Sequence[int]) -> int:
    """Mark of the player to move: 1 (X) or 2 (O)."""
    b = _check_board(board)
    return 1 if b.count(1) == b.count(2) else 2


def is_terminal(board: Sequence[int]) -> bool:
    """True when someone has won or the board is full."""
    b = _check_board(board)
    return _winner(b) != 0 or 0 not in b


def legal_moves(board: Sequence[int]) -> tuple[int, ...]:
    """Empty cells, ascending; none once the game is over."""
    b = _check_board(board)
    if _winner(b):
        return ()
    return tuple(c for c in range(CELLS) if b[c] == 0)


def apply_move(board: Sequence[int], move: int) -> Board:
    """The board after the player to move marks cell ``move``."""
    if move not in legal_moves(board):
        raise IllegalActionError("move", f"cell {move} is not a legal move on board {tuple(board)}")
    b = list(board)
    b[move] = to_move(board)
    return tuple(b)


@functools.cache
def _value(b: Board) -> int:
    """Minimax value for the player to move (see the module docstring)."""
    empties = b.count(0)
    if _winner(b):  # the previous mover won
        return -(1 + empties)
    if empties == 0:
        return 0
    mark = 1 if b.count(1) == b.count(2) else 2
    best = -CELLS - 2
    for c in range(CELLS):
        if b[c] == 0:
            child = (*b[:c], mark, *b[c + 1 :])
            best = max(best, -_value(child))
    return best


def minimax_value(board: Sequence[int]) -> int:
    """Exact minimax value of ``board`` for the player to move (quick wins worth more)."""
    return _value(_check_board(board))


def best_moves(board: Sequence[int]) -> tuple[int, ...]:
    """All moves achieving the minimax value, ascending."""
    b = _check_board(board)
    moves = legal_moves(b)
    if not moves:
        raise InvalidArgumentError("board", "the game is over; there is no move")
    mark = to_move(b)
    values = [-_value((*b[:c], mark, *b[c + 1 :])) for c in moves]
    top = max(values)
    return tuple(c for c, v in zip(moves, values, strict=True) if v == top)


class RandomPlayer:
    """Picks a legal move uniformly at random (seeded)."""

    def __init__(self, seed: int | np.random.Generator | None = 0) -> None:
        self._rng = np.random.default_rng(seed)

    def __call__(self, board: Board) -> int:
        moves = legal_moves(board)
        return int(moves[self._rng.integers(len(moves))])


class TieBreak(Choice):
    """How the minimax player picks among equally good moves."""

    FIRST = "first"  # the lowest cell: a fixed function of the state, as in the paper
    RANDOM = "random"  # a seeded uniform choice


class MinimaxRole(Choice):
    """Which side the minimax player takes in logged games."""

    CROSSES = "x"  # X, who moves first
    NOUGHTS = "o"
    ALTERNATE = "alternate"  # X in even-numbered games, O in odd ones


class MinimaxPlayer:
    """Plays a minimax-optimal move; ties to the lowest cell or to a seeded uniform choice."""

    def __init__(
        self, tie_break: TieBreak | str = TieBreak.FIRST, seed: int | np.random.Generator | None = 0
    ) -> None:
        try:
            self.tie_break = TieBreak(tie_break)
        except ValueError:
            raise InvalidArgumentError("tie_break", "must be 'first' or 'random'") from None
        self._rng = np.random.default_rng(seed)

    def __call__(self, board: Board) -> int:
        moves = best_moves(board)
        if self.tie_break == TieBreak.FIRST or len(moves) == 1:
            return moves[0]
        return int(moves[self._rng.integers(len(moves))])


@dataclass(frozen=True)
class GameRecord:
    """One finished game: cells played in order, the minimax player's mark, the winner (0 draw)."""

    moves: tuple[int, ...]
    minimax_mark: int
    winner: int


def play_game(x_player: Player, o_player: Player) -> tuple[tuple[int, ...], int]:
    """Play one game from the empty board; returns (cells played in order, winner or 0)."""
    board = EMPTY_BOARD
    played: list[int] = []
    while not is_terminal(board):
        player = x_player if to_move(board) == 1 else o_player
        move = player(board)
        board = apply_move(board, move)
        played.append(move)
    return tuple(played), _winner(board)


def log_games(
    n_games: int,
    *,
    seed: int = 0,
    minimax_role: MinimaxRole | str = MinimaxRole.ALTERNATE,
    tie_break: TieBreak | str = TieBreak.FIRST,
) -> tuple[GameRecord, ...]:
    """Play ``n_games`` of a random player against a minimax player (seeded).

    ``minimax_role``: "x", "o", or "alternate" (X in even-numbered games, O in odd ones).
    """
    if isinstance(n_games, bool) or not isinstance(n_games, int) or n_games < 1:
        raise InvalidArgumentError("n_games", "must be a positive integer")
    try:
        role = MinimaxRole(minimax_role)
    except ValueError:
        raise InvalidArgumentError("minimax_role", "must be 'x', 'o' or 'alternate'") from None
    random_seed, minimax_seed = np.random.SeedSequence(seed).spawn(2)
    rand = RandomPlayer(np.random.default_rng(random_seed))
    mini = MinimaxPlayer(tie_break, np.random.default_rng(minimax_seed))
    games = []
    for g in range(n_games):
        mark = {MinimaxRole.CROSSES: 1, MinimaxRole.NOUGHTS: 2}.get(role, 1 if g % 2 == 0 else 2)
        played, won = play_game(mini, rand) if mark == 1 else play_game(rand, mini)
        games.append(GameRecord(moves=played, minimax_mark=mark, winner=won))
    return tuple(games)


@dataclass(frozen=True, eq=False)
class MoveExamples:
    """Positions where the minimax player was to move: boards (m, 9) int8 and moves made (m,)."""

    boards: np.ndarray
    moves: np.ndarray


def minimax_examples(games: Sequence[GameRecord]) -> MoveExamples:
    """The (board, move made) pairs of every minimax turn in ``games``."""
    boards: list[Board] = []
    moves: list[int] = []
    for game in games:
        board = EMPTY_BOARD
        for move in game.moves:
            if to_move(board) == game.minimax_mark:
                boards.append(board)
                moves.append(move)
            board = apply_move(board, move)
    return MoveExamples(
        boards=np.array(boards, dtype=np.int8).reshape(-1, CELLS),
        moves=np.array(moves, dtype=np.int64),
    )


def _boards(boards: object) -> np.ndarray:
    arr = np.asarray(boards)
    if arr.ndim != 2 or arr.shape[1] != CELLS:
        raise InvalidArgumentError("boards", f"must have shape (m, {CELLS})")
    if arr.size and not np.isin(arr, (0, 1, 2)).all():
        raise InvalidArgumentError("boards", "cells must be 0, 1 or 2")
    return arr.astype(np.int8)


def state_features(boards: object) -> np.ndarray:
    """GDL-style state facts (m, 29) uint8, in the order of ``STATE_FEATURE_NAMES``."""
    b = _boards(boards)
    cells = np.stack([b == 1, b == 2, b == 0], axis=2).reshape(b.shape[0], 3 * CELLS)
    x_to_move = (b == 1).sum(axis=1) == (b == 2).sum(axis=1)
    return np.column_stack([cells, x_to_move, ~x_to_move]).astype(np.uint8)


def legal_mask(boards: object) -> np.ndarray:
    """Legal moves (m, 9) bool: empty cells of boards nobody has won yet."""
    b = _boards(boards)
    won = np.zeros(b.shape[0], dtype=bool)
    for i, j, k in _LINES:
        won |= (b[:, i] != 0) & (b[:, i] == b[:, j]) & (b[:, j] == b[:, k])
    return (b == 0) & ~won[:, None]


def state_legal_features(boards: object) -> np.ndarray:
    """State facts followed by one legal-move fact per cell: (m, 38) uint8."""
    return np.column_stack([state_features(boards), legal_mask(boards)]).astype(np.uint8)


@dataclass(frozen=True)
class TopNResult:
    """Top-N curves (N = 1..9) per encoding, plus the curve of a uniformly random legal ranking."""

    curves: dict[str, tuple[float, ...]]
    chance_legal: tuple[float, ...]
    n_train_positions: int
    n_test_positions: int
    config: dict[str, object]

    def top(self, encoding: str, n: int) -> float:
        """Top-``n`` accuracy of ``encoding``."""
        return self.curves[encoding][n - 1]

    def to_json(self) -> dict[str, object]:
        """Plain-JSON view: curves, top-1 and top-3 called out, sizes and configuration."""
        return {
            "curves": {k: list(v) for k, v in self.curves.items()},
            "top1": {k: v[0] for k, v in self.curves.items()},
            "top3": {k: v[2] for k, v in self.curves.items()},
            "chance_legal": list(self.chance_legal),
            "n_train_positions": self.n_train_positions,
            "n_test_positions": self.n_test_positions,
            "config": dict(self.config),
        }


def run_topn_experiment(
    *,
    train_games: int = 100,
    test_games: int = 10,
    repeats: int = 1,
    seed: int = 0,
    k_features: int | None = None,
    alpha: float = 1.0,
    minimax_role: MinimaxRole | str = MinimaxRole.ALTERNATE,
    tie_break: TieBreak | str = TieBreak.FIRST,
    progress: Callable[[int], None] | None = None,
) -> TopNResult:
    """Hicks-Wright & Schkufza's Figure 5: train on logged games, rank the minimax player's moves.

    Each of ``repeats`` replications logs ``train_games`` and ``test_games`` fresh games (seeds
    drawn from ``seed``); the ranks of all test positions are pooled into one curve per encoding.
    ``k_features`` (chi-squared selection) applies to every encoding, capped at its width.
    ``progress``, if given, is called with 1 after each replication.
    """
    for name, val in (
        ("train_games", train_games),
        ("test_games", test_games),
        ("repeats", repeats),
    ):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise InvalidArgumentError(name, "must be a positive integer")
    ranks: dict[str, list[np.ndarray]] = {e: [] for e in ENCODINGS}
    chance: list[np.ndarray] = []
    n_train = n_test = 0
    for seq in np.random.SeedSequence(seed).spawn(repeats):
        train_seed, test_seed = (int(s.generate_state(1)[0]) for s in seq.spawn(2))
        common = {"minimax_role": minimax_role, "tie_break": tie_break}
        train = minimax_examples(log_games(train_games, seed=train_seed, **common))
        test = minimax_examples(log_games(test_games, seed=test_seed, **common))
        n_train += train.moves.size
        n_test += test.moves.size
        test_legal = legal_mask(test.boards)
        for encoding in ENCODINGS:
            encode = state_legal_features if encoding == "state+legal" else state_features
            names = STATE_FEATURE_NAMES + (LEGAL_FEATURE_NAMES if encoding == "state+legal" else ())
            x_train = encode(train.boards)
            k = None if k_features is None else min(k_features, x_train.shape[1])
            model = train_move_model(
                x_train,
                train.moves,
                n_moves=CELLS,
                alpha=alpha,
                k_features=k,
                feature_names=names,
                move_names=MOVE_NAMES,
            )
            legal = test_legal if encoding == "legal-only" else None
            ranks[encoding].append(move_ranks(model, encode(test.boards), test.moves, legal=legal))
        n_legal = test_legal.sum(axis=1)
        chance.append(
            np.minimum(np.arange(1, CELLS + 1)[None, :], n_legal[:, None]) / n_legal[:, None]
        )
        if progress is not None:
            progress(1)
    curves = {
        e: tuple(float(v) for v in top_n_curve(np.concatenate(r), CELLS)) for e, r in ranks.items()
    }
    return TopNResult(
        curves=curves,
        chance_legal=tuple(float(v) for v in np.concatenate(chance).mean(axis=0)),
        n_train_positions=n_train,
        n_test_positions=n_test,
        config={
            "train_games": train_games,
            "test_games": test_games,
            "repeats": repeats,
            "seed": seed,
            "k_features": k_features,
            "alpha": alpha,
            "minimax_role": minimax_role,
            "tie_break": tie_break,
        },
    )
