"""Adaptive exploitable opponents: agents whose strategy changes during a match.

The panel's fixed styles (``oppmodel.modeling.play.panel``) are stationary, which is exactly what
MBBR's model assumes (Ganzfried et al. 2024, §3: each opponent plays one fixed behaviour strategy
per position). That paper's class-project field also held agents "that are potentially dynamic", so
the field experiment needs opponents that break that assumption. Each agent here is a plain rule on
the card's rank and the public betting, like the panel's, plus a state that moves with what the
agent has seen:

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
choice uses the agent's own ``numpy`` generator seeded by the factory argument: same seed, same
play.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError, NotFoundError
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.numerals import is_numeral
from oppmodel.modeling.observation import HandObservation
from oppmodel.modeling.play.panel import named_profile

DEFAULT_CYCLE = ("tight-passive", "maniac", "calling-station", "bluffer")
DEFAULT_PERIOD = 250


class RuleAgent:
    """Shared plumbing: a name, a seeded generator, one uniform per decision."""

    def __init__(self, name: str, game: KuhnGame, seed: int) -> None:
        self.name = name
        self.game = game
        self.rng = np.random.default_rng(seed)
        self.hands_played = 0

    def begin_match(self, game: KuhnGame, seat: int, names: Sequence[str]) -> None:
        if game is not self.game:
            raise InvalidArgumentError("game", f"agent {self.name} was built for {self.game.name}")

    def act(self, position: int, card: int, history: str) -> int:
        return int(self.rng.random() < self.bet_probability(position, card, history))

    def bet_probability(self, position: int, card: int, history: str) -> float:
        """P(bet or call) right now; subclasses define it."""
        raise NotImplementedError

    def end_hand(self, obs: HandObservation) -> None:
        self.hands_played += 1


class SwitchingAgent(RuleAgent):
    """Plays ``styles[(hands played // period) % len(styles)]`` (panel names)."""

    def __init__(
        self,
        name: str,
        game: KuhnGame,
        seed: int,
        *,
        styles: Sequence[str] = DEFAULT_CYCLE,
        period: int = DEFAULT_PERIOD,
    ) -> None:
        if not isinstance(period, int) or isinstance(period, bool) or period < 1:
            raise InvalidArgumentError("period", f"must be a positive integer, got {period!r}")
        if not styles:
            raise InvalidArgumentError("styles", "needs at least one style")
        super().__init__(name, game, seed)
        self.styles = tuple(styles)
        self.period = period
        self._profiles = [named_profile(game, s) for s in self.styles]

    @property
    def current_style(self) -> str:
        return self.styles[(self.hands_played // self.period) % len(self.styles)]

    def bet_probability(self, position: int, card: int, history: str) -> float:
        profile = self._profiles[(self.hands_played // self.period) % len(self._profiles)]
        return float(profile[position, self.game.infoset_of[self.game.node(history), card], 1])


class LateSwitcher(RuleAgent):
    """Plays ``before`` until hand ``switch_hand`` (drawn from its seed, uniform on
    [``earliest``, ``latest``]), then ``after`` (panel names)."""

    def __init__(
        self,
        name: str,
        game: KuhnGame,
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
        super().__init__(name, game, seed)
        self.styles = (before, after)
        self._profiles = (named_profile(game, before), named_profile(game, after))
        self.switch_hand = int(self.rng.integers(earliest, latest + 1))

    @property
    def current_style(self) -> str:
        return self.styles[self.hands_played >= self.switch_hand]

    def bet_probability(self, position: int, card: int, history: str) -> float:
        profile = self._profiles[self.hands_played >= self.switch_hand]
        return float(profile[position, self.game.infoset_of[self.game.node(history), card], 1])


class FrequencyExploiter(RuleAgent):
    """Bluffs as often as opponents fold, calls as light as opponents bet (see module doc)."""

    def __init__(self, name: str, game: KuhnGame, seed: int) -> None:
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

    def bet_probability(self, position: int, card: int, history: str) -> float:
        top = self.game.num_cards - 1
        if card == top:
            return 1.0
        if "b" not in history:
            return self.fold_rate ** (self.game.num_players - 1)
        if card == top - 1:
            return self.open_rate
        if card == top - 2 and card > 0:
            return self.open_rate**2
        return 0.0

    def end_hand(self, obs: HandObservation) -> None:
        n = self.game.num_players
        facing = False
        for i, letter in enumerate(obs.history):
            if i % n != obs.position:
                if facing:
                    self.calls += letter == "b"
                    self.folds += letter == "p"
                else:
                    self.opens += letter == "b"
                    self.checks += letter == "p"
            facing = facing or letter == "b"
        super().end_hand(obs)


class TiltingAgent(RuleAgent):
    """Calm until it loses ``threshold`` chips over ``window`` hands, then a maniac for a while."""

    def __init__(
        self,
        name: str,
        game: KuhnGame,
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
        super().__init__(name, game, seed)
        self.window, self.threshold, self.tilt = window, float(threshold), tilt
        self._recent: deque[float] = deque(maxlen=window)
        self.tilt_left = 0  # hands of maniac play still to come
        self._calm = named_profile(game, "n1" if game.num_players == 3 else "tight-passive")
        self._maniac = named_profile(game, "maniac")

    def bet_probability(self, position: int, card: int, history: str) -> float:
        profile = self._maniac if self.tilt_left > 0 else self._calm
        return float(profile[position, self.game.infoset_of[self.game.node(history), card], 1])

    def end_hand(self, obs: HandObservation) -> None:
        self._recent.append(own_payoff(self.game, obs))
        if self.tilt_left > 0:
            self.tilt_left -= 1
        elif sum(self._recent) <= -self.threshold:
            self.tilt_left = self.tilt
            self._recent.clear()
        super().end_hand(obs)


def own_payoff(game: KuhnGame, obs: HandObservation) -> float:
    """Chips the observing seat won in the hand, from what it saw alone.

    Everyone antes 1 and each ``b`` adds 1 for its actor (the actor of letter i is position
    i mod n). A folded seat loses what it put in; a lone survivor takes the pot; at a showdown
    every live card is visible, so the seat knows whether it holds the best one.
    """
    n, me = game.num_players, obs.position
    put_in = [1 + obs.history[p::n].count("b") for p in range(n)]
    folded = game.folded(obs.history)
    if folded[me]:
        return -float(put_in[me])
    live = [p for p in range(n) if not folded[p]]
    shown = {p: c for p in live if (c := obs.cards[p]) is not None}  # a showdown shows them all
    won = len(live) == 1 or max(shown, key=shown.__getitem__) == me
    return float(sum(put_in) - put_in[me] if won else -put_in[me])


AgentBuilder = Callable[[KuhnGame, int], RuleAgent]


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
