"""An in-process match engine: repeated n-player Kuhn with ACPC rotation, and duplicate matches.

A *match* seats n agents and plays ``hands`` hands. As the ACPC dealer does, positions rotate
every hand: in hand h the agent in seat s plays position (s - h) mod n, so each agent meets every
position equally often and the opponent at seat offset d from it is always the same agent. An agent
acts with its card and the public betting only, and after each hand is told what its seat saw
(:meth:`KuhnGame.visible_cards`): its own card, and other cards only at a showdown and only for
players who did not fold.

*Duplicate* matches (Ganzfried et al. 2024's protocol) play the same cards in every one of the n!
seatings of the n agents: the deal of hand h is drawn per duplicate from a seeded deck, by position,
and every seating replays it. An agent's luck of the cards then cancels over the seatings, so the
variance left is mostly that of the agents' own decisions. Each agent's result is its chips won per
hand, times 1000 (milli-chips per hand, mbb/h), averaged over the seatings of one duplicate; the
standard error is over the independent duplicates (sample standard deviation / sqrt(duplicates)).

Agents are built fresh for every match from factories ``factory(game, seed) -> Agent``, so nothing
leaks between matches. Every seed is derived from one match seed with ``numpy.random.SeedSequence``:
the same seed gives the same table, bit for bit.

When every agent plays a fixed table (:class:`FixedStrategyAgent`), a numba kernel plays the whole
match (``_match_kernels``); it consumes each agent's uniforms in the same order as the Python loop,
so both paths give identical results (a test checks this).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.observation import HandObservation
from oppmodel.modeling.play import _match_kernels as kernels
from oppmodel.modeling.strategy import validate_profile

MILLI = 1000.0
FIXED_CHUNK_HANDS = 1 << 16  # hands per kernel call (bounds the uniforms held in memory)
_DECK_TAG, _AGENT_TAG = 0, 1  # keep the deck's and the agents' seed streams apart


@runtime_checkable
class Agent(Protocol):
    """A player of repeated Kuhn poker that sees only what its seat sees."""

    name: str

    def begin_match(self, game: KuhnGame, seat: int) -> None:
        """Called once before the first hand."""

    def act(self, position: int, card: int, history: str) -> int:
        """The action (0 = pass, 1 = bet) of ``position`` holding ``card`` after ``history``."""
        ...

    def end_hand(self, obs: HandObservation) -> None:
        """What this seat saw of the finished hand."""


AgentFactory = Callable[[KuhnGame, int], Agent]


class FixedStrategyAgent:
    """Plays ``profile[position]`` in every position, sampling with its own seeded generator.

    One uniform is drawn per decision (bet when it is below P(bet)); the numba match kernel draws
    the same uniforms in the same order.
    """

    def __init__(self, name: str, game: KuhnGame, profile: np.ndarray, seed: int) -> None:
        self.name = name
        self.game = game
        self.profile = validate_profile(game, profile)
        self.rng = np.random.default_rng(seed)

    def begin_match(self, game: KuhnGame, seat: int) -> None:
        if game is not self.game:
            raise InvalidArgumentError("game", f"agent {self.name} was built for {self.game.name}")

    def act(self, position: int, card: int, history: str) -> int:
        infoset = self.game.infoset_of[self.game.node(history), card]
        return int(self.rng.random() < self.profile[position, infoset, 1])

    def end_hand(self, obs: HandObservation) -> None:
        return None


def fixed_strategy_factory(name: str, profile: np.ndarray) -> AgentFactory:
    """A factory of :class:`FixedStrategyAgent` playing ``profile``."""

    def build(game: KuhnGame, seed: int) -> FixedStrategyAgent:
        return FixedStrategyAgent(name, game, profile, seed)

    return build


def deal_sequence(game: KuhnGame, hands: int, seed: int) -> np.ndarray:
    """(hands,) indices into ``game.deals`` (cards by position), uniformly at random."""
    return np.random.default_rng(seed).integers(0, len(game.deals), size=hands)


def play_match(game: KuhnGame, agents: Sequence[Agent], deals: np.ndarray) -> np.ndarray:
    """Play one hand per entry of ``deals`` (indices into ``game.deals``); chips won per seat."""
    n = game.num_players
    if len(agents) != n:
        raise InvalidArgumentError("agents", f"{game.name} needs {n} agents, got {len(agents)}")
    for seat, agent in enumerate(agents):
        if not isinstance(agent, Agent):
            raise InvalidArgumentError(
                f"agents[{seat}]", f"{agent!r} lacks name, begin_match, act or end_hand"
            )
        agent.begin_match(game, seat)
    fixed = [a for a in agents if type(a) is FixedStrategyAgent]
    if len(fixed) == n:
        return _play_fixed(game, fixed, deals)
    observations = _observation_table(game)
    # Python lists: indexing them is several times faster than indexing numpy arrays.
    node_player = game.node_player.tolist()
    children = game.node_children.tolist()
    terminal_of = game.node_terminal.tolist()
    deal_cards = game.deals.tolist()
    payoffs = game.payoffs.tolist()
    histories = game.histories
    chips = [0.0] * n
    for h, d in enumerate(np.asarray(deals).tolist()):
        cards = deal_cards[d]
        node = 0
        while node_player[node] >= 0:
            p = node_player[node]
            agent = agents[(p + h) % n]
            action = agent.act(p, cards[p], histories[node])
            if not isinstance(action, (int, np.integer)) or action not in (0, 1):
                raise IllegalActionError("action", f"agent {agent.name} returned {action!r}")
            node = children[node][action]
        t = terminal_of[node]
        payoff = payoffs[t][d]
        seen = observations[t][d]
        for p in range(n):
            seat = (p + h) % n
            chips[seat] += payoff[p]
            agents[seat].end_hand(seen[p])
    return np.array(chips)


@functools.cache
def _observation_table(game: KuhnGame) -> list[list[list[HandObservation]]]:
    """[terminal][deal][position]: the observation of that position (see ``visible_cards``).

    Built once per game; the records are frozen, so every match shares them.
    """
    return [
        [
            [
                HandObservation(
                    p, game.histories[node], game.visible_cards(game.histories[node], cards, p)
                )
                for p in range(game.num_players)
            ]
            for cards in game.deals.tolist()
        ]
        for node in game.terminal_nodes
    ]


def _play_fixed(
    game: KuhnGame, agents: Sequence[FixedStrategyAgent], deals: np.ndarray
) -> np.ndarray:
    """The numba twin of the Python loop, in chunks of hands to bound memory.

    Each chunk draws an upper bound of uniforms per agent (max_depth per hand); afterwards every
    generator is rewound and advanced by exactly the uniforms used, so its stream is the one the
    Python loop would have consumed.
    """
    n = game.num_players
    max_depth = game.path_nodes.shape[1]
    profiles = np.stack([a.profile for a in agents])
    deals = np.asarray(deals, dtype=np.int64)
    chips = np.zeros(n)
    for start in range(0, len(deals), FIXED_CHUNK_HANDS):
        chunk = deals[start : start + FIXED_CHUNK_HANDS]
        states = [a.rng.bit_generator.state for a in agents]
        uniforms = np.stack([a.rng.random(len(chunk) * max_depth) for a in agents])
        used = np.zeros(n, dtype=np.int64)
        chips += kernels.play_fixed(
            profiles, uniforms, used, chunk, start, game.node_player, game.node_children,
            game.node_terminal, game.infoset_of, game.deals, game.payoffs,
        )  # fmt: skip
        for agent, state, count in zip(agents, states, used, strict=True):
            agent.rng.bit_generator.state = state
            agent.rng.random(int(count))
    return chips


@dataclass(frozen=True)
class AgentResult:
    """One agent's result over a duplicate series."""

    name: str
    mbb_per_hand: float  # mean over duplicates of milli-chips won per hand
    standard_error: float | None  # over duplicates; None with a single duplicate
    per_duplicate: tuple[float, ...]


