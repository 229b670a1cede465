"""Behaviour strategies of limit games as arrays, and their JSON files.

A *profile* is ``(num_players, num_infosets, 3)``: per position and information set the
probabilities of fold, call and raise (action codes 0, 1, 2). Illegal actions have probability 0
exactly (folding when nothing is to call, raising past the round's cap); padding rows (a position
with fewer information sets than the largest) hold a pure call so that kernels never meet an
empty row.

Files are keyed by the information-state strings of :mod:`oppmodel.modeling.games.acpc.limit_game`,
one ``[p_fold, p_call, p_raise]`` per information set, so a strategy reads without the code::

    {"game": "leduc2p", "num_players": 2, "actions": "fcr",
     "positions": [{"Ks:": [0.0, 0.7, 0.3], "Ks:r": [0.1, 0.6, 0.3], ...}, {...}],
     "solver": {...}}

``solver`` (optional) records how a strategy was made (algorithm, iterations, nash_conv); a file
for a single position has ``"position": p`` and ``"strategy": {...}`` instead of ``"positions"``.

This is the one strategy-file format of the project: every command and the service read strategy
files through :func:`load_profile` / :func:`parse_profile`, for any compiled game. A compiled Kuhn
game also reads files keyed by OpenSpiel's Kuhn information states (``"2ppb"``: card 2 after
pass, pass, bet; ``[p_pass, p_bet]``, :mod:`oppmodel.modeling.strategy`), told apart by their keys
and converted exactly: pass is check or fold, bet is bet or call (:func:`kuhn_strategy_on`). A
profile in OpenSpiel's conventions (``KuhnGame``) is the compiled game's converted back
(:func:`kuhn_profile_of`; the presentation ``games/kuhn_openspiel.py`` does it), so a file moves
unchanged between every command.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from oppmodel.modeling import _strategy_kernels
from oppmodel.modeling import strategy as kuhn_strategy
from oppmodel.modeling.errors import InvalidArgumentError, InvalidStrategyError
from oppmodel.modeling.games.acpc.betting import ACTION_LETTERS, CALL, FOLD, NUM_ACTIONS, RAISE
from oppmodel.modeling.games.acpc.gamedef import kuhn_unsupported
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.strategy import rows_from_dict, strategy_to_dict

SUM_TOLERANCE = 1e-9
OPENSPIEL_KUHN_KEY = re.compile(r"[0-9]+[pb]*")  # "2ppb"; ours always hold a ":"


def uniform_profile(game: LimitGame) -> np.ndarray:
    """Every legal action equally likely at every information set."""
    legal = game.legal_mask
    return legal / legal.sum(axis=2, keepdims=True)


def random_profile(
    game: LimitGame, rng: np.random.Generator, *, pure_share: float = 0.2
) -> np.ndarray:
    """A random profile: Dirichlet(1) over the legal actions, with about ``pure_share`` of the
    information sets pure (one legal action), so that exact ties and zero reach occur."""
    legal = game.legal_mask
    weights = rng.exponential(size=legal.shape) * legal
    pure = rng.random(legal.shape[:2]) < pure_share
    pick = np.argmax(np.where(legal, rng.random(legal.shape), -1.0), axis=2)
    weights[pure] = np.eye(NUM_ACTIONS)[pick[pure]]
    return weights / weights.sum(axis=2, keepdims=True)


def validate_profile(game: LimitGame, profile: np.ndarray, field: str = "profile") -> np.ndarray:
    """A clean float copy of ``profile`` after checking shape, finiteness, normalisation and that
    illegal actions have probability 0; the first offending information set is named."""
    arr = np.asarray(profile, dtype=float)
    shape = (game.num_players, game.num_infosets, NUM_ACTIONS)
    if arr.shape != shape:
        raise InvalidStrategyError(field, f"shape {arr.shape}, expected {shape}")
    mask, out = game.valid_infoset_mask, np.empty(shape)
    if _strategy_kernels.clean_copy(arr, mask, game.legal_mask, SUM_TOLERANCE, CALL, out):
        return out
    bad = _strategy_kernels.first_invalid_row(arr, mask, SUM_TOLERANCE)
    illegal = mask[:, :, None] & ~game.legal_mask & (arr != 0.0)
    if bad >= 0:
        p, i = divmod(int(bad), game.num_infosets)
        row = arr[p, i]
        where = f"{field}[{p}] at {game.infoset_string(p, i)!r}"
        if not np.all(np.isfinite(row)) or np.any(row < 0):
            raise InvalidStrategyError(where, f"{row.tolist()} is not a probability vector")
        raise InvalidStrategyError(where, f"probabilities sum to {float(row.sum())!r}, not 1")
    p, i, a = (int(x) for x in np.argwhere(illegal)[0])
    raise InvalidStrategyError(
        f"{field}[{p}] at {game.infoset_string(p, i)!r}",
        f"probability {arr[p, i, a]!r} on the illegal action {ACTION_LETTERS[a]!r}",
    )


def strategy_from_dict(
    game: LimitGame, position: int, table: Mapping[str, object], field: str = "strategy"
) -> np.ndarray:
    """Inverse of :func:`strategy_to_dict`; every information set must be present."""
    if (
        isinstance(table, Mapping)
        and table
        and all(OPENSPIEL_KUHN_KEY.fullmatch(str(key)) for key in table)
    ):
        return _from_openspiel_kuhn(game, position, table, field)
    out = rows_from_dict(game, position, table, field, ("p_fold", "p_call", "p_raise"))
    out[len(game.infosets(position)) :] = np.eye(NUM_ACTIONS)[CALL]
    profile = np.tile(np.eye(NUM_ACTIONS)[CALL], (game.num_players, game.num_infosets, 1))
    profile[position] = out
    return validate_profile(game, profile, field)[position]


def profile_to_json(game: LimitGame, profile: np.ndarray, *, solver: dict | None = None) -> dict:
    """The JSON document of a whole profile (``solver``: how it was made, if known)."""
    profile = validate_profile(game, profile)
    doc = {
        "game": game.name,
        "num_players": game.num_players,
        "actions": ACTION_LETTERS,
        "positions": [strategy_to_dict(game, p, profile[p]) for p in range(game.num_players)],
    }
    if solver is not None:
        doc["solver"] = solver
    return doc


def save_profile(
    game: LimitGame, profile: np.ndarray, path: str | Path, *, solver: dict | None = None
) -> None:
    """Write a whole profile as JSON, one information set per line (diffs stay readable)."""
    Path(path).write_text(profile_text(game, profile, solver=solver))


def profile_text(game: LimitGame, profile: np.ndarray, *, solver: dict | None = None) -> str:
    """The text of a strategy file of a whole profile (what :func:`save_profile` writes)."""
    return document_text(profile_to_json(game, profile, solver=solver))


def document_text(doc: dict) -> str:
    """A strategy file's text from its document (``positions``: one table per position), one
    information set per line."""
    doc = dict(doc)
    positions = doc.pop("positions")
    lines = [json.dumps(doc)[:-1] + ', "positions": [']
    for p, table in enumerate(positions):
        rows = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in table.items()]
        lines.append(" {\n" + ",\n".join(rows) + "\n }" + ("," if p + 1 < len(positions) else ""))
    lines.append("]}")
    return "\n".join(lines) + "\n"


def load_json(game: LimitGame, path: str | Path) -> tuple[dict[int, np.ndarray], dict]:
    """Read a profile or single-position file: ``({position: strategy}, the whole document)``."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError("profile", f"cannot read {path}: {exc}") from None
    return parse_json(game, text, str(path))


