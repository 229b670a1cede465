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
* ``mbbr``: the posterior-mean strategy of the opponent in that position (Alg 5 of paper 003),
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
report names the posterior and explains each column (:func:`column_legend`, also in the JSON).
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
from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr.model import MBBRConfig, MBBRModel
from oppmodel.modeling.movepred.kuhn import KUHN_MOVE_NAMES, kuhn_feature_names, kuhn_features
from oppmodel.modeling.movepred.naive_bayes import train_move_model
from oppmodel.modeling.observation import HandObservation

METHODS = ("prior", "counts", "naive-bayes", "mbbr")
HIDDEN_METHODS = ("prior", "mbbr")  # the only ones that can predict without the card


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
        self.model_ = MBBRModel(game, config)
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


@dataclass(frozen=True)
class Score:
    """A method's online predictions: decisions scored, mean log-loss (nats), accuracy."""

    decisions: int
    log_loss: float
    accuracy: float


@dataclass(frozen=True)
class OpponentReport:
    """One opponent in one position: scores per method, final MBBR model and its spread."""

    opponent: str
    position: int
    our_position: int
    scores: dict[str, Score]
    hidden_scores: dict[str, Score]  # decisions with the card never shown (marginal prediction)
    model: dict[str, tuple[float, float]]  # OpenSpiel infostate -> (P(pass), P(bet))
    effective_sample_size: float  # the posterior's spread: ESS or least concentration


@dataclass(frozen=True)
class Curve:
    """Running means over the scored decisions, sampled after each hand that had one."""

    hands: np.ndarray  # hands replayed so far
    log_loss: dict[str, np.ndarray]
    accuracy: dict[str, np.ndarray]


@dataclass(frozen=True)
class ReplayReport:
    """The whole replay: per (opponent, position) rows, overall scores and the curves."""

    name: str
    hands: int
    showdown_hands: int
    scored_decisions: int
    unscored_decisions: int  # opponent decisions whose card NAME never saw
    config: MBBRConfig
    opponents: tuple[OpponentReport, ...]
    overall: dict[str, Score]
    hidden: dict[str, Score]
    curve: Curve
    session_id: str | None = None

    def as_json(self) -> dict:
        """A JSON-ready dict (curves left out; they are what --plot draws)."""
        return {
            "name": self.name,
            "hands": self.hands,
            "showdown_hands": self.showdown_hands,
            "scored_decisions": self.scored_decisions,
            "unscored_decisions": self.unscored_decisions,
            "scored_on": "opponent decisions in showdown hands by opponents who did not fold",
            "posterior": self.config.posterior,
            "mbbr": self.config.__dict__,
            "columns": column_legend(self.config),
            "session_id": self.session_id,
            "overall": {m: s.__dict__ for m, s in self.overall.items()},
            "hidden_card_decisions": {m: s.__dict__ for m, s in self.hidden.items()},
            "opponents": [
                {
                    "opponent": r.opponent,
                    "position": r.position,
                    "our_position": r.our_position,
                    "effective_sample_size": r.effective_sample_size,
                    "scores": {m: s.__dict__ for m, s in r.scores.items()},
                    "hidden_card_scores": {m: s.__dict__ for m, s in r.hidden_scores.items()},
                    "model": {k: list(v) for k, v in r.model.items()},
                }
                for r in self.opponents
            ],
        }


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


