"""Adaptive exploitable opponents: agents whose strategy changes during a match.

The panel's fixed styles (``oppmodel.modeling.play.panel``) are stationary, which is exactly what
MBBR's model assumes (Ganzfried et al. 2024, §3: each opponent plays one fixed behaviour strategy
per position). That paper's class-project field also held agents "that are potentially dynamic", so
the field experiment needs opponents that break that assumption. Each agent here is a plain rule on
the card's rank and the public betting, like the panel's, plus a state that moves with what the
agent has seen. They play n-player Kuhn (a compiled limit game whose rules are Kuhn's,
``gamedef.kuhn_unsupported``), where a bet is a raise into an unopened pot and a call facing one:

- ``switcher[:N]``: cycles through fixed styles (tight-passive, maniac, calling-station, bluffer),
  switching every N hands (default 250). A stationary model is always partly out of date.
- ``exploiter``: a frequency-based exploit of what it has seen of the other players, counted with a
  Laplace (Beta(1, 1)) prior over all opponents and positions together:
  f = P(an opponent folds to a bet), g = P(an opponent bets an unopened pot). It always bets and
  calls with the best card; it bets weaker cards into an unopened pot with probability f^(n-1) (its
  estimate that everybody folds), and facing a bet calls with the second-best card with probability
  g and with the third-best with probability g^2 (opponents who bet often bluff often); it never
  calls with the worst card, which cannot win a showdown.
- ``late-switcher``: a maniac until a hand drawn per match, uniformly from 1,000 to 2,000 with its
  seed, then tight-passive for good: one change of style at an unknown hand, the case MBBR's
  change detection (``oppmodel.modeling.mbbr.change``) is measured on.
- ``tilter``: plays a calm style (N1 in 3-player games, tight-passive otherwise) until its own
  chips over the last ``window`` hands (default 50) fall to ``-threshold`` (default 10) or below,
  then plays maniac for ``tilt`` hands (default 100) and calms down again.

Agents follow the match engine's protocol (``begin_match``, ``act``, ``end_hand``; see
``oppmodel.modeling.play.match``) and are built by factories ``factory(game, seed)``; every random
choice uses the agent's own ``numpy`` generator seeded by the factory argument, one uniform per
decision drawn as the fixed agents draw it (``match.limit_action``): same seed, same play.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError, NotFoundError
from oppmodel.modeling.games.acpc.betting import ACTION_LETTERS, CALL, FOLD, RAISE
from oppmodel.modeling.games.acpc.gamedef import kuhn_unsupported
from oppmodel.modeling.games.acpc.hand_rank import hand_strength
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.numerals import is_numeral
from oppmodel.modeling.observation import LimitObservation
from oppmodel.modeling.play.match import limit_action, require_game
from oppmodel.modeling.play.panel import named_profile

DEFAULT_CYCLE = ("tight-passive", "maniac", "calling-station", "bluffer")
DEFAULT_PERIOD = 250


class RuleAgent:
    """Shared plumbing: a name, a Kuhn game, a seeded generator, one uniform per decision."""

    def __init__(self, name: str, game: LimitGame, seed: int) -> None:
        problems = kuhn_unsupported(game.gamedef)
        if problems:
            raise InvalidArgumentError(
                "agents", f"{name}: adaptive agents play Kuhn only, not {game.name} ({problems[0]})"
            )
        self.name = name
        self.game = game
        self.rng = np.random.default_rng(seed)
        self.hands_played = 0
        # round-0 view -> the card's rank (0 = the lowest)
        self.rank = [game.deck.index(view) for view in game.view_strings[0]]

    def begin_match(self, game: LimitGame, seat: int, names: Sequence[str]) -> None:
        require_game(self.name, self.game, game)

    def act(self, position: int, view: int, betting: str) -> int:
        node = self.game.node(betting)
        row = self.row(position, node, view)
        return limit_action(self.game, node, row, self.rng.random())

    def row(self, position: int, node: int, view: int) -> np.ndarray:
        """(fold, call, raise) at ``node`` holding ``view`` right now: the bet probability's row."""
        q = self.bet_probability(position, self.rank[view], self.facing(node))
        return np.array([1.0 - q, q, 0.0]) if self.facing(node) else np.array([0.0, 1.0 - q, q])

    def facing(self, node: int) -> bool:
        """Whether a bet is to be called at ``node``."""
        return bool(self.game.tree.node_children[node, FOLD] >= 0)

    def bet_probability(self, position: int, card: int, facing: bool) -> float:
        """P(bet or call) with the card of rank ``card``; subclasses define it."""
        raise NotImplementedError

    def end_hand(self, obs: LimitObservation) -> None:
        self.hands_played += 1


