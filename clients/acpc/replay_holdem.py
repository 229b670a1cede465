"""Offline replay of limit hold'em logs (:mod:`oppmodel.clients.acpc.replay`): the hold'em parts.

Hold'em is too big to compile, so its opponent models live on the abstract game of the bundled
blueprint (:mod:`oppmodel.modeling.holdem.posterior`): an information set is a betting and the
card abstraction's view of a real hole pair on the real board. :class:`HoldemReplayGame` is the
replay's :class:`~oppmodel.clients.acpc.replay_games.ReplayGame` of that abstract game with the
two things that differ: a shown opponent's information set is its real cards' view
(:class:`~oppmodel.modeling.holdem.posterior.AbstractSpots`), not a deal of the game's sample,
and a decision whose cards stayed hidden is predicted by summing over every hole pair the
opponent may hold given what our seat knew then (our cards, the board dealt so far), each pair
weighted by how likely the model makes the opponent's earlier actions of the hand with it: the
same hole pairs the posterior's evidence sums over.

:class:`HoldemModels` is the model source: the model a hold'em session plays with (MBBR over the
blueprint's abstraction, :mod:`oppmodel.modeling.holdem.served`) in this process, fed each hand as
the playing agent feeds it, so its prior is refitted when MBBR refits it. Its model of an opponent
before it saw a hand is the prior mean (the blueprint's rows clipped to ``[epsilon, 1 -
epsilon]``), so the replay's ``prior`` column is the blueprint's own play as a predictor, kept
finite where the blueprint never takes an action.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from oppmodel.clients.acpc.replay_games import OpponentDecision, ReplayGame
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.abstraction import BOARD_SIZES
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.holdem.policy import live_holes
from oppmodel.modeling.holdem.posterior import AbstractSpots, HoldemPosterior, cards_of
from oppmodel.modeling.holdem.served import HoldemServed, HoldemServedModel, holdem_served
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Prior
from oppmodel.modeling.observation import LimitObservation

HOLDEM_PLAYERS = 2  # the hold'em posterior's (modeling/holdem/posterior.py)


def check_holdem_config(config: MBBRConfig, players: int) -> None:
    """InvalidArgumentError naming the field if the hold'em posterior cannot run ``config`` in a
    game of ``players``: it is a Dirichlet posterior with the informed prior, 2 players."""
    if players != HOLDEM_PLAYERS:
        raise InvalidArgumentError(
            "game",
            f"hold'em opponent models are {HOLDEM_PLAYERS}-player for now; this log has "
            f"{players} players",
        )
    if config.posterior != Posterior.DIRICHLET:
        raise InvalidArgumentError("--mbbr-posterior", "hold'em's posterior is 'dirichlet' only")
    if config.prior != Prior.INFORMED:
        raise InvalidArgumentError("--mbbr-prior", "hold'em's prior is 'informed' only")


class HoldemReplayGame(ReplayGame):
    """The replay's view of a hold'em game (the module's text)."""

    def __init__(self, spots: AbstractSpots) -> None:
        super().__init__(spots.game)
        self.spots = spots

    def _shown_view(self, obs: LimitObservation, round_: int, position: int) -> int:
        text = obs.hole[position]
        assert text is not None
        holes = np.array([cards_of(text)], dtype=np.int64)
        return int(self.spots.views(_board(obs), round_, holes)[0])

    def hidden_prediction(
        self,
        models: dict[int, np.ndarray],
        obs: LimitObservation,
        decisions: list[OpponentDecision],
        i: int,
    ) -> np.ndarray:
        """The action probabilities of ``decisions[i]`` as our seat could predict them then:
        the model's rows summed over the opponent's possible hole pairs, each weighted by the
        model's probability of its earlier actions in the hand."""
        dec = decisions[i]
        ours = obs.hole[obs.position]
        assert ours is not None
        board = _board(obs)[: BOARD_SIZES[dec.round]]
        holes = live_holes([*cards_of(ours), *board])
        model = models[dec.position]
        weight = np.ones(len(holes))
        for earlier in decisions[:i]:
            if earlier.position == dec.position:
                weight *= model[self._infosets(earlier, board, holes), earlier.action]
        probs = weight @ model[self._infosets(dec, board, holes)]
        return probs / probs.sum()

    def _infosets(
        self, dec: OpponentDecision, board: tuple[int, ...], holes: np.ndarray
    ) -> np.ndarray:
        views = self.spots.views(board, dec.round, holes)
        return int(self.game.tree.node_base[dec.node]) + views


def _board(obs: LimitObservation) -> tuple[int, ...]:
    return tuple(c for text in obs.board for c in cards_of(text))


class HoldemModels:
    """The model a hold'em session plays with (:meth:`HoldemServed.build_model`: ``HoldemMBBR``,
    the posterior of :mod:`~oppmodel.modeling.holdem.posterior`) as the replay's model source: fed
    each hand by the model's own ``observe``, as the service, the in-process agent and the match
    engine's agent feed it, so its posterior's prior is refitted (the tilt) when MBBR's solves
    refit it (every ``REFRESH`` hands from hand H on): the replay scores the model that plays."""

    def __init__(self, served: HoldemServed, config: MBBRConfig) -> None:
        """``config``: as :meth:`ServedGame.played_config` made it (the service's hold'em
        values)."""
        self.played = cast(HoldemServedModel, served.build_model(config))
        blueprint = served.blueprint
        prior = np.where(
            served.compiled.legal_mask,
            np.clip(blueprint, config.epsilon, 1.0 - config.epsilon),
            0.0,
        )
        self._prior = prior / prior.sum(axis=2, keepdims=True)
        self._seen = [False] * served.num_players  # per our position: a hand observed there

    @property
    def posterior(self) -> HoldemPosterior:
        return self.played.posterior

    def observe(self, observations: Sequence[LimitObservation]) -> None:
        """Feed each hand to the model (an update, and MBBR's solve with its refit when due)."""
        for obs in observations:
            self.played.observe(obs)
            self._seen[obs.position] = True

    def model(self, offset: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """The opponent's posterior mean (the prior mean before a hand was seen from that
        position), and the least concentration of its Dirichlet posterior."""
        p = (opponent_position - offset) % len(self._seen)
        model, spread = self.played.opponent_model(p, opponent_position)
        if not self._seen[p]:
            return self._prior[opponent_position].copy(), spread
        return model, spread

    def close(self) -> None:
        """Nothing to release."""


def holdem_replay_parts(short: str, config: MBBRConfig) -> tuple[HoldemReplayGame, HoldemModels]:
    """The replay game and model source of a bundled hold'em game (``holdem2p``), over its
    bundled blueprint's abstraction: the served game's model with ``config`` where it sets a
    field, the service's hold'em values where it leaves one at MBBRConfig's default
    (InvalidArgumentError if the posterior cannot run it)."""
    check_holdem_config(config, read_game_def(short).num_players)
    served = holdem_served(short)
    return HoldemReplayGame(served.spots), HoldemModels(served, served.played_config(config))