def opponent_decisions(
    game: KuhnGame, obs: HandObservation
) -> list[tuple[int, int | None, str, int]]:
    """(opponent position, its card or None if hidden from us, history before, action) of every
    opponent action in the hand."""
    out = []
    for i, letter in enumerate(obs.history):
        history = obs.history[:i]
        q = game.current_player(history)
        if q != obs.position:
            out.append((q, obs.cards[q], history, "pb".index(letter)))
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
    records: list[tuple[int, int, int, dict[str, float], dict[str, bool]]] = []  # (hand, d, q, ..)
    hidden_records: list = []  # the same, for decisions whose card NAME never saw
    sample_hands: list[int] = []
    pending: list[HandObservation] = []
    played = showdowns = unscored = 0
    for hand in hands:
        if name not in hand.names:
            continue
        p = hand.names.index(name)
        obs = full_view_observation(game, position=p, betting=hand.betting, hole=hand.hole)
        decisions = opponent_decisions(kuhn, obs)
        visible = [dec for dec in decisions if dec[1] is not None]
        hidden = [dec for dec in decisions if dec[1] is None]
        unscored += len(hidden)
        if decisions:
            source.observe(pending)
            pending = []
            models = {(p + d) % n: source.model(d, (p + d) % n)[0] for d in range(1, n)}
        if hidden:
            prior_models = {(p + d) % n: priors[d, (p + d) % n] for d in range(1, n)}
            for q, _, history, action in hidden:
                predicted = {
                    "prior": marginal_action_probs(kuhn, prior_models, obs, history),
                    "mbbr": marginal_action_probs(kuhn, models, obs, history),
                }
                hidden_records.append(
                    (
                        played,
                        (q - p) % n,
                        q,
                        {m: -math.log(float(pr[action])) for m, pr in predicted.items()},
                        {m: int(pr[1] > pr[0]) == action for m, pr in predicted.items()},
                    )
                )
        if visible:
            showdowns += 1
            for q, card, history, action in visible:
                d = (q - p) % n
                infoset = kuhn.infoset_index(q, card, history)
                predicted = {
                    "prior": priors[d, q][infoset],
                    "counts": counts.predict(d, q, infoset),
                    "naive-bayes": bayes.predict(d, q, card, history),
                    "mbbr": models[q][infoset],
                }
                records.append(
                    (
                        played,
                        d,
                        q,
                        {m: -math.log(float(pr[action])) for m, pr in predicted.items()},
                        {m: int(pr[1] > pr[0]) == action for m, pr in predicted.items()},
                    )
                )
            for q, card, history, action in visible:
                d = (q - p) % n
                counts.add(d, q, kuhn.infoset_index(q, card, history), action)
                bayes.add(d, q, card, history, action)
            for d in {(q - p) % n for q, *_ in visible}:
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
            mine = [r for r in records if r[1] == d and r[2] == q]
            model, ess = source.model(d, q)
            rows.append(
                OpponentReport(
                    opponent=labels[d - 1],
                    position=q,
                    our_position=(q - d) % n,
                    scores=_scores(mine),
                    hidden_scores=_scores(
                        [r for r in hidden_records if r[1] == d and r[2] == q], HIDDEN_METHODS
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


def _scores(records: list, methods: tuple[str, ...] = METHODS) -> dict[str, Score]:
    if not records:
        return {m: Score(0, math.nan, math.nan) for m in methods}
    return {
        m: Score(
            len(records),
            float(np.mean([r[3][m] for r in records])),
            float(np.mean([r[4][m] for r in records])),
        )
        for m in methods
    }


def _curve(records: list, sample_hands: list[int]) -> Curve:
    """Running means after each hand that had scored decisions."""
    if not records:
        empty = {m: np.array([]) for m in METHODS}
        return Curve(np.array([], dtype=np.int64), empty, empty)
    hand_of = np.array([r[0] for r in records])
    last = np.searchsorted(hand_of, np.array(sample_hands) - 1, side="right") - 1
    count = np.arange(1, len(records) + 1)
    loss = {m: np.cumsum([r[3][m] for r in records])[last] / count[last] for m in METHODS}
    acc = {m: np.cumsum([r[4][m] for r in records])[last] / count[last] for m in METHODS}
    return Curve(np.array(sample_hands), loss, acc)


def posterior_description(config: MBBRConfig) -> str:
    """One line naming MBBR's posterior and the parameters it uses."""
    common = (
        f"prior={config.prior} epsilon={config.epsilon} eta={config.eta} "
        f"H={config.hands_default} seed={config.seed}"
    )
    if config.posterior == "samples":
        return f"MBBR with the samples posterior (paper 003's k samples): k={config.k} {common}"
    return f"MBBR with the dirichlet posterior (the default; variational Bayes): {common}"


def spread_column(config: MBBRConfig) -> str:
    """The header of the last column: what the posterior reports about its own certainty."""
    return "ESS" if config.posterior == "samples" else "conc"


def column_legend(config: MBBRConfig) -> dict[str, str]:
    """What each column of the report means, by header, in the order of the table."""
    predictors = {
        "prior": "predictor: MBBR's prior mean alone, never updated (N3 clipped to "
        "[epsilon, 1 - epsilon]; uniform with the uninformed prior)",
        "counts": "predictor: Laplace-smoothed frequencies of the opponent's actions per "
        "position and information state, (n_a + 1) / (n + 2), from the decisions seen so far",
        "naive-bayes": "predictor: the naive Bayes move model (oppmodel.modeling.movepred.kuhn), "
        "retrained after each hand on the same decisions",
        "mbbr": f"predictor: MBBR's model of the opponent in that position ({config.posterior} "
        "posterior, its posterior mean given every earlier hand, folds included)",
    }
    if config.posterior == "samples":
        spread = (
            "effective sample size of MBBR's posterior over this opponent's k samples, "
            f"1 / sum w^2: 1 = collapsed onto one sample (learning has stopped), k = {config.k} "
            "= as spread as the prior"
        )
    else:
        spread = (
            "smallest Dirichlet concentration alpha_0 + alpha_1 over this opponent's information "
            "sets in that position: the prior's weight plus the expected visits of the least-seen "
            "one, the hands MBBR's model rests on there"
        )
    return {
        "opponent": "the opponent modelled (its name in the log); 'all' = every row together",
        "pos": "the position the opponent sat in (0 acts first)",
        "n": "opponent decisions scored: in showdown hands, by opponents who did not fold",
        **predictors,
        "mean log-loss (nats)": "-ln P(action taken) under each predictor, averaged; lower is "
        "better, ln 2 = 0.693 is a coin flip",
        "accuracy": "share of decisions where each predictor's more probable action (ties: pass) "
        "was the action taken; higher is better",
        spread_column(config): spread,
    }


def format_report(report: ReplayReport) -> str:
    """The text table: per opponent and position, log-loss and accuracy per method, the
    posterior's spread, and a legend line per column."""
    spread = spread_column(report.config)
    lines = [
        f"replay as {report.name}: {report.hands} hands, {report.showdown_hands} with an "
        f"opponent card shown; {report.scored_decisions} opponent decisions scored "
        f"(showdown, card known), {report.unscored_decisions} not scored (card never shown)",
        posterior_description(report.config)
        + (f"; session {report.session_id}" if report.session_id else ""),
        "",
        "online prediction of each next opponent action (before updating on its hand)",
        f"{'opponent':<12}{'pos':>4}{'n':>6} | "
        + "".join(f"{m:>12}" for m in METHODS)
        + " | "
        + "".join(f"{m:>12}" for m in METHODS)
        + f" | {spread:>6}",
        f"{'':<22} | {'mean log-loss (nats)':^48} | {'accuracy':^48} |",
    ]
    for r in report.opponents:
        lines.append(_row(r.opponent, str(r.position), r.scores, f"{r.effective_sample_size:6.2f}"))
    lines.append(_row("all", "", report.overall, ""))
    lines.append("")
    lines.append("columns:")
    legend = column_legend(report.config)
    width = max(len(name) for name in legend)
    lines.extend(f"  {name:<{width}}  {text}" for name, text in legend.items())
    hidden = report.hidden
    lines.append(
        f"\n{hidden['mbbr'].decisions} decisions with the card never shown, predicted by the "
        "marginal over the unseen cards given the public history (counts and naive Bayes need "
        "the card):"
    )
    for m in HIDDEN_METHODS:
        lines.append(
            f"  {m:<6} mean log-loss {hidden[m].log_loss:.4f}, accuracy {hidden[m].accuracy:.3f}"
        )
    lines.append("")
    lines.append("final MBBR models, P(bet) per information state (card, history):")
    for r in report.opponents:
        cells = " ".join(f"{k}:{v[1]:.2f}" for k, v in r.model.items())
        lines.append(f"  {r.opponent} @ {r.position}: {cells}")
    return "\n".join(lines)


def _row(label: str, position: str, scores: dict[str, Score], ess: str) -> str:
    n = scores[METHODS[0]].decisions
    return (
        f"{label:<12}{position:>4}{n:>6} | "
        + "".join(f"{scores[m].log_loss:>12.4f}" for m in METHODS)
        + " | "
        + "".join(f"{scores[m].accuracy:>12.3f}" for m in METHODS)
        + f" | {ess:>6}"
    )


def plot_curves(report: ReplayReport, path: str) -> None:
    """Running mean log-loss and accuracy over hands, one line per method, as a PNG."""
    try:
        import matplotlib
    except ImportError as exc:
        raise InvalidArgumentError(
            "plot", "needs matplotlib (pip install 'oppmodel[plot]')"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for m in METHODS:
        top.plot(report.curve.hands, report.curve.log_loss[m], label=m)
        bottom.plot(report.curve.hands, report.curve.accuracy[m], label=m)
    top.set_ylabel("running mean log-loss (nats)")
    bottom.set_ylabel("running accuracy")
    bottom.set_xlabel(f"hands replayed as {report.name}")
    top.set_title("online prediction of opponent actions (showdown decisions, card known)")
    top.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
