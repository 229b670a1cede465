"""Move prediction from logged play: Bernoulli naive Bayes with chi-squared feature selection.

Hicks-Wright & Schkufza (2006, "A Machine Learning Approach to Opponent Modeling in
General Game Playing") trains a classifier on pairs (binary state features x, move made y) logged
from an opponent's games, then ranks the opponent's moves in a new state by predicted probability
and judges the ranking with top-N curves (the fraction of test positions whose actual move is ranked
in the first N). This module is that model.

Model (multivariate Bernoulli naive Bayes, McCallum & Nigam 1998). With ``m`` training rows, ``n_c``
rows whose move is ``c`` (``C`` moves in the vocabulary), ``n_cj`` of them with feature ``j`` on,
and Laplace (add-``alpha``) smoothing::

    P(y = c)             = (n_c + alpha) / (m + alpha * C)
    theta_cj = P(x_j = 1 | y = c) = (n_cj + alpha) / (n_c + 2 * alpha)
    log P(y = c, x)      = log P(y = c) + sum_j [x_j log theta_cj + (1 - x_j) log(1 - theta_cj)]

the sum running over the selected features only. Probabilities are the joint normalised over the
candidate moves: every move of the vocabulary (the paper's "state only, every move assumed legal"),
or only the legal moves of the state (the paper's strongest curve), illegal moves getting
probability 0.

Feature selection. For each feature ``j`` the 2 x C contingency table (rows: x_j = 0 / 1, columns:
moves seen in training) gives Pearson's statistic ``chi2_j = sum (O - E)^2 / E`` with ``E = row
total * column total / m`` (no continuity correction; equal to ``scipy.stats.chi2_contingency(table,
correction=False)`` once empty columns are dropped). A constant feature (an empty row) scores 0. The
``k_features`` highest-scoring features are kept, ties going to the lower feature index.

Ranking ties (equal probabilities, e.g. between moves never seen in training) go to the lower move
index, so rankings and top-N curves are deterministic. Nothing here is random; the callers that make
data (games, players) take seeds.

The hot loops are two small matrix products (counts ``X^T onehot(y)`` and scores
``X log(theta)^T``), which numpy already runs in compiled code, so there is no numba kernel.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError

__all__ = [
    "MoveModel",
    "chi2_scores",
    "load_move_model",
    "move_ranks",
    "top_n_curve",
    "train_move_model",
]

_FORMAT = "oppmodel.movepred.v1"


def _binary_matrix(field: str, values: object, *, n_columns: int | None = None) -> np.ndarray:
    """Validate a 2-D array of 0/1 (or bool) entries and return it as float64."""
    arr = np.asarray(values)
    if arr.ndim != 2:
        raise InvalidArgumentError(field, f"must be a 2-D array (rows x columns), got {arr.ndim}-D")
    if arr.dtype != bool and not np.issubdtype(arr.dtype, np.number):
        raise InvalidArgumentError(
            field, f"must hold 0/1 numbers or booleans, got dtype {arr.dtype}"
        )
    if n_columns is not None and arr.shape[1] != n_columns:
        raise InvalidArgumentError(field, f"must have {n_columns} columns, got {arr.shape[1]}")
    out = arr.astype(np.float64)
    if out.size and not np.all((out == 0.0) | (out == 1.0)):
        raise InvalidArgumentError(field, "entries must be 0 or 1")
    return out


def _move_vector(field: str, values: object, *, n_rows: int, n_moves: int) -> np.ndarray:
    """Validate a 1-D vector of move indices in ``[0, n_moves)`` with ``n_rows`` entries."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InvalidArgumentError(field, f"must be a 1-D array of move indices, got {arr.ndim}-D")
    if arr.shape[0] != n_rows:
        raise InvalidArgumentError(field, f"must have one entry per feature row ({n_rows})")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise InvalidArgumentError(field, f"must hold integers, got dtype {arr.dtype}")
    out = arr.astype(np.int64)
    if out.size and (out.min() < 0 or out.max() >= n_moves):
        raise InvalidArgumentError(field, f"move indices must lie in [0, {n_moves})")
    return out


