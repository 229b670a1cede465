"""Equilibrium solving for limit games: CFR+ and discounted CFR over the compiled public tree.

Both are counterfactual regret minimisation with alternating updates: in each iteration the
positions are updated one after another, each against the strategies the others already have
this iteration. One update of a position is one sweep of the public tree with a vector over all
deals (the exact counterfactual value of every action at every information set, no sampling),
then regret matching:

* **CFR+** (Tammelin 2014; Tammelin, Burch, Johanson & Bowling 2015): regrets floored at zero
  after every update; the average strategy weights iteration t by max(t - delay, 0), linear
  averaging after a short delay.
* **DCFR** (Brown & Sandholm 2019), alpha 1.5, beta 0, gamma 2: positive regrets shrink by
  t^alpha / (t^alpha + 1), negative ones by t^beta / (t^beta + 1), the average sums by
  (t / (t + 1))^gamma.

The output is the average strategy. In two-player zero-sum games it converges to a Nash
equilibrium (nash_conv -> 0). With three or more players CFR has no such guarantee: the result
is a *CFR average strategy*, the field's usual strong baseline (Risk & Szafron 2010), and it is
labelled so wherever it is written.

The solver's state (regrets, average sums, the current strategies, the iteration) saves to one
``.npz`` file with the game definition it belongs to, and a run resumes from it exactly: ``n``
iterations then ``m`` more equal ``n + m`` in one go, bit for bit.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self

import numpy as np

from oppmodel.modeling.choice import Choice
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.limit import nash_conv
from oppmodel.modeling.games.acpc.betting import CALL, NUM_ACTIONS
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.solve import _cfr_kernels as kernels

DEFAULT_DELAY = 10
SLICE_SECONDS = 0.25  # the kernel's longest run between two chances for Python to see Ctrl-C
STATE_FORMAT = 1


class Algorithm(Choice):
    """Which counterfactual-regret minimisation runs."""

    CFR_PLUS = "cfr+"  # Tammelin 2014: regrets floored at zero, linear averaging after a delay
    DCFR = "dcfr"  # Brown & Sandholm 2019: discounted regrets and averages (alpha, beta, gamma)


@dataclass(frozen=True)
class SolverConfig:
    """Which CFR and its parameters. ``delay`` is CFR+'s, the rest DCFR's."""

    algorithm: Algorithm = Algorithm.CFR_PLUS  # or its name
    delay: int = DEFAULT_DELAY
    alpha: float = 1.5
    beta: float = 0.0
    gamma: float = 2.0

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "algorithm", Algorithm(self.algorithm))
        except ValueError:
            raise InvalidArgumentError(
                "algorithm", f"{self.algorithm!r} is not one of {', '.join(Algorithm)}"
            ) from None
        if not isinstance(self.delay, int) or self.delay < 0:
            raise InvalidArgumentError("delay", f"must be a whole number >= 0, got {self.delay!r}")

    def kernel_params(self) -> tuple[float, float, float, float, float]:
        code = kernels.CFR_PLUS if self.algorithm == Algorithm.CFR_PLUS else kernels.DCFR
        return (float(code), float(self.delay), self.alpha, self.beta, self.gamma)


def strategy_label(game: LimitGame, config: SolverConfig) -> str:
    """What a solved profile is, in words, for files and reports."""
    name = "CFR+" if config.algorithm == Algorithm.CFR_PLUS else "DCFR"
    if game.num_players == 2:
        return f"{name} average strategy (approximates a Nash equilibrium: 2-player zero-sum)"
    return (
        f"{name} average strategy of a {game.num_players}-player game: no equilibrium guarantee "
        "(nash_conv measures how far from one it is)"
    )


class SlicedSolver:
    """What every iterative solver shares: the iteration counter its kernel updates
    (``_done``) and :meth:`run`, which calls the kernel (:meth:`_advance`) in short slices."""

    _done: np.ndarray

    @property
    def iteration(self) -> int:
        """Iterations run so far (the kernel counts them with the arrays it updates, so that the
        state saved after a KeyboardInterrupt is whole)."""
        return int(self._done[0])

    @iteration.setter
    def iteration(self, value: int) -> None:
        self._done[0] = value

    def run(
        self,
        iterations: int,
        *,
        every: int = 0,
        callback: Callable[[Self], None] | None = None,
        progress: Callable[[int], object] | None = None,
    ) -> None:
        """Run ``iterations`` more iterations; call ``callback(self)`` after every ``every``.

        The kernel runs in slices of about SLICE_SECONDS, after each of which ``progress(n)`` is
        told the ``n`` iterations it ran: a KeyboardInterrupt, which Python raises only between
        them, stops a long run within about that time, not at the next callback.
        """
        if not isinstance(iterations, int) or iterations < 0:
            raise InvalidArgumentError("iterations", f"must be >= 0, got {iterations!r}")
        target = self.iteration + iterations
        step = every if every > 0 else iterations
        size = 1  # iterations in the next slice, grown to last about SLICE_SECONDS
        while self.iteration < target:
            checkpoint = min(self.iteration + step, target)
            while self.iteration < checkpoint:
                first, started = self.iteration, time.perf_counter()
                self._advance(min(first + size, checkpoint))
                ran, seconds = self.iteration - first, time.perf_counter() - started
                size = max(1, min(2 * ran, int(ran * SLICE_SECONDS / max(seconds, 1e-9))))
                if progress is not None:
                    progress(ran)
            if callback is not None:
                callback(self)

    def _advance(self, last: int) -> None:
        """Run the kernel up to iteration ``last``."""
        raise NotImplementedError


class CFRSolver(SlicedSolver):
    """CFR+ or DCFR on one compiled game; :meth:`run` adds iterations, :meth:`save` keeps them.

    The sampled solver (``mccfr.MCCFRSolver``) keeps the same state and files: a subclass that
    replaces the configuration (:attr:`config_type`) and one call of the kernel (:meth:`_advance`).
    """

    config_type: type = SolverConfig

    def __init__(self, game: LimitGame, config: SolverConfig | None = None) -> None:
        self.game = game
        self.config = config or SolverConfig()
        shape = (game.num_players, game.num_infosets, NUM_ACTIONS)
        self.regrets = np.zeros(shape)
        self.sums = np.zeros(shape)
        self.current = np.zeros(shape)
        self._done = np.zeros(1, dtype=np.int64)  # the iteration, updated by the kernel
        self._legal = np.ascontiguousarray(game.legal_mask)
        self._sizes = np.array(game.infosets_per_position, dtype=np.int64)
        for p in range(game.num_players):
            kernels.regret_matching(self.regrets[p], self._legal[p], self.current[p])

    def _advance(self, last: int) -> None:
        kernels.iterate(
            self.game.tree, self.regrets, self.sums, self.current, self._legal,
            self._sizes, self._done, last, self.config.kernel_params(),
        )  # fmt: skip

    def average_profile(self) -> np.ndarray:
        """The average strategy (the solver's answer); the current strategy at information sets
        the average has no weight on yet (before CFR+'s delay, or never reached)."""
        totals = self.sums.sum(axis=2, keepdims=True)
        average = np.where(totals > 0, self.sums / np.where(totals > 0, totals, 1.0), self.current)
        average[~self.game.valid_infoset_mask] = np.eye(NUM_ACTIONS)[CALL]
        return average

    def current_profile(self) -> np.ndarray:
        """The strategy regret matching plays in the next iteration."""
        return self.current.copy()

    def nash_conv(self) -> float:
        """nash_conv of the average strategy (exact)."""
        return nash_conv(self.game, self.average_profile())

    @staticmethod
    def _same_game(name: str, game: LimitGame) -> bool:
        """Whether a state saved for the game called ``name`` (with ``game``'s rules) is
        ``game``'s: any name here (a bundled game read from its file is the same game)."""
        return True

    # --- state files ---------------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """Write the whole state to ``path`` (an ``.npz`` file), atomically."""
        arrays = {"regrets": self.regrets, "sums": self.sums, "current": self.current}
        write_state(path, self.game.name, self.game.gamedef.to_text(), self, arrays)

    @classmethod
    def load(cls, game: LimitGame, path: str | Path) -> CFRSolver:
        """A solver in the state :meth:`save` wrote; InvalidArgumentError if the file is not one
        or belongs to another game."""
        meta, arrays = read_state(path, ("regrets", "sums", "current"))
        if meta["gamedef"] != game.gamedef.to_text() or not cls._same_game(meta["game"], game):
            raise InvalidArgumentError(
                "state", f"{path} belongs to {meta['game']}, not to {game.name}"
            )
        solver = cls(game, cls.config_type(**meta["config"]))
        for name, array in arrays.items():
            if array.shape != solver.regrets.shape:
                raise InvalidArgumentError("state", f"{path}: {name} has shape {array.shape}")
            getattr(solver, name)[:] = array
        solver.iteration = int(meta["iteration"])
        return solver


def write_state(
    path: str | Path, game: str, gamedef: str, solver: Any, arrays: dict[str, Any]
) -> None:
    """Write a solver's state file atomically: ``arrays`` and what it belongs to (the game's
    name and rules, the iteration, the solver's configuration)."""
    path = Path(path)
    meta = {
        "format": STATE_FORMAT,
        "game": game,
        "gamedef": gamedef,
        "iteration": solver.iteration,
        "config": asdict(solver.config),
    }
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as out:
        np.savez(out, meta=np.array(json.dumps(meta)), **arrays)
    os.replace(tmp, path)


def read_state(path: str | Path, names: tuple[str, ...]) -> tuple[dict, dict[str, np.ndarray]]:
    """(meta, arrays) of a state file :func:`write_state` wrote; InvalidArgumentError if it is
    not one."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            arrays = {k: data[k] for k in names}
    except (OSError, ValueError, KeyError) as exc:
        raise InvalidArgumentError("state", f"{path} is not a solver state: {exc}") from None
    if meta.get("format") != STATE_FORMAT:
        raise InvalidArgumentError("state", f"{path} has state format {meta.get('format')!r}")
    return meta, arrays
