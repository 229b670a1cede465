"""An ACPC agent client: connects to a dealer, answers when it is to act, reports finished hands.

The client sends ``VERSION:2.0.0``, then reads MATCHSTATE lines. Comments and lines that do not
parse are ignored; a state where another position is to act needs no reply; a final state (the hand
is over) is turned into a :class:`SeatHand` holding only what this seat saw, and handed to the
policy's ``observe`` hook exactly once per hand. When the state says this position is to act, the
policy's ``act`` picks ``f``, ``c`` or ``r`` and the client replies with the state, ``:`` and the
letter.

The client plays any limit game (Kuhn, Leduc, ...): several rounds, board cards, the legal actions
of the one implementation of the betting rules (:mod:`oppmodel.modeling.games.acpc.betting`).

A policy is any object with ``act(decision) -> str`` and ``observe(hand) -> None``;
:func:`make_policy` builds the built-in ones: the core's panel of fixed strategies for the game
(:mod:`oppmodel.modeling.play.panel`: n1-n3 in 3-player Kuhn, ``cfr``, the game's solved strategy,
uniform and the styles, defined from hand strength; ``STYLE@S`` diluted with the equilibrium),
MBBR, all on the compiled game, and the reference ``example_player``'s weights.
:func:`strategy_policy` plays any strategy file. The model-based agent (MBBR, in-process or
through the service) plugs in here as another policy.
Reference: project_acpc_server 1.0.42's ``example_player`` (protocol 2.0.0).
"""

from __future__ import annotations

import random
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TextIO

import numpy as np

from oppmodel.clients.acpc.convert import card_to_kuhn, kuhn_for
from oppmodel.clients.acpc.net import LineSocket
from oppmodel.clients.acpc.protocol import VERSION_LINE, format_reply
from oppmodel.modeling.errors import InvalidArgumentError, NotFoundError
from oppmodel.modeling.games.acpc.betting import ACTION_LETTERS, CALL, HandState
from oppmodel.modeling.games.acpc.compiler import limit_game_of
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.games.acpc.hand_rank import card_index
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.matchstate import MatchState, parse_matchstate
from oppmodel.modeling.games.acpc.strategy import is_strategy_file, load_profile, parse_profile
from oppmodel.modeling.games.interface import ServedGame, ServedModel
from oppmodel.modeling.games.kuhn import BET
from oppmodel.modeling.holdem.match import is_holdem
from oppmodel.modeling.holdem.policy import HoldemPolicy, Spot, action_row
from oppmodel.modeling.holdem.strength import warm_up
from oppmodel.modeling.holdem.styles import holdem_policy, style_names
from oppmodel.modeling.mbbr.base import MBBRModel
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import LimitObservation
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.panel import ALIASES, panel_names
from oppmodel.modeling.strategy import validate_profile


@dataclass(frozen=True)
class Decision:
    """A state where this seat is to act: the state received, its replayed betting, and the
    dealer's MATCHSTATE line as it came (what the service policy sends)."""

    game: GameDef
    state: MatchState
    hand: HandState
    matchstate: str

    @property
    def position(self) -> int:
        """Our position in this hand."""
        return self.state.position

    @property
    def hole(self) -> str:
        """Our hole card(s)."""
        return self.state.hole[self.state.position]

    @property
    def board(self) -> tuple[str, ...]:
        """The board cards of each round reached (round 0's first, ``""`` where none)."""
        return self.state.board

    def valid_actions(self) -> list[str]:
        """The actions the dealer accepts now, in the order ``f c r``."""
        return self.hand.valid_actions()


@dataclass(frozen=True)
class SeatHand:
    """A finished hand as this seat saw it: hole cards '' where hidden, our payoff, the board
    of each round reached (round 0's first; ``("",)`` in Kuhn), and the dealer's MATCHSTATE line
    that ended it, as it came (what the service policy sends)."""

    hand: int
    position: int
    betting: str
    hole: tuple[str, ...]
    payoff: float
    board: tuple[str, ...]
    matchstate: str

    def limit_observation(self) -> LimitObservation:
        """The hand as the modeling core's observation of a limit game (None where hidden)."""
        hole = tuple(cards or None for cards in self.hole)
        return LimitObservation(self.position, self.betting, hole, self.board)


