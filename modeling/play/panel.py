"""Named strategies: the equilibria, uniform play, and simple exploitable opponents.

The exploitable styles are rules on the card's rank and on whether a bet is outstanding, so they are
defined for every player count. Names (case-insensitive) are what the CLI and tests use:

- ``n1``, ``n2``, ``n3``: the robust 3p equilibria (see ``kuhn3p``); ``uniform``: 1/2 everywhere.
- ``always-bet``: bets every unopened pot and calls every bet.
- ``calling-station``: never bets, always calls.
- ``tight-passive``: never bets, calls only with the best card.
- ``maniac``: bets unopened pots and calls bets with probability 0.9.
- ``bluffer[:B]``: bets the best card, bluffs the worst card with probability B (default 0.75),
  checks the rest; calls only with the best card.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from oppmodel.modeling.errors import NotFoundError
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.strategy import uniform_profile

# rule(card, num_cards, facing_bet) -> P(bet or call)
Rule = Callable[[int, int, bool], float]


def profile_from_rule(game: KuhnGame, rule: Rule) -> np.ndarray:
    """The profile playing ``rule`` in every position."""
    profile = uniform_profile(game)
    for node, history in enumerate(game.histories):
        p = int(game.node_player[node])
        if p < 0:
            continue
        for card in range(game.num_cards):
            q = float(rule(card, game.num_cards, "b" in history))
            profile[p, game.infoset_of[node, card]] = [1.0 - q, q]
    return profile


def _bluffer(bluff: float) -> Rule:
    def rule(card: int, num_cards: int, facing_bet: bool) -> float:
        top = card == num_cards - 1
        if facing_bet:
            return 1.0 if top else 0.0
        return 1.0 if top else (bluff if card == 0 else 0.0)

    return rule


EXPLOITABLE_RULES: dict[str, Rule] = {
    "always-bet": lambda card, num_cards, facing_bet: 1.0,
    "calling-station": lambda card, num_cards, facing_bet: 1.0 if facing_bet else 0.0,
    "tight-passive": lambda card, num_cards, facing_bet: (
        1.0 if facing_bet and card == num_cards - 1 else 0.0
    ),
    "maniac": lambda card, num_cards, facing_bet: 0.9,
    "bluffer": _bluffer(0.75),
}
EQUILIBRIUM_NAMES = ("n1", "n2", "n3")


def panel_names() -> list[str]:
    """Every fixed-strategy name the panel knows (``bluffer`` also takes ``:B``)."""
    return [*EQUILIBRIUM_NAMES, "uniform", *EXPLOITABLE_RULES]


def named_profile(game: KuhnGame, name: str) -> np.ndarray:
    """The profile for a panel name; equilibria exist for 3 players only."""
    key = name.lower()
    if key in EQUILIBRIUM_NAMES and game.num_players == 3:
        return robust_profile(key)
    if key == "uniform":
        return uniform_profile(game)
    if key.startswith("bluffer:"):
        try:
            bluff = float(key.split(":", 1)[1])
        except ValueError:
            bluff = float("nan")
        if not 0.0 <= bluff <= 1.0:
            raise NotFoundError(f"agent {name!r}: the bluff probability must be in [0, 1]")
        return profile_from_rule(game, _bluffer(bluff))
    if key in EXPLOITABLE_RULES:
        return profile_from_rule(game, EXPLOITABLE_RULES[key])
    raise NotFoundError(
        f"unknown strategy {name!r} for {game.name}; known: {', '.join(panel_names())}"
    )
