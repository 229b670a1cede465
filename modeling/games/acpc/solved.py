"""A solved strategy for every limit game, automatically: the one resolver of a game's solved
strategy (the ``cfr`` agent, the base of ``STYLE@S``, MBBR's default strategy and prior mean).

:func:`solved_profile` answers, in this order: the strategy file bundled with the game
(``bundled.BUNDLED_STRATEGIES``, matched by rules, whatever file they were read from), the user's
cache folder, else CFR+ (:mod:`oppmodel.modeling.solve.cfr`) solves the game now and the result is
cached there. The service keeps its solved strategies in its store instead
(``server/solved_strategies.py``), solving with :func:`solve_text` in a child process. A game's
defaults (:func:`default_profile`, :func:`safety_guards`) are its solved strategy, but in
compiled 3-player Kuhn, whose are the equilibrium family N1-N3 (``kuhn3p.equilibria``).

The quality asked of a solve: CFR+ runs in steps of :data:`CHECK_EVERY` iterations until the average
strategy's nash_conv is at most :data:`NASH_CONV_BOUND` units per hand in the game's win-rate unit
(``game.rate_unit``: the ante, else the big blind; so 1 mA/h or 1 mbb/h), or :data:`MAX_ITERATIONS`,
whichever comes first. A bound on nash_conv says what a user gets (a two-player game: an equilibrium
within 1 mA/h, ~700 iterations and a few seconds in a Leduc-sized game); the iteration cap bounds
the time where the bound is not reached (three or more players: CFR+ converges to no equilibrium
there and nash_conv levels off, so the result is labelled a CFR average strategy). Both are checked
at fixed iterations, so the same game gives the same strategy bit for bit. Games of more than
:data:`MAX_SOLVE_STATES` states (public nodes x deals) are refused with their size and the bound,
and the command that solves them offline.

The cache folder is ``$OPPMODEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/oppmodel``, else
``~/.cache/oppmodel``; a solved strategy is the strategy file ``strategies/<key>.json``, where the
key is the SHA-256 of the game's canonical text (:func:`game_key`: parsed and written back, so
whitespace, comments and keyword order do not matter). Two processes solving the same game at
once: the second waits on the first's lock file and reads its result; the file appears whole
(written to a temporary name, then renamed).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import logging
import math
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from oppmodel.clients.progress import progress_bar
from oppmodel.modeling.errors import InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.acpc.bundled import (
    BUNDLED_STRATEGIES,
    GAMES_FOLDER,
    no_strategy_message,
)
from oppmodel.modeling.games.acpc.compiler import bundled_name, compile_limit_game
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import (
    load_profile,
    profile_text,
    save_profile,
    validate_profile,
)
from oppmodel.modeling.games.kuhn3p import equilibria
from oppmodel.modeling.games.units import MILLI
from oppmodel.modeling.solve.cfr import CFRSolver, strategy_label

CACHE_ENV = "OPPMODEL_CACHE_DIR"
SHIPPED_CACHE = Path(__file__).parent / "games" / "cache"  # files the package ships: cache_file
NASH_CONV_BOUND = 1e-3  # units (game.rate_unit) per hand: stop once this close (1 milli-unit)
MAX_ITERATIONS = 1000  # ... or after this many iterations
CHECK_EVERY = 50  # iterations between nash_conv checks (one check costs about one iteration)
MAX_SOLVE_STATES = 4_000_000  # public nodes x deals: ~2x leduc3p, minutes at the cap
# one CFR+ iteration's cost per state, leduc3p on a busy 2-core machine (80 ms / 1.9M states)
SECONDS_PER_STATE_ITERATION = 4.2e-8
log = logging.getLogger("oppmodel.solve")


def game_key(game: LimitGame) -> str:
    """The SHA-256 (hex) of the game's canonical definition text: equal rules, equal key."""
    return hashlib.sha256(game.gamedef.to_text().encode("ascii")).hexdigest()


