"""Agents for the match engine built on the modeling core: MBBR as a player, in Kuhn
(:class:`MBBRAgent`) and in any compiled limit game such as Leduc (:class:`LimitMBBRAgent`).

:class:`MBBRAgent` plays what its model's ``policy`` says (the default strategy for the first H
hands, then the configured best response, as far as its safety budget allows) and feeds every
finished hand to the model. A policy changes only when the model observed a hand (the response of
the position it sat in, and with a safety budget the share of every position's response), so the
agent caches one strategy per position keyed by the hands observed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.limit_model import build_limit_model
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import HandObservation, LimitObservation
from oppmodel.modeling.play.match import AgentFactory, limit_action


class MBBRAgent:
    """MBBR (Ganzfried et al. 2024) as a match-engine agent, drawing actions with its seeded rng."""

    def __init__(
        self,
        game: KuhnGame,
        config: MBBRConfig,
        *,
        seed: int,
        name: str = "mbbr",
        default_strategy: np.ndarray | None = None,
        prior_mean: np.ndarray | None = None,
    ) -> None:
        self.name = name
        self.game = game
        self.model = build_model(
            game, config, default_strategy=default_strategy, prior_mean=prior_mean
        )
        self.rng = np.random.default_rng(seed)
        self._cache: dict[int, tuple[int, np.ndarray]] = {}

    def begin_match(self, game: KuhnGame, seat: int, names: Sequence[str]) -> None:
        if game is not self.game:
            raise InvalidArgumentError("game", f"agent {self.name} was built for {self.game.name}")

    def policy(self, position: int) -> np.ndarray:
        """The strategy (num_infosets, 2) played in ``position`` now (cached; do not modify)."""
        hands = self.model.hands_observed
        cached = self._cache.get(position)
        if cached is None or cached[0] != hands:
            cached = (hands, self.model.policy(position))
            self._cache[position] = cached
        return cached[1]

    def act(self, position: int, card: int, history: str) -> int:
        infoset = self.game.infoset_of[self.game.node(history), card]
        return int(self.rng.random() < self.policy(position)[infoset, 1])

    def end_hand(self, obs: HandObservation) -> None:
        self.model.observe(obs)


class LimitMBBRAgent:
    """MBBR in a compiled limit game (Leduc): at each decision it asks the model for the
    probabilities of its information set (``LimitModel.action_probabilities`` solves only the
    deals of our hole cards, once per update) and draws fold, call or raise as the fixed agents
    do (:func:`oppmodel.modeling.play.match.limit_action`)."""

    def __init__(
        self,
        game: LimitGame,
        config: MBBRConfig,
        *,
        seed: int,
        name: str = "mbbr",
        default_strategy: np.ndarray | None = None,
        prior_mean: np.ndarray | None = None,
    ) -> None:
        self.name = name
        self.game = game
        self.model = build_limit_model(
            game, config, default_strategy=default_strategy, prior_mean=prior_mean
        )
        self.rng = np.random.default_rng(seed)

    def begin_match(self, game: LimitGame, seat: int, names: Sequence[str]) -> None:
        if game is not self.game:
            raise InvalidArgumentError("game", f"agent {self.name} was built for {self.game.name}")

    def act(self, position: int, view: int, betting: str) -> int:
        node = self.game.node(betting)
        infoset = int(self.game.tree.node_base[node]) + view
        row = self.model.action_probabilities(position, infoset)
        return limit_action(self.game, node, row, self.rng.random())

    def end_hand(self, obs: LimitObservation) -> None:
        self.model.observe(obs)


def mbbr_factory(
    config: MBBRConfig,
    *,
    name: str = "mbbr",
    default_strategy: np.ndarray | None = None,
    prior_mean: np.ndarray | None = None,
) -> AgentFactory:
    """A factory of fresh :class:`MBBRAgent`; the match seed replaces ``config.seed``.

    The model's samples are seeded with the match seed and the action sampling with a separate
    stream derived from it, so every match of a duplicate series draws its own samples.
    """
    config.validate()

    def build(game: KuhnGame | LimitGame, seed: int) -> MBBRAgent | LimitMBBRAgent:
        agent = LimitMBBRAgent if isinstance(game, LimitGame) else MBBRAgent
        return agent(
            game,  # type: ignore[arg-type]  # each class takes its own kind of game
            dataclasses.replace(config, seed=seed),
            seed=int(np.random.SeedSequence([seed, 1]).generate_state(1)[0]),
            name=name,
            default_strategy=default_strategy,
            prior_mean=prior_mean,
        )

    return build