class Policy(Protocol):
    """Decides this seat's actions and hears about every finished hand."""

    def act(self, decision: Decision) -> str:
        """One of ``f``, ``c``, ``r`` (an invalid choice is replaced by a call)."""
        ...

    def observe(self, hand: SeatHand) -> None:
        """Called once per finished hand, before the next hand's first state."""
        ...


class WeightedPolicy:
    """Picks among the valid actions with fixed weights, renormalised; seeded, so reproducible."""

    def __init__(self, weights: dict[str, float], seed: int) -> None:
        self.weights = weights
        self.rng = random.Random(seed)

    def act(self, decision: Decision) -> str:
        """Draw an action from the weights restricted to the valid actions."""
        valid = decision.valid_actions()
        return self.rng.choices(valid, weights=[self.weights[a] for a in valid])[0]

    def observe(self, hand: SeatHand) -> None:
        """A fixed strategy learns nothing."""


class StrategyPolicy:
    """Samples pass/bet from a Kuhn strategy (``strategy(position)``, shape (num_infosets, 2)) at
    our information set and writes it the ACPC way; seeded. Subclasses say where the strategy
    comes from."""

    def __init__(self, game: GameDef, seed: int) -> None:
        self.game = game
        self.kuhn = kuhn_for(game)
        self.rng = random.Random(seed)

    def strategy(self, position: int) -> np.ndarray:
        """Our strategy in ``position`` for the current hand."""
        raise NotImplementedError

    def act(self, decision: Decision) -> str:
        """Draw pass/bet at our information set, then write it as ``f``, ``c`` or ``r``."""
        history = self.kuhn.acpc_to_history(decision.state.betting)
        card = card_to_kuhn(self.game, decision.hole)
        infoset = self.kuhn.infoset_index(decision.position, card, history)
        p_bet = float(self.strategy(decision.position)[infoset, BET])
        letter = "b" if self.rng.random() < p_bet else "p"
        return self.kuhn.history_to_acpc(history + letter)[-1]

    def observe(self, hand: SeatHand) -> None:
        """A fixed strategy learns nothing."""


class ProfilePolicy(StrategyPolicy):
    """Plays a fixed profile of the Kuhn kernels' game (``KuhnGame``; the service agent's
    fallback in a Kuhn session; every built-in policy plays the compiled game)."""

    def __init__(self, game: GameDef, profile: np.ndarray, seed: int) -> None:
        super().__init__(game, seed)
        self.profile = validate_profile(self.kuhn, profile)

    def strategy(self, position: int) -> np.ndarray:
        """The profile's row for ``position``."""
        return self.profile[position]


class LimitStrategyPolicy:
    """Plays a fixed profile of a limit game (``(num_players, num_infosets, 3)``, fold / call /
    raise per information set, :mod:`oppmodel.modeling.games.acpc.strategy`): draws the action at
    our information set; seeded, so reproducible."""

    def __init__(self, game: LimitGame, profile: np.ndarray, seed: int) -> None:
        self.game = game
        self.profile = np.asarray(profile, dtype=float)
        self.rng = random.Random(seed)

    def infoset(self, decision: Decision) -> int:
        """Our information set's index in ``decision`` (row of ``profile[position]``)."""
        key = self.game.infostate(decision.hole, decision.board, decision.state.betting)
        return self.game.infoset_from_string(decision.position, key)

    def act(self, decision: Decision) -> str:
        """Draw f, c or r with the profile's probabilities at our information set."""
        probabilities = self.profile[decision.position, self.infoset(decision)]
        return self.rng.choices(ACTION_LETTERS, weights=probabilities)[0]

    def observe(self, hand: SeatHand) -> None:
        """A fixed strategy learns nothing."""


class LimitModelPolicy(LimitStrategyPolicy):
    """Plays an in-process MBBR model of a limit game (``MBBRModel``): every finished hand
    updates it with what this seat saw, and each decision draws from its current policy at our
    information set (the default strategy for the first H hands, then the response to the
    opponent models, solved for the deals of our hole cards only)."""

    def __init__(self, game: LimitGame, model: MBBRModel, seed: int) -> None:
        super().__init__(game, model.default_strategy, seed)
        self.model = model

    def act(self, decision: Decision) -> str:
        """Draw f, c or r with the model's policy at our information set."""
        row = self.model.action_probabilities(decision.position, self.infoset(decision))
        return self.rng.choices(ACTION_LETTERS, weights=row.tolist())[0]

    def observe(self, hand: SeatHand) -> None:
        """One Bayesian update from what this seat saw."""
        self.model.observe(hand.limit_observation())


