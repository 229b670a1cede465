"""What an offline replay (:mod:`oppmodel.clients.acpc.replay`) needs to know about a game: any
compiled ACPC limit game (:class:`ReplayGame`: Kuhn's ``kuhn<n>p``, Leduc, the rules of a game file;
actions fold, call, raise, board cards between the betting rounds), one path for all of them.

It turns a logged hand into the observation the seat made of it live, lists the opponents'
decisions in it (with the information set when the opponent's cards were shown to us), and predicts
a decision whose cards stayed hidden: the model's action probabilities averaged over the cards the
opponent may hold, each deal of the cards we do not see weighted by how likely the models make the
opponents' earlier actions in the hand. Only what the seat knew at that decision is used: our
cards, the board dealt so far and the public betting, never a card revealed later.

In n-player Kuhn (the game's rules say so: ``gamedef.kuhn_unsupported``) the naive Bayes move
model of :mod:`oppmodel.modeling.movepred.kuhn` is one more predictor (:class:`NaiveBayesLearner`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from oppmodel.clients.acpc.convert import logged_limit_observation
from oppmodel.clients.acpc.log import LoggedHand
from oppmodel.modeling.games.acpc.betting import CALL, FOLD, RAISE
from oppmodel.modeling.games.acpc.gamedef import kuhn_unsupported
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.movepred.kuhn import KUHN_MOVE_NAMES, kuhn_feature_names, kuhn_features
from oppmodel.modeling.movepred.naive_bayes import train_move_model
from oppmodel.modeling.observation import LimitObservation

Models = dict[int, np.ndarray]  # opponent position -> (num_infosets, num_actions) strategy


@dataclass(frozen=True)
class OpponentDecision:
    """One action an opponent took in a hand."""

    position: int
    round: int  # the betting round (0 first)
    infoset: int | None  # its information set, None when its cards are hidden from us
    card: str | None  # its hole cards as the game writes them ("Ks"), None when hidden
    history: str  # the betting before it (ACPC letters, rounds split by "/")
    action: int  # 0 fold, 1 call, 2 raise
    node: int  # its betting node (a compiled game's tree node; hold'em's: the node's first set)


class ReplayRules(Protocol):
    """What the replay reads of a game: :class:`ReplayGame` (a compiled game) or hold'em's
    (:mod:`oppmodel.clients.acpc.replay_holdem`, over its abstraction's sets)."""

    methods: tuple[str, ...]  # the predictors scored on decisions with the cards shown
    num_players: int
    num_rounds: int
    num_actions: int

    @property
    def num_infosets(self) -> int:
        """The information sets the models' tables index (every one a replay meets)."""
        ...

    def observation(self, hand: LoggedHand, position: int) -> LimitObservation:
        """What ``position`` saw of ``hand`` live (hidden cards hidden)."""
        ...

    def decisions(self, hand: LoggedHand, obs: LimitObservation) -> list[OpponentDecision]:
        """Every opponent action in the hand, in order."""
        ...

    def legal(self, position: int, infoset: int) -> np.ndarray:
        """(num_actions,) True for the actions legal at the information set."""
        ...

    def hidden_prediction(
        self, models: Models, obs: LimitObservation, decisions: list[OpponentDecision], i: int
    ) -> np.ndarray:
        """The action probabilities of ``decisions[i]`` (cards hidden) as we could predict them
        then."""
        ...

    def infoset_strings(self, position: int) -> dict[int, str]:
        """The information-state string of each of ``position``'s sets, by index."""
        ...

    def learner(self, opponents: int, capacity: int) -> NaiveBayesLearner | None:
        """The naive Bayes move model (Kuhn), or None."""
        ...


class ReplayGame:
    """A compiled limit game as the replay sees it (module docstring)."""

    def __init__(self, game: LimitGame) -> None:
        self.game = game
        self.kuhn = not kuhn_unsupported(game.gamedef)  # the naive Bayes move model applies
        # the predictors scored on decisions with the cards shown
        self.methods: tuple[str, ...] = (
            ("prior", "counts", "naive-bayes", "mbbr") if self.kuhn else ("prior", "counts", "mbbr")
        )
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
        """What ``position`` saw of ``hand`` live (hidden cards hidden)."""
        return logged_limit_observation(self.game, hand, position)

    def decisions(self, hand: LoggedHand, obs: LimitObservation) -> list[OpponentDecision]:
        """Every opponent action in the hand, in order."""
        game, tree = self.game, self.game.tree
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
                    infoset = int(tree.node_base[node]) + self._shown_view(obs, r, q)
                out.append(OpponentDecision(q, r, infoset, card, game.bettings[node], action, node))
            node = int(tree.node_children[node, action])
        return out

    def _shown_view(self, obs: LimitObservation, round_: int, position: int) -> int:
        """The view in ``round_`` of ``position``, whose cards ``obs`` shows: read from a deal
        of the game with the cards ``obs`` shows (any cards for the hidden ones: only the views
        of the positions whose cards it shows are read from it)."""
        deal = int(np.flatnonzero(self._consistent(obs, len(obs.board) - 1, shown=True))[0])
        return int(self.game.tree.deal_view[round_, deal, position])

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
        """(num_actions,) True for the actions legal at the information set."""
        return self.game.legal_mask[position, infoset]

    def hidden_prediction(
        self, models: Models, obs: LimitObservation, decisions: list[OpponentDecision], i: int
    ) -> np.ndarray:
        """The action probabilities of ``decisions[i]`` (cards hidden) as we could predict them
        then, from the earlier ``decisions`` of the hand and what ``obs``'s seat knew."""
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

    def infoset_strings(self, position: int) -> dict[int, str]:
        """The information-state string of each of ``position``'s sets, by index."""
        return {i: self.game.infoset_string(position, i) for i in self.game.infosets(position)}

    def learner(self, opponents: int, capacity: int) -> NaiveBayesLearner | None:
        """The naive Bayes move model, one per opponent, in Kuhn; None in other games."""
        return NaiveBayesLearner(self.game, opponents, capacity) if self.kuhn else None


class NaiveBayesLearner:
    """The naive Bayes move model per opponent (n-player Kuhn), retrained on every new batch.

    Its features read a decision in OpenSpiel's Kuhn conventions (card 0..n, history in letters
    ``p``/``b``); its two moves, pass and bet, are fold or call and call or raise of the compiled
    game, as the decision faces a bet or not (``KuhnGame.acpc_to_history``)."""

    def __init__(self, game: LimitGame, opponents: int, capacity: int) -> None:
        self.n = game.num_players
        self.deck = game.deck
        self.kuhn = kuhn_game(self.n)
        width = len(kuhn_feature_names(self.n))
        self.rows = np.zeros((opponents, capacity, width), dtype=np.uint8)
        self.actions = np.zeros((opponents, capacity), dtype=np.int64)
        self.size = [0] * opponents
        self.models: list = [None] * opponents

    def predict(self, d: int, dec: OpponentDecision) -> np.ndarray:
        """(fold, call, raise) probabilities of a decision whose card was shown."""
        model = self.models[d - 1]
        pass_bet = (
            np.array([0.5, 0.5])  # nothing seen yet: no preference
            if model is None
            else model.predict_proba(self._features(dec)[None, :])[0]
        )
        probs = np.zeros(3)
        probs[[FOLD, CALL] if "r" in dec.history else [CALL, RAISE]] = pass_bet
        return probs

    def add(self, d: int, dec: OpponentDecision) -> None:
        i = self.size[d - 1]
        self.rows[d - 1, i] = self._features(dec)
        letter = self.kuhn.acpc_to_history(dec.history + "fcr"[dec.action])[-1]
        self.actions[d - 1, i] = KUHN_MOVE_NAMES.index(letter)
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

    def _features(self, dec: OpponentDecision) -> np.ndarray:
        card = self.deck.index(str(dec.card))  # Kuhn's card numbers are the deck's rank order
        history = self.kuhn.acpc_to_history(dec.history)
        return kuhn_features(dec.position, card, history, num_players=self.n)
