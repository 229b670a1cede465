"""Behaviour strategies as arrays, and their JSON form.

A *strategy* for one position is an array ``(num_infosets, 2)`` of action probabilities (column 0 =
pass, 1 = bet); a *profile* stacks one per position, ``(num_players, num_infosets, 2)``. Padding
rows (information sets a position does not have) hold ``[0.5, 0.5]`` so kernels never meet a zero
row.

Kuhn's JSON form is keyed by OpenSpiel information-state strings so strategies move freely between
this project and OpenSpiel's tabular policies::

    {"game": "kuhn_poker", "num_players": 3,
     "positions": [{"0": [1.0, 0.0], "0ppb": [1.0, 0.0], ...}, {...}, {...}]}

A file for a single position has ``"position": p`` and ``"strategy": {...}`` instead of
``"positions"``. Every command reads such files through the one strategy-file loader,
:func:`oppmodel.modeling.games.acpc.strategy.load_profile`, beside the files ``oppmodel solve``
writes (keyed by the compiled game's strings, ``"Js:"``), and converts them exactly."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from oppmodel.modeling import _strategy_kernels as kernels
from oppmodel.modeling.errors import InvalidArgumentError, InvalidStrategyError
from oppmodel.modeling.games.kuhn import KuhnGame

SUM_TOLERANCE = 1e-9


def uniform_profile(game: KuhnGame) -> np.ndarray:
    """Every action with probability 1/2 at every information set."""
    return np.full((game.num_players, game.num_infosets, 2), 0.5)


def sample_history(
    game: KuhnGame, profile: np.ndarray, deal: Sequence[int] | np.ndarray, rng: np.random.Generator
) -> str:
    """One hand's betting ('p'/'b' letters) with every position playing ``profile`` on ``deal``."""
    history = ""
    while not game.is_terminal(history):
        node = game.node(history)
        player = game.node_player[node]
        bet = rng.random() < profile[player, game.infoset_of[node, deal[player]], 1]
        history += "b" if bet else "p"
    return history


def validate_strategy(
    game: KuhnGame, position: int, strategy: np.ndarray, field: str
) -> np.ndarray:
    """Return ``strategy`` as a float array after checking shape, finiteness and normalisation."""
    arr = np.asarray(strategy, dtype=float)
    if arr.shape != (game.num_infosets, 2):
        raise InvalidStrategyError(field, f"shape {arr.shape}, expected ({game.num_infosets}, 2)")
    rows = game.infosets(position)
    real = arr[rows]
    finite = np.isfinite(real).all(axis=1)
    if not finite.all():
        bad = rows[int(np.argmin(finite))]
        raise InvalidStrategyError(
            field, f"NaN or infinity at {game.infoset_string(position, bad)}"
        )
    if np.any(real < 0):
        bad = rows[int(np.argmax((real < 0).any(axis=1)))]
        raise InvalidStrategyError(
            field, f"negative probability at {game.infoset_string(position, bad)}"
        )
    sums = real.sum(axis=1)
    off = np.abs(sums - 1.0) > SUM_TOLERANCE
    if off.any():
        bad = rows[int(np.argmax(off))]
        raise InvalidStrategyError(
            field,
            f"probabilities at {game.infoset_string(position, bad)} sum to "
            f"{float(sums[int(np.argmax(off))])!r}, not 1",
        )
    out = np.full((game.num_infosets, 2), 0.5)
    out[rows] = real
    return out


def validate_profile(game: KuhnGame, profile: np.ndarray, field: str = "profile") -> np.ndarray:
    """Check a whole profile ``(num_players, num_infosets, 2)``; returns a clean float copy."""
    arr = np.asarray(profile, dtype=float)
    if arr.shape != (game.num_players, game.num_infosets, 2):
        raise InvalidStrategyError(
            field, f"shape {arr.shape}, expected ({game.num_players}, {game.num_infosets}, 2)"
        )
    # One kernel pass accepts a valid profile; only an invalid one takes the per-position
    # checks, which find and name the first offending entry.
    if kernels.first_invalid_row(arr, game._valid_mask, SUM_TOLERANCE) < 0:
        out = arr.copy()
        if game._has_padding:
            out[~game._valid_mask] = 0.5
        return out
    return np.stack(
        [validate_strategy(game, p, arr[p], f"{field}[{p}]") for p in range(game.num_players)]
    )