class ProfileAgent(RuleAgent):
    """Plays the panel profile :meth:`current` names at every decision."""

    def __init__(self, name: str, game: LimitGame, seed: int, styles: Sequence[str]) -> None:
        super().__init__(name, game, seed)
        self._profiles = {style: named_profile(game, style) for style in styles}

    @property
    def current_style(self) -> str:
        """The panel name played now."""
        raise NotImplementedError

    def row(self, position: int, node: int, view: int) -> np.ndarray:
        base = int(self.game.tree.node_base[node])
        return self._profiles[self.current_style][position, base + view]


class SwitchingAgent(ProfileAgent):
    """Plays ``styles[(hands played // period) % len(styles)]`` (panel names)."""

    def __init__(
        self,
        name: str,
        game: LimitGame,
        seed: int,
        *,
        styles: Sequence[str] = DEFAULT_CYCLE,
        period: int = DEFAULT_PERIOD,
    ) -> None:
        if not isinstance(period, int) or isinstance(period, bool) or period < 1:
            raise InvalidArgumentError("period", f"must be a positive integer, got {period!r}")
        if not styles:
            raise InvalidArgumentError("styles", "needs at least one style")
        super().__init__(name, game, seed, styles)
        self.styles = tuple(styles)
        self.period = period

    @property
    def current_style(self) -> str:
        return self.styles[(self.hands_played // self.period) % len(self.styles)]


class LateSwitcher(ProfileAgent):
    """Plays ``before`` until hand ``switch_hand`` (drawn from its seed, uniform on
    [``earliest``, ``latest``]), then ``after`` (panel names)."""

    def __init__(
        self,
        name: str,
        game: LimitGame,
        seed: int,
        *,
        before: str = "maniac",
        after: str = "tight-passive",
        earliest: int = 1000,
        latest: int = 2000,
    ) -> None:
        if not (isinstance(earliest, int) and isinstance(latest, int) and 0 <= earliest <= latest):
            raise InvalidArgumentError(
                "latest", f"needs 0 <= earliest <= latest, got {earliest!r}, {latest!r}"
            )
        super().__init__(name, game, seed, (before, after))
        self.styles = (before, after)
        self.switch_hand = int(self.rng.integers(earliest, latest + 1))

    @property
    def current_style(self) -> str:
        return self.styles[self.hands_played >= self.switch_hand]


class FrequencyExploiter(RuleAgent):
    """Bluffs as often as opponents fold, calls as light as opponents bet (see module doc)."""

    def __init__(self, name: str, game: LimitGame, seed: int) -> None:
        super().__init__(name, game, seed)
        self.folds = 0  # opponents' passes when facing a bet
        self.calls = 0
        self.opens = 0  # opponents' bets into an unopened pot
        self.checks = 0

    @property
    def fold_rate(self) -> float:
        return (self.folds + 1) / (self.folds + self.calls + 2)

    @property
    def open_rate(self) -> float:
        return (self.opens + 1) / (self.opens + self.checks + 2)

    def bet_probability(self, position: int, card: int, facing: bool) -> float:
        top = len(self.game.deck) - 1
        if card == top:
            return 1.0
        if not facing:
            return self.fold_rate ** (self.game.num_players - 1)
        if card == top - 1:
            return self.open_rate
        if card == top - 2 and card > 0:
            return self.open_rate**2
        return 0.0

    def end_hand(self, obs: LimitObservation) -> None:
        for player, facing, action in moves(self.game, obs.betting):
            if player != obs.position:
                if facing:
                    self.calls += action == CALL
                    self.folds += action == FOLD
                else:
                    self.opens += action == RAISE
                    self.checks += action == CALL
        super().end_hand(obs)


class TiltingAgent(ProfileAgent):
    """Calm until it loses ``threshold`` chips over ``window`` hands, then a maniac for a while."""

    def __init__(
        self,
        name: str,
        game: LimitGame,
        seed: int,
        *,
        window: int = 50,
        threshold: float = 10.0,
        tilt: int = 100,
    ) -> None:
        for field, value in (("window", window), ("tilt", tilt)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidArgumentError(field, f"must be a positive integer, got {value!r}")
        if not threshold > 0:
            raise InvalidArgumentError("threshold", f"must be positive, got {threshold!r}")
        self.calm = "n1" if game.num_players == 3 else "tight-passive"
        super().__init__(name, game, seed, (self.calm, "maniac"))
        self.window, self.threshold, self.tilt = window, float(threshold), tilt
        self._recent: deque[float] = deque(maxlen=window)
        self.tilt_left = 0  # hands of maniac play still to come

    @property
    def current_style(self) -> str:
        return "maniac" if self.tilt_left > 0 else self.calm

    def end_hand(self, obs: LimitObservation) -> None:
        self._recent.append(own_payoff(self.game, obs))
        if self.tilt_left > 0:
            self.tilt_left -= 1
        elif sum(self._recent) <= -self.threshold:
            self.tilt_left = self.tilt
            self._recent.clear()
        super().end_hand(obs)


def moves(game: LimitGame, betting: str) -> list[tuple[int, bool, int]]:
    """(player, whether a bet was to be called, action) of every action of ``betting``."""
    tree, node, out = game.tree, 0, []
    for letter in betting.replace("/", ""):
        action = ACTION_LETTERS.index(letter)
        out.append((int(tree.node_player[node]), bool(tree.node_children[node, FOLD] >= 0), action))
        node = int(tree.node_children[node, action])
    return out


def own_payoff(game: LimitGame, obs: LimitObservation) -> float:
    """Chips the observing seat won in the hand, from what it saw alone.

    A folded seat loses what it put in; a lone survivor takes the pot; at a showdown every live
    hand is visible, so the seat knows whether its hand is the best (an equal best splits).
    """
    tree, me = game.tree, obs.position
    t = int(tree.node_terminal[game.node(obs.betting)])
    spent, pot = float(tree.terminal_spent[t, me]), float(tree.terminal_pot[t])
    folded = {player for player, _, action in moves(game, obs.betting) if action == FOLD}
    if me in folded:
        return -spent
    live = [p for p in range(game.num_players) if p not in folded]
    board = "".join(obs.board)
    strength = {p: hand_strength(_cards(f"{obs.hole[p]}{board}")) for p in live if len(live) > 1}
    best = max(strength.values(), default=0)
    winners = [p for p in live if strength.get(p, best) == best]
    return pot / len(winners) - spent if me in winners else -spent


def _cards(text: str) -> list[str]:
    return [text[k : k + 2] for k in range(0, len(text), 2)]


AgentBuilder = Callable[[LimitGame, int], RuleAgent]


def adaptive_names() -> list[str]:
    """Names of the adaptive agents (``switcher`` also takes ``:N``, the hands between switches)."""
    return ["switcher", "exploiter", "tilter", "late-switcher"]


def is_adaptive(name: str) -> bool:
    """Whether ``name`` names an adaptive agent (with or without parameters)."""
    return name.lower().split(":", 1)[0] in adaptive_names()


def adaptive_factory(name: str) -> AgentBuilder:
    """A factory ``(game, seed) -> agent`` for an adaptive agent name; NotFoundError otherwise."""
    key = name.lower()
    base, _, arg = key.partition(":")
    if base == "switcher":
        period = DEFAULT_PERIOD
        if arg:
            if not is_numeral(arg) or int(arg) < 1:
                raise NotFoundError(f"agent {name!r}: the switch period must be a positive integer")
            period = int(arg)
        return lambda game, seed: SwitchingAgent(name, game, seed, period=period)
    if base == "exploiter" and not arg:
        return lambda game, seed: FrequencyExploiter(name, game, seed)
    if base == "tilter" and not arg:
        return lambda game, seed: TiltingAgent(name, game, seed)
    if base == "late-switcher" and not arg:
        return lambda game, seed: LateSwitcher(name, game, seed)
    raise NotFoundError(f"unknown adaptive agent {name!r}; known: {', '.join(adaptive_names())}")
