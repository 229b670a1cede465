"""Offline replay of limit hold'em logs (:mod:`oppmodel.clients.acpc.replay`): the hold'em parts,
2 and 3 players.

Hold'em is too big to compile, so its opponent models live on the abstract game of the bundled
blueprint (:mod:`oppmodel.modeling.holdem.posterior`): an information set is a betting and the
card abstraction's view of a real hole pair on the real board, numbered by the posterior's
numbering of the sets (:mod:`oppmodel.modeling.holdem.sets`): the compiled abstract game's in 2
players, and in 3 (the ACPC game, whose abstract game does not compile) sets numbered as met,
every move of the log's hands numbered first, in log order, as observing them would number them,
so that the replay's tables hold every set it meets from the start and the models' indices are
those of the model that plays. :class:`HoldemReplayGame` is the replay's game with what differs
from a compiled one: a shown opponent's information set is its real cards' view
(:class:`~oppmodel.modeling.holdem.posterior.AbstractSpots`), not a deal of the game's sample,
and a decision whose cards stayed hidden is predicted by summing over every hole pair the
opponent may hold given what our seat knew then (our cards, the board dealt so far), each pair
weighted by how likely the model makes the opponent's earlier actions of the hand with it and, in
3 players, by how likely the model makes the other opponent's earlier actions with the pairs that
share no card with it: the same assignments the posterior's evidence sums over.

:class:`HoldemModels` is the model source: the model a hold'em player plays with (MBBR over the
blueprint's abstraction: a session's, :mod:`oppmodel.modeling.holdem.served`, in 2 players; in 3
the field's, responding at each decision) in this process, fed each hand as the playing agent
feeds it, so its prior is refitted when MBBR refits it. Its model of an opponent before it saw a
hand from our position is the prior mean (the blueprint's rows clipped to ``[epsilon, 1 -
epsilon]``), so the replay's ``prior`` column is the blueprint's own play as a predictor, kept
finite where the blueprint never takes an action.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, cast

import numpy as np

from oppmodel.clients.acpc.log import LoggedHand
from oppmodel.clients.acpc.replay_games import Models, NaiveBayesLearner, OpponentDecision
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.abstraction import BOARD_SIZES
from oppmodel.modeling.games.acpc.betting import NUM_ACTIONS, HandState
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.holdem_abstract import view_strings
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.interface import with_unset
from oppmodel.modeling.holdem.policy import DECK_SIZE, live_holes
from oppmodel.modeling.holdem.posterior import AbstractSpots, HoldemPosterior, cards_of
from oppmodel.modeling.holdem.response import BUDGET
from oppmodel.modeling.holdem.served import HoldemServedModel, holdem_served, lazy_holdem_mbbr
from oppmodel.modeling.holdem.sets import LazySets
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Prior
from oppmodel.modeling.observation import LimitObservation

HOLDEM_PLAYERS = (2, 3)  # the hold'em posterior's (modeling/holdem/posterior.py)


def check_holdem_config(config: MBBRConfig, players: int) -> None:
    """InvalidArgumentError naming the field if the hold'em posterior cannot run ``config`` in a
    game of ``players``: it is a Dirichlet posterior with the informed prior, 2 or 3 players."""
    if players not in HOLDEM_PLAYERS:
        raise InvalidArgumentError(
            "game", f"hold'em opponent models are 2- or 3-player; this log has {players} players"
        )
    if config.posterior != Posterior.DIRICHLET:
        raise InvalidArgumentError("--mbbr-posterior", "hold'em's posterior is 'dirichlet' only")
    if config.prior != Prior.INFORMED:
        raise InvalidArgumentError("--mbbr-prior", "hold'em's prior is 'informed' only")


class HoldemReplayGame:
    """The replay's view of a hold'em game (:class:`~oppmodel.clients.acpc.replay_games.
    ReplayRules`; the module's text)."""

    methods: tuple[str, ...] = ("prior", "counts", "mbbr")
    num_actions = NUM_ACTIONS

    def __init__(self, spots: AbstractSpots) -> None:
        self.spots = spots
        self.sets = spots.sets
        self.num_players = self.sets.gamedef.num_players
        self.num_rounds = self.sets.gamedef.num_rounds

    @property
    def game(self) -> LimitGame:
        """The compiled abstract game (InvalidArgumentError where the sets are numbered as met)."""
        return self.spots.game

    @property
    def num_infosets(self) -> int:
        return self.sets.size

    def observation(self, hand: LoggedHand, position: int) -> LimitObservation:
        """What ``position`` saw of ``hand`` live: every card the dealer hid from it hidden (a
        folded hand's, and every other one's unless two or more players reached the showdown);
        InvalidArgumentError / IllegalActionError naming the field if it is no hand of the game."""
        gamedef = self.sets.gamedef
        width = 2 * gamedef.num_hole_cards  # the last hole is followed by a round-0 board, if any
        hole = (*hand.hole[:-1], hand.hole[-1][:width])
        board = (hand.hole[-1][width:], *hand.board)
        state = HandState.from_betting(gamedef, hand.betting)
        seen = state.visible_hole(hole, position)
        obs = LimitObservation(
            position, hand.betting, tuple(c or None for c in seen), board[: state.round + 1]
        )
        self.sets.validate(obs)
        return obs

    def decisions(self, hand: LoggedHand, obs: LimitObservation) -> list[OpponentDecision]:
        """Every opponent action in the hand, in order (``node``: its node's first set)."""
        steps = [k for k, letter in enumerate(obs.betting) if letter != "/"]
        numbered = self.sets.size
        moves = self.spots.moves(obs.betting)
        if self.sets.size != numbered:  # the scores' tables were made before: they lack these
            raise ValueError(f"{obs.betting!r}: sets not numbered first (holdem_replay_parts)")
        out = []
        for k, (base, round_, q, action) in zip(steps, moves, strict=True):
            if q == obs.position:
                continue
            card = obs.hole[q]
            infoset = None if card is None else base + self._shown_view(obs, round_, q)
            out.append(OpponentDecision(q, round_, infoset, card, obs.betting[:k], action, base))
        return out

    def _shown_view(self, obs: LimitObservation, round_: int, position: int) -> int:
        text = obs.hole[position]
        assert text is not None
        holes = np.array([cards_of(text)], dtype=np.int64)
        return int(self.spots.views(_board(obs), round_, holes)[0])

    def legal(self, position: int, infoset: int) -> np.ndarray:
        return self.sets.legal_mask[position, infoset]

    def hidden_prediction(
        self, models: Models, obs: LimitObservation, decisions: list[OpponentDecision], i: int
    ) -> np.ndarray:
        """The action probabilities of ``decisions[i]`` as our seat could predict them then:
        the model's rows summed over the opponent's possible hole pairs, each weighted by the
        model's probability of its earlier actions in the hand and (3 players) by the other
        opponent's earlier actions' probability summed over its pairs sharing no card with it."""
        dec = decisions[i]
        ours = obs.hole[obs.position]
        assert ours is not None
        board = _board(obs)[: BOARD_SIZES[dec.round]]
        holes = live_holes([*cards_of(ours), *board])
        weights: dict[int, np.ndarray] = {}  # per opponent, its earlier actions' probability
        for earlier in decisions[:i]:
            q = earlier.position
            at = models[q][self._infosets(earlier, board, holes), earlier.action]
            weights[q] = weights[q] * at if q in weights else at
        weight = weights.pop(dec.position, np.ones(len(holes)))
        for other in weights.values():
            weight = weight * _disjoint_mass(holes, other)
        probs = weight @ models[dec.position][self._infosets(dec, board, holes)]
        return probs / probs.sum()

    def _infosets(
        self, dec: OpponentDecision, board: tuple[int, ...], holes: np.ndarray
    ) -> np.ndarray:
        return dec.node + self.spots.views(board, dec.round, holes)

    def infoset_strings(self, position: int) -> dict[int, str]:
        """``<view>:<betting>`` of each of ``position``'s sets (numbered so far), by index."""
        if not self.sets.numbered_as_met:
            game = self.game
            return {i: game.infoset_string(position, i) for i in game.infosets(position)}
        out = {}
        for betting in cast(LazySets, self.sets).bettings:
            base, round_, q = self.sets.node(betting)
            if q == position:
                views = view_strings(self.spots.config, round_)
                out.update({base + v: f"{view}:{betting}" for v, view in enumerate(views)})
        return dict(sorted(out.items()))

    def learner(self, opponents: int, capacity: int) -> NaiveBayesLearner | None:
        return None


def _board(obs: LimitObservation) -> tuple[int, ...]:
    return tuple(c for text in obs.board for c in cards_of(text))


def _disjoint_mass(holes: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """(k,) for each pair of ``holes`` ((k, 2) cards), the sum of ``weight`` over the pairs
    sharing no card with it: all, less those holding either of its cards (the pair itself is in
    both)."""
    by_card = np.bincount(holes[:, 0], weight, DECK_SIZE) + np.bincount(
        holes[:, 1], weight, DECK_SIZE
    )
    disjoint = weight.sum() - by_card[holes[:, 0]] - by_card[holes[:, 1]] + weight
    return np.maximum(disjoint, 0.0)  # a sum of weights: never below 0 but by rounding


class PlayedModel(Protocol):
    """What the replay reads of the model that plays: ``HoldemServedModel`` or ``HoldemMBBR``."""

    @property
    def posterior(self) -> HoldemPosterior: ...

    def observe(self, obs: LimitObservation) -> None: ...


class HoldemModels:
    """The model a hold'em player plays with (the module's text) as the replay's model source: fed
    each hand by the model's own ``observe``, as the service, the in-process agent and the match
    engine's agent feed it, so its posterior's prior is refitted (the tilt) when MBBR's solves
    refit it (every ``REFRESH`` hands from hand H on): the replay scores the model that plays."""

    def __init__(self, played: PlayedModel) -> None:
        """``played``: the model, its sets numbered as the replay's (:func:`holdem_replay_parts`:
        every set the replay meets, so that the prior column covers them)."""
        self.played = played
        posterior = played.posterior
        sets = posterior.sets
        eps = posterior.epsilon
        prior = np.where(sets.legal_mask, np.clip(posterior.blueprint, eps, 1.0 - eps), 0.0)
        self._prior = prior / prior.sum(axis=2, keepdims=True)
        self._rows = []  # per position, its information sets
        for q in range(sets.num_players):
            bases, views, _ = sets.decision_nodes(q)
            rows = [np.arange(b, b + v) for b, v in zip(bases, views, strict=True)]
            self._rows.append(np.concatenate([np.zeros(0, dtype=np.int64), *rows]))
        self._seen = [False] * sets.num_players  # per our position: a hand observed there

    @property
    def posterior(self) -> HoldemPosterior:
        return self.played.posterior

    def observe(self, observations: Sequence[LimitObservation]) -> None:
        """Feed each hand to the model (an update, and MBBR's solve with its refit when due)."""
        for obs in observations:
            self.played.observe(obs)
            self._seen[obs.position] = True

    def model(self, offset: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """The opponent's posterior mean (the prior mean before a hand was seen from our
        position), and the least concentration of its Dirichlet posterior."""
        p = (opponent_position - offset) % len(self._seen)
        posterior = self.posterior
        concentration = posterior.fits[p].concentration(offset)[self._rows[opponent_position]]
        spread = float(concentration.min(initial=np.inf))
        if not self._seen[p]:
            return self._prior[opponent_position].copy(), spread
        return posterior.models_profile(p)[opponent_position].copy(), spread

    def close(self) -> None:
        """Nothing to release."""


def holdem_replay_parts(
    short: str, config: MBBRConfig, bettings: Iterable[str] = ()
) -> tuple[HoldemReplayGame, HoldemModels]:
    """The replay game and model source of a bundled hold'em game (``holdem2p``, ``holdem3p``),
    over its bundled blueprint's abstraction: in 2 players a session's model with ``config``
    where it sets a field, the service's hold'em values where it leaves one at MBBRConfig's
    default; in 3 the field's (:func:`~oppmodel.modeling.holdem.served.lazy_holdem_mbbr`), the
    moves of ``bettings`` (the hands the replay feeds, finished bettings, in order) numbered
    first. InvalidArgumentError if the posterior cannot run ``config``."""
    players = read_game_def(short).num_players
    check_holdem_config(config, players)
    if players == 3:  # hold'em's values where ``config`` leaves a field at MBBRConfig's default
        config = with_unset(config, {"safety_budget": BUDGET, "change_hazard": 0.0})
        # never renumbered: the replay reads the sets by the numbering made here (HoldemModels)
        played = lazy_holdem_mbbr(short, config, bettings, budget=config.safety_budget, bound=None)
        return HoldemReplayGame(played.posterior.spots), HoldemModels(played)
    served = holdem_served(short)
    model = cast(HoldemServedModel, served.build_model(served.played_config(config)))
    return HoldemReplayGame(served.spots), HoldemModels(model)