def parse_json(game: LimitGame, text: str, path: str) -> tuple[dict[int, np.ndarray], dict]:
    """:func:`load_json` of a file's text (``path`` names it in errors)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError("profile", f"cannot read {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise InvalidStrategyError("profile", f"{path}: top level must be an object")
    if doc.get("num_players", game.num_players) != game.num_players:
        raise InvalidStrategyError(
            "num_players", f"{path} is for {doc['num_players']} players, {game.name} has "
            f"{game.num_players}",
        )  # fmt: skip
    if doc.get("actions", ACTION_LETTERS) != ACTION_LETTERS:
        raise InvalidStrategyError("actions", f"{path}: actions must be {ACTION_LETTERS!r}")
    if "positions" in doc:
        positions = doc["positions"]
        if not isinstance(positions, list) or len(positions) != game.num_players:
            raise InvalidStrategyError("positions", f"{path}: needs {game.num_players} entries")
        found = {
            p: strategy_from_dict(game, p, positions[p], f"positions[{p}]")
            for p in range(game.num_players)
        }
        return found, doc
    if "position" in doc and "strategy" in doc:
        p = doc["position"]
        game.check_position(p)
        return {p: strategy_from_dict(game, p, doc["strategy"])}, doc
    raise InvalidStrategyError("profile", f"{path}: needs 'positions' or 'position' + 'strategy'")


def load_profile(game: LimitGame, *paths: str | Path) -> np.ndarray:
    """A whole profile from one file holding every position, or from one file per position
    (in any order), in either key style: what every command that takes a strategy file
    reads."""
    return _whole(game, [(str(path), load_json(game, path)[0]) for path in paths])


def parse_profile(game: LimitGame, text: str, source: str) -> np.ndarray:
    """A whole profile of ``game`` from the text of a strategy file holding every position, in
    either key style (``source`` names it in errors): the service's ``*_json`` fields."""
    return _whole(game, [(source, parse_json(game, text, source)[0])])