@dataclass(frozen=True)
class DuplicateResult:
    """A duplicate series: every seating of the agents on the same cards, repeated."""

    game: str
    hands: int
    duplicates: int
    seed: int
    agents: tuple[AgentResult, ...]  # in the order the agents were given

    def ranking(self) -> list[AgentResult]:
        """Agents sorted by mbb/h, best first."""
        return sorted(self.agents, key=lambda r: -r.mbb_per_hand)


def seatings(num_players: int) -> list[tuple[int, ...]]:
    """Every seating: entry s of a seating is the agent index in seat s."""
    return list(itertools.permutations(range(num_players)))


def agent_seed(seed: int, duplicate: int, seating: int, agent: int) -> int:
    """The seed of one agent in one match of a duplicate series."""
    sequence = np.random.SeedSequence([seed, _AGENT_TAG, duplicate, seating, agent])
    return int(sequence.generate_state(1, np.uint64)[0] >> np.uint64(1))


def deck_seed(seed: int, duplicate: int) -> int:
    """The seed of the deck shared by the seatings of one duplicate."""
    sequence = np.random.SeedSequence([seed, _DECK_TAG, duplicate])
    return int(sequence.generate_state(1, np.uint64)[0] >> np.uint64(1))


def run_duplicate(
    game: KuhnGame,
    names: Sequence[str],
    factories: Sequence[AgentFactory],
    *,
    hands: int,
    duplicates: int,
    seed: int,
    progress: Callable[[int], object] | None = None,
) -> DuplicateResult:
    """Play ``duplicates`` x n! matches of ``hands`` hands; ``progress(hands_done)`` after each."""
    n = game.num_players
    if len(factories) != n or len(names) != n:
        raise InvalidArgumentError("agents", f"{game.name} needs {n} agents, got {len(factories)}")
    if not isinstance(hands, int) or hands < 1:
        raise InvalidArgumentError("hands", f"must be a positive integer, got {hands!r}")
    if not isinstance(duplicates, int) or duplicates < 1:
        raise InvalidArgumentError("duplicates", f"must be a positive integer, got {duplicates!r}")
    if not isinstance(seed, int) or seed < 0:
        raise InvalidArgumentError("seed", f"must be a non-negative integer, got {seed!r}")
    orders = seatings(n)
    per_duplicate = np.zeros((duplicates, n))
    for dup in range(duplicates):
        deals = deal_sequence(game, hands, deck_seed(seed, dup))
        for j, order in enumerate(orders):
            agents = [factories[i](game, agent_seed(seed, dup, j, i)) for i in order]
            chips = play_match(game, agents, deals)
            for s, i in enumerate(order):
                per_duplicate[dup, i] += chips[s]
            if progress is not None:
                progress(hands)
    per_duplicate *= MILLI / (hands * len(orders))
    results = []
    for i, name in enumerate(names):
        column = per_duplicate[:, i]
        error = float(column.std(ddof=1) / math.sqrt(duplicates)) if duplicates > 1 else None
        results.append(AgentResult(name, float(column.mean()), error, tuple(map(float, column))))
    return DuplicateResult(game.name, hands, duplicates, seed, tuple(results))
