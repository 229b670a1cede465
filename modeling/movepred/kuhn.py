"""Kuhn poker decisions as binary features for the naive Bayes move model (a non-Bayesian baseline).

Hicks-Wright & Schkufza 2006's model (``oppmodel.modeling.movepred.naive_bayes``) needs no game
tree: it learns ``P(action | features)`` from logged decisions. Here a decision of an n-player Kuhn
poker opponent (n + 1 cards ``0..n``, one card each, actions 0 = pass/check/fold ``p`` and 1 =
bet/call ``b``, OpenSpiel's numbering) is described by binary features, so the ACPC replay report
can set this baseline beside the Bayesian posteriors.

Input conventions (kept independent of the Kuhn game module on purpose):

* ``history`` is the OpenSpiel betting string before the decision, e.g. ``"pb"``; an OpenSpiel
  information state string is ``<card digit><history>``, e.g. ``"2pb"`` (see :func:`parse_infoset`).
* ``position`` counts from the first player to act (0) in seat order. Kuhn's betting goes round
  the table once and, after a bet, once more over the players behind the bettor, always in seat
  order, so the player acting after ``history`` sits at ``len(history) mod n``. This is the
  assumption the feature function relies on, and it is checked: a position that disagrees raises.

Features (names from :func:`kuhn_feature_names`): ``card=c`` for each card; ``position=i`` for
each seat; ``slot t=p`` / ``slot t=b`` for each action slot ``t`` of the history (a decision history
has at most ``2n - 2`` actions); ``facing_bet`` (someone has bet), ``called_already`` (someone has
called that bet) and ``second_turn`` (the player has acted before: ``len(history) >= n``).

Naive Bayes treats these as independent given the action, so it cannot represent card-by-history
interactions exactly; that is what makes it a baseline rather than a posterior over strategies.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.movepred.naive_bayes import MoveModel, train_move_model
from oppmodel.modeling.numerals import DIGITS

__all__ = [
    "KUHN_MOVE_NAMES",
    "KuhnDecision",
    "kuhn_action_probs",
    "kuhn_decision_probs",
    "kuhn_feature_names",
    "kuhn_features",
    "parse_infoset",
    "train_kuhn_model",
]

KUHN_MOVE_NAMES: tuple[str, str] = ("p", "b")


def _check_num_players(num_players: int) -> int:
    if isinstance(num_players, bool) or not isinstance(num_players, int) or num_players < 2:
        raise InvalidArgumentError("num_players", "must be an integer >= 2")
    return num_players


def _check_history(history: str, num_players: int) -> str:
    """A betting string after which some player still has to act."""
    if not isinstance(history, str) or any(ch not in "pb" for ch in history):
        raise InvalidArgumentError("history", f"must be a string of 'p' and 'b', got {history!r}")
    first_bet = history.find("b")
    if first_bet >= num_players:
        raise IllegalActionError("history", f"{history!r} goes on after everyone checked")
    if first_bet < 0:
        done = len(history) >= num_players
    else:
        done = len(history) - first_bet - 1 >= num_players - 1
    if done:
        raise IllegalActionError("history", f"{history!r} ends the hand; nobody is to act")
    return history


def kuhn_feature_names(num_players: int = 3) -> tuple[str, ...]:
    """Names of the features of :func:`kuhn_features`, in column order."""
    n = _check_num_players(num_players)
    return (
        tuple(f"card={c}" for c in range(n + 1))
        + tuple(f"position={i}" for i in range(n))
        + tuple(f"slot {t}={a}" for t in range(2 * n - 2) for a in KUHN_MOVE_NAMES)
        + ("facing_bet", "called_already", "second_turn")
    )


def kuhn_features(position: int, card: int, history: str, *, num_players: int = 3) -> np.ndarray:
    """Binary feature vector (uint8) of one decision: the acting player's seat, card and history."""
    n = _check_num_players(num_players)
    h = _check_history(history, n)
    if isinstance(card, bool) or not isinstance(card, int | np.integer) or not 0 <= card <= n:
        raise InvalidArgumentError("card", f"must be an integer in [0, {n}]")
    if isinstance(position, bool) or not isinstance(position, int | np.integer):
        raise InvalidArgumentError("position", "must be an integer")
    if position != len(h) % n:
        raise InvalidArgumentError(
            "position",
            f"the player to act after {h!r} sits at len(history) mod {n} = {len(h) % n}, "
            f"got {position} (positions count from the first player to act)",
        )
    slots = 2 * n - 2
    x = np.zeros(2 * n + 1 + 2 * slots + 3, dtype=np.uint8)
    x[card] = 1
    x[n + 1 + position] = 1
    base = 2 * n + 1
    for t, ch in enumerate(h):
        x[base + 2 * t + (ch == "b")] = 1
    first_bet = h.find("b")
    tail = base + 2 * slots
    x[tail] = first_bet >= 0
    x[tail + 1] = first_bet >= 0 and "b" in h[first_bet + 1 :]
    x[tail + 2] = len(h) >= n
    return x


