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

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from oppmodel.clients.acpc.convert import session_game
from oppmodel.clients.acpc.log import LoggedHand
from oppmodel.clients.acpc.replay_games import ReplayGame, ReplayRules
from oppmodel.clients.acpc.replay_report import ReplayReport
from oppmodel.clients.acpc.replay_scoring import Scoring
from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import parse_profile
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import LimitObservation
from oppmodel.modeling.population import Population


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
        self,
        game: LimitGame,
        config: MBBRConfig,
        *,
        prior_strategy: str | None = None,
        population: Population | None = None,
    ) -> None:
        """``prior_strategy``: the text of a strategy file, the prior mean and default strategy
        (None: the game's defaults); ``population``: the fitted prior of ``prior="population"``."""
        profile = None if prior_strategy is None else parse_profile(game, prior_strategy, "prior")
        self.model_ = build_model(
            game, config, prior_mean=profile, default_strategy=profile, population=population
        )
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


def replay(
    game: LimitGame | None,
    hands: Sequence[LoggedHand],
    name: str,
    source_factory: Callable[[tuple[str, ...]], ModelSource],
    *,
    config: MBBRConfig,
    progress: Callable[[int], object] | None = None,
    rules: ReplayRules | None = None,
) -> ReplayReport:
    """Replay ``hands`` from ``name``'s seat; ``source_factory(opponent labels by offset)`` builds
    the model source (a service session or local models) configured with ``config``; ``rules``:
    the replay's view of the game (hold'em's: :mod:`oppmodel.clients.acpc.replay_holdem`, where
    ``game`` may be None), by default the compiled game's."""
    if rules is None:
        if game is None:
            raise ValueError("replay needs the compiled game or the replay's rules")
        rules = ReplayGame(game)
    n = rules.num_players
    labels = seat_offsets(hands, name)
    source = source_factory(labels)
    priors = {(d, q): source.model(d, q)[0] for d in range(1, n) for q in range(n)}
    scoring = Scoring(rules, priors, len(hands))
    pending: list[LimitObservation] = []
    models: dict[int, np.ndarray] = {}  # the opponents' models, refreshed before each decision
    for hand in hands:
        if name not in hand.names:
            continue
        p = hand.names.index(name)
        obs = rules.observation(hand, p)
        decisions = rules.decisions(hand, obs)
        if decisions:
            source.observe(pending)
            pending = []
            models = {(p + d) % n: source.model(d, (p + d) % n)[0] for d in range(1, n)}
        scoring.add_hand(p, obs, decisions, models)
        pending.append(obs)
        if progress is not None:
            progress(1)
    source.observe(pending)
    opponents = tuple(
        scoring.opponent_report(d, q, labels[d - 1], *source.model(d, q))
        for d in range(1, n)
        for q in range(n)
    )
    source.close()
    return scoring.report(
        name=name,
        config=config,
        opponents=opponents,
        session_id=getattr(source, "session_id", None),
    )
