"""Offline replay of dealer logs: how well opponent models predict, from one player's seat.

Every logged hand NAME played is turned into the observation NAME's live agent would have made
(folded cards, and every card when all others folded, stay hidden) and fed, in log order, to an
MBBR model: a session on the service (``ServiceModels``) or the modeling library in this process
(``LocalModels``), of any compiled limit game (Kuhn's ``kuhn<n>p``, Leduc, a game file's rules):
one path for every game. Both sources run the same config and give the same models, bit for bit.
What the replay needs to know about the game (its observations, decisions and hidden-card
marginals) is in :mod:`oppmodel.clients.acpc.replay_games`.

Before each hand is fed, every action an opponent takes in it is predicted by:

* ``prior``: the model before any observation (the MBBR prior mean, epsilon-clipped);
* ``counts``: Laplace-smoothed frequencies per (opponent, its position, information state),
  P(a) = (n_a + 1) / (n + L) over the L legal actions, trained online on the decisions NAME saw;
* ``naive-bayes`` (Kuhn): the naive Bayes move model of :mod:`oppmodel.modeling.movepred.kuhn`
  (one per opponent, its position a feature), retrained after each hand on the same decisions;
* ``mbbr``: the posterior-mean strategy of the opponent in that position (Alg 5 of Ganzfried et al.
  2024), i.e. its predictive probability for the next action, given every earlier hand, under the
  configured posterior (the Dirichlet one by default, or the paper's k samples).

An opponent's information state includes its cards, which NAME sees only at a showdown and only if
that opponent did not fold. So the counts and naive Bayes can only learn from those decisions, and
every method is scored on exactly those actions: decisions in showdown hands by opponents who
reached the showdown. That sample is biased towards hands in which opponents continued: it never
holds a fold, which favours a predictor trained on the same sample (counts) over one that knows
how often the opponent folds. So the prior, counts and MBBR are also scored on every other opponent
decision, by their marginal over the cards never shown, and on every decision together. MBBR
itself learns from every hand (it sums over the hidden cards).

Scores: mean log-loss, -ln P(action taken), in nats, and accuracy (the most probable action, ties
counted as the lowest action code: pass, or fold before call, equals the action taken), online:
each prediction uses only earlier hands; overall, per opponent and position, per betting round.
The report (:mod:`oppmodel.clients.acpc.replay_report`) names the posterior and explains each
column.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from oppmodel.clients.acpc.convert import session_game
from oppmodel.clients.acpc.log import LoggedHand
from oppmodel.clients.acpc.replay_games import OpponentDecision, ReplayGame
from oppmodel.clients.acpc.replay_report import (
    HIDDEN_METHODS,
    Curve,
    OpponentReport,
    ReplayReport,
    Score,
)
from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import parse_profile
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import LimitObservation

LATE_SHARE = 3  # "by the end of the log": the scores of its last third of hands as well


class ModelSource(Protocol):
    """Where the MBBR models come from: observations in, per-(opponent, position) models out."""

    def observe(self, observations: Sequence[LimitObservation]) -> None:
        """Apply these hands, in order (returns once they are applied)."""
        ...

    def model(self, offset: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """(num_infosets, num_actions) strategy of the opponent ``offset`` seats after us when
        it sits at ``opponent_position``, and its spread (ESS of the samples, or least
        concentration of the Dirichlet posterior: :func:`column_legend`)."""
        ...

    def close(self) -> None:
        """Release what the source holds (streams)."""
        ...


class LocalModels:
    """The modeling library's MBBR model of a compiled limit game in this process."""

    def __init__(
        self, game: LimitGame, config: MBBRConfig, *, prior_strategy: str | None = None
    ) -> None:
        """``prior_strategy``: the text of a strategy file, the prior mean and default strategy
        (None: the game's defaults)."""
        profile = None if prior_strategy is None else parse_profile(game, prior_strategy, "prior")
        self.model_ = build_model(game, config, prior_mean=profile, default_strategy=profile)
        self.game = game

    def observe(self, observations: Sequence[LimitObservation]) -> None:
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
    """One session on the service (Observe, acknowledged, and GetModel) of a compiled limit game
    (its bundled name, or a session of its rules). It runs ``config`` exactly,
    defaults included, so its models are ``LocalModels``' bit for bit."""

    def __init__(
        self,
        client: OpponentModelClient,
        game: LimitGame,
        *,
        config: MBBRConfig,
        our_label: str,
        opponent_labels: Sequence[str],
        prior_strategy: str | None = None,
    ) -> None:
        """``prior_strategy``: as :class:`LocalModels`', sent as the session's JSON fields."""
        self.client = client
        self.game = game
        self.labels = tuple(opponent_labels)
        self._strings: dict[int, tuple[str, ...]] = {}  # position -> its infostates, in order
        self.session_id = client.create_session(
            game=session_game(game),
            our_label=our_label,
            opponent_labels=self.labels,
            config=config,
            send_defaults=True,
            prior_mean=prior_strategy,
            default_strategy=prior_strategy,
        ).session_id
        self.stream = client.observation_stream(self.session_id, first_sequence=1)

    def observe(self, observations: Sequence[LimitObservation]) -> None:
        """Send the hands on the session's one Observe stream; returns once all are acked."""
        for obs in observations:
            self.stream.send(obs)

    def close(self) -> None:
        """End the Observe stream."""
        self.stream.close()

    def model(self, offset: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """GetModel, as a full (num_infosets, num_actions) table indexed like the game's
        infosets (NaN in the rows of other positions and padding)."""
        reply = self.client.model(self.session_id, self.labels[offset - 1], opponent_position)
        table = np.full((self.game.num_infosets, self.game.num_actions), np.nan)
        table[self._rows(opponent_position, reply.strategy.infostates)] = (
            reply.strategy.probabilities
        )
        return table, reply.effective_sample_size

    def _rows(self, position: int, infostates: tuple[str, ...]) -> list[int]:
        """The infoset index of each information state GetModel listed: the game's order when the
        reply is in it (the server's; Leduc 3p lists 8600 states per opponent every hand), else
        read one by one."""
        if position not in self._strings:
            self._strings[position] = tuple(
                self.game.infoset_string(position, i) for i in self.game.infosets(position)
            )
        if infostates == self._strings[position]:
            return list(self.game.infosets(position))
        return [self.game.infoset_from_string(position, s) for s in infostates]


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
class Prediction:
    """How each method predicted one opponent decision, before learning from its hand."""

    hand: int  # index of the hand among the ones replayed
    offset: int  # the opponent's seats after us
    position: int  # the opponent's position in that hand
    round: int  # the betting round of the decision
    log_loss: dict[str, float]  # method -> -ln P(action taken)
    correct: dict[str, bool]  # method -> its most probable action (ties: the lowest) was taken

    @classmethod
    def scored(
        cls, *, hand: int, offset: int, dec: OpponentDecision, predicted: dict[str, np.ndarray]
    ) -> Prediction:
        """The record of ``predicted`` (method -> action probabilities) against the action."""
        return cls(
            hand,
            offset,
            dec.position,
            dec.round,
            {m: -math.log(float(pr[dec.action])) for m, pr in predicted.items()},
            {m: most_probable(pr) == dec.action for m, pr in predicted.items()},
        )


TIE = 1e-12  # probabilities this close are a tie: a sum's rounding must not break it


def most_probable(probs: np.ndarray) -> int:
    """The most probable action, ties (within ``TIE``) to the lowest action code."""
    return int(np.flatnonzero(probs >= probs.max() - TIE)[0])


class _Counts:
    """Laplace-smoothed action counts per (offset, opponent position, infoset), over the legal
    actions of the information set."""

    def __init__(self, game: ReplayGame, opponents: int) -> None:
        self.game = game
        shape = (opponents, game.num_players, game.num_infosets, game.num_actions)
        self.n = np.zeros(shape)
        # each position's legal actions per information set, for the tables
        self.legal = np.array(
            [[game.legal(q, i) for i in range(game.num_infosets)] for q in range(game.num_players)]
        )

    def predict(self, d: int, q: int, infoset: int) -> np.ndarray:
        row = self.n[d - 1, q, infoset]
        legal = self.game.legal(q, infoset)
        return np.where(legal, row + 1.0, 0.0) / (row.sum() + legal.sum())

    def add(self, d: int, q: int, infoset: int, action: int) -> None:
        self.n[d - 1, q, infoset, action] += 1

    def table(self, d: int, q: int) -> np.ndarray:
        """(num_infosets, num_actions) every prediction for the opponent at offset ``d`` in
        position ``q`` (padding rows of a limit game: its legal mask's call)."""
        rows, legal = self.n[d - 1, q], self.legal[q]
        return np.where(legal, rows + 1.0, 0.0) / (rows.sum(axis=1) + legal.sum(axis=1))[:, None]


def replay(
    game: LimitGame,
    hands: Sequence[LoggedHand],
    name: str,
    source_factory: Callable[[tuple[str, ...]], ModelSource],
    *,
    config: MBBRConfig,
    progress: Callable[[int], object] | None = None,
) -> ReplayReport:
    """Replay ``hands`` from ``name``'s seat; ``source_factory(opponent labels by offset)`` builds
    the model source (a service session or local models) configured with ``config``."""
    rules = ReplayGame(game)
    n = rules.num_players
    labels = seat_offsets(hands, name)
    source = source_factory(labels)
    priors = {(d, q): source.model(d, q)[0] for d in range(1, n) for q in range(n)}
    counts = _Counts(rules, n - 1)
    bayes = rules.learner(n - 1, max(2 * len(hands), 1))  # Kuhn: at most 2 actions a hand
    records: list[Prediction] = []
    hidden_records: list[Prediction] = []  # the same, for decisions whose card NAME never saw
    sample_hands: list[int] = []  # hands (1-based) after which a scored decision was made
    every_hands: list[int] = []  # the same, any decision
    pending: list[LimitObservation] = []
    played = showdowns = unscored = 0
    models: dict[int, np.ndarray] = {}  # the opponents' models, refreshed before each decision
    for hand in hands:
        if name not in hand.names:
            continue
        p = hand.names.index(name)
        obs = rules.observation(hand, p)
        decisions = rules.decisions(hand, obs)
        visible = [dec for dec in decisions if dec.infoset is not None]
        hidden = [i for i, dec in enumerate(decisions) if dec.infoset is None]
        unscored += len(hidden)
        if decisions:
            source.observe(pending)
            pending = []
            models = {(p + d) % n: source.model(d, (p + d) % n)[0] for d in range(1, n)}
        if hidden:
            tables = {
                "prior": {(p + d) % n: priors[d, (p + d) % n] for d in range(1, n)},
                "counts": {(p + d) % n: counts.table(d, (p + d) % n) for d in range(1, n)},
                "mbbr": models,
            }
            for i in hidden:
                dec = decisions[i]
                predicted = {
                    m: rules.hidden_prediction(tables[m], obs, decisions, i) for m in HIDDEN_METHODS
                }
                hidden_records.append(
                    Prediction.scored(
                        hand=played, offset=(dec.position - p) % n, dec=dec, predicted=predicted
                    )
                )
        if visible:
            showdowns += 1
            for dec in visible:
                d, q, infoset = (dec.position - p) % n, dec.position, dec.infoset
                assert infoset is not None
                predicted = {
                    "prior": priors[d, q][infoset],
                    "counts": counts.predict(d, q, infoset),
                    **({"naive-bayes": bayes.predict(d, dec)} if bayes else {}),
                    "mbbr": models[q][infoset],
                }
                records.append(
                    Prediction.scored(hand=played, offset=d, dec=dec, predicted=predicted)
                )
            for dec in visible:
                d = (dec.position - p) % n
                assert dec.infoset is not None
                counts.add(d, dec.position, dec.infoset, dec.action)
                if bayes:
                    bayes.add(d, dec)
            if bayes:
                for d in {(dec.position - p) % n for dec in visible}:
                    bayes.retrain(d)
            sample_hands.append(played + 1)
        if decisions:
            every_hands.append(played + 1)
        pending.append(obs)
        played += 1
        if progress is not None:
            progress(1)
    source.observe(pending)
    methods = rules.methods
    every = sorted(records + hidden_records, key=lambda r: r.hand)  # stable: scored first
    late = played - played // LATE_SHARE  # the first hand of the end of the log
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
                    scores=_scores(mine, methods),
                    hidden_scores=_scores(
                        [r for r in hidden_records if (r.offset, r.position) == (d, q)],
                        HIDDEN_METHODS,
                    ),
                    model={
                        key: tuple(float(x) for x in model[i])
                        for i, key in enumerate(rules.infoset_strings(q))
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
        overall=_scores(records, methods),
        hidden=_scores(hidden_records, HIDDEN_METHODS),
        curve=_curve(records, sample_hands, methods),
        every=_scores(every, HIDDEN_METHODS),
        every_curve=_curve(every, every_hands, HIDDEN_METHODS),
        session_id=getattr(source, "session_id", None),
        methods=methods,
        rounds=tuple(
            _scores([r for r in records if r.round == k], methods) for k in range(rules.num_rounds)
        ),
        late_hands=played - late,
        late=_scores([r for r in records if r.hand >= late], methods),
        late_every=_scores([r for r in every if r.hand >= late], HIDDEN_METHODS),
        every_rounds=tuple(
            _scores([r for r in every if r.round == k], HIDDEN_METHODS)
            for k in range(rules.num_rounds)
        ),
    )


def _scores(records: list[Prediction], methods: tuple[str, ...]) -> dict[str, Score]:
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


def _curve(records: list[Prediction], sample_hands: list[int], methods: tuple[str, ...]) -> Curve:
    """Running means after each hand that had scored decisions."""
    if not records:
        empty = {m: np.array([]) for m in methods}
        return Curve(np.array([], dtype=np.int64), empty, empty)
    hand_of = np.array([r.hand for r in records])
    last = np.searchsorted(hand_of, np.array(sample_hands) - 1, side="right") - 1
    count = np.arange(1, len(records) + 1)
    loss = {m: np.cumsum([r.log_loss[m] for r in records])[last] / count[last] for m in methods}
    acc = {m: np.cumsum([r.correct[m] for r in records])[last] / count[last] for m in methods}
    return Curve(np.array(sample_hands), loss, acc)
