"""The exploitable styles in hold'em, defined by hand strength as the Kuhn and Leduc styles are
defined by card rank (:mod:`oppmodel.modeling.play.panel`: the same rules, the same names).

A style's rule answers, for a hand class (the worst, middle, the nuts) and whether a bet is to be
called, the probabilities of raising and calling (:func:`~oppmodel.modeling.play.panel.rule_row`).
In Kuhn and Leduc a hand is the nuts when no opponent's cards beat it; in hold'em that almost never
happens, so the classes are bands of HS, the share of one opponent's hands ours beats now
(:mod:`oppmodel.modeling.holdem.strength`, spread over [0, 1] on every street): the *nuts* are
HS >= 0.75 (about the top quarter of hands), the *worst* HS < 0.30, the rest *middle*. So:

- ``always-bet`` (``always-raise``): bets or raises whenever it may, else calls.
- ``calling-station`` (``always-call``): checks or calls, whatever it holds.
- ``tight-passive``: never bets; facing a bet, calls with the top quarter, folds the rest.
- ``maniac``: bets or raises with probability 0.9 at every decision, else checks or folds.
- ``bluffer[:B]``: bets or raises with the top quarter, bets the bottom 30% into an unopened pot
  with probability B (default 0.75), checks the rest; facing a bet folds all but the top quarter.
- ``uniform``: every legal action equally likely.
- ``cfr``: the game's bundled blueprint (2- and 3-player hold'em's: ``HOLDEM_BLUEPRINTS``).
- ``FILE.json``: a blueprint, a strategy file ``oppmodel solve holdem2p`` wrote
  (:class:`~oppmodel.modeling.holdem.blueprint.Blueprint`).
- ``STYLE@S``: STYLE at a share S of its decisions and the blueprint (``cfr``) at the rest, mixed
  per decision (:class:`Diluted`; the competent field of :mod:`oppmodel.modeling.play.diluted`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from oppmodel.modeling.errors import NotFoundError
from oppmodel.modeling.games.acpc.betting import RAISE
from oppmodel.modeling.games.acpc.bundled import GAMES_FOLDER, HOLDEM_BLUEPRINTS
from oppmodel.modeling.games.acpc.gamedef import GameDef, read_game_def
from oppmodel.modeling.games.acpc.strategy import is_strategy_file
from oppmodel.modeling.holdem.blueprint import Blueprint
from oppmodel.modeling.holdem.match import HoldemGame, PolicyAgent
from oppmodel.modeling.holdem.policy import AlwaysCall, HoldemPolicy, Spot, Uniform
from oppmodel.modeling.holdem.strength import hand_strength_share
from oppmodel.modeling.play.diluted import is_diluted, parse_diluted
from oppmodel.modeling.play.panel import (
    ALIASES,
    CFR,
    EXPLOITABLE_RULES,
    MIDDLE,
    NUTS,
    WORST,
    Rule,
    rule_row,
    style_rule,
)

STRONG = 0.75  # HS from which a hand is a style's nuts
WEAK = 0.30  # HS below which it is its worst
CLASSES = (WORST, MIDDLE, NUTS)
CALLING_STATION = "calling-station"
HOLDEM_ALIASES = {**ALIASES, "always-call": CALLING_STATION}


def strength_class(hs: np.ndarray) -> np.ndarray:
    """The style hand class (WORST, MIDDLE, NUTS) of each HS."""
    return np.where(hs >= STRONG, NUTS, np.where(hs < WEAK, WORST, MIDDLE))


class StylePolicy:
    """A style's rule played on the HS classes of the holes asked about."""

    def __init__(self, name: str, rule: Rule) -> None:
        self.name = name
        self.rule = rule

    def probabilities(self, spot: Spot, holes: np.ndarray) -> np.ndarray:
        facing, may_raise = spot.facing_bet(), bool(spot.legal()[RAISE])
        table = np.array([rule_row(self.rule, c, facing, may_raise) for c in CLASSES])
        if (table == table[0]).all():  # the hand does not matter here: no strength needed
            return np.tile(table[0], (len(holes), 1))
        return table[strength_class(hand_strength_share(holes, spot.board))]


class Diluted:
    """``style`` at a share of its decisions and ``base`` at the rest: per hand and spot, the
    mixture share * style + (1 - share) * base of their probabilities."""

    def __init__(self, name: str, style: HoldemPolicy, base: HoldemPolicy, share: float) -> None:
        self.name = name
        self.style = style
        self.base = base
        self.share = share

    def probabilities(self, spot: Spot, holes: np.ndarray) -> np.ndarray:
        own = self.style.probabilities(spot, holes)
        return self.share * own + (1.0 - self.share) * self.base.probabilities(spot, holes)


def style_names() -> list[str]:
    """The names :func:`holdem_policy` knows (``bluffer`` also takes ``:B``, any style ``@S``)."""
    return [CFR, "uniform", "always-call", *EXPLOITABLE_RULES]


def holdem_policy(name: str, game: GameDef) -> HoldemPolicy:
    """The hold'em policy of a style's name (case-insensitive; see the module's text);
    NotFoundError naming the known ones."""
    if is_strategy_file(name):
        return Blueprint.from_file(name, name=name)
    if is_diluted(name):
        style, share = parse_diluted(name)
        return Diluted(name.lower(), holdem_policy(style, game), blueprint(game), share)
    key = HOLDEM_ALIASES.get(name.lower(), name.lower())
    if key == "uniform":
        return Uniform()
    if key == CALLING_STATION:
        return AlwaysCall()
    if key == CFR:
        return blueprint(game)
    rule = style_rule(key)
    if rule is None:
        raise NotFoundError(
            f"unknown hold'em agent {name!r}; known: {', '.join(style_names())} (STYLE@S)"
        )
    return StylePolicy(key, rule)


def blueprint(game: GameDef) -> HoldemPolicy:
    """The game's blueprint strategy (``cfr``), the base of diluted styles: the bundled one of
    a game with the rules of a hold'em game that has one (``HOLDEM_BLUEPRINTS``), else
    NotFoundError saying how to solve one (a blueprint file plays as an agent)."""
    for short in HOLDEM_BLUEPRINTS:
        if read_game_def(short) == game:
            return bundled_blueprint(short)
    source = game.source or "GAME_FILE"
    raise NotFoundError(
        f"no hold'em blueprint for {source} yet: STYLE@S and cfr need one; "
        f"`oppmodel solve {source} --out blueprint.json` writes one, which plays as the agent "
        "blueprint.json"
    )


@functools.cache
def bundled_blueprint(short: str) -> Blueprint:
    """The blueprint bundled for a hold'em game's short name (read once per process)."""
    return Blueprint.from_file(GAMES_FOLDER / HOLDEM_BLUEPRINTS[short], name=CFR)


def policy_factory(name: str, game: GameDef) -> Callable[[HoldemGame, int], PolicyAgent]:
    """A factory ``(game, seed) -> agent`` of the match engine playing the policy ``name``
    (NotFoundError now for an unknown name)."""
    policy = holdem_policy(name, game)

    def build(game: HoldemGame, seed: int) -> PolicyAgent:
        return PolicyAgent(name, policy, seed)

    return build