def parse_infoset(infoset: str, *, num_players: int = 3) -> tuple[int, int, str]:
    """Split an OpenSpiel Kuhn infoset ``"<card><history>"`` into (position, card, history)."""
    n = _check_num_players(num_players)
    if not isinstance(infoset, str) or not infoset or infoset[0] not in DIGITS:
        raise InvalidArgumentError("infoset", f"must be '<card digit><history>', got {infoset!r}")
    history = _check_history(infoset[1:], n)
    return len(history) % n, int(infoset[0]), history


@dataclass(frozen=True)
class KuhnDecision:
    """One observed decision: seat from the first actor, private card, history before, action."""

    position: int
    card: int
    history: str
    action: int


def _decision_matrix(decisions: Iterable[KuhnDecision], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows (m, d) and actions (m,) of observed decisions, validated."""
    rows = []
    actions = []
    for i, d in enumerate(decisions):
        if d.action not in (0, 1):
            raise InvalidArgumentError("action", f"decision {i}: must be 0 (pass) or 1 (bet)")
        rows.append(kuhn_features(d.position, d.card, d.history, num_players=n))
        actions.append(d.action)
    if not rows:
        raise InvalidArgumentError("decisions", "needs at least one observed decision")
    return np.array(rows), np.array(actions, dtype=np.int64)


def _check_model(model: MoveModel, n: int) -> None:
    if model.feature_names != kuhn_feature_names(n) or model.move_names != KUHN_MOVE_NAMES:
        raise InvalidArgumentError("model", f"was not trained on {n}-player Kuhn features")


def train_kuhn_model(
    decisions: Iterable[KuhnDecision],
    *,
    num_players: int = 3,
    alpha: float = 1.0,
    k_features: int | None = None,
) -> MoveModel:
    """Fit the naive Bayes move model to observed Kuhn decisions (action 0 = pass, 1 = bet)."""
    n = _check_num_players(num_players)
    x, y = _decision_matrix(decisions, n)
    return train_move_model(
        x,
        y,
        n_moves=2,
        alpha=alpha,
        k_features=k_features,
        feature_names=kuhn_feature_names(n),
        move_names=KUHN_MOVE_NAMES,
    )


def kuhn_action_probs(
    model: MoveModel, position: int, card: int, history: str, *, num_players: int = 3
) -> np.ndarray:
    """Predicted ``[P(pass), P(bet)]`` of the decision described by (position, card, history)."""
    n = _check_num_players(num_players)
    _check_model(model, n)
    x = kuhn_features(position, card, history, num_players=n)
    return model.predict_proba(x[None, :])[0]


def kuhn_decision_probs(
    model: MoveModel, decisions: Iterable[KuhnDecision], *, num_players: int = 3
) -> np.ndarray:
    """Probability the model gave to the action actually taken in each decision: shape (m,).

    Its log summed over held-out decisions is the log-likelihood a replay report can set beside
    that of a Bayesian posterior.
    """
    n = _check_num_players(num_players)
    _check_model(model, n)
    x, y = _decision_matrix(decisions, n)
    return model.predict_proba(x)[np.arange(y.size), y]
