"""Prob-max^n (Sturtevant, Zinkevich & Bowling, AAAI 2006): the reference semantics.

This module is the single statement of prob-max^n's rules in the project. Fast implementations (the
Spades numba kernel) must return the same numbers as :func:`probmaxn` on the same tree, to 1e-9
relative, and the same root move.

Inputs
------
- n players ``0..n-1``; player ``i`` has ``N_i >= 1`` models ``m_{i,0..N_i-1}`` (utility functions).
- A leaf's value is the *utility matrix* ``u[i][j]`` = utility of player ``i`` under model ``j``
  (``Leaf.utilities``; ragged when the N_i differ).
- ``prob_model[i][j]`` >= 0, each row summing to 1 (within 1e-9): the belief that player ``i``
  plays model ``j``. For opponents it is the searcher's belief. For the searcher's own row
  ``prob_model[you]`` it is *the opponents' belief about the searcher* (the paper: "the recursive
  belief of how the other players model the prob-max^n player"), used at every node where the
  searcher moves, the root included, to compute the utility matrix and probChoice.
- ``epsilon`` in [0, 1]: every model is epsilon-greedy.
- ``you``: the searching player; ``true_model``: the index of the searcher's real utility function
  among its own models; ``u_true(leaf) = u[you][true_model]``.
- ``tie_tol`` (default ``TIE_TOL = 1e-9``): a value ``x`` ties the maximum ``best`` when
  ``x >= best - tie_tol * max(1, |best|)`` (relative for large values, absolute below 1). Exact
  float equality would make results depend on summation order; the tolerance makes a kernel that
  sums in another order (or merges equal children, below) agree with this module.

Recursion, at a node where player ``i`` moves, children ``c = 0..k-1`` in order, with child values
``u_c`` (matrix) and ``t_c`` (u_true):

1. For every model ``j`` of the mover: ``best_j = max_c u_c[i][j]``;
   ``B_j = {c : u_c[i][j] >= best_j - tie_tol * max(1, |best_j|)}`` (the model's optimal choices).
2. ``probModelsChoice[c, j] = (1 - eps) / |B_j| + eps / k`` if ``c in B_j``, else ``eps / k``.
3. ``probChoice[c] = sum_j prob_model[i][j] * probModelsChoice[c, j]`` (sums to 1).
4. ``u[i'][j'] = sum_c probChoice[c] * u_c[i'][j']`` for *every* player ``i'`` and model ``j'``
   (the paper's eq. 1), the mover's and the searcher's rows included.
5. ``t = max_c t_c`` if ``i == you`` (the searcher knows its own decision rule), else
   ``t = sum_c probChoice[c] * t_c``.

Root: the same rule gives the root's matrix, probChoice and u_true. If the searcher moves at the
root, the move is the first child ``c`` whose ``t_c`` ties ``max_c' t_c'`` (ties to the first
child); if an opponent moves at the root there is no move (``None``) and ``t`` is its expectation.

Merging equivalent children (e.g. adjacent cards in Spades) is allowed only if it keeps these
semantics: ``k`` and ``|B_j|`` count the unmerged children, and a merged child's probChoice is its
multiplicity times that of one member. Without that weighting eps / k and the (1 - eps) share
change, and the search computes a different opponent model.

Consequences worth testing (and used as tests): with one model per player, ``eps = 0`` and no ties,
prob-max^n's matrix is the max^n value; with ``eps = 1`` every probChoice is uniform; at a node,
probChoice depends only on the mover's rows of the children's matrices. The paper's Figures 3-6
(``eps = 0.3``, equal model weights) give the root matrix
``[[30.55, 29.45], [-4.5, -4.5], [-2, -2]]`` (players 1-3, models MT, mOT).

Complexity: one pass over the tree, O(nodes x sum_i N_i). No pruning applies (every child's matrix
is needed); transpositions are the caller's business (the Spades kernel keeps a table keyed on the
position, which is valid because a node's result depends only on its subtree).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.perfect_info.search.tree import Leaf, Node, Number, Tree, validate_tree

TIE_TOL = 1e-9
"""Tolerance under which two utilities count as tied, relative above 1 (module docstring)."""

UtilityMatrix = tuple[np.ndarray, ...]
"""``u[i]`` is a float64 vector of player ``i``'s utilities, one per model."""


@dataclass(frozen=True)
class ProbMaxnResult:
    """Prob-max^n value of a node.

    ``utilities[i][j]``: expected utility of player ``i`` under model ``j``; ``u_true``: the
    searcher's expected true utility; ``prob_choice[c]``: the probability the mover takes child
    ``c`` (empty at a leaf); ``move``: the searcher's choice at the root (``None`` unless the
    searcher moves there);
    ``child_u_true[c]``: the children's u_true, from which ``move`` was chosen.
    """

    utilities: UtilityMatrix
    u_true: float
    prob_choice: tuple[float, ...]
    move: int | None
    child_u_true: tuple[float, ...]


