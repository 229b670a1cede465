"""The game interface: what the service, its clients and replay ask of a game, so that none of them
tests a game's type (issue 30 item 3).

Every game is modelled as a compiled ACPC limit game (``LimitGame``) by the one model of
:func:`~oppmodel.modeling.mbbr.model.build_model`. A :class:`ServedGame` is such a game
in a *presentation*: how the API's fields, MATCHSTATE lines and stored hands read as observations,
how information states are named, what a row of probabilities and an action code mean. What
differs between games is a method here; the callers hold a ``ServedGame`` and ask it. Two
implement it:

- :class:`CompiledGame`: a limit game as itself: information states ``"Ks/Qh:rc/cr"``, rows
  ``[fold, call, raise]``, action codes 0, 1, 2, observations from MATCHSTATE lines only
  (``LimitObservation``); its model is the compiled model itself.
- :class:`~oppmodel.modeling.games.kuhn_openspiel.KuhnOpenSpiel`: n-player Kuhn compiled from the
  bundled ``kuhn<n>p`` file, shown in OpenSpiel's conventions (``"2ppb"``, ``[pass, bet]``, actions
  0/1, the API's Kuhn observation fields, ``HandObservation``): a codec around the compiled game and
  its model, not a second model.

Errors name the API's fields (``observation.matchstate``, ``matchstate``), as the service reports
them; a caller reporting them elsewhere renames them (``server/conversion.renamed``).
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol, cast

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc import strategy as limit_strategy
from oppmodel.modeling.games.acpc.betting import ACTION_LETTERS
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.matchstate import MatchState, parse_matchstate
from oppmodel.modeling.games.acpc.solved import needs_solving
from oppmodel.modeling.games.units import RateUnit
from oppmodel.modeling.mbbr.base import MBBRModel, OpponentInsight
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior, Response
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import (
    HandObservation,
    LimitObservation,
    limit_observation_cards,
    limit_observation_of,
    validate_limit_observation,
)
from oppmodel.modeling.population import stored_population

Hand = HandObservation | LimitObservation  # a finished hand, in a game's presentation
# A hand as stored and compared with resends: (position, betting, cards) in the presentation's
# notation (``ServedGame.hand_key``).
HandKey = tuple[int, str, tuple[int | str | None, ...]]
MAX_REMEMBERED_WINNINGS = 16384  # distinct stored hands whose winnings a game keeps (~3 MB)


class KuhnFields(NamedTuple):
    """The API's Kuhn fields of a finished hand (``Observation``) as plain values."""

    position: int
    our_card: int | None  # None: not set
    which: str | None  # the betting oneof's field set ("history", "acpc_betting"), None if none
    betting: str
    revealed: tuple[tuple[int, int], ...]  # (position, card) of each RevealedCard


class KuhnInfoState(NamedTuple):
    """The API's Kuhn information state (``InfoState``) as plain values."""

    position: int
    card: int | None  # None: not set
    which: str | None  # the betting oneof's field set, None if none is
    betting: str


class Decision(NamedTuple):
    """An information state where a position is to act: its position, the information set's
    index in the presentation, and the betting so far (in the presentation's letters)."""

    position: int
    infoset: int
    betting: str