class ServedModelPolicy:
    """Plays in this process the model a service session of the game would hold (hold'em's: MBBR
    over the bundled blueprint's abstraction, :mod:`oppmodel.modeling.holdem.served`): each
    decision's MATCHSTATE is read as GetAction reads it and an action drawn from the model's row
    there; each finished hand updates the model with what this seat saw, as Observe does."""

    def __init__(self, game: ServedGame, model: ServedModel, seed: int) -> None:
        self.game = game
        self.model = model
        self.rng = random.Random(seed)

    def act(self, decision: Decision) -> str:
        """Draw an action with the model's policy at our information set."""
        spot = self.game.matchstate_decision(decision.matchstate)
        row = self.model.action_probabilities(spot.position, spot.infoset)
        action = self.rng.choices(range(len(row)), weights=row.tolist())[0]
        return self.game.action_letter(spot.betting, action)

    def observe(self, hand: SeatHand) -> None:
        """One update from what this seat saw."""
        self.model.observe(self.game.matchstate_observation(hand.matchstate))


class HoldemStylePolicy:
    """Plays a hold'em policy (:mod:`oppmodel.modeling.holdem.policy`: a style, always-call,
    uniform) in a limit hold'em game, which no compiled table reaches: draws f, c or r from its
    probabilities for our hole cards at the spot (the board and betting so far); seeded."""

    def __init__(self, game: GameDef, policy: HoldemPolicy, seed: int) -> None:
        self.game = game
        self.policy = policy
        self.rng = random.Random(seed)
        warm_up()  # before the dealer's clock runs: the preflop order, the kernels

    def act(self, decision: Decision) -> str:
        """Draw f, c or r with the policy's probabilities for our hole cards."""
        board = tuple(card_index(c) for c in _card_list("".join(decision.board)))
        spot = Spot(self.game, board, decision.hand.state)
        hole = [card_index(c) for c in _card_list(decision.hole)]
        row = action_row(self.policy, spot, hole)
        return self.rng.choices(ACTION_LETTERS, weights=row.tolist())[0]

    def observe(self, hand: SeatHand) -> None:
        """A fixed policy learns nothing."""


def _card_list(text: str) -> list[str]:
    return [text[i : i + 2] for i in range(0, len(text), 2)]


def strategy_policy(game: GameDef, path: str | Path, seed: int) -> LimitStrategyPolicy:
    """Play the profile of a strategy file (every position's strategy, keyed by information-state
    strings, or by OpenSpiel's in a Kuhn game); InvalidArgumentError or InvalidStrategyError
    naming what is wrong with the file."""
    limit = limit_game_of(game)
    return LimitStrategyPolicy(limit, load_profile(limit, path), seed)


def example_policy(game: GameDef, seed: int) -> Policy:
    """The reference ``example_player``: fold/call/raise weighted 0.06/0.47/0.47 over valid ones."""
    return WeightedPolicy(dict(zip(ACTION_LETTERS, (0.06, 0.47, 0.47), strict=True)), seed)


def policy_names(game: GameDef | None = None) -> list[str]:
    """Names ``make_policy`` knows for ``game`` (None: every name): ``mbbr``, the core's panel
    for the compiled game (n1, n2, n3 in 3-player Kuhn; ``cfr``, the game's solved strategy;
    uniform; the styles) and ``example``. Styles also take ``STYLE@S`` (diluted with the
    equilibrium: N2 in 3-player Kuhn, cfr elsewhere)."""
    if game is not None and is_holdem(game):
        return [*style_names(), "example"]
    return ["mbbr", *panel_names(None if game is None else limit_game_of(game)), "example"]