class InfosetNames(Protocol):
    """What a strategy table's keys need of a game (``KuhnGame``, a compiled ``LimitGame``): each
    position's information sets and their information-state strings."""

    @property
    def num_infosets(self) -> int: ...

    def infosets(self, position: int) -> Sequence[int]: ...

    def infoset_string(self, position: int, index: int) -> str: ...

    def infoset_from_string(self, position: int, infostate: str) -> int: ...


def strategy_to_dict(
    game: InfosetNames, position: int, strategy: np.ndarray
) -> dict[str, list[float]]:
    """``{infostate string: [probability of each action]}`` for one position (Kuhn's
    ``[p_pass, p_bet]``, a limit game's ``[p_fold, p_call, p_raise]``)."""
    return {
        game.infoset_string(position, i): [float(x) for x in strategy[i]]
        for i in game.infosets(position)
    }


def rows_from_dict(
    game: InfosetNames, position: int, table: object, field: str, actions: Sequence[str]
) -> np.ndarray:
    """The rows ``(num_infosets, len(actions))`` of a table read by :func:`strategy_from_dict`
    (and a limit game's): every information set of ``position`` present as a list of finite
    numbers, one per action, else InvalidStrategyError naming the key; other rows NaN. Whether
    the rows are strategies is the caller's check (its game's ``validate_profile``)."""
    if not isinstance(table, Mapping):
        raise InvalidStrategyError(field, "must be an object keyed by information-state strings")
    out = np.full((game.num_infosets, len(actions)), math.nan)
    for key, probs in table.items():
        try:
            idx = game.infoset_from_string(position, key)
        except InvalidArgumentError as exc:
            raise InvalidStrategyError(
                f"{field}[{key!r}]", f"not an information state of position {position} ({exc})"
            ) from None
        if (
            not isinstance(probs, list | tuple)
            or len(probs) != len(actions)
            or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in probs)
        ):
            raise InvalidStrategyError(f"{field}[{key!r}]", f"must be [{', '.join(actions)}]")
        if not all(math.isfinite(x) for x in probs):  # NaN would read as a missing row below
            raise InvalidStrategyError(
                f"{field}[{key!r}]", f"not finite (NaN or infinity): {probs}"
            )
        out[idx] = probs
    missing = [
        game.infoset_string(position, i) for i in game.infosets(position) if np.isnan(out[i, 0])
    ]
    if missing:
        raise InvalidStrategyError(
            field, f"missing {len(missing)} information sets, e.g. {missing[:3]}"
        )
    return out


def strategy_from_dict(
    game: KuhnGame, position: int, table: Mapping[str, object], field: str = "strategy"
) -> np.ndarray:
    """Inverse of :func:`strategy_to_dict`; every information set must be present."""
    out = rows_from_dict(game, position, table, field, ("p_pass", "p_bet"))
    out[np.isnan(out[:, 0])] = 0.5
    return validate_strategy(game, position, out, field)


def profile_to_json(game: KuhnGame, profile: np.ndarray) -> dict:
    """JSON-ready dict of a whole profile."""
    return {
        "game": "kuhn_poker",
        "num_players": game.num_players,
        "positions": [strategy_to_dict(game, p, profile[p]) for p in range(game.num_players)],
    }


def save_profile(game: KuhnGame, profile: np.ndarray, path: str | Path) -> None:
    """Write a whole profile as JSON."""
    Path(path).write_text(json.dumps(profile_to_json(game, profile), indent=1) + "\n")


def save_strategy(game: KuhnGame, position: int, strategy: np.ndarray, path: str | Path) -> None:
    """Write one position's strategy as JSON."""
    doc = {
        "game": "kuhn_poker",
        "num_players": game.num_players,
        "position": position,
        "strategy": strategy_to_dict(game, position, strategy),
    }
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")