def model_choice_probabilities(
    child_utilities: np.ndarray, epsilon: float, *, tie_tol: float = TIE_TOL
) -> np.ndarray:
    """Steps 1-2: ``probModelsChoice[c, j]`` from ``child_utilities[c, j]`` (mover's models only).

    Public because the same epsilon-greedy rule turns an observed choice into the likelihood vector
    ``L[j] = probModelsChoice[chosen, j]`` for model-weight inference
    (``oppmodel.modeling.perfect_info.model_weights``).
    """
    k = child_utilities.shape[0]
    best = child_utilities.max(axis=0)
    optimal = child_utilities >= best - tie_tol * np.maximum(1.0, np.abs(best))
    n_best = optimal.sum(axis=0)
    return np.where(optimal, (1.0 - epsilon) / n_best + epsilon / k, epsilon / k)


def combine(
    children: Sequence[UtilityMatrix],
    mover: int,
    *,
    prob_model_row: np.ndarray,
    epsilon: float,
    tie_tol: float = TIE_TOL,
) -> tuple[UtilityMatrix, np.ndarray]:
    """Steps 1-4 at one node: returns (the node's utility matrix, probChoice)."""
    mover_utils = np.array([child[mover] for child in children], dtype=np.float64)
    prob_choice = model_choice_probabilities(mover_utils, epsilon, tie_tol=tie_tol) @ prob_model_row
    rows = tuple(
        prob_choice @ np.array([child[i] for child in children], dtype=np.float64)
        for i in range(len(children[0]))
    )
    return rows, prob_choice


def probmaxn(
    tree: Tree,
    *,
    prob_model: Sequence[Sequence[float]],
    epsilon: float,
    you: int,
    true_model: int,
    tie_tol: float = TIE_TOL,
    evaluate: Callable[[Leaf], Sequence[Sequence[Number]]] | None = None,
) -> ProbMaxnResult:
    """Prob-max^n value of ``tree`` (module docstring: the rules).

    ``evaluate`` maps a leaf to its utility matrix (default: ``leaf.utilities``); with a custom
    ``evaluate`` the leaves need ``payoffs`` (they fix the number of players), e.g. models that are
    utility functions of a game's payoffs.
    """
    if evaluate is None:
        n = validate_tree(tree, need_utilities=True)
        evaluate = _leaf_utilities
    else:
        n = validate_tree(tree)
    rows = _validate_prob_model(prob_model, n)
    if not 0.0 <= epsilon <= 1.0:
        raise InvalidArgumentError("epsilon", f"must be in [0, 1], got {epsilon}")
    if not 0 <= you < n:
        raise InvalidArgumentError("you", f"must be in 0..{n - 1}, got {you}")
    if not 0 <= true_model < len(rows[you]):
        raise InvalidArgumentError("true_model", f"must be in 0..{len(rows[you]) - 1}")
    if not tie_tol >= 0.0:
        raise InvalidArgumentError("tie_tol", f"must be >= 0, got {tie_tol}")

    def value(t: Tree) -> tuple[UtilityMatrix, float, np.ndarray, np.ndarray]:
        if isinstance(t, Leaf):
            matrix = tuple(np.asarray(r, dtype=np.float64) for r in evaluate(t))
            if [len(r) for r in matrix] != [len(r) for r in rows]:
                raise InvalidArgumentError(
                    f"leaf {t.label}.utilities", "models per player differ from prob_model"
                )
            return matrix, float(matrix[you][true_model]), np.empty(0), np.empty(0)
        results = [value(child) for child in t.children]
        matrix, prob_choice = combine(
            [r[0] for r in results],
            t.player,
            prob_model_row=rows[t.player],
            epsilon=epsilon,
            tie_tol=tie_tol,
        )
        trues = np.array([r[1] for r in results])
        u_true = float(trues.max()) if t.player == you else float(prob_choice @ trues)
        return matrix, u_true, prob_choice, trues

    matrix, u_true, prob_choice, trues = value(tree)
    move = None
    if isinstance(tree, Node) and tree.player == you:
        top = trues.max()
        move = int(np.flatnonzero(trues >= top - tie_tol * max(1.0, abs(top)))[0])
    return ProbMaxnResult(
        utilities=matrix,
        u_true=u_true,
        prob_choice=tuple(float(p) for p in prob_choice),
        move=move,
        child_u_true=tuple(float(v) for v in trues),
    )


def _leaf_utilities(lf: Leaf) -> Sequence[Sequence[Number]]:
    assert lf.utilities is not None  # validate_tree(need_utilities=True) guarantees it
    return lf.utilities


def _validate_prob_model(prob_model: Sequence[Sequence[float]], n: int) -> list[np.ndarray]:
    if len(prob_model) != n:
        raise InvalidArgumentError(
            "prob_model", f"needs one row per player ({n}), got {len(prob_model)}"
        )
    rows = []
    for i, row in enumerate(prob_model):
        arr = np.asarray(row, dtype=np.float64)
        if arr.ndim != 1 or arr.size == 0:
            raise InvalidArgumentError(f"prob_model[{i}]", "must be a non-empty vector")
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise InvalidArgumentError(f"prob_model[{i}]", "entries must be finite and >= 0")
        if abs(arr.sum() - 1.0) > 1e-9:
            raise InvalidArgumentError(f"prob_model[{i}]", f"must sum to 1, sums to {arr.sum()}")
        rows.append(arr)
    return rows
