"""The bounded fit of a long hold'em match: a Dirichlet posterior's oldest classes folded into its
prior's parameters, so that the classes it keeps (its memory) and the steps a refit of the
tilted prior makes over them (its CPU) stop growing with the hands.

A fit (:class:`~oppmodel.modeling.mbbr.dirichlet.DirichletPosterior`) keeps every distinct hand
as a class, its count and each card assignment's responsibility, and a refit
(:meth:`~oppmodel.modeling.holdem.posterior.HoldemPosterior.refit`) steps every class with
hidden cards again: in 3-player hold'em ~84 rows a hand, ~0.5 GB and a ~19 s refit at 100,000
hands. **The rule**: at each refit, a fit holding more than ``window`` classes folds its oldest
(the first made) down to ``window``: each folded class's expected counts (its count times each
row's responsibility now, added at the row's moves) leave the expected counts and join the
prior's parameters (alpha0), where they stay, fixed, through every later refit (the refitted
prior mean is ``eta`` times the tilted rows plus the folded counts, and the tilt is fitted to
the folded and live counts together).

At the fold the posterior's parameters alpha = alpha0 + expected, and so its means, are the
same (up to the order of the sums: within 1e-12). What the fold gives up is the folded hands'
responsibilities moving afterwards: the hidden cards of a hand older than the window stay
assigned as the model then saw them. A hand with every card shown has one row, its count
exact: with no hidden cards the folded fit is the replaying one, and with no more classes than
the window it is the replaying one bit for bit (tests/test_holdem_window.py). A class met again
after its fold starts a new class.

The window bounds the classes, not the sets numbered as met; :func:`bound_numbering` bounds
those (docs/modeling.md, "The numbering's bound").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from oppmodel.modeling.games.acpc.betting import CALL, NUM_ACTIONS
from oppmodel.modeling.holdem.sets import LazySets
from oppmodel.modeling.holdem.tilt import row_offsets
from oppmodel.modeling.mbbr.dirichlet import DirichletPosterior

if TYPE_CHECKING:
    from oppmodel.modeling.holdem.posterior import HoldemPosterior

WINDOW = 2048  # classes a 3-player fit keeps at a refit (~1,000-2,000 hands, the others folded)
# a refit renumbers lazy sets when more than this many times those the kept classes use are
# numbered (the window's classes use ~8,250 sets in 3-player hold'em; numbered, 20,388 at 10,000
# hands and 42,712 at 100,000 without a bound)
BOUND = 2.0
# the dropped nodes with folded counts kept whole per position and opponent, in rows, at most
# this many times the sets a renumbering keeps numbered (the oldest beyond merged into the
# archive: bound_numbering)
DROPPED = 1.0


def fold_oldest(fit: DirichletPosterior, window: int) -> np.ndarray:
    """Fold ``fit``'s oldest classes so that at most ``window`` remain (the module's text);
    returns the folded expected counts, (n - 1, num_infosets, 3), already added to
    ``fit.alpha0`` (zeros if nothing was folded)."""
    keys, state = fit.state()
    folded = np.zeros(fit.alpha0.size)
    k = len(keys) - window
    if k <= 0:
        return folded.reshape(fit.alpha0.shape)
    row_start, entry_start = state["row_start"], state["entry_start"]
    rows, entries = int(row_start[k]), int(entry_start[row_start[k]])
    per_row = np.repeat(state["counts"][:k], np.diff(row_start[: k + 1])) * state["resp"][:rows]
    weights = np.repeat(per_row, np.diff(entry_start[: rows + 1]))
    np.add.at(folded, state["entries"][:entries], weights)
    hidden = state["hidden"]
    kept = hidden[hidden >= k] - k
    cursor = int(state["cursor"]) - int(np.sum(hidden < k))
    state.update(
        expected=state["expected"] - folded,
        counts=state["counts"][k:],
        row_start=row_start[k:] - rows,
        entry_start=entry_start[rows:] - entries,
        entries=state["entries"][entries:],
        resp=state["resp"][rows:],
        hidden=kept,
        cursor=np.array(min(max(cursor, 0), max(len(kept) - 1, 0)), dtype=np.int64),
    )
    if "log_weights" in state:
        state["log_weights"] = state["log_weights"][rows:]
    fit.restore(keys[k:], state)
    fit.alpha0 += folded.reshape(fit.alpha0.shape)  # in place: the kernels read this array
    return folded.reshape(fit.alpha0.shape)


def bound_numbering(posterior: HoldemPosterior, bound: float, dropped: float = DROPPED) -> None:
    """Renumber ``posterior``'s lazy sets, after a fold, when more than ``bound`` times the sets
    of the nodes its fits' classes use are numbered: only those nodes kept, in their order, and
    every array of the posterior moved to the new numbering (the capacity shrinks with it:
    :meth:`~oppmodel.modeling.holdem.sets.LazySets.renumber`). Nothing but a dropped node's
    folded counts is read any more (no class has moves there), so they are kept, per position
    of ours and opponent, whole by node (:class:`~oppmodel.modeling.holdem.tilt.Dropped`: both
    tilt levels fit it as before, and a node met again is numbered with them, exactly as if
    never dropped), up to ``dropped`` times the sets kept numbered, in rows; the oldest beyond
    that merge into the archive (:class:`~oppmodel.modeling.holdem.tilt.Archive`: rows of the
    same situation and clipped blueprint row are one, so it holds at most as many rows as the
    blueprint has distinct rows per situation), which feeds only their situations' tilt: such
    a node met again starts from that tilt, without its counts or its own tilt. Every answer
    at the kept sets is the same (up to the order of the sums), and at a kept dropped node,
    numbered again or read unnumbered (:meth:`HoldemPosterior.mean_rows`), too."""
    sets = cast(LazySets, posterior.sets)
    cap, size = posterior.capacity, posterior.size
    used = np.zeros(cap, dtype=bool)
    for fit in posterior.fits:
        used[(fit.state()[1]["entries"] // NUM_ACTIONS) % cap] = True
    keep, kept, gone = set(), 0, []
    for betting in sets.bettings:
        base, round_, player = sets.node(betting)
        count = sets.views[round_]
        if used[base : base + count].any():
            keep.add(betting)
            kept += count
        else:
            gone.append((betting, base, count, player))
    if size <= bound * kept:
        return
    situations = sets.situation[:size].copy()
    new_of = sets.renumber(keep)
    bettings = [betting for betting, *_ in gone]
    bases, views, players = (np.array([g[k] for g in gone], dtype=np.int64) for k in (1, 2, 3))
    rows = np.repeat(bases, views) + row_offsets(views)
    node_of_row = np.repeat(np.arange(len(gone)), views)
    with np.errstate(divide="ignore"):
        log_base = np.where(posterior.base > 0, np.log(posterior.base), -np.inf)
    for p, seats in enumerate(posterior.seats):
        for d, q in enumerate(seats):
            counted = np.zeros(len(gone), dtype=bool)
            counted[node_of_row[posterior.folded[p][d, rows].sum(axis=1) > 0]] = True
            nodes = np.flatnonzero(counted & (players == q))
            at = rows[counted[node_of_row] & (players[node_of_row] == q)]
            store = posterior.dropped[p][d].added(
                [bettings[j] for j in nodes.tolist()],
                views[nodes],
                log_base[q, at],
                posterior.folded[p][d, at],
                situations[bases[nodes]],
            )
            posterior.dropped[p][d], posterior.archives[p][d] = store.bounded(
                int(dropped * sets.size), posterior.archives[p][d]
            )
    move_sets(posterior, new_of, sets.capacity)
    posterior.size = sets.size


def restore_dropped(posterior: HoldemPosterior, first: int) -> None:
    """The nodes numbered from set ``first`` on that a renumbering dropped and keeps whole
    (:class:`~oppmodel.modeling.holdem.tilt.Dropped`), met again: their rows' prior parameters
    and folded counts made what they would be had they stayed numbered, and they leave the
    store (:meth:`~oppmodel.modeling.holdem.posterior.HoldemPosterior._sync`, after the new
    rows' prior)."""
    if not keeps_dropped(posterior):
        return
    nodes = cast(LazySets, posterior.sets).numbered_from(first)
    for p, fit in enumerate(posterior.fits):
        for d, dropped in enumerate(posterior.dropped[p]):
            met = np.zeros(len(dropped.bettings), dtype=bool)
            for betting, base, views in nodes:
                j = dropped.index.get(betting)
                if j is not None:
                    theta = cast(np.ndarray, posterior.thetas[p][d])  # a refit fitted the node
                    fit.alpha0[d, base : base + views] = dropped.alpha0(j, posterior.eta, theta)
                    rows = slice(dropped.starts[j], dropped.starts[j + 1])
                    posterior.folded[p][d, base : base + views] = dropped.counts[rows]
                    met[j] = True
            if met.any():
                posterior.dropped[p][d] = dropped.without(met)


def dropped_means(posterior: HoldemPosterior, p: int, d: int, betting: str) -> np.ndarray | None:
    """(views, 3) the posterior mean from our position ``p`` of its ``d``-th opponent at the
    node of ``betting``, not numbered, if a renumbering dropped it and keeps it whole (what
    :func:`restore_dropped` would give it); None otherwise (the prior's mean is then its:
    :meth:`~oppmodel.modeling.holdem.posterior.HoldemPosterior.prior_means`)."""
    dropped = posterior.dropped[p][d]
    j = dropped.index.get(betting)
    if j is None:
        return None
    alpha0 = dropped.alpha0(j, posterior.eta, cast(np.ndarray, posterior.thetas[p][d]))
    return alpha0 / alpha0.sum(axis=1, keepdims=True)


def keeps_dropped(posterior: HoldemPosterior) -> bool:
    """Whether ``posterior`` keeps any node a renumbering dropped whole."""
    return any(dropped.bettings for row in posterior.dropped for dropped in row)


def move_sets(posterior: HoldemPosterior, new_of: np.ndarray, capacity: int) -> None:
    """Every array of ``posterior``'s sets moved to another numbering, set i to ``new_of[i]``
    (-1: dropped), in tables of ``capacity`` sets (a padding row calls): the fits rebuilt from
    their state, each move's flat index (offset, set, action) moved with its set. A wider table
    (``new_of`` every set in place) or a renumbering (:func:`bound_numbering`)."""
    cap = posterior.capacity
    moved = np.flatnonzero(new_of >= 0)
    to = new_of[moved]
    posterior.blueprint = _moved(posterior.blueprint, moved, to, capacity, 1.0)
    posterior.base = _moved(posterior.base, moved, to, capacity, 1.0 / posterior.eta)
    for p, fit in enumerate(posterior.fits):
        keys, state = fit.state()
        expected = state["expected"].reshape(len(posterior.seats[p]), cap, NUM_ACTIONS)
        state["expected"] = _moved(expected, moved, to, capacity, 0.0).ravel()
        entries = state["entries"]
        offset, at = entries // (cap * NUM_ACTIONS), (entries // NUM_ACTIONS) % cap
        state["entries"] = (offset * capacity + new_of[at]) * NUM_ACTIONS + entries % NUM_ACTIONS
        state["means"] = _moved(state["means"], moved, to, capacity, 1.0)
        posterior.folded[p] = _moved(posterior.folded[p], moved, to, capacity, 0.0)
        alpha0 = _moved(fit.alpha0, moved, to, capacity, 1.0)
        profile = _moved(fit.profile, moved, to, capacity, 1.0)
        renumbered = DirichletPosterior(alpha0, profile, posterior.seats[p])
        renumbered.restore(keys, state)
        posterior.fits[p] = renumbered
    posterior.capacity = capacity


def _moved(
    table: np.ndarray, moved: np.ndarray, to: np.ndarray, capacity: int, call: float
) -> np.ndarray:
    """(k, capacity, 3) ``table``'s rows ``moved`` at ``to`` (a renumbering's), the other rows
    padding (``call`` at the call)."""
    out = np.zeros((table.shape[0], capacity, NUM_ACTIONS))
    out[:, :, CALL] = call
    out[:, to] = table[:, moved]
    return out
