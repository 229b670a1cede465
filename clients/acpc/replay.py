"""Offline replay of dealer logs: how well opponent models predict, from one player's seat.

Every logged hand NAME played is turned into the observation NAME's live agent would have made
(:func:`oppmodel.clients.acpc.convert.log_observations`: folded cards, and every card when all
others folded, stay hidden) and fed, in log order, to an MBBR model: a session on the service (the
default) or the modeling library in this process (``LocalModels``, no gRPC).

Before each hand is fed, every action an opponent takes in it is predicted by four methods:

* ``prior``: the model before any observation (the MBBR prior mean, epsilon-clipped);
* ``counts``: Laplace-smoothed frequencies per (opponent, its position, information state),
  P(a) = (n_a + 1) / (n + 2), trained online on the decisions NAME saw;
* ``naive-bayes``: the naive Bayes move model of :mod:`oppmodel.modeling.movepred.kuhn` (one per
  opponent, its position a feature), retrained after each hand on the same decisions;
* ``mbbr``: the posterior-mean strategy of the opponent in that position (Alg 5 of Ganzfried et al.
2024),
  i.e. its predictive probability for the next action, given every earlier hand, under the
  configured posterior (the Dirichlet one by default, or the paper's k samples).

An opponent's information state includes its card, which NAME sees only at a showdown and only if
that opponent did not fold. So the counts and naive Bayes can only learn from those decisions, and
all four methods are scored on exactly those actions: decisions in showdown hands by opponents who
reached the showdown. That sample is biased towards hands in which opponents continued (no folds
are ever scored); the report says how many decisions it left out. MBBR itself learns from every
hand (it sums over the hidden cards).

Scores: mean log-loss, -ln P(action taken), in nats, and accuracy (the more probable action, ties
counted as pass, equals the action taken), online: each prediction uses only earlier hands. The
report (:mod:`oppmodel.clients.acpc.replay_report`) names the posterior and explains each column.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from oppmodel.clients.acpc.convert import full_view_observation, kuhn_for
from oppmodel.clients.acpc.log import LoggedHand
from oppmodel.clients.acpc.replay_report import (
    HIDDEN_METHODS,
    METHODS,
    Curve,
    OpponentReport,
    ReplayReport,
    Score,
)
from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.movepred.kuhn import KUHN_MOVE_NAMES, kuhn_feature_names, kuhn_features
from oppmodel.modeling.movepred.naive_bayes import train_move_model
from oppmodel.modeling.observation import HandObservation


class ModelSource(Protocol):
    """Where the MBBR models come from: observations in, per-(opponent, position) models out."""

    def observe(self, observations: Sequence[HandObservation]) -> None:
        """Apply these hands, in order (returns once they are applied)."""
        ...

    def model(self, offset: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """(num_infosets, 2) strategy of the opponent ``offset`` seats after us when it sits at
        ``opponent_position``, and its spread (ESS of the samples, or least concentration of
        the Dirichlet posterior: :func:`column_legend`)."""
        ...

    def close(self) -> None:
        """Release what the source holds (streams)."""
        ...


class LocalModels:
    """The modeling library's MBBRModel in this process."""

    def __init__(self, game: KuhnGame, config: MBBRConfig) -> None:
        self.model_ = build_model(game, config)
        self.game = game

    def observe(self, observations: Sequence[HandObservation]) -> None:
        """Bayes-update with each hand."""
        for obs in observations:
            self.model_.observe(obs)

    def model(self, offset: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """The posterior-mean model (GetModel's arithmetic, without the service)."""
        our_position = (opponent_position - offset) % self.game.num_players
        return self.model_.opponent_model(our_position, opponent_position)

    def close(self) -> None:
        """Nothing to release."""


class ServiceModels:
    """One session on the service: Observe (acknowledged) and GetModel."""

    def __init__(
        self,
        client: OpponentModelClient,
        game: KuhnGame,
        *,
        config: MBBRConfig,
        our_label: str,
        opponent_labels: Sequence[str],
    ) -> None:
        self.client = client
        self.game = game
        self.labels = tuple(opponent_labels)
        self.session_id = client.create_session(
            game=f"kuhn_poker(players={game.num_players})",
            our_label=our_label,
            opponent_labels=self.labels,
            config=config,
        ).session_id
        self.stream = client.observation_stream(self.session_id, first_sequence=1)

    def observe(self, observations: Sequence[HandObservation]) -> None:
        """Send the hands on the session's one Observe stream; returns once all are acked."""
        for obs in observations:
            self.stream.send(obs)

    def close(self) -> None:
        """End the Observe stream."""
        self.stream.close()

    def model(self, offset: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """GetModel, as a full (num_infosets, 2) table indexed like the game's infosets."""
        reply = self.client.model(self.session_id, self.labels[offset - 1], opponent_position)
        table = np.full((self.game.num_infosets, 2), np.nan)
        for infostate, probs in zip(
            reply.strategy.infostates, reply.strategy.probabilities, strict=True
        ):
            table[self.game.infoset_from_string(opponent_position, infostate)] = probs
        return table, reply.effective_sample_size


def seat_offsets(hands: Sequence[LoggedHand], name: str) -> tuple[str, ...]:
    """The opponents of ``name`` by seat offset (1, 2, ...): constant under ACPC rotation.

    MBBR (and the service's sessions) model the opponent d seats after us as one player; a log in
    which that changes (``-f`` with different seatings, logs of different matches) is refused.
    """
    labels: tuple[str, ...] | None = None
    for hand in hands:
        if name not in hand.names:
            continue
        p, n = hand.names.index(name), len(hand.names)
        here = tuple(hand.names[(p + d) % n] for d in range(1, n))
        if labels is None:
            labels = here
        elif here != labels:
            raise InvalidArgumentError(
                "log",
                f"hand {hand.hand}: {name}'s opponents by seat offset are {list(here)}, "
                f"earlier {list(labels)}; replay needs one seat order for the whole replay",
            )
    if labels is None:
        raise InvalidArgumentError("name", f"{name!r} played no hand in these logs")
    return labels


@dataclass(frozen=True)
class OpponentDecision:
    """One action an opponent took in a hand."""

    position: int
    card: int | None  # None: hidden from us (the opponent folded, or nobody showed down)
    history: str  # the betting before it (OpenSpiel letters)
    action: int  # 0 pass, 1 bet


@dataclass(frozen=True)
class Prediction:
    """How each method predicted one opponent decision, before learning from its hand."""

    hand: int  # index of the hand among the ones replayed
    offset: int  # the opponent's seats after us
    position: int  # the opponent's position in that hand
    log_loss: dict[str, float]  # method -> -ln P(action taken)
    correct: dict[str, bool]  # method -> its more probable action (ties: pass) was taken

    @classmethod
    def scored(
        cls, *, hand: int, offset: int, position: int, action: int, predicted: dict[str, np.ndarray]
    ) -> Prediction:
        """The record of ``predicted`` (method -> P(pass), P(bet)) against the action taken."""
        return cls(
            hand,
            offset,
            position,
            {m: -math.log(float(pr[action])) for m, pr in predicted.items()},
            {m: int(pr[1] > pr[0]) == action for m, pr in predicted.items()},
        )


def opponent_decisions(game: KuhnGame, obs: HandObservation) -> list[OpponentDecision]:
    """Every opponent action in the hand, in order."""
    out = []
    for i, letter in enumerate(obs.history):
        history = obs.history[:i]
        q = game.current_player(history)
        if q != obs.position:
            out.append(OpponentDecision(q, obs.cards[q], history, "pb".index(letter)))
    return out


def marginal_action_probs(
    kuhn: KuhnGame, models: dict[int, np.ndarray], obs: HandObservation, history: str
) -> np.ndarray:
    """P(pass), P(bet) of the player to act after ``history`` as we could predict it then: its
    model's action probabilities averaged over the cards it may hold, each deal of the cards we
    do not see weighted by how likely the models make the opponents' actions so far.

    ``models`` maps each opponent's position to its (num_infosets, 2) strategy; only our own
    card (``obs``) and the public ``history`` are used, never a card revealed later.
    """
    n, p = kuhn.num_players, obs.position
    q = kuhn.current_player(history)
    opponents = [(p + d) % n for d in range(1, n)]
    free = [c for c in range(kuhn.num_cards) if c != obs.cards[p]]
    weighted = np.zeros(2)
    for deal in itertools.permutations(free, n - 1):
        card = dict(zip(opponents, deal, strict=True))
        weight = 1.0
        for i, letter in enumerate(history):
            actor = kuhn.current_player(history[:i])
            if actor != p:
                infoset = kuhn.infoset_index(actor, card[actor], history[:i])
                weight *= models[actor][infoset, "pb".index(letter)]
        weighted += weight * models[q][kuhn.infoset_index(q, card[q], history)]
    return weighted / weighted.sum()


class _Counts:
    """Laplace-smoothed action counts per (offset, opponent position, infoset)."""

    def __init__(self, game: KuhnGame, opponents: int) -> None:
        self.n = np.zeros((opponents, game.num_players, game.num_infosets, 2))

    def predict(self, d: int, q: int, infoset: int) -> np.ndarray:
        row = self.n[d - 1, q, infoset]
        return (row + 1.0) / (row.sum() + 2.0)

    def add(self, d: int, q: int, infoset: int, action: int) -> None:
        self.n[d - 1, q, infoset, action] += 1


class _NaiveBayes:
    """The naive Bayes move model per opponent, retrained on every new batch of decisions."""

    def __init__(self, num_players: int, opponents: int, capacity: int) -> None:
        self.n = num_players
        width = len(kuhn_feature_names(num_players))
        self.rows = np.zeros((opponents, capacity, width), dtype=np.uint8)
        self.actions = np.zeros((opponents, capacity), dtype=np.int64)
        self.size = [0] * opponents
        self.models: list = [None] * opponents

    def predict(self, d: int, q: int, card: int, history: str) -> np.ndarray:
        model = self.models[d - 1]
        if model is None:  # nothing seen yet: no preference
            return np.array([0.5, 0.5])
        x = kuhn_features(q, card, history, num_players=self.n)
        return model.predict_proba(x[None, :])[0]

    def add(self, d: int, q: int, card: int, history: str, action: int) -> None:
        i = self.size[d - 1]
        self.rows[d - 1, i] = kuhn_features(q, card, history, num_players=self.n)
        self.actions[d - 1, i] = action
        self.size[d - 1] = i + 1

    def retrain(self, d: int) -> None:
        m = self.size[d - 1]
        self.models[d - 1] = train_move_model(
            self.rows[d - 1, :m],
            self.actions[d - 1, :m],
            n_moves=2,
            feature_names=kuhn_feature_names(self.n),
            move_names=KUHN_MOVE_NAMES,
        )


def replay(
    game: GameDef,
    hands: Sequence[LoggedHand],
    name: str,
    source_factory: Callable[[tuple[str, ...]], ModelSource],
    *,
    config: MBBRConfig,
    progress: Callable[[int], object] | None = None,
) -> ReplayReport:
    """Replay ``hands`` from ``name``'s seat; ``source_factory(opponent labels by offset)`` builds
    the model source (a service session or local models) configured with ``config``."""
    kuhn = kuhn_for(game)
    n = kuhn.num_players
    labels = seat_offsets(hands, name)
    source = source_factory(labels)
    priors = {(d, q): source.model(d, q)[0] for d in range(1, n) for q in range(n)}
    counts = _Counts(kuhn, n - 1)
    most = max(2 * len(hands), 1)  # an opponent acts at most twice per hand
    bayes = _NaiveBayes(n, n - 1, most)
    records: list[Prediction] = []
    hidden_records: list[Prediction] = []  # the same, for decisions whose card NAME never saw
    sample_hands: list[int] = []
    pending: list[HandObservation] = []
    played = showdowns = unscored = 0
    models: dict[int, np.ndarray] = {}  # the opponents' models, refreshed before each decision
    for hand in hands:
        if name not in hand.names:
            continue
        p = hand.names.index(name)
        obs = full_view_observation(game, position=p, betting=hand.betting, hole=hand.hole)
        decisions = opponent_decisions(kuhn, obs)
        visible = [(dec, dec.card) for dec in decisions if dec.card is not None]
        hidden = [dec for dec in decisions if dec.card is None]
        unscored += len(hidden)
        if decisions:
            source.observe(pending)
            pending = []
            models = {(p + d) % n: source.model(d, (p + d) % n)[0] for d in range(1, n)}
        if hidden:
            prior_models = {(p + d) % n: priors[d, (p + d) % n] for d in range(1, n)}
            for dec in hidden:
                predicted = {
                    "prior": marginal_action_probs(kuhn, prior_models, obs, dec.history),
                    "mbbr": marginal_action_probs(kuhn, models, obs, dec.history),
                }
                hidden_records.append(
                    Prediction.scored(
                        hand=played,
                        offset=(dec.position - p) % n,
                        position=dec.position,
                        action=dec.action,
                        predicted=predicted,
                    )
                )
        if visible:
            showdowns += 1
            for dec, card in visible:
                d, q = (dec.position - p) % n, dec.position
                infoset = kuhn.infoset_index(q, card, dec.history)
                predicted = {
                    "prior": priors[d, q][infoset],
                    "counts": counts.predict(d, q, infoset),
                    "naive-bayes": bayes.predict(d, q, card, dec.history),
                    "mbbr": models[q][infoset],
                }
                records.append(
                    Prediction.scored(
                        hand=played, offset=d, position=q, action=dec.action, predicted=predicted
                    )
                )
            for dec, card in visible:
                d, q = (dec.position - p) % n, dec.position
                counts.add(d, q, kuhn.infoset_index(q, card, dec.history), dec.action)
                bayes.add(d, q, card, dec.history, dec.action)
            for d in {(dec.position - p) % n for dec, _card in visible}:
                bayes.retrain(d)
            sample_hands.append(played + 1)
        pending.append(obs)
        played += 1
        if progress is not None:
            progress(1)
    source.observe(pending)
    rows = []
    for d in range(1, n):
        for q in range(n):
            mine = [r for r in records if (r.offset, r.position) == (d, q)]
            model, ess = source.model(d, q)
            rows.append(
                OpponentReport(
                    opponent=labels[d - 1],
                    position=q,
                    our_position=(q - d) % n,
                    scores=_scores(mine),
                    hidden_scores=_scores(
                        [r for r in hidden_records if (r.offset, r.position) == (d, q)],
                        HIDDEN_METHODS,
                    ),
                    model={
                        kuhn.infoset_string(q, i): (float(model[i, 0]), float(model[i, 1]))
                        for i in kuhn.infosets(q)
                    },
                    effective_sample_size=float(ess),
                )
            )
    source.close()
    return ReplayReport(
        name=name,
        hands=played,
        showdown_hands=showdowns,
        scored_decisions=len(records),
        unscored_decisions=unscored,
        config=config,
        opponents=tuple(rows),
        overall=_scores(records),
        hidden=_scores(hidden_records, HIDDEN_METHODS),
        curve=_curve(records, sample_hands),
        session_id=getattr(source, "session_id", None),
    )


def _scores(records: list[Prediction], methods: tuple[str, ...] = METHODS) -> dict[str, Score]:
    if not records:
        return {m: Score(0, math.nan, math.nan) for m in methods}
    return {
        m: Score(
            len(records),
            float(np.mean([r.log_loss[m] for r in records])),
            float(np.mean([r.correct[m] for r in records])),
        )
        for m in methods
    }


def _curve(records: list[Prediction], sample_hands: list[int]) -> Curve:
    """Running means after each hand that had scored decisions."""
    if not records:
        empty = {m: np.array([]) for m in METHODS}
        return Curve(np.array([], dtype=np.int64), empty, empty)
    hand_of = np.array([r.hand for r in records])
    last = np.searchsorted(hand_of, np.array(sample_hands) - 1, side="right") - 1
    count = np.arange(1, len(records) + 1)
    loss = {m: np.cumsum([r.log_loss[m] for r in records])[last] / count[last] for m in METHODS}
    acc = {m: np.cumsum([r.correct[m] for r in records])[last] / count[last] for m in METHODS}
    return Curve(np.array(sample_hands), loss, acc)
