"""MBBR as a player of the match engine, in any compiled limit game (Kuhn from its game file,
Leduc, ...): :class:`MBBRAgent`.

At each decision the agent asks its model for the probabilities of its information set
(``MBBRModel.action_probabilities``: the default strategy for the first H hands, then the
configured best response, as far as its safety budget allows; the response is solved only for the
deals of our hole cards, once per update) and draws fold, call or raise as the fixed agents do
(:func:`oppmodel.modeling.play.match.limit_action`); every finished hand goes to the model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import LimitObservation
from oppmodel.modeling.play.match import AgentFactory, limit_action, require_game
from oppmodel.modeling.population import Population


class MBBRAgent:
    """MBBR (Ganzfried et al. 2024) as a match-engine agent, drawing actions with its seeded rng."""

    def __init__(
        self,
        game: LimitGame,
        config: MBBRConfig,
        *,
        seed: int,
        name: str = "mbbr",
        default_strategy: np.ndarray | None = None,
        prior_mean: np.ndarray | None = None,
        population: Population | None = None,
    ) -> None:
        self.name = name
        self.game = game
        self.model = build_model(
            game,
            config,
            default_strategy=default_strategy,
            prior_mean=prior_mean,
            population=population,
        )
        self.rng = np.random.default_rng(seed)

    def begin_match(self, game: LimitGame, seat: int, names: Sequence[str]) -> None:
        require_game(self.name, self.game, game)

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
    population: Population | None = None,
) -> AgentFactory:
    """A factory of fresh :class:`MBBRAgent`; the match seed replaces ``config.seed``.

    The model's samples are seeded with the match seed and the action sampling with a separate
    stream derived from it, so every match of a duplicate series draws its own samples.
    """
    config.validate()

    def build(game: LimitGame, seed: int) -> MBBRAgent:
        return MBBRAgent(
            game,
            dataclasses.replace(config, seed=seed),
            seed=int(np.random.SeedSequence([seed, 1]).generate_state(1)[0]),
            name=name,
            default_strategy=default_strategy,
            prior_mean=prior_mean,
            population=population,
        )

    return build