def cache_folder() -> Path:
    """Where solved strategies are cached: ``$OPPMODEL_CACHE_DIR``, else the user's cache
    folder (``$XDG_CACHE_HOME/oppmodel`` or ``~/.cache/oppmodel``)."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "oppmodel"


def cache_file(*parts: str) -> Path:
    """The cache folder's file ``parts``; when it is missing and the package ships it, the shipped
    copy is put there first. The package ships what its bundled hold'em blueprints need (their
    card abstraction, the preflop table, their sampled deals: computed by this code from their
    seeds, keyed as in the cache), so a fresh machine reads them where it would spend about a
    minute of CPU computing them."""
    path = cache_folder().joinpath(*parts)
    shipped = SHIPPED_CACHE.joinpath(*parts)
    if not path.exists() and shipped.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        shutil.copyfile(shipped, tmp)
        os.replace(tmp, path)
    return path


@contextlib.contextmanager
def cache_lock(path: Path) -> Iterator[None]:
    """Hold the lock of the cache file ``path`` (its folder made): a process that computes what
    the file will hold takes it first, so another process computing the same waits, then reads
    the file instead of computing it again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_suffix(".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def cached_path(game: LimitGame) -> Path:
    """The cache file of the game's solved strategy (present or not)."""
    return cache_folder() / "strategies" / f"{game_key(game)}.json"


def bundled_strategy_path(game: LimitGame) -> Path | None:
    """The strategy file bundled for a game with the same rules, or None."""
    name = _bundled_name(game)
    file = None if name is None else BUNDLED_STRATEGIES.get(name)
    return None if file is None else GAMES_FOLDER / file


@functools.cache  # per game object: compiled games are cached and immutable
def _bundled_name(game: LimitGame) -> str | None:
    return bundled_name(game.gamedef)


def solved_profile(game: LimitGame) -> np.ndarray:
    """The game's solved strategy (read-only: copy it to change it): bundled, cached, else solved
    now and cached (with a notice and a progress bar on a terminal)."""
    return _loaded(game)


@functools.cache  # per game object: reading leduc3p's file takes ~2 s, and every session needs it
def _loaded(game: LimitGame) -> np.ndarray:
    path = bundled_strategy_path(game)
    profile = load_profile(game, path) if path is not None else _cached_or_solved(game)
    profile.setflags(write=False)
    return profile


def _cached_or_solved(game: LimitGame) -> np.ndarray:
    check_solvable(game)
    path = cached_path(game)
    with cache_lock(path):  # another process solving it: wait, then read its file
        if path.exists():
            try:
                return load_profile(game, path)
            except InvalidArgumentError as exc:  # not written by us: solve it again
                log.warning("cached strategy unreadable, solving again: %s", exc)
        print(
            f"oppmodel: solving {game.name} on first use (CFR+ until nash_conv <= "
            f"{MILLI * NASH_CONV_BOUND:g} {game.rate_unit.label} or {MAX_ITERATIONS} "
            f"iterations); "
            f"cached in {path}",
            file=sys.stderr,
        )
        profile, summary = solve(game)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        save_profile(game, profile, tmp, solver=summary)
        os.replace(tmp, path)
        return profile


def is_bundled(game: LimitGame) -> bool:
    """Whether a strategy file is bundled for the game's rules (nothing to solve)."""
    return bundled_strategy_path(game) is not None


def default_profile(game: LimitGame, role: str) -> np.ndarray:
    """The default strategy (``role="default_strategy"``) or prior mean (``"prior_mean"``) of a
    game: N1 / N3 in compiled 3-player Kuhn (``kuhn3p.equilibria``), else its solved strategy
    (:func:`solved_profile`: bundled, cached or solved now).
    Uniform play only when passed explicitly (``strategy.uniform_profile``)."""
    family = equilibria(game)
    if family:
        return family["n1" if role == "default_strategy" else "n3"]
    return solved_profile(game).copy()


def profile_or_default(game: LimitGame, given: np.ndarray | None, field: str) -> np.ndarray:
    """``given`` validated as ``field``, else the game's :func:`default_profile` for it."""
    if given is None:
        return default_profile(game, field)
    return validate_profile(game, given, field)


def safety_guards(game: LimitGame, default_strategy: np.ndarray) -> tuple[np.ndarray, ...]:
    """The safety bankroll's guard set: the equilibrium family N1, N2, N3 in compiled 3-player
    Kuhn (the default N1 is one of them), else the default strategy alone."""
    family = equilibria(game)
    return tuple(family.values()) if family else (default_strategy,)


def needs_solving(game: LimitGame) -> bool:
    """Whether :func:`default_profile` has to solve the game: not compiled 3-player Kuhn, no
    strategy bundled (the service solves such games itself, ``server/solved_strategies.py``)."""
    return not equilibria(game) and not is_bundled(game)


def solve_text(rules: str) -> str:
    """The strategy file text of the game of these rules, solved now (no progress bar): what the
    service runs in a child process, the GIL-holding kernels kept off its event loop."""
    game = compile_limit_game(parse_game_def(rules))
    profile, summary = solve(game, show_progress=False)
    return profile_text(game, profile, solver=summary)


def estimated_seconds(game: LimitGame) -> float:
    """A generous estimate of a solve's time: the iteration cap at a measured cost per state."""
    return num_states(game) * MAX_ITERATIONS * SECONDS_PER_STATE_ITERATION


def num_states(game: LimitGame) -> int:
    """Public nodes x deals: what one CFR iteration sweeps."""
    return len(game.tree.node_round) * game.tree.deal_view.shape[1]


def check_solvable(game: LimitGame) -> None:
    """UnknownGameError naming the size, the bound and the offline command if the game is too
    large to solve on first use."""
    states = num_states(game)
    if states > MAX_SOLVE_STATES:
        size = (
            f" ({states:,} states, public nodes x deals, above the bound of {MAX_SOLVE_STATES:,} "
            "for solving on first use)"
        )
        raise UnknownGameError("game", no_strategy_message(game.gamedef.source or game.name, size))


def solve(game: LimitGame, *, show_progress: bool = True) -> tuple[np.ndarray, dict]:
    """CFR+ on the game to the stated quality: (the average strategy, the ``solver`` summary a
    strategy file records). A progress bar with nash_conv is drawn when stderr is a terminal."""
    check_solvable(game)
    solver = CFRSolver(game)
    bound = NASH_CONV_BOUND * game.rate_unit.chips
    started = time.perf_counter()
    bar = progress_bar(MAX_ITERATIONS, desc=f"solving {game.name}", show=show_progress)
    value = math.inf
    try:
        while solver.iteration < MAX_ITERATIONS and value > bound:
            solver.run(min(CHECK_EVERY, MAX_ITERATIONS - solver.iteration))
            value = solver.nash_conv()
            bar.update(solver.iteration - bar.n)
            bar.set_postfix_str(f"nash_conv {value:.3g}", refresh=False)
    finally:
        bar.close()
    seconds = time.perf_counter() - started
    log.info(
        "solved %s: %d iterations, nash_conv %.3g, %.1f s",
        game.name, solver.iteration, value, seconds,
    )  # fmt: skip
    summary = {
        "game": game.name,
        "players": game.num_players,
        "algorithm": str(solver.config.algorithm),
        "iterations": solver.iteration,
        "nash_conv": value,
        "nash_conv_bound": bound,
        "strategy": strategy_label(game, solver.config),
        "command": f"solved on first use (game key {game_key(game)})",
        "seconds": seconds,
        "gamedef": game.gamedef.to_text(),
    }
    return solver.average_profile(), summary