def _legal_matrix(
    field: str, values: object, *, n_rows: int, n_moves: int, moves: np.ndarray | None
) -> np.ndarray:
    """Validate a boolean legal-move mask; every row needs a legal move (and its actual move)."""
    arr = np.asarray(values)
    if arr.ndim != 2 or arr.shape != (n_rows, n_moves):
        raise InvalidArgumentError(field, f"must have shape ({n_rows}, {n_moves}), got {arr.shape}")
    if arr.dtype != bool:
        if not np.issubdtype(arr.dtype, np.number) or not np.all((arr == 0) | (arr == 1)):
            raise InvalidArgumentError(field, "must be a boolean (or 0/1) mask")
        arr = arr.astype(bool)
    empty = np.flatnonzero(~arr.any(axis=1))
    if empty.size:
        raise InvalidArgumentError(field, f"row {int(empty[0])} has no legal move")
    if moves is not None:
        bad = np.flatnonzero(~arr[np.arange(n_rows), moves])
        if bad.size:
            i = int(bad[0])
            raise InvalidArgumentError(
                field, f"row {i}: the move made ({int(moves[i])}) is not legal"
            )
    return arr


def _names(field: str, names: Sequence[str] | None, n: int, prefix: str) -> tuple[str, ...]:
    """Default or validate a list of ``n`` distinct names."""
    if names is None:
        return tuple(f"{prefix}{i}" for i in range(n))
    out = tuple(str(s) for s in names)
    if len(out) != n:
        raise InvalidArgumentError(field, f"must have {n} names, got {len(out)}")
    if len(set(out)) != n:
        raise InvalidArgumentError(field, "names must be distinct")
    return out


def _counts(x: np.ndarray, y: np.ndarray, n_moves: int) -> tuple[np.ndarray, np.ndarray]:
    """Class counts ``n_c`` (C,) and feature-on counts ``n_cj`` (C, d), as int64."""
    onehot = np.zeros((y.shape[0], n_moves), dtype=np.float64)
    onehot[np.arange(y.shape[0]), y] = 1.0
    class_counts = onehot.sum(axis=0)
    feature_counts = onehot.T @ x
    return np.rint(class_counts).astype(np.int64), np.rint(feature_counts).astype(np.int64)


def _chi2_from_counts(class_counts: np.ndarray, feature_counts: np.ndarray) -> np.ndarray:
    """Pearson chi-squared of each feature's 2 x C table, empty columns dropped, empty rows -> 0."""
    seen = class_counts > 0
    n_c = class_counts[seen].astype(np.float64)[:, None]  # (C', 1)
    on = feature_counts[seen].astype(np.float64)  # (C', d)
    off = n_c - on
    m = float(n_c.sum())
    scores = np.zeros(feature_counts.shape[1], dtype=np.float64)
    if m == 0.0:
        return scores
    row_on = on.sum(axis=0)  # (d,)
    row_off = m - row_on
    ok = (row_on > 0) & (row_off > 0)
    if not ok.any():
        return scores
    e_on = n_c * row_on[ok] / m
    e_off = n_c * row_off[ok] / m
    scores[ok] = (((on[:, ok] - e_on) ** 2) / e_on + ((off[:, ok] - e_off) ** 2) / e_off).sum(
        axis=0
    )
    return scores


def chi2_scores(features: object, moves: object, *, n_moves: int) -> np.ndarray:
    """Chi-squared score of each binary feature against the move made (no continuity correction).

    Equals ``scipy.stats.chi2_contingency(table, correction=False).statistic`` on each feature's
    2 x C table of counts (rows x_j = 0/1, columns the moves that occur), and 0 for a feature that
    never changes value in the data.
    """
    if isinstance(n_moves, bool) or not isinstance(n_moves, int) or n_moves < 1:
        raise InvalidArgumentError("n_moves", "must be a positive integer")
    x = _binary_matrix("features", features)
    y = _move_vector("moves", moves, n_rows=x.shape[0], n_moves=n_moves)
    return _chi2_from_counts(*_counts(x, y, n_moves))


