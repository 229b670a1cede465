"""How an offline replay (:mod:`oppmodel.clients.acpc.replay`) scores opponent models: each
method's prediction of an opponent decision, made before the method learns from the decision's
hand, and the scores of those predictions (log-loss and accuracy; overall, per opponent and
position, per round, by the end of the log, and as running curves). The replay's module docstring
says which decisions each method is scored on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from oppmodel.clients.acpc.replay_games import OpponentDecision, ReplayRules
from oppmodel.clients.acpc.replay_report import (
    HIDDEN_METHODS,
    Curve,
    HandScores,
    OpponentReport,
    ReplayReport,
    Score,
)
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import LimitObservation

LATE_SHARE = 3  # "by the end of the log": the scores of its last third of hands as well


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

    def __init__(self, game: ReplayRules, opponents: int) -> None:
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


class Scoring:
    """Every method's prediction of each opponent decision, made before the method learns from
    the decision's hand (the module's docstring says which decisions each method is scored on),
    and the methods' learning: the prior's tables, the online counts, naive Bayes (Kuhn), and the
    MBBR models the source gave before the hand."""

    def __init__(
        self, rules: ReplayRules, priors: dict[tuple[int, int], np.ndarray], hands: int
    ) -> None:
        """``priors``: the model before any observation of the opponent ``d`` seats after NAME
        in position ``q``, by (d, q); ``hands``: how many the replay holds at the most."""
        n = self.n = rules.num_players
        self.rules = rules
        self.priors = priors
        self.counts = _Counts(rules, n - 1)
        self.bayes = rules.learner(n - 1, max(2 * hands, 1))  # Kuhn: at most 2 actions a hand
        self.records: list[Prediction] = []
        self.hidden_records: list[
            Prediction
        ] = []  # the same, for decisions whose card NAME never saw
        self.sample_hands: list[int] = []  # hands (1-based) after which a scored decision was made
        self.every_hands: list[int] = []  # the same, any decision
        self.played = self.showdowns = self.unscored = 0

    def add_hand(
        self,
        p: int,
        obs: LimitObservation,
        decisions: list[OpponentDecision],
        models: dict[int, np.ndarray],
    ) -> None:
        """Score the opponents' ``decisions`` in the hand NAME played from position ``p`` (MBBR
        by ``models``, its opponents' by position), then learn from them."""
        visible = [dec for dec in decisions if dec.infoset is not None]
        hidden = [i for i, dec in enumerate(decisions) if dec.infoset is None]
        self.unscored += len(hidden)
        if hidden:
            self._score_hidden(p, obs, decisions, hidden, models)
        if visible:
            self.showdowns += 1
            self._score_visible(p, visible, models)
            self._learn(p, visible)
            self.sample_hands.append(self.played + 1)
        if decisions:
            self.every_hands.append(self.played + 1)
        self.played += 1

    def _score_hidden(
        self,
        p: int,
        obs: LimitObservation,
        decisions: list[OpponentDecision],
        hidden: list[int],
        models: dict[int, np.ndarray],
    ) -> None:
        """The decisions (by index) whose cards NAME never saw: each method's marginal over them."""
        n = self.n
        tables = {
            "prior": {(p + d) % n: self.priors[d, (p + d) % n] for d in range(1, n)},
            "counts": {(p + d) % n: self.counts.table(d, (p + d) % n) for d in range(1, n)},
            "mbbr": models,
        }
        for i in hidden:
            dec = decisions[i]
            predicted = {
                m: self.rules.hidden_prediction(tables[m], obs, decisions, i)
                for m in HIDDEN_METHODS
            }
            self.hidden_records.append(
                Prediction.scored(
                    hand=self.played, offset=(dec.position - p) % n, dec=dec, predicted=predicted
                )
            )

    def _score_visible(
        self, p: int, visible: list[OpponentDecision], models: dict[int, np.ndarray]
    ) -> None:
        """The decisions of a showdown whose information states NAME knows."""
        for dec in visible:
            d, q, infoset = (dec.position - p) % self.n, dec.position, dec.infoset
            assert infoset is not None
            predicted = {
                "prior": self.priors[d, q][infoset],
                "counts": self.counts.predict(d, q, infoset),
                **({"naive-bayes": self.bayes.predict(d, dec)} if self.bayes else {}),
                "mbbr": models[q][infoset],
            }
            self.records.append(
                Prediction.scored(hand=self.played, offset=d, dec=dec, predicted=predicted)
            )

    def _learn(self, p: int, visible: list[OpponentDecision]) -> None:
        """The counts and naive Bayes learn the decisions NAME saw (MBBR learns from the source)."""
        for dec in visible:
            d = (dec.position - p) % self.n
            assert dec.infoset is not None
            self.counts.add(d, dec.position, dec.infoset, dec.action)
            if self.bayes:
                self.bayes.add(d, dec)
        if self.bayes:
            for d in {(dec.position - p) % self.n for dec in visible}:
                self.bayes.retrain(d)

    def opponent_report(
        self, d: int, q: int, label: str, model: np.ndarray, ess: float
    ) -> OpponentReport:
        """The scores of the opponent ``d`` seats after NAME in position ``q``, with its final
        ``model`` and its spread ``ess`` (as the replay's model source gives them)."""
        return OpponentReport(
            opponent=label,
            position=q,
            our_position=(q - d) % self.n,
            scores=_scores(
                [r for r in self.records if (r.offset, r.position) == (d, q)], self.rules.methods
            ),
            hidden_scores=_scores(
                [r for r in self.hidden_records if (r.offset, r.position) == (d, q)],
                HIDDEN_METHODS,
            ),
            model={
                key: tuple(float(x) for x in model[i])
                for i, key in self.rules.infoset_strings(q).items()
            },
            effective_sample_size=float(ess),
        )

    def report(
        self,
        *,
        name: str,
        config: MBBRConfig,
        opponents: tuple[OpponentReport, ...],
        session_id: str | None,
    ) -> ReplayReport:
        """The whole replay's scores: overall, per round, by the end of the log, and as curves."""
        records, methods, rounds = self.records, self.rules.methods, range(self.rules.num_rounds)
        every = sorted(records + self.hidden_records, key=lambda r: r.hand)  # stable: scored first
        late = self.played - self.played // LATE_SHARE  # the first hand of the end of the log
        return ReplayReport(
            name=name,
            hands=self.played,
            showdown_hands=self.showdowns,
            scored_decisions=len(records),
            unscored_decisions=self.unscored,
            config=config,
            opponents=opponents,
            overall=_scores(records, methods),
            hidden=_scores(self.hidden_records, HIDDEN_METHODS),
            curve=_curve(records, self.sample_hands, methods),
            every=_scores(every, HIDDEN_METHODS),
            every_curve=_curve(every, self.every_hands, HIDDEN_METHODS),
            session_id=session_id,
            methods=methods,
            rounds=tuple(_scores([r for r in records if r.round == k], methods) for k in rounds),
            late_hands=self.played - late,
            late=_scores([r for r in records if r.hand >= late], methods),
            late_every=_scores([r for r in every if r.hand >= late], HIDDEN_METHODS),
            every_rounds=tuple(
                _scores([r for r in every if r.round == k], HIDDEN_METHODS) for k in rounds
            ),
            per_hand=_per_hand(every),
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


def _per_hand(records: list[Prediction]) -> HandScores:
    """Each method's log-loss summed per hand, its mean over the hands that had a decision, and
    MBBR's paired difference to the prior with its standard error over those hands."""
    hands = sorted({r.hand for r in records})
    if not hands:
        return HandScores(0, {m: math.nan for m in HIDDEN_METHODS}, math.nan, math.nan)
    index = np.searchsorted(hands, [r.hand for r in records])
    sums = {
        m: np.bincount(index, [r.log_loss[m] for r in records], len(hands)) for m in HIDDEN_METHODS
    }
    gain = sums["mbbr"] - sums["prior"]
    error = float(gain.std(ddof=1) / math.sqrt(len(hands))) if len(hands) > 1 else math.nan
    return HandScores(
        len(hands), {m: float(x.mean()) for m, x in sums.items()}, float(gain.mean()), error
    )


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
