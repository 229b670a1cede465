"""Benchmark: a long 3-player hold'em session's memory, refit, snapshot and reload, with the fits'
window (modeling/holdem/window.py) and, for the first hands, without it (the replaying refit).

A seeded 3-player match on the ACPC game (``--seats``, default the bundled blueprint and two panel
styles) is fed, seat 0's view of each hand, to the model a ``holdem3p`` session serves
(:class:`~oppmodel.modeling.holdem.served_lazy.LazyHoldemServedModel`, its hands only: no
decisions asked, so no bank booked), whose tilted prior is refitted every 100 hands. Every
``--every`` hands it reports, in CPU time of this process: the update a hand (median of the
interval), the refits of the interval (median and max; the fold included), the classes the fits
keep, the sets numbered (the renumberings that bound them so far, the rows of the dropped nodes
kept whole and those merged into the archive), the model's ``nbytes``, the process's peak RSS,
the snapshot's size and the CPU of ``snapshot()`` and of a reload (a new model restored from it:
the sets numbered again from their bettings, the fits' tables read).
With ``--replaying N`` a second model without the window is fed the same first N hands beside
it: its refits, classes and snapshot, and how far the two models' posterior means are apart at
the end (the largest difference of any set's row the windowed model numbers, by betting: its
numbering may be bounded, the replaying one's is not; and of the means a decision reads,
``mean_rows``, at the opponents' nodes only the second model numbers) and their guards'
log-odds. With ``--twin unbounded`` the second model has the window but not the numbering's
bound: how far the bound moves the answers.

With ``--bound 0`` the windowed model's numbering is not bounded (modeling/holdem/window.py).

    python benchmarks/holdem_window.py [--hands 100000] [--every 10000] [--replaying 5000]
        [--twin replaying|unbounded] [--bound 2] [--json]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

from oppmodel.modeling.games.acpc.betting import HandState  # noqa: E402
from oppmodel.modeling.games.acpc.gamedef import read_game_def  # noqa: E402
from oppmodel.modeling.holdem.match import HoldemGame, PolicyAgent, play_holdem_match  # noqa: E402
from oppmodel.modeling.holdem.served_lazy import (  # noqa: E402
    LazyHoldemServedModel,
    lazy_holdem_served,
)
from oppmodel.modeling.holdem.styles import holdem_policy  # noqa: E402
from oppmodel.modeling.holdem.window import BOUND  # noqa: E402
from oppmodel.modeling.mbbr.config import MBBRConfig  # noqa: E402
from oppmodel.modeling.observation import LimitObservation  # noqa: E402

CHUNK = 500  # hands dealt and played at a time


class Seat(PolicyAgent):
    """A panel seat that keeps the hands it saw (seat 0's are the model's)."""

    def __init__(self, name: str, seed: int) -> None:
        super().__init__(name, holdem_policy(name, read_game_def("holdem3p")), seed)
        self.seen: list[LimitObservation] = []

    def end_hand(self, obs: LimitObservation) -> None:
        self.seen.append(obs)


class Timed:
    """A model whose refits are timed (CPU) as they happen."""

    def __init__(self, model: LazyHoldemServedModel) -> None:
        self.model = model
        self.refits: list[float] = []
        posterior = model.mbbr.posterior
        refit: Callable[..., None] = posterior.refit

        def timed(*args: object, **kwargs: object) -> None:
            start = time.process_time()
            refit(*args, **kwargs)
            self.refits.append(time.process_time() - start)

        posterior.refit = timed  # type: ignore[method-assign]

    def classes(self) -> int:
        return sum(len(fit.state()[0]) for fit in self.model.mbbr.posterior.fits)


def reload_figures(model: LazyHoldemServedModel) -> dict[str, float]:
    start = time.process_time()
    blob = model.snapshot()
    middle = time.process_time()
    again = lazy_holdem_served("holdem3p").build_model(model.config)
    again.restore(blob)
    end = time.process_time()
    return {
        "snapshot_mb": round(len(blob) / 1e6, 2),
        "snapshot_s": round(middle - start, 3),
        "reload_s": round(end - middle, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000)
    parser.add_argument("--replaying", type=int, default=0, help="hands fed the replaying model")
    parser.add_argument("--twin", choices=("replaying", "unbounded"), default="replaying")
    parser.add_argument("--seats", default="cfr,maniac,tight-passive")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--bound", type=float, default=BOUND, help="the numbering's; 0: none")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    gamedef = read_game_def("holdem3p")
    game = HoldemGame("holdem", gamedef)
    seats = [Seat(name, args.seed + k) for k, name in enumerate(args.seats.split(","))]
    served = lazy_holdem_served("holdem3p")
    config = served.played_config(MBBRConfig(seed=args.seed))
    windowed = Timed(served.build_model(config))  # type: ignore[arg-type]
    replaying = Timed(served.build_model(config))  # type: ignore[arg-type]
    if args.twin == "replaying":
        replaying.model.mbbr.posterior.window = None
    else:  # the window, the numbering unbounded
        replaying.model.mbbr.posterior.bound = None
    windowed.model.mbbr.posterior.bound = args.bound or None
    rows, updates, replay_updates = [], [], []
    start = time.process_time()
    for first in range(0, args.hands, CHUNK):
        count = min(CHUNK, args.hands - first)
        play_holdem_match(game, seats, game.deal_sequence(count, args.seed * 1_000_003 + first))
        hands, seats[0].seen = seats[0].seen, []
        for k, obs in enumerate(hands, start=first + 1):
            t = time.process_time()
            windowed.model.observe(obs)
            updates.append(time.process_time() - t)
            if k <= args.replaying:
                t = time.process_time()
                replaying.model.observe(obs)
                replay_updates.append(time.process_time() - t)
            if k % args.every == 0 or k == args.hands:
                rows.append(checkpoint(k, windowed, updates, start))
                updates = []
                if not args.json:
                    print(json.dumps(rows[-1]), flush=True)
            if k == args.replaying:
                rows.append(compared(k, windowed, replaying, replay_updates))
                if not args.json:
                    print(json.dumps(rows[-1]), flush=True)
    report = {
        "benchmark": "holdem3p_window",
        "clock": "process_time",
        "seats": args.seats,
        "window": windowed.model.mbbr.posterior.window,
        "bound": windowed.model.mbbr.posterior.bound,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "rows": rows,
    }
    print(json.dumps(report, indent=1 if args.json else None))


def checkpoint(k: int, timed: Timed, updates: list[float], start: float) -> dict:
    model = timed.model
    refits = timed.refits
    timed.refits = []
    return {
        "hands": k,
        "model": "window",
        "update_ms_median": round(1000 * statistics.median(updates), 2),
        "refit_s_median": round(statistics.median(refits), 3) if refits else None,
        "refit_s_max": round(max(refits), 3) if refits else None,
        "classes": timed.classes(),
        "sets": model.mbbr.posterior.sets.size,
        "renumbered": model.mbbr.posterior.sets.renumbered,
        "archived_rows": sum(len(a.counts) for row in model.mbbr.posterior.archives for a in row),
        "dropped_rows": sum(d.rows for row in model.mbbr.posterior.dropped for d in row),
        "nbytes_mb": round(model.nbytes() / 1e6, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3, 1),
        **reload_figures(model),
        "cpu_s_so_far": round(time.process_time() - start, 1),
    }


def compared(k: int, windowed: Timed, replaying: Timed, updates: list[float]) -> dict:
    """The replaying model after its hands, beside the windowed one (fed the same hands)."""
    mine, theirs = windowed.model.mbbr.posterior, replaying.model.mbbr.posterior
    ours, their = [], []  # the same sets in each numbering (the windowed one's may be bounded)
    for betting in mine.sets.bettings:
        base, round_, _ = mine.sets.node(betting)
        views = mine.sets.views[round_]
        ours.append(np.arange(base, base + views))
        their.append(theirs.sets.node(betting)[0] + np.arange(views))
    at, there = np.concatenate(ours), np.concatenate(their)
    apart = max(
        float(np.abs(mine.models_profile(p)[:, at] - theirs.models_profile(p)[:, there]).max())
        for p in range(3)
    )
    read = 0.0  # what a decision reads where only the second model numbers the node
    for betting in theirs.sets.bettings:
        base, round_, q = theirs.sets.node(betting)
        if mine.sets.numbered(betting) is None:  # type: ignore[union-attr]
            rows = slice(base, base + theirs.sets.views[round_])
            state = HandState.from_betting(mine.sets.gamedef, betting).state
            for p in set(range(3)) - {q}:
                want = theirs.models_profile(p)[q, rows]
                read = max(read, float(np.abs(mine.mean_rows(p, state) - want).max()))
    return {
        "hands": k,
        "model": "replaying" if theirs.window is None else "unbounded",
        "update_ms_median": round(1000 * statistics.median(updates), 2),
        "refit_s_last": round(replaying.refits[-1], 3) if replaying.refits else None,
        "refit_s_max": round(max(replaying.refits), 3) if replaying.refits else None,
        "classes": replaying.classes(),
        "nbytes_mb": round(replaying.model.nbytes() / 1e6, 1),
        "snapshot_mb": round(len(replaying.model.snapshot()) / 1e6, 2),
        "means_max_abs_difference": float(f"{apart:.3g}"),
        "mean_rows_max_abs_difference": float(f"{read:.3g}"),
        "log_odds": [round(mine.log_odds, 2), round(theirs.log_odds, 2)],
    }


if __name__ == "__main__":
    main()