@dataclass(frozen=True, eq=False)
class MoveModel:
    """A trained Bernoulli naive Bayes move model (build with :func:`train_move_model`).

    ``class_counts`` (C,) and ``feature_counts`` (C, d) are the sufficient statistics, kept exactly
    so that a saved model reloads bit for bit; ``selected`` are the input feature columns the model
    uses (ascending); the log parameters are derived from the counts.
    """

    alpha: float
    class_counts: np.ndarray
    feature_counts: np.ndarray
    selected: np.ndarray
    chi2: np.ndarray
    log_prior: np.ndarray
    log_on: np.ndarray
    log_off: np.ndarray
    feature_names: tuple[str, ...]
    move_names: tuple[str, ...]

    @property
    def n_moves(self) -> int:
        """Size of the move vocabulary."""
        return int(self.class_counts.shape[0])

    @property
    def n_features(self) -> int:
        """Width of the input feature vectors (before selection)."""
        return int(self.feature_counts.shape[1])

    @property
    def selected_names(self) -> tuple[str, ...]:
        """Names of the selected features, in column order."""
        return tuple(self.feature_names[int(j)] for j in self.selected)

    def log_joint(self, features: object) -> np.ndarray:
        """``log P(y = c, x)`` for each row of ``features`` and each move ``c``: shape (rows, C)."""
        x = _binary_matrix("features", features, n_columns=self.n_features)[:, self.selected]
        return self.log_prior[None, :] + x @ self.log_on.T + (1.0 - x) @ self.log_off.T

    def _scores(
        self, features: object, legal: object | None, moves: np.ndarray | None
    ) -> np.ndarray:
        scores = self.log_joint(features)
        if legal is not None:
            mask = _legal_matrix(
                "legal", legal, n_rows=scores.shape[0], n_moves=self.n_moves, moves=moves
            )
            scores = np.where(mask, scores, -np.inf)
        return scores

    def predict_proba(self, features: object, legal: object | None = None) -> np.ndarray:
        """``P(y = c | x)`` over every move, or over the legal moves only when ``legal`` is given.

        ``legal`` is a (rows, C) boolean mask; illegal moves then get probability exactly 0.
        """
        scores = self._scores(features, legal, None)
        top = scores.max(axis=1, keepdims=True)
        weights = np.exp(scores - top)
        return weights / weights.sum(axis=1, keepdims=True)

    def rank_moves(self, features: object, legal: object | None = None) -> tuple[int, ...]:
        """Moves of one state, most probable first (only the legal ones when ``legal`` is given).

        ``features`` is one feature vector (d,); ``legal`` a boolean mask (C,) or None for all
        moves.
        """
        row = np.asarray(features)
        if row.ndim != 1:
            raise InvalidArgumentError("features", "must be one feature vector (1-D)")
        legal_rows = None if legal is None else np.asarray(legal)[None, :]
        if legal_rows is not None and legal_rows.ndim != 2:
            raise InvalidArgumentError("legal", "must be a 1-D mask over the moves")
        scores = self._scores(row[None, :], legal_rows, None)[0]
        order = np.lexsort((np.arange(self.n_moves), -scores))
        return tuple(int(c) for c in order if np.isfinite(scores[c]))

    def save(self, path: str | Path) -> None:
        """Write the model to ``path`` as ``.npz`` (no pickles): counts, selection and names."""
        meta = {
            "format": _FORMAT,
            "alpha": self.alpha,
            "feature_names": list(self.feature_names),
            "move_names": list(self.move_names),
        }
        with open(path, "wb") as fh:
            np.savez(
                fh,
                meta=np.array(json.dumps(meta)),
                class_counts=self.class_counts,
                feature_counts=self.feature_counts,
                selected=self.selected,
            )


def _validate_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise InvalidArgumentError("alpha", "must be a number")
    a = float(alpha)
    if not math.isfinite(a) or a <= 0.0:
        raise InvalidArgumentError("alpha", "must be a finite number > 0 (Laplace smoothing)")
    return a


def _build(
    *,
    alpha: float,
    class_counts: np.ndarray,
    feature_counts: np.ndarray,
    selected: np.ndarray,
    feature_names: tuple[str, ...],
    move_names: tuple[str, ...],
) -> MoveModel:
    """Derive the smoothed log parameters from exact counts."""
    n_c = class_counts.astype(np.float64)
    m = float(n_c.sum())
    n_moves = class_counts.shape[0]
    log_prior = np.log(n_c + alpha) - math.log(m + alpha * n_moves)
    on = feature_counts[:, selected].astype(np.float64)
    denom = (n_c + 2.0 * alpha)[:, None]
    log_on = np.log(on + alpha) - np.log(denom)
    log_off = np.log(n_c[:, None] - on + alpha) - np.log(denom)
    for arr in (class_counts, feature_counts, selected):
        arr.setflags(write=False)
    chi2 = _chi2_from_counts(class_counts, feature_counts)
    for arr in (chi2, log_prior, log_on, log_off):
        arr.setflags(write=False)
    return MoveModel(
        alpha=alpha,
        class_counts=class_counts,
        feature_counts=feature_counts,
        selected=selected,
        chi2=chi2,
        log_prior=log_prior,
        log_on=log_on,
        log_off=log_off,
        feature_names=feature_names,
        move_names=move_names,
    )