class ServedModel(Protocol):
    """An MBBR model in its game's presentation: rows and information-set indices as the
    game's ``ServedGame`` names them."""

    @property
    def hands_observed(self) -> int: ...

    def observe(self, hand: Hand) -> None:
        """Update the posterior with what our seat saw of a finished hand."""
        ...

    def opponent_model(self, our_position: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """(posterior-mean strategy, the spread it rests on) of one opponent."""
        ...

    def opponent_insight(self, our_position: int, opponent_position: int) -> OpponentInsight:
        """``opponent_model`` with the prior mean and what reads it (``MBBRModel``'s)."""
        ...

    def response(
        self, our_position: int, kind: Response | str | None = None
    ) -> tuple[np.ndarray, float]:
        """Our best response of ``kind`` and its expected value per hand."""
        ...

    def played(self, our_position: int) -> tuple[np.ndarray, float]:
        """What the agent plays now in ``our_position`` and its expected value per hand against
        the posterior-mean models (``MBBRModel``'s)."""
        ...

    def action_probabilities(self, our_position: int, infoset: int) -> np.ndarray:
        """What the agent plays at one of our information sets now."""
        ...

    def snapshot(self) -> bytes:
        """The state after the hands observed so far (``modeling/mbbr/snapshot.py``)."""
        ...

    def opponent_counts(self) -> np.ndarray:
        """Each opponent's expected action counts on the compiled game (what a population is
        fitted from, ``MBBRModel.opponent_counts``)."""
        ...

    def restore(self, blob: bytes) -> None:
        """Replace the state with a ``snapshot()``'s; SnapshotError if it does not fit."""
        ...

    def nbytes(self) -> int:
        """Approximate bytes held."""
        ...


class MatchGame(Protocol):
    """A game the match engine (``oppmodel.modeling.play.match``) plays: it deals the hands of a
    match and plays them, so the engine's duplicates, seatings and results are one code for every
    game. A compiled game (``LimitGame``) deals indices into its enumerated deals and is played
    over its tree; a sampled one (``oppmodel.modeling.holdem.match.HoldemGame``: hold'em, too big
    to compile) shuffles the cards of each hand and plays them by the betting rules."""

    @property
    def name(self) -> str: ...

    @property
    def num_players(self) -> int: ...

    @property
    def rate_unit(self) -> RateUnit: ...

    def deal_sequence(self, hands: int, seed: int) -> np.ndarray:
        """The deals of ``hands`` hands, one row (or index) per hand, from ``seed``."""
        ...

    def play_hands(self, agents: Sequence[Any], deals: np.ndarray) -> np.ndarray:
        """Play one hand per deal, positions rotating as the ACPC dealer rotates them (agents of
        the game's kind, one per seat); the chips won per seat."""
        ...


class InfosetNames(Protocol):
    """What names a presentation's information sets: the compiled game itself, or Kuhn's
    ``KuhnGame`` (OpenSpiel's strings)."""

    @property
    def num_infosets(self) -> int: ...

    @property
    def num_actions(self) -> int: ...

    def check_position(self, position: int, field: str = "position") -> None: ...

    def infosets(self, position: int) -> Sequence[int]: ...

    def infoset_string(self, position: int, index: int) -> str: ...


def with_unset(config: MBBRConfig, unset: dict[str, Any]) -> MBBRConfig:
    """``config`` with ``unset``'s values in the fields it leaves at MBBRConfig's defaults (a
    game's values for what a session leaves unset; the prior's default is its posterior's)."""
    defaults = MBBRConfig(posterior=config.posterior)
    kept = {k: v for k, v in unset.items() if getattr(config, k) == getattr(defaults, k)}
    return dataclasses.replace(config, **kept)


class ServedGame(abc.ABC):
    """A game as the service and its clients see it (module docstring): the compiled game its
    model plays, and the presentation's names of information sets; every object is its own
    (caches key by identity)."""

    def __init__(self, compiled: LimitGame, names: InfosetNames) -> None:
        self.compiled = compiled
        self.names = names
        self._winnings: dict[HandKey, float] = {}  # stored_winnings's

    @property
    def name(self) -> str:
        return self.compiled.name

    @property
    def num_players(self) -> int:
        return self.compiled.num_players

    @property
    def num_infosets(self) -> int:
        """Information sets per position in the presentation, padded to the largest."""
        return self.names.num_infosets

    @property
    def num_actions(self) -> int:
        return self.names.num_actions

    def check_position(self, position: int, field: str = "position") -> None:
        self.names.check_position(position, field)

    def infosets(self, position: int) -> Sequence[int]:
        """The presentation's information-set indices of ``position``."""
        return self.names.infosets(position)

    def infoset_string(self, position: int, index: int) -> str:
        return self.names.infoset_string(position, index)

    def decision_string(self, decision: Decision) -> str:
        """The name of a decision's information set (3-player hold'em's needs the betting)."""
        return self.infoset_string(decision.position, decision.infoset)

    @abc.abstractmethod
    def strategy_from_dict(
        self, position: int, table: Mapping[str, object], field: str
    ) -> np.ndarray:
        """One position's rows from ``{infostate: probabilities}`` (a strategy file's keys)."""
        ...

    @abc.abstractmethod
    def parse_profile(self, text: str, source: str) -> np.ndarray:
        """A whole profile (n, num_infosets, num_actions) from a strategy file's text."""
        ...

    @abc.abstractmethod
    def field_observation(self, fields: KuhnFields) -> Hand:
        """The hand of the API's Kuhn observation fields (errors name ``observation.*``)."""
        ...

    @abc.abstractmethod
    def matchstate_observation(self, line: str) -> Hand:
        """The hand of a finished hand's MATCHSTATE line (errors name
        ``observation.matchstate``)."""
        ...

    @abc.abstractmethod
    def field_decision(self, state: KuhnInfoState | None) -> Decision:
        """The decision of the API's Kuhn ``InfoState`` fields (None: none given)."""
        ...

    @abc.abstractmethod
    def matchstate_decision(self, line: str) -> Decision:
        """The decision of a MATCHSTATE line (errors name ``matchstate``)."""
        ...

    @abc.abstractmethod
    def action_letter(self, betting: str, action: int) -> str:
        """The ACPC letter of ``action`` (a code of the presentation) after ``betting``."""
        ...

    @abc.abstractmethod
    def hand_key(self, hand: Hand) -> HandKey: ...

    @abc.abstractmethod
    def hand_of_key(self, position: int, betting: str, cards: Sequence[object]) -> Hand:
        """Inverse of :meth:`hand_key` (a stored hand; not validated)."""
        ...

    runs_inline = True  # whether a small model's arithmetic may run on the service's event loop
    # whether the model has a whole response table (GetResponse); without one (3-player hold'em
    # responds at each decision) GetModels answers the models alone
    response_table = True

    def unset_config(self) -> dict[str, object]:
        """MBBRConfig's values for the fields a session leaves unset, where the game's differ
        from the dataclass's defaults."""
        return {}

    def check_config(self, config: MBBRConfig) -> None:
        """InvalidArgumentError naming the field (``config.mbbr.*``) if this game's model cannot
        run a validated ``config`` (every one, unless the game says otherwise)."""
        return None

    def played_config(self, config: MBBRConfig) -> MBBRConfig:
        """``config`` with :meth:`unset_config`'s values in the fields it leaves at MBBRConfig's
        defaults, checked (:meth:`check_config`): what a model of this game runs in this process
        (the in-process agent's, replay's), as a session leaving those fields unset would."""
        config = with_unset(config, self.unset_config())
        self.check_config(config)
        return config

    @abc.abstractmethod
    def needs_solving(self, *, default_given: bool, prior_given: bool) -> bool:
        """Whether a model with these profiles given needs the game's solved strategy
        (``server/solved_strategies.py`` solves a game no bundle holds once)."""
        ...

    def build_model(
        self,
        config: MBBRConfig,
        *,
        default_strategy: np.ndarray | None = None,
        prior_mean: np.ndarray | None = None,
        solved: np.ndarray | None = None,
        population: bytes | None = None,
    ) -> ServedModel:
        """A fresh model of the compiled game (``build_model``) answering in the
        presentation; profiles in the presentation (None: the game's default; ``solved``: the
        compiled game's solved strategy where none is given); ``population``: the fitted
        population's bytes under the population prior (None: none fitted, the informed prior
        around the prior mean)."""
        mean = self.compiled_profile(prior_mean, solved)
        fitted = None
        if config.prior == Prior.POPULATION:
            fitted = stored_population(self.compiled, population, mean, config)
        model = build_model(
            self.compiled,
            config,
            default_strategy=self.compiled_profile(default_strategy, solved),
            prior_mean=mean,
            population=fitted,
        )
        return self.served_model(model)

    @abc.abstractmethod
    def compiled_profile(
        self, profile: np.ndarray | None, solved: np.ndarray | None
    ) -> np.ndarray | None:
        """A profile of the presentation on the compiled game; None given: the game's default
        (None: the compiled model's own)."""

    @abc.abstractmethod
    def served_model(self, model: MBBRModel) -> ServedModel:
        """The compiled game's model answering in the presentation."""

    def limit_hand(self, hand: Hand) -> LimitObservation:
        """The compiled game's observation of a hand (a compiled game's hands are its own)."""
        return cast(LimitObservation, hand)

    def stored_winnings(
        self, position: int, betting: str, cards: Sequence[int | str | None]
    ) -> float:
        """:meth:`winnings` of a stored hand (:meth:`hand_of_key`'s arguments), remembered for
        up to MAX_REMEMBERED_WINNINGS distinct hands: hands repeat (3-player Kuhn has a few
        hundred), and reading a payoff from the observation costs as much as a third of the
        hand's update (1.6 us remembered, 111 us not, 3-player Kuhn under load)."""
        key = (position, betting, tuple(cards))
        won = self._winnings.get(key)
        if won is None:
            won = self.winnings(self.hand_of_key(position, betting, cards))
            if len(self._winnings) < MAX_REMEMBERED_WINNINGS:
                self._winnings[key] = won
        return won

    def winnings(self, hand: Hand) -> float:
        """Our seat's chips in an observed hand, by the compiled game's payoffs: a seat sees
        every card that decides the pot (a fold ends the hand; at a showdown the dealer shows
        the cards of the players in it)."""
        obs = self.limit_hand(hand)
        return float(self.compiled.returns(obs.betting, obs.hole, obs.board)[obs.position])


def read_matchstate(gamedef: GameDef, line: str, field: str) -> MatchState:
    """A MATCHSTATE line read against ``gamedef``; every error names ``field``."""
    try:
        state, _ = parse_matchstate(gamedef, line.strip())
    except InvalidArgumentError as exc:
        raise type(exc)(field, str(exc)) from None
    return state


class CompiledGame(ServedGame):
    """A compiled limit game served as itself (module docstring); built by :func:`compiled`."""

    def __init__(self, game: LimitGame) -> None:
        super().__init__(game, game)

    def strategy_from_dict(
        self, position: int, table: Mapping[str, object], field: str
    ) -> np.ndarray:
        return limit_strategy.strategy_from_dict(self.compiled, position, table, field)

    def parse_profile(self, text: str, source: str) -> np.ndarray:
        return limit_strategy.parse_profile(self.compiled, text, source)

    def field_observation(self, fields: KuhnFields) -> Hand:
        raise InvalidArgumentError(
            "observation.matchstate",
            f"is required in a session of an ACPC limit game ({self.name}); the Kuhn "
            "fields are for kuhn_poker sessions",
        )

    def matchstate_observation(self, line: str) -> Hand:
        field = "observation.matchstate"
        state = read_matchstate(self.compiled.gamedef, line, field)
        obs = LimitObservation(
            state.position, state.betting, tuple(h or None for h in state.hole), state.board
        )
        try:
            validate_limit_observation(self.compiled, obs)
        except InvalidArgumentError as exc:
            raise type(exc)(field, str(exc)) from None
        return obs

    def field_decision(self, state: KuhnInfoState | None) -> Decision:
        raise InvalidArgumentError(
            "matchstate", f"is required in a session of an ACPC limit game ({self.name})"
        )

    def matchstate_decision(self, line: str) -> Decision:
        game = self.compiled
        state = read_matchstate(game.gamedef, line, "matchstate")
        try:
            to_act = game.current_player(state.betting)
            if to_act != state.position:
                who = "the hand is over" if to_act < 0 else f"position {to_act} is to act"
                raise InvalidArgumentError(
                    "matchstate", f"{state.betting!r}: {who}, not position {state.position}"
                )
            hole = state.hole[state.position]
            if not hole:
                raise InvalidArgumentError("matchstate", "our own hole cards are missing")
            infostate = game.infostate(hole, state.board, state.betting)
            index = game.infoset_from_string(state.position, infostate)
        except InvalidArgumentError as exc:
            raise type(exc)("matchstate", str(exc).removeprefix(f"{exc.field}: ")) from None
        return Decision(state.position, index, state.betting)

    def action_letter(self, betting: str, action: int) -> str:
        return ACTION_LETTERS[action]

    def hand_key(self, hand: Hand) -> HandKey:
        obs = cast(LimitObservation, hand)  # the hands of this presentation
        return (obs.position, obs.betting, limit_observation_cards(obs))

    def hand_of_key(self, position: int, betting: str, cards: Sequence[object]) -> Hand:
        text = tuple(None if c is None else str(c) for c in cards)
        return limit_observation_of(position, betting, text, self.num_players)

    def needs_solving(self, *, default_given: bool, prior_given: bool) -> bool:
        return not (default_given and prior_given) and needs_solving(self.compiled)

    def unset_config(self) -> dict[str, object]:
        return {"change_hazard": 0.0}  # change detection off unless asked for

    def compiled_profile(
        self, profile: np.ndarray | None, solved: np.ndarray | None
    ) -> np.ndarray | None:
        return solved if profile is None else profile

    def served_model(self, model: MBBRModel) -> ServedModel:
        return cast(ServedModel, model)  # it observes this presentation's hands


@functools.cache  # per compiled game: compiled games are cached and immutable
def compiled(game: LimitGame) -> CompiledGame:
    """A compiled limit game served as itself (one object per game, so caches keyed by it
    hit)."""
    return CompiledGame(game)
