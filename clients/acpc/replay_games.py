"""What an offline replay (:mod:`oppmodel.clients.acpc.replay`) needs to know about a game.

Two kinds of game, one interface (:class:`ReplayGame`):

* :class:`KuhnReplay`: n-player Kuhn as the service speaks it (``KuhnGame``: OpenSpiel letters,
  actions pass and bet, cards as numbers); the naive Bayes move model of
  :mod:`oppmodel.modeling.movepred.kuhn` is one more predictor there.
* :class:`LimitReplay`: any compiled ACPC limit game (``LimitGame``: Leduc, ...; actions fold, call,
  raise; several betting rounds, board cards between them).

Each turns a logged hand into the observation the seat made of it live, lists the opponents'
decisions in it (with the information set when the opponent's cards were shown to us), and predicts
a decision whose cards stayed hidden: the model's action probabilities averaged over the cards the
opponent may hold, each deal of the cards we do not see weighted by how likely the models make the
opponents' earlier actions in the hand. Only what the seat knew at that decision is used: our
cards, the board dealt so far and the public betting, never a card revealed later.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from oppmodel.clients.acpc.convert import full_view_observation, kuhn_for, logged_limit_observation
from oppmodel.clients.acpc.log import LoggedHand
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.movepred.kuhn import KUHN_MOVE_NAMES, kuhn_feature_names, kuhn_features
from oppmodel.modeling.movepred.naive_bayes import train_move_model
from oppmodel.modeling.observation import HandObservation, LimitObservation

Observation = HandObservation | LimitObservation
Models = dict[int, np.ndarray]  # opponent position -> (num_infosets, num_actions) strategy


@dataclass(frozen=True)
class OpponentDecision:
    """One action an opponent took in a hand."""

    position: int
    round: int  # the betting round (0 first)
    infoset: int | None  # its information set, None when its cards are hidden from us
    card: int | str | None  # its private cards as the game writes them, None when hidden
    history: str  # the betting before it (Kuhn: OpenSpiel letters; limit: ACPC betting)
    action: int  # Kuhn: 0 pass, 1 bet; limit: 0 fold, 1 call, 2 raise
    node: int = -1  # limit games: the betting node it acted at


class ReplayGame(Protocol):
    """A game as the replay sees it."""

    methods: tuple[str, ...]  # the predictors scored on decisions with the cards shown
    num_players: int
    num_rounds: int
    num_actions: int
    num_infosets: int

    def observation(self, hand: LoggedHand, position: int) -> Observation:
        """What ``position`` saw of ``hand`` live (hidden cards hidden)."""
        ...

    def decisions(self, hand: LoggedHand, obs: Observation) -> list[OpponentDecision]:
        """Every opponent action in the hand, in order."""
        ...

    def legal(self, position: int, infoset: int) -> np.ndarray:
        """(num_actions,) True for the actions legal at the information set."""
        ...

    def hidden_prediction(
        self, models: Models, obs: Observation, decisions: list[OpponentDecision], i: int
    ) -> np.ndarray:
        """The action probabilities of ``decisions[i]`` (cards hidden) as we could predict them
        then, from the earlier ``decisions`` of the hand and what ``obs``'s seat knew."""
        ...

    def infoset_strings(self, position: int) -> list[str]:
        """The information-state strings of ``position``, by index."""
        ...


class KuhnReplay:
    """n-player Kuhn (the Kuhn kernels' game)."""

    methods: tuple[str, ...] = ("prior", "counts", "naive-bayes", "mbbr")
    num_rounds: int = 1
    num_actions: int = 2

    def __init__(self, gamedef: GameDef) -> None:
        self.gamedef = gamedef
        self.kuhn = kuhn_for(gamedef)
        self.num_players = self.kuhn.num_players
        self.num_infosets = self.kuhn.num_infosets

    def observation(self, hand: LoggedHand, position: int) -> HandObservation:
        return full_view_observation(
            self.gamedef, position=position, betting=hand.betting, hole=hand.hole
        )

    def decisions(self, hand: LoggedHand, obs: Observation) -> list[OpponentDecision]:
        assert isinstance(obs, HandObservation)
        out = []
        for i, letter in enumerate(obs.history):
            history = obs.history[:i]
            q = self.kuhn.current_player(history)
            if q != obs.position:
                card = obs.cards[q]
                infoset = None if card is None else self.kuhn.infoset_index(q, card, history)
                out.append(OpponentDecision(q, 0, infoset, card, history, "pb".index(letter)))
        return out

    def legal(self, position: int, infoset: int) -> np.ndarray:
        return np.ones(2, dtype=bool)

    def hidden_prediction(
        self, models: Models, obs: Observation, decisions: list[OpponentDecision], i: int
    ) -> np.ndarray:
        assert isinstance(obs, HandObservation)
        return marginal_action_probs(self.kuhn, models, obs, decisions[i].history)

    def infoset_strings(self, position: int) -> list[str]:
        return [self.kuhn.infoset_string(position, i) for i in self.kuhn.infosets(position)]

    def learner(self, opponents: int, capacity: int) -> NaiveBayesLearner:
        """The naive Bayes move model, one per opponent."""
        return NaiveBayesLearner(self.num_players, opponents, capacity)