def train_move_model(
    features: object,
    moves: object,
    *,
    n_moves: int,
    alpha: float = 1.0,
    k_features: int | None = None,
    legal: object | None = None,
    feature_names: Sequence[str] | None = None,
    move_names: Sequence[str] | None = None,
) -> MoveModel:
    """Fit the naive Bayes move model on (features, move made) rows.

    ``features`` (m, d) 0/1; ``moves`` (m,) indices into a vocabulary of ``n_moves`` moves;
    ``alpha`` the Laplace smoothing pseudo-count; ``k_features`` keeps that many features by
    chi-squared score (None keeps all). ``legal``, if given, is only checked: every move made must
    be legal in its row (training itself does not need it).
    """
    if isinstance(n_moves, bool) or not isinstance(n_moves, int) or n_moves < 1:
        raise InvalidArgumentError("n_moves", "must be a positive integer")
    a = _validate_alpha(alpha)
    x = _binary_matrix("features", features)
    if x.shape[0] == 0:
        raise InvalidArgumentError("features", "needs at least one training row")
    if x.shape[1] == 0:
        raise InvalidArgumentError("features", "needs at least one feature column")
    y = _move_vector("moves", moves, n_rows=x.shape[0], n_moves=n_moves)
    if legal is not None:
        _legal_matrix("legal", legal, n_rows=x.shape[0], n_moves=n_moves, moves=y)
    d = x.shape[1]
    if k_features is None:
        k = d
    elif (
        isinstance(k_features, bool) or not isinstance(k_features, int) or not 1 <= k_features <= d
    ):
        raise InvalidArgumentError("k_features", f"must be an integer in [1, {d}] or None")
    else:
        k = k_features
    class_counts, feature_counts = _counts(x, y, n_moves)
    scores = _chi2_from_counts(class_counts, feature_counts)
    order = np.lexsort((np.arange(d), -scores))
    selected = np.sort(order[:k]).astype(np.int64)
    return _build(
        alpha=a,
        class_counts=class_counts,
        feature_counts=feature_counts,
        selected=selected,
        feature_names=_names("feature_names", feature_names, d, "f"),
        move_names=_names("move_names", move_names, n_moves, "m"),
    )


def load_move_model(path: str | Path) -> MoveModel:
    """Read a model written by :meth:`MoveModel.save`."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError) as exc:
        raise InvalidArgumentError("path", f"cannot read a move model from {path}: {exc}") from exc
    missing = {"meta", "class_counts", "feature_counts", "selected"} - arrays.keys()
    if missing:
        raise InvalidArgumentError("path", f"{path} lacks {sorted(missing)}")
    meta = json.loads(str(arrays["meta"]))
    if meta.get("format") != _FORMAT:
        raise InvalidArgumentError("path", f"{path} is not a {_FORMAT} file")
    class_counts = arrays["class_counts"].astype(np.int64)
    feature_counts = arrays["feature_counts"].astype(np.int64)
    selected = arrays["selected"].astype(np.int64)
    n_moves, d = feature_counts.shape
    if class_counts.shape != (n_moves,) or selected.ndim != 1 or not selected.size:
        raise InvalidArgumentError("path", f"{path} has inconsistent array shapes")
    if selected.min() < 0 or selected.max() >= d:
        raise InvalidArgumentError("path", f"{path} selects features out of range")
    return _build(
        alpha=_validate_alpha(meta["alpha"]),
        class_counts=class_counts,
        feature_counts=feature_counts,
        selected=selected,
        feature_names=_names("feature_names", meta["feature_names"], d, "f"),
        move_names=_names("move_names", meta["move_names"], n_moves, "m"),
    )


def move_ranks(
    model: MoveModel, features: object, moves: object, *, legal: object | None = None
) -> np.ndarray:
    """1-based rank of the move actually made in each row (ties to the lower move index).

    With ``legal`` only legal moves compete (the move made must be legal); without it every move of
    the vocabulary does.
    """
    x = _binary_matrix("features", features, n_columns=model.n_features)
    y = _move_vector("moves", moves, n_rows=x.shape[0], n_moves=model.n_moves)
    scores = model._scores(x, legal, y)
    rows = np.arange(x.shape[0])
    actual = scores[rows, y][:, None]
    lower_index = np.arange(model.n_moves)[None, :] < y[:, None]
    ahead = (scores > actual) | ((scores == actual) & lower_index)
    return 1 + ahead.sum(axis=1).astype(np.int64)


def top_n_curve(ranks: object, n_max: int) -> np.ndarray:
    """Top-N curve: entry ``N - 1`` is the fraction of ranks ``<= N``, for N = 1 .. n_max."""
    if isinstance(n_max, bool) or not isinstance(n_max, int) or n_max < 1:
        raise InvalidArgumentError("n_max", "must be a positive integer")
    r = np.asarray(ranks)
    if r.ndim != 1 or r.size == 0 or not np.issubdtype(r.dtype, np.integer) or r.min() < 1:
        raise InvalidArgumentError("ranks", "must be a non-empty 1-D array of integers >= 1")
    return (r[None, :] <= np.arange(1, n_max + 1)[:, None]).mean(axis=1)
