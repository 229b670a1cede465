"""Spades agents: the player types of Sturtevant, Zinkevich & Bowling (2006), each a search.

Player types (the subscript is the model a player assumes for its opponents):

* ``MT_MT``, ``MT_mOT``, ``mOT_MT``, ``mOT_mOT``: max^n players. ``X_Y`` maximises its own utility X
  and, in its search tree, scores every opponent with utility Y. The tree is the same max^n tree the
  others would search if their utilities were as assumed, so ``X_Y`` also assumes that the opponents
  model it correctly (as X) -- the "second-level" assumption the paper discusses for mOT_mOT.
* ``mOT_g`` (and ``MT_g``): soft-max^n with true utility mOT (MT) and the generic opponent model
  (an opponent prefers one outcome to another only if MT and mOT both do: making its bid beats
  missing it); at the root it takes the child with the best worst-case true utility over its
  max^n set, then the best best case
  (``oppmodel.modeling.perfect_info.spades_search.softmaxn_search``).
* ``mOT_p`` (and ``MT_p``): prob-max^n with true utility mOT (MT), epsilon-greedy models {MT, mOT}
  with equal weights for every opponent, and equal weights for the opponents' belief about itself.
* ``mOT_pl`` (and ``MT_pl``): the same, learning each opponent's model weights during a game:
  every choice an opponent makes yields the likelihood vector ``L[j] = P(choice | model j)`` from
  the learner's own prob-max^n search at that position; after each hand the weights become the
  posterior means of a Dirichlet(1, 1) prior given all of that opponent's choices so far in the
  game, by collapsed Gibbs sampling
  (``oppmodel.modeling.perfect_info.model_weights.gibbs_posterior``). Weights change only between
  hands, so the transposition table stays valid within a hand.

Every agent is told the hand's bids and its seat, asked for a card on its turn and shown the cards
the others play; ``oppmodel.modeling.perfect_info.spades_match`` seats them in games.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.spades.scoring import UtilityModel
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.modeling.perfect_info.model_weights import gibbs_posterior
from oppmodel.modeling.perfect_info.spades_search import (
    ProbMaxnResult,
    maxn_search,
    probmaxn_search,
    softmaxn_search,
)
from oppmodel.modeling.perfect_info.transposition import SearchTable

MAXN_TYPES = ("MT_MT", "MT_mOT", "mOT_MT", "mOT_mOT")
PROB_TYPES = ("mOT_p", "MT_p", "mOT_pl", "MT_pl")
SOFT_TYPES = ("mOT_g", "MT_g")
PLAYER_TYPES = MAXN_TYPES + PROB_TYPES + SOFT_TYPES


def true_model(player_type: str) -> UtilityModel:
    """A player type's own utility."""
    check_type(player_type)
    return UtilityModel.parse(player_type.split("_")[0])


def check_type(player_type: str) -> None:
    """Raise ``InvalidArgumentError`` unless ``player_type`` is one of ``PLAYER_TYPES``."""
    if player_type not in PLAYER_TYPES:
        raise InvalidArgumentError(
            "player_type", f"unknown {player_type!r}; expected one of {', '.join(PLAYER_TYPES)}"
        )


class Agent(ABC):
    """A player: told the hand's bids and its seat, asked for a card, shown everyone's cards."""

    def __init__(self, player_type: str) -> None:
        check_type(player_type)
        self.player_type = player_type
        self.seat = 0
        self.bids: tuple[int, int, int] = (1, 1, 1)
        self.table = SearchTable(16)

    def start_game(self, seat: int) -> None:
        """Forget everything from previous games."""
        self.seat = seat

    def start_hand(self, bids: tuple[int, int, int]) -> None:
        """A new hand with these bids begins."""
        self.bids = bids

    @abstractmethod
    def choose(self, state: SpadesState) -> int:
        """The card to play at ``state`` (this agent's turn)."""

    def observe(self, state: SpadesState, card: int) -> None:
        """Another seat played ``card`` at ``state`` (default: ignore)."""
        return

    def end_hand(self) -> None:
        """The hand is over (default: nothing to do)."""
        return


