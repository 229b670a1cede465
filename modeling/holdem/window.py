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
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.mbbr.dirichlet import DirichletPosterior

WINDOW = 2048  # classes a 3-player fit keeps at a refit (~1,000-2,000 hands, the others folded)


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
