"""Named strategies: the equilibria, uniform play, and simple exploitable opponents, for any
compiled limit game (:class:`LimitGame`: Kuhn from its game file, Leduc, ...).

The exploitable styles are rules on the strength of the hand and on whether a bet is to be
called, so they are defined for every game and player count. A hand is the *nuts* when no
opponent's hole cards (consistent with what the player sees) make a better hand now, the *worst*
when none makes a worse one, else *middle*. In Kuhn that is the top card and the bottom card; in
Leduc's first round the top and bottom ranks, in the second a pair with the board is the nuts
(an ace on a king board is not: an opponent may hold the other king). Names (case-insensitive)
are what the CLI and tests use:

- ``n1``, ``n2``, ``n3``: the robust 3p Kuhn equilibria (``kuhn3p.equilibria``); ``uniform``: every
  legal action equally likely; ``cfr`` (limit games): the game's solved strategy (bundled,
  cached, or solved on first use: ``games/acpc/solved.py``).
- ``always-bet`` (alias ``always-raise``): bets or raises whenever it may, else calls.
- ``calling-station``: never bets or raises, always checks or calls.
- ``tight-passive``: never bets or raises; facing a bet, calls with the nuts, folds the rest.
- ``maniac``: bets or raises with probability 0.9 at every decision, else checks or folds.
- ``bluffer[:B]``: bets or raises with the nuts, bluffs the worst hand into an unopened pot with
  probability B (default 0.75), checks the rest; facing a bet it folds all but the nuts.

A style's rule gives, for a hand class and whether a bet is faced, the probabilities
``(raise, call)``; the rest is fold (check when nothing is to be called). Where a raise is not
allowed (Kuhn facing a bet, a round at its raise cap) its probability goes to the call.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import numpy as np

from oppmodel.modeling.errors import NotFoundError
from oppmodel.modeling.games.acpc import strategy as limit_strategy
from oppmodel.modeling.games.acpc.betting import FOLD, RAISE
from oppmodel.modeling.games.acpc.hand_rank import hand_strength
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.solved import solved_profile
from oppmodel.modeling.games.kuhn3p import equilibria

WORST, MIDDLE, NUTS = 0, 1, 2  # hand classes

# rule(hand class, facing a bet) -> (P(bet or raise), P(check or call)); the rest folds
Rule = Callable[[int, bool], tuple[float, float]]


def _bluffer(bluff: float) -> Rule:
    def rule(hand: int, facing_bet: bool) -> tuple[float, float]:
        if hand == NUTS:
            return (1.0, 0.0)
        return (bluff if hand == WORST and not facing_bet else 0.0, 0.0)

    return rule


EXPLOITABLE_RULES: dict[str, Rule] = {
    "always-bet": lambda hand, facing_bet: (1.0, 0.0),
    "calling-station": lambda hand, facing_bet: (0.0, 1.0),
    "tight-passive": lambda hand, facing_bet: (
        (0.0, 1.0) if hand == NUTS or not facing_bet else (0.0, 0.0)
    ),
    "maniac": lambda hand, facing_bet: (0.9, 0.0),
    "bluffer": _bluffer(0.75),
}
ALIASES = {"always-raise": "always-bet"}
EQUILIBRIUM_NAMES = ("n1", "n2", "n3")
CFR = "cfr"


def profile_from_rule(game: LimitGame, rule: Rule) -> np.ndarray:
    """The profile playing ``rule`` in every position."""
    profile = limit_strategy.uniform_profile(game)
    legal = game.legal_mask
    classes = hand_classes(game)
    for p in range(game.num_players):
        for i in game.infosets(p):
            node = int(game.infoset_node[p][i])
            hand = int(classes[game.tree.node_round[node]][game.infoset_view[p][i]])
            profile[p, i] = rule_row(rule, hand, bool(legal[p, i, FOLD]), bool(legal[p, i, RAISE]))
    return limit_strategy.validate_profile(game, profile)


def rule_row(rule: Rule, hand: int, facing_bet: bool, may_raise: bool) -> list[float]:
    """(fold, call, raise) of ``rule`` for a hand class: the rest of P(raise) + P(call) folds
    facing a bet and checks otherwise; a raise not allowed goes to the call."""
    raise_, call = rule(hand, facing_bet)
    if facing_bet:
        fold = 1.0 - (raise_ + call)
        return [fold, call, raise_] if may_raise else [fold, call + raise_, 0.0]
    return [0.0, 1.0 - raise_, raise_] if may_raise else [0.0, 1.0, 0.0]


@functools.cache
def hand_classes(game: LimitGame) -> tuple[np.ndarray, ...]:
    """Per round, the hand class (WORST, MIDDLE, NUTS) of every view (hole + board so far).

    A view is the nuts when its hand (hole and board cards, ranked as at a showdown) is at least
    as strong as every hand an opponent could hold with cards the player does not see, the worst
    when it is at most as strong as every such hand.
    """
    holes = game.gamedef.num_hole_cards
    out = []
    for views in game.view_strings:
        classes = np.empty(len(views), dtype=np.int64)
        for w, text in enumerate(views):
            cards = _split_cards(text)
            hole, board = cards[:holes], cards[holes:]
            rest = [c for c in game.deck if c not in cards]
            ours = hand_strength(hole + board)
            theirs = [
                hand_strength([*other, *board]) for other in itertools.combinations(rest, holes)
            ]
            classes[w] = NUTS if ours >= max(theirs) else WORST if ours <= min(theirs) else MIDDLE
        classes.setflags(write=False)
        out.append(classes)
    return tuple(out)


def _split_cards(view: str) -> list[str]:
    """The cards of a view string ("Ks/Qh" -> ["Ks", "Qh"])."""
    text = view.replace("/", "")
    return [text[k : k + 2] for k in range(0, len(text), 2)]


def panel_names(game: LimitGame | None = None) -> list[str]:
    """Every fixed-strategy name the panel knows (``bluffer`` also takes ``:B``); for a game,
    the names it has (the equilibria N1-N3 are 3-player Kuhn's own), for none every name."""
    equilibrium = list(EQUILIBRIUM_NAMES) if game is None or equilibria(game) else []
    return [*equilibrium, CFR, "uniform", *EXPLOITABLE_RULES]


def named_profile(game: LimitGame, name: str) -> np.ndarray:
    """The profile for a panel name; N1-N3 exist in 3-player Kuhn only, ``cfr`` in every game
    (its solved strategy)."""
    key = ALIASES.get(name.lower(), name.lower())
    family = equilibria(game)
    if key in family:
        return family[key]
    if key == CFR:
        return bundled_profile(game)
    if key == "uniform":
        return limit_strategy.uniform_profile(game)
    rule = style_rule(name)
    if rule is not None:
        return profile_from_rule(game, rule)
    raise NotFoundError(
        f"unknown strategy {name!r} for {game.name}; known: {', '.join(panel_names(game))}"
    )


def style_rule(name: str) -> Rule | None:
    """The rule of an exploitable style's name (an alias, ``bluffer:B``), None for any other
    name; NotFoundError for a bluff probability outside [0, 1]."""
    key = ALIASES.get(name.lower(), name.lower())
    if key.startswith("bluffer:"):
        try:
            bluff = float(key.split(":", 1)[1])
        except ValueError:
            bluff = float("nan")
        if not 0.0 <= bluff <= 1.0:
            raise NotFoundError(f"agent {name!r}: the bluff probability must be in [0, 1]")
        return _bluffer(bluff)
    return EXPLOITABLE_RULES.get(key)


def bundled_profile(game: LimitGame) -> np.ndarray:
    """The game's solved strategy (``solved.solved_profile``: bundled, cached or solved now):
    the ``cfr`` agent's and the base of diluted styles."""
    return solved_profile(game).copy()