def is_strategy_file(name: str) -> bool:
    """Whether an agent or profile name names a strategy file (``*.json``, or a file that
    exists) rather than a strategy by name."""
    return name.endswith(".json") or Path(name).is_file()


def _whole(game: LimitGame, parts: list[tuple[str, dict[int, np.ndarray]]]) -> np.ndarray:
    found: dict[int, np.ndarray] = {}
    for path, strategies in parts:
        for p, strategy in strategies.items():
            if p in found:
                raise InvalidStrategyError("profile", f"position {p} given twice ({path})")
            found[p] = strategy
    missing = sorted(set(range(game.num_players)) - set(found))
    if missing:
        names = ", ".join(path for path, _ in parts)
        raise InvalidStrategyError("profile", f"{names}: no strategy for positions {missing}")
    return np.stack([found[p] for p in range(game.num_players)])


@functools.cache  # per compiled game: compiled games are cached and immutable
def kuhn_rows(game: LimitGame) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]:
    """Per position of a compiled Kuhn game: its information sets, the Kuhn kernels' index of
    each (``KuhnGame``, OpenSpiel's strings) and whether it faces a bet."""
    kuhn = kuhn_game(game.num_players)
    rows = []
    for p in range(game.num_players):
        ours = np.asarray(game.infosets(p), dtype=np.int64)
        theirs = []
        for i in ours:
            view, betting = game.infoset_string(p, int(i)).split(":")
            card = game.deck.index(view)
            theirs.append(kuhn.infoset_index(p, card, kuhn.acpc_to_history(betting)))
        facing = game.legal_mask[p, ours, FOLD].astype(bool)
        rows.append((ours, np.asarray(theirs, dtype=np.int64), facing))
    return tuple(rows)


def kuhn_strategy_on(game: LimitGame, position: int, strategy: np.ndarray) -> np.ndarray:
    """One position's Kuhn strategy (``KuhnGame``'s rows, [p_pass, p_bet]) on the same Kuhn game
    compiled from its ACPC file ([fold, call, raise]): pass is check or fold, bet is bet or call.
    The probabilities are copied, not computed, so the conversion is exact both ways."""
    ours, theirs, facing = kuhn_rows(game)[position]
    rows, zero = np.asarray(strategy, dtype=float)[theirs], np.zeros(len(ours))
    out = np.tile(np.eye(NUM_ACTIONS)[CALL], (game.num_infosets, 1))
    out[ours] = np.where(
        facing[:, None],
        np.column_stack([rows[:, 0], rows[:, 1], zero]),
        np.column_stack([zero, rows[:, 0], rows[:, 1]]),
    )
    return out


def kuhn_strategy_of(game: LimitGame, position: int, strategy: np.ndarray) -> np.ndarray:
    """Inverse of :func:`kuhn_strategy_on`: a compiled Kuhn game's strategy as ``KuhnGame``'s."""
    ours, theirs, facing = kuhn_rows(game)[position]
    rows = np.asarray(strategy, dtype=float)[ours]
    out = np.full((kuhn_game(game.num_players).num_infosets, 2), 0.5)
    out[theirs] = np.where(facing[:, None], rows[:, [FOLD, CALL]], rows[:, [CALL, RAISE]])
    return out


def kuhn_profile_on(game: LimitGame, kuhn_profile: np.ndarray) -> np.ndarray:
    """A ``KuhnGame`` profile (pass/bet) on the same Kuhn game compiled from its ACPC file."""
    rows = [kuhn_strategy_on(game, p, kuhn_profile[p]) for p in range(game.num_players)]
    return validate_profile(game, np.stack(rows))


def kuhn_profile_of(game: LimitGame, profile: np.ndarray) -> np.ndarray:
    """A compiled Kuhn game's profile as the Kuhn kernels' (``KuhnGame``, pass/bet)."""
    rows = [kuhn_strategy_of(game, p, profile[p]) for p in range(game.num_players)]
    return kuhn_strategy.validate_profile(kuhn_game(game.num_players), np.stack(rows))


def _from_openspiel_kuhn(
    game: LimitGame, position: int, table: Mapping[str, object], field: str
) -> np.ndarray:
    """One position's strategy keyed by OpenSpiel's Kuhn strings, converted to ``game``'s."""
    problems = kuhn_unsupported(game.gamedef)
    if problems:
        raise InvalidStrategyError(
            field, f"keys such as {next(iter(table))!r} are OpenSpiel Kuhn information states, "
            f"and {game.name} is not a Kuhn game ({problems[0]})",
        )  # fmt: skip
    kuhn = kuhn_game(game.num_players)
    return kuhn_strategy_on(
        game, position, kuhn_strategy.strategy_from_dict(kuhn, position, table, field)
    )
