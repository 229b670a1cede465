"""The game's side of the ACPC service policy (:mod:`oppmodel.clients.acpc.service_policy`): the
session it opens, how a finished hand is recorded, and the fallback that plays without the
service.

In Kuhn games the session is "kuhn_poker(players=n)" and a hand its Kuhn observation
(:func:`oppmodel.clients.acpc.convert.seat_observation`); the fallback is N1 in 3-player Kuhn
(MBBR's own opening), uniform play otherwise. In any other limit game (Leduc) the session plays the
game's rules (its bundled short name, or its rules' text), a hand is its ``LimitObservation`` (sent
as its MATCHSTATE line) and the fallback is the game's solved strategy (``cfr``). A prior strategy
given replaces the fallback's strategy (``prior-strategy``).
"""

from __future__ import annotations

import numpy as np

from oppmodel.clients.acpc.agent import LimitStrategyPolicy, Policy, ProfilePolicy, SeatHand
from oppmodel.clients.acpc.convert import kuhn_for, seat_observation, session_game
from oppmodel.modeling.games.acpc.compiler import limit_game_of
from oppmodel.modeling.games.acpc.gamedef import GameDef, kuhn_unsupported
from oppmodel.modeling.games.acpc.strategy import parse_profile
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.games.kuhn_openspiel import kuhn_openspiel
from oppmodel.modeling.mbbr import priors
from oppmodel.modeling.observation import HandObservation, LimitObservation
from oppmodel.modeling.strategy import uniform_profile

PRIOR_STRATEGY = "prior_strategy"  # the field a bad prior strategy's error names


def default_profile(kuhn: KuhnGame) -> np.ndarray:
    """The Kuhn fallback: N1 in 3-player Kuhn (MBBR's own default strategy), uniform otherwise."""
    return robust_profile("N1") if kuhn.num_players == 3 else uniform_profile(kuhn)


def fallback_name(kuhn: KuhnGame) -> str:
    """The Kuhn fallback's name in messages and tallies."""
    return "n1" if kuhn.num_players == 3 else "uniform"


class ServiceGame:
    """The session's game, the record of a hand and the fallback of one ACPC game (module
    docstring). ``prior_strategy``: the text of a strategy file, the fallback's strategy."""

    def __init__(self, game: GameDef, seed: int, prior_strategy: str | None = None) -> None:
        self.game = game
        self.kuhn = None if kuhn_unsupported(game) else kuhn_for(game)
        self.fallback: Policy
        if self.kuhn is not None:
            n = game.num_players
            self.session_game = f"kuhn_poker(players={n})"  # OpenSpiel's Kuhn presentation
            profile = (
                default_profile(self.kuhn)
                if prior_strategy is None
                else kuhn_openspiel(n).parse_profile(prior_strategy, PRIOR_STRATEGY)
            )
            self.fallback = ProfilePolicy(game, profile, seed)
            self.fallback_name = fallback_name(self.kuhn)
        else:
            limit = limit_game_of(game)
            self.session_game = session_game(limit)
            profile = (
                priors.default_profile(limit, "default_strategy")
                if prior_strategy is None
                else parse_profile(limit, prior_strategy, PRIOR_STRATEGY)
            )
            self.fallback = LimitStrategyPolicy(limit, profile, seed)
            self.fallback_name = "cfr"
        if prior_strategy is not None:
            self.fallback_name = "prior-strategy"

    def observation(self, hand: SeatHand) -> HandObservation | LimitObservation:
        """What this seat saw of a finished hand, as the session takes it."""
        if self.kuhn is None:
            return hand.limit_observation()
        return seat_observation(
            self.game, position=hand.position, betting=hand.betting, hole=hand.hole
        )