def marginal_action_probs(
    kuhn: KuhnGame, models: Models, obs: HandObservation, history: str
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


class NaiveBayesLearner:
    """The naive Bayes move model per opponent (Kuhn), retrained on every new batch."""

    def __init__(self, num_players: int, opponents: int, capacity: int) -> None:
        self.n = num_players
        width = len(kuhn_feature_names(num_players))
        self.rows = np.zeros((opponents, capacity, width), dtype=np.uint8)
        self.actions = np.zeros((opponents, capacity), dtype=np.int64)
        self.size = [0] * opponents
        self.models: list = [None] * opponents

    def predict(self, d: int, dec: OpponentDecision) -> np.ndarray:
        model = self.models[d - 1]
        if model is None:  # nothing seen yet: no preference
            return np.array([0.5, 0.5])
        x = kuhn_features(dec.position, _kuhn_card(dec), dec.history, num_players=self.n)
        return model.predict_proba(x[None, :])[0]

    def add(self, d: int, dec: OpponentDecision) -> None:
        i = self.size[d - 1]
        card = _kuhn_card(dec)
        self.rows[d - 1, i] = kuhn_features(dec.position, card, dec.history, num_players=self.n)
        self.actions[d - 1, i] = dec.action
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


def _kuhn_card(dec: OpponentDecision) -> int:
    """The Kuhn card of a decision whose card was shown."""
    assert isinstance(dec.card, int)
    return dec.card


class LimitReplay:
    """Any compiled ACPC limit game (Leduc, ...): fold, call, raise over several rounds."""

    methods: tuple[str, ...] = ("prior", "counts", "mbbr")

    def __init__(self, game: LimitGame) -> None:
        self.game = game
        self.num_players = game.num_players
        self.num_rounds = game.num_rounds
        self.num_actions = game.num_actions
        self.num_infosets = game.num_infosets
        gamedef = game.gamedef
        h = gamedef.num_hole_cards
        n = game.num_players
        ends = np.cumsum([n * h, *gamedef.num_board_cards])
        # columns of game.deal_cards: each position's hole, each round's board (sorted groups)
        self._hole_columns = [slice(p * h, (p + 1) * h) for p in range(n)]
        self._board_columns = [
            slice(int(ends[r]), int(ends[r + 1])) for r in range(game.num_rounds)
        ]

    def observation(self, hand: LoggedHand, position: int) -> LimitObservation:
        return logged_limit_observation(self.game, hand, position)

    def decisions(self, hand: LoggedHand, obs: Observation) -> list[OpponentDecision]:
        assert isinstance(obs, LimitObservation)
        game, tree = self.game, self.game.tree
        deal = -1  # a deal with the cards shown, found when a shown opponent's decision needs it
        out = []
        node = 0
        for letter in obs.betting:
            if letter == "/":
                continue
            q, r = int(tree.node_player[node]), int(tree.node_round[node])
            action = "fcr".index(letter)
            if q != obs.position:
                card = obs.hole[q]
                infoset = None
                if card is not None:
                    if deal < 0:
                        deal = self._deal_with(obs)
                    infoset = int(tree.node_base[node] + tree.deal_view[r, deal, q])
                out.append(OpponentDecision(q, r, infoset, card, game.bettings[node], action, node))
            node = int(tree.node_children[node, action])
        return out

    def _deal_with(self, obs: LimitObservation) -> int:
        """A deal with the cards ``obs`` shows (any cards for the hidden ones: only the views of
        the positions whose cards it shows are read from it)."""
        return int(np.flatnonzero(self._consistent(obs, len(obs.board) - 1, shown=True))[0])

    def _consistent(self, obs: LimitObservation, rnd: int, *, shown: bool = False) -> np.ndarray:
        """(num_deals,) True for the deals that give our seat its cards and the board of rounds
        0..``rnd`` (with ``shown``: every other hole card ``obs`` shows too)."""
        game = self.game
        cards = game.deal_cards
        index = {c: i for i, c in enumerate(game.deck)}
        mask = np.ones(game.num_deals, dtype=bool)
        groups = [(self._board_columns[r], obs.board[r]) for r in range(rnd + 1)]
        groups += [
            (self._hole_columns[q], text)
            for q, text in enumerate(obs.hole)
            if text is not None and (shown or q == obs.position)
        ]
        for columns, text in groups:
            wanted = sorted(index[text[i : i + 2]] for i in range(0, len(text), 2))
            mask &= np.all(cards[:, columns] == wanted, axis=1)
        return mask

    def legal(self, position: int, infoset: int) -> np.ndarray:
        return self.game.legal_mask[position, infoset]

    def hidden_prediction(
        self, models: Models, obs: Observation, decisions: list[OpponentDecision], i: int
    ) -> np.ndarray:
        assert isinstance(obs, LimitObservation)
        tree = self.game.tree
        dec = decisions[i]
        deals = np.flatnonzero(self._consistent(obs, dec.round))
        weight = np.ones(len(deals))
        for earlier in decisions[:i]:
            views = tree.deal_view[earlier.round, deals, earlier.position]
            infosets = tree.node_base[earlier.node] + views
            weight *= models[earlier.position][infosets, earlier.action]
        views = tree.deal_view[dec.round, deals, dec.position]
        probs = weight @ models[dec.position][tree.node_base[dec.node] + views]
        return probs / probs.sum()

    def infoset_strings(self, position: int) -> list[str]:
        return [self.game.infoset_string(position, i) for i in self.game.infosets(position)]


def replay_game(game: GameDef | LimitGame) -> KuhnReplay | LimitReplay:
    """The replay's view of a game: a Kuhn game definition (the Kuhn kernels, the service's
    sessions) or a compiled limit game."""
    return LimitReplay(game) if isinstance(game, LimitGame) else KuhnReplay(game)