class MaxnAgent(Agent):
    """Max^n with fixed models: own utility for itself, the assumed utility for both opponents."""

    def __init__(self, player_type: str) -> None:
        super().__init__(player_type)
        if player_type not in MAXN_TYPES:
            raise InvalidArgumentError("player_type", f"{player_type!r} is not a max^n type")
        own, assumed = player_type.split("_")
        self._own, self._assumed = own, assumed

    def choose(self, state: SpadesState) -> int:
        """Max^n move (ties to the lowest card)."""
        models = [self._own if p == self.seat else self._assumed for p in range(3)]
        return maxn_search(state, self.bids, models, table=self.table).move


class SoftMaxnAgent(Agent):
    """Soft-max^n with the generic opponent model
    (``oppmodel.modeling.perfect_info.spades_search.softmaxn_search``)."""

    def __init__(self, player_type: str) -> None:
        super().__init__(player_type)
        if player_type not in SOFT_TYPES:
            raise InvalidArgumentError("player_type", f"{player_type!r} is not a soft-max^n type")
        self._true = true_model(player_type)

    def choose(self, state: SpadesState) -> int:
        """Soft-max^n move."""
        move = softmaxn_search(
            state, self.bids, me=self.seat, true_model=self._true, table=self.table
        ).move
        assert move is not None  # it is our turn
        return move


@dataclass
class LearningRecord:
    """Likelihood vectors of each opponent seat's observed choices in the current game."""

    likelihoods: dict[int, list[np.ndarray]] = field(default_factory=dict)


class ProbMaxnAgent(Agent):
    """Prob-max^n over {MT, mOT} models, with fixed equal weights or (``*_pl``) learned weights."""

    def __init__(
        self, player_type: str, *, eps: float = 0.1, seed: int = 0, gibbs_sweeps: int = 400
    ) -> None:
        super().__init__(player_type)
        if player_type not in PROB_TYPES:
            raise InvalidArgumentError("player_type", f"{player_type!r} is not a prob-max^n type")
        self.eps = eps
        self.learning = player_type.endswith("_pl")
        self._true = true_model(player_type)
        self._seed = seed
        self._sweeps = gibbs_sweeps
        self.weights = np.full((3, 2), 0.5)
        self.record = LearningRecord()
        self._hands_seen = 0

    def start_game(self, seat: int) -> None:
        """Reset the weights to equal and forget observed choices."""
        super().start_game(seat)
        self.weights = np.full((3, 2), 0.5)
        self.record = LearningRecord({p: [] for p in range(3) if p != seat})
        self._hands_seen = 0

    def _search(self, state: SpadesState) -> ProbMaxnResult:
        return probmaxn_search(
            state,
            self.bids,
            me=self.seat,
            true_model=self._true,
            weights=self.weights,
            eps=self.eps,
            table=self.table,
        )

    def choose(self, state: SpadesState) -> int:
        """The card maximising u_true."""
        move = self._search(state).move
        assert move is not None  # it is our turn
        return move

    def observe(self, state: SpadesState, card: int) -> None:
        """Record the likelihood vector of an opponent's choice (learning agents only)."""
        if self.learning:
            self.record.likelihoods[state.turn].append(self._search(state).choice_likelihood(card))

    def end_hand(self) -> None:
        """Learning agents replace each opponent's weights by its posterior mean."""
        self._hands_seen += 1
        if not self.learning:
            return
        for p, liks in self.record.likelihoods.items():
            if liks:
                post = gibbs_posterior(
                    np.array(liks),
                    1.0,
                    seed=self._seed * 1000 + self._hands_seen,
                    sweeps=self._sweeps,
                    burn_in=50,
                    chains=2,
                )
                self.weights[p] = post.mean / post.mean.sum()


def make_agent(player_type: str, *, eps: float = 0.1, seed: int = 0) -> Agent:
    """A fresh agent of ``player_type``."""
    check_type(player_type)
    if player_type in MAXN_TYPES:
        return MaxnAgent(player_type)
    if player_type in SOFT_TYPES:
        return SoftMaxnAgent(player_type)
    return ProbMaxnAgent(player_type, eps=eps, seed=seed)
