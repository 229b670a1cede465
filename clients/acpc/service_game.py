"""The game's side of the ACPC service policy (:mod:`oppmodel.clients.acpc.service_policy`): the
session it opens and the fallback that plays without the service.

The session plays the compiled game in its own presentation, Kuhn as every other limit game: its
bundled short name ("kuhn3p", "leduc3p") or its rules' text; a finished hand is sent as the
dealer's MATCHSTATE line as it came, which the service reads against the same rules. The fallback
is MBBR's default strategy of the game: N1 in 3-player Kuhn (MBBR's own opening), the game's
solved strategy (``cfr``) otherwise; a prior strategy given replaces it (``prior-strategy``).
"""

from __future__ import annotations

from oppmodel.clients.acpc.agent import (
    HoldemStylePolicy,
    LimitStrategyPolicy,
    Policy,
    ProfilePolicy,
)
from oppmodel.clients.acpc.convert import session_game
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc import solved
from oppmodel.modeling.games.acpc.compiler import limit_game_of
from oppmodel.modeling.games.acpc.gamedef import GameDef, kuhn_unsupported
from oppmodel.modeling.games.acpc.strategy import parse_profile
from oppmodel.modeling.games.kuhn3p import equilibria, robust_profile
from oppmodel.modeling.games.kuhn_openspiel import kuhn_openspiel
from oppmodel.modeling.holdem.match import is_holdem
from oppmodel.modeling.holdem.served import game_short_name
from oppmodel.modeling.holdem.styles import holdem_policy

PRIOR_STRATEGY = "prior_strategy"  # the field a bad prior strategy's error names


class ServiceGame:
    """The session's game and the fallback of one ACPC game (module docstring).
    ``prior_strategy``: the text of a strategy file, the fallback's strategy."""

    def __init__(self, game: GameDef, seed: int, prior_strategy: str | None = None) -> None:
        self.game = game
        if is_holdem(game):  # too big to compile: the session models its blueprint's abstraction
            self._holdem(game, seed, prior_strategy)
            return
        limit = limit_game_of(game)
        self.session_game = session_game(limit)
        # 3-player Kuhn's sessions were "kuhn_poker(players=3)", which apply MBBRConfig's
        # defaults to unset fields; a limit game's session leaves change detection off unless
        # sent a hazard: sent every field, a Kuhn session runs the agent's config as before
        self.send_defaults = not kuhn_unsupported(game)
        self.fallback: Policy
        if equilibria(limit):  # compiled 3-player Kuhn: N1, drawn as the Kuhn policies draw
            profile = (
                robust_profile("N1")
                if prior_strategy is None
                else kuhn_openspiel(game.num_players).parse_profile(prior_strategy, PRIOR_STRATEGY)
            )
            self.fallback = ProfilePolicy(game, profile, seed)
            self.fallback_name = "n1"
        else:
            profile = (
                solved.default_profile(limit, "default_strategy")
                if prior_strategy is None
                else parse_profile(limit, prior_strategy, PRIOR_STRATEGY)
            )
            self.fallback = LimitStrategyPolicy(limit, profile, seed)
            self.fallback_name = "cfr"
        if prior_strategy is not None:
            self.fallback_name = "prior-strategy"

    def _holdem(self, game: GameDef, seed: int, prior_strategy: str | None) -> None:
        """Hold'em: the session by its bundled short name (its rules' text otherwise: the service
        names what it cannot model), the blueprint (``cfr``) as the fallback."""
        if prior_strategy is not None:
            raise InvalidArgumentError(PRIOR_STRATEGY, "hold'em's prior is its bundled blueprint")
        self.session_game = game_short_name(game) or game.to_text()
        self.send_defaults = False  # unset budget and change detection: hold'em's own
        self.fallback = HoldemStylePolicy(game, holdem_policy("cfr", game), seed)
        self.fallback_name = "cfr"