def make_policy(
    name: str, game: GameDef, seed: int, *, prior_strategy: str | None = None
) -> Policy:
    """The built-in policy ``name`` for ``game``; InvalidArgumentError listing the known names.

    ``mbbr`` is MBBR with MBBRConfig's defaults (Ganzfried et al. 2024's parameters, the Dirichlet
    posterior), in-process, seeded with ``seed`` (its action draws, and its samples under the
    paper's sample posterior; ``prior_strategy``, the text of a strategy file, is its prior mean
    and default strategy). Fixed strategies are the core's panel
    (:mod:`oppmodel.modeling.play.panel`), or a strategy file (``FILE.json``).
    """
    if name == "example":
        return example_policy(game, seed)
    if is_holdem(game):
        try:
            return HoldemStylePolicy(game, holdem_policy(name, game), seed)
        except NotFoundError as exc:
            raise InvalidArgumentError("agent", str(exc)) from None
    if is_strategy_file(name):
        return strategy_policy(game, name, seed)
    known = policy_names(game)
    style = name.lower().partition("@")[0].partition(":")[0]
    if ALIASES.get(style, style) not in known:
        raise InvalidArgumentError("agent", f"unknown agent {name!r}; known: {', '.join(known)}")
    limit = limit_game_of(game)
    if name == "mbbr":  # MBBRConfig's defaults
        profile = None
        if prior_strategy is not None:
            profile = parse_profile(limit, prior_strategy, "prior_strategy")
        model = build_model(
            limit, MBBRConfig(seed=seed), prior_mean=profile, default_strategy=profile
        )
        return LimitModelPolicy(limit, model, seed)
    try:
        return LimitStrategyPolicy(limit, fixed_profile(limit, name), seed)
    except NotFoundError as exc:  # a bad parameter (bluffer:2)
        raise InvalidArgumentError("agent", str(exc)) from exc


@dataclass(frozen=True)
class AgentResult:
    """What one match looked like from this seat."""

    hands: int
    actions: int
    ignored_lines: int
    total: float


def connect(host: str, port: int, timeout: float) -> socket.socket:
    """Connect, retrying while the dealer is not listening yet, for up to ``timeout`` seconds;
    OSError naming the address if it cannot."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=max(timeout, 0.1))
        except (ConnectionRefusedError, TimeoutError) as exc:
            if time.monotonic() >= deadline:
                raise OSError(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from exc
            time.sleep(0.05)
            continue
        except OSError as exc:  # an unknown host, an unreachable network: retrying will not help
            raise OSError(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock


def seat_hand(state: MatchState, hand: HandState, line: str) -> SeatHand:
    """The finished hand of ``state``, the dealer's ``line``, from its viewer's side (payoff from
    the cards it saw)."""
    payoff = hand.payoffs(state.hole, state.board)[state.position]
    return SeatHand(
        state.hand, state.position, state.betting, state.hole, payoff, state.board, line
    )


def play_match(
    game: GameDef,
    sock: socket.socket,
    policy: Policy,
    *,
    stderr: TextIO | None = None,
    read_timeout: float | None = None,
    on_hand: Callable[[], None] | None = None,
) -> AgentResult:
    """Play until the dealer closes the connection; returns this seat's tally.

    ``read_timeout`` (seconds) bounds the wait for each line; None waits as long as the dealer does.
    ``on_hand`` is called after each finished hand (a command counts them to say how far it got).
    """
    HandState(game)  # refuses a game whose betting the rules do not play (no-limit, small stacks)
    err = stderr or sys.stderr
    conn = LineSocket(sock)
    hands = actions = ignored = 0
    total = 0.0
    last_observed = -1
    conn.send(VERSION_LINE + "\n")
    try:
        while (line := conn.readline(read_timeout)) is not None:
            text = line.rstrip("\r\n")
            if text.startswith(("#", ";")):
                continue
            try:
                state, hand = parse_matchstate(game, text)
            except InvalidArgumentError:
                ignored += 1
                continue
            if hand.finished:
                if state.hand != last_observed:
                    try:
                        result = seat_hand(state, hand, text)
                    except InvalidArgumentError:  # a showdown card is missing: not a real dealer
                        ignored += 1
                        continue
                    last_observed = state.hand
                    hands += 1
                    total += result.payoff
                    policy.observe(result)
                    if on_hand is not None:
                        on_hand()
                continue
            if hand.current != state.position:
                continue
            action = policy.act(Decision(game, state, hand, text))
            if not hand.is_valid(action):
                err.write(f"acpc-agent: policy chose invalid {action!r} at {state}; calling\n")
                action = ACTION_LETTERS[CALL]
            if not conn.send(format_reply(state, action)):
                break
            actions += 1
    finally:
        conn.close()
    return AgentResult(hands, actions, ignored, total)
