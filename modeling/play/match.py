"""An in-process match engine: repeated play of any compiled limit game (Kuhn from its game file,
Leduc, ...), with ACPC rotation, and duplicate matches.

A *match* seats n agents and plays ``hands`` hands. As the ACPC dealer does, positions rotate
every hand: in hand h the agent in seat s plays position (s - h) mod n, so each agent meets every
position equally often and the opponent at seat offset d from it is always the same agent. An agent
is told at the start who sits in every seat (their names), acts with its private cards and the
public betting only, and after each hand is told what its seat saw: its own cards, the board, and
other players' cards only at a showdown and only for players who did not fold
(:func:`oppmodel.modeling.observation.observe_limit_hand`).

*Duplicate* matches (Ganzfried et al. 2024's protocol) play the same cards in every one of the n!
seatings of the n agents: the deal of hand h (hole cards by position and, in a limit game, the
board) is drawn per duplicate from a seeded deck, and every seating replays it. An agent's luck of
the cards then cancels over the seatings, so the variance left is mostly that of the agents' own
decisions. Each agent's result is its win rate in the game's unit (``game.rate_unit``: milli-antes
per hand in an ante game such as Kuhn, milli-big-blinds with blinds; see
``oppmodel.modeling.games.units``), averaged over the seatings of one duplicate; the standard error
is over the independent duplicates (sample standard deviation / sqrt(duplicates)).

Agents are built fresh for every match from factories ``factory(game, seed) -> Agent``, so nothing
leaks between matches. Every seed is derived from one match seed with ``numpy.random.SeedSequence``:
the same seed gives the same table, bit for bit, run to run.

When every agent plays a fixed table (:class:`FixedStrategyAgent`), a numba kernel plays the whole
match (``_match_kernels``); it consumes each agent's uniforms in the same order as the Python loop,
so both paths give identical results (a test checks this).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import validate_profile
from oppmodel.modeling.games.units import RateUnit
from oppmodel.modeling.observation import LimitObservation, observe_limit_hand
from oppmodel.modeling.play import _match_kernels as kernels

if TYPE_CHECKING:
    from oppmodel.modeling.games.interface import MatchGame

FIXED_CHUNK_HANDS = 1 << 16  # hands per kernel call (bounds the uniforms held in memory)
_DECK_TAG, _AGENT_TAG = 0, 1  # keep the deck's and the agents' seed streams apart


@runtime_checkable
class Agent(Protocol):
    """A player of a repeated game that sees only what its seat sees."""

    name: str

    def begin_match(self, game: LimitGame, seat: int, names: Sequence[str]) -> None:
        """Called once before the first hand, with the game the factory built it for, its seat
        and the name of the agent in every seat (``names[(seat + d) % n]`` is the opponent ``d``
        seats after it, in every hand of the match)."""

    def act(self, position: int, view: int, betting: str) -> int:
        """The action of ``position`` holding ``view`` (hole and board cards so far, an index
        into ``game.view_strings[round]``) after the ACPC ``betting``: 0 = fold, 1 = check/call,
        2 = bet/raise."""
        ...

    def end_hand(self, obs: LimitObservation) -> None:
        """What this seat saw of the finished hand."""


# (game, seed) -> a fresh agent
AgentFactory = Callable[[LimitGame, int], Agent]
# a factory of agents of either kind of game (its agents: Agent, or a hold'em PolicyAgent)
MatchFactory = Callable[[Any, int], Any]


def require_game(name: str, built_for: LimitGame, game: LimitGame) -> None:
    """An agent's ``begin_match`` check: InvalidArgumentError naming ``game`` unless the match is
    of the game the agent ``name`` was built for."""
    if game is not built_for:
        raise InvalidArgumentError("game", f"agent {name} was built for {built_for.name}")


class FixedStrategyAgent:
    """Plays ``profile[position]`` in every position, sampling with its own seeded generator.

    One uniform is drawn per decision: it folds below P(fold), calls below P(fold) + P(call),
    else raises. The numba match kernel draws the same uniforms in the same order and chooses the
    same way.
    """

    def __init__(self, name: str, game: LimitGame, profile: np.ndarray, seed: int) -> None:
        self.name = name
        self.game = game
        self.profile = validate_profile(game, profile)
        self.rng = np.random.default_rng(seed)

    def begin_match(self, game: LimitGame, seat: int, names: Sequence[str]) -> None:
        require_game(self.name, self.game, game)

    def act(self, position: int, view: int, betting: str) -> int:
        node = self.game.node(betting)
        row = self.profile[position, int(self.game.tree.node_base[node]) + view]
        return limit_action(self.game, node, row, self.rng.random())

    def end_hand(self, obs: LimitObservation) -> None:
        return None


def limit_action(game: LimitGame, node: int, row: np.ndarray, u: float) -> int:
    """The action one uniform ``u`` picks from ``row`` (fold, call, raise) at ``node``, as the
    match kernel picks it (a raise left by rounding past the cap is a call)."""
    fold = row[0]
    action = 0 if u < fold else 1 if u < fold + row[1] else 2
    if action == 2 and game.tree.node_children[node, 2] < 0:
        return 1
    return action


def sample_terminal(
    game: LimitGame, profile: np.ndarray, deal: int, rng: np.random.Generator
) -> int:
    """The terminal (index into the game's terminals) of one hand of deal ``deal`` played from
    ``profile`` by every position, one uniform of ``rng`` per decision."""
    tree = game.tree
    node = 0
    while tree.node_player[node] >= 0:
        p = tree.node_player[node]
        infoset = tree.node_base[node] + tree.deal_view[tree.node_round[node], deal, p]
        node = tree.node_children[node, limit_action(game, node, profile[p, infoset], rng.random())]
    return int(tree.node_terminal[node])


def fixed_strategy_factory(name: str, profile: np.ndarray) -> AgentFactory:
    """A factory of :class:`FixedStrategyAgent` playing ``profile``."""

    def build(game: LimitGame, seed: int) -> FixedStrategyAgent:
        return FixedStrategyAgent(name, game, profile, seed)

    return build


def play_match(game: LimitGame, agents: Sequence[Agent], deals: np.ndarray) -> np.ndarray:
    """Play one hand per entry of ``deals`` (``LimitGame.deal_sequence``); chips won per seat."""
    n = game.num_players
    if len(agents) != n:
        raise InvalidArgumentError("agents", f"{game.name} needs {n} agents, got {len(agents)}")
    for seat, agent in enumerate(agents):
        if not isinstance(agent, Agent):
            raise InvalidArgumentError(
                f"agents[{seat}]", f"{agent!r} lacks name, begin_match, act or end_hand"
            )
    names = tuple(agent.name for agent in agents)
    for seat, agent in enumerate(agents):
        agent.begin_match(game, seat, names)
    fixed = [a for a in agents if type(a) is FixedStrategyAgent]
    if len(fixed) == n:
        return _play_fixed(game, fixed, deals)
    tree = game.tree
    node_player = tree.node_player.tolist()
    node_round = tree.node_round.tolist()
    children = tree.node_children.tolist()
    terminal_of = tree.node_terminal.tolist()
    deal_view = tree.deal_view.tolist()
    bettings = game.bettings
    chips = [0.0] * n
    for h, d in enumerate(np.asarray(deals).tolist()):
        node = 0
        while node_player[node] >= 0:
            p = node_player[node]
            agent = agents[(p + h) % n]
            action = agent.act(p, deal_view[node_round[node]][d][p], bettings[node])
            if (
                not isinstance(action, (int, np.integer))
                or not 0 <= action < 3
                or children[node][action] < 0
            ):
                raise IllegalActionError(
                    "action", f"agent {agent.name} returned {action!r} after {bettings[node]!r}"
                )
            node = children[node][action]
        t = terminal_of[node]
        share = tree.share[tree.terminal_class[t], d]
        pot = tree.terminal_pot[t]
        for p in range(n):
            seat = (p + h) % n
            chips[seat] += float(share[p] * pot - tree.terminal_spent[t, p])
            agents[seat].end_hand(observe_limit_hand(game, p, d, t))
    return np.array(chips)


def _play_fixed(
    game: LimitGame, agents: Sequence[FixedStrategyAgent], deals: np.ndarray
) -> np.ndarray:
    """The numba twin of the Python loop, in chunks of hands to bound memory.

    Each chunk draws an upper bound of uniforms per agent (the longest betting per hand);
    afterwards every generator is rewound and advanced by exactly the uniforms used, so its
    stream is the one the Python loop would have consumed.
    """
    n = game.num_players
    max_depth = game.tree.max_depth
    profiles = np.stack([a.profile for a in agents])
    deals = np.asarray(deals, dtype=np.int64)
    chips = np.zeros(n)
    for start in range(0, len(deals), FIXED_CHUNK_HANDS):
        chunk = deals[start : start + FIXED_CHUNK_HANDS]
        states = [a.rng.bit_generator.state for a in agents]
        uniforms = np.stack([a.rng.random(len(chunk) * max_depth) for a in agents])
        used = np.zeros(n, dtype=np.int64)
        chips += kernels.play_fixed(profiles, uniforms, used, chunk, start, game.tree)
        for agent, state, count in zip(agents, states, used, strict=True):
            agent.rng.bit_generator.state = state
            agent.rng.random(int(count))
    return chips


@dataclass(frozen=True)
class AgentResult:
    """One agent's result over a duplicate series."""

    name: str
    rate: float  # mean over duplicates of the win rate (milli-units per hand, the series' unit)
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
    unit: RateUnit  # the game's: what every rate is in

    def ranking(self) -> list[AgentResult]:
        """Agents sorted by win rate, best first."""
        return sorted(self.agents, key=lambda r: -r.rate)

    def result_json(self, result: AgentResult) -> dict:
        """One agent's result as JSON, its rate keyed by the unit (``"mbb_per_hand"``, ...)."""
        return {
            "name": result.name,
            self.unit.key: result.rate,
            "standard_error": result.standard_error,
            "per_duplicate": list(result.per_duplicate),
        }


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
    game: MatchGame,
    names: Sequence[str],
    factories: Sequence[MatchFactory],
    *,
    hands: int,
    duplicates: int,
    seed: int,
    progress: Callable[[int], object] | None = None,
) -> DuplicateResult:
    """Play ``duplicates`` x n! matches of ``hands`` hands; ``progress(hands_done)`` after each."""
    if not isinstance(duplicates, int) or duplicates < 1:
        raise InvalidArgumentError("duplicates", f"must be a positive integer, got {duplicates!r}")
    _check_series(game, names, factories, hands, seed)
    rows = [
        play_duplicate(game, factories, hands=hands, seed=seed, duplicate=dup, progress=progress)
        for dup in range(duplicates)
    ]
    return summarize(game, names, rows, hands=hands, seed=seed)


def play_duplicate(
    game: MatchGame,
    factories: Sequence[MatchFactory],
    *,
    hands: int,
    seed: int,
    duplicate: int,
    progress: Callable[[int], object] | None = None,
) -> np.ndarray:
    """The win rate (``game.rate_unit``) of each agent over the n! seatings of duplicate number
    ``duplicate`` of the series seeded ``seed``: one row of :func:`run_duplicate`, so that the
    duplicates of a series can be played on several processes and gathered by :func:`summarize`
    into the same result."""
    n = game.num_players
    orders = seatings(n)
    row = np.zeros(n)
    deck = deck_seed(seed, duplicate)
    deals = game.deal_sequence(hands, deck)
    for j, order in enumerate(orders):
        agents = [factories[i](game, agent_seed(seed, duplicate, j, i)) for i in order]
        chips = game.play_hands(agents, deals)
        for s, i in enumerate(order):
            row[i] += chips[s]
        if progress is not None:
            progress(hands)
    return np.array([game.rate_unit.rate(won, hands * len(orders)) for won in row])


def summarize(
    game: MatchGame, names: Sequence[str], rows: Sequence[np.ndarray], *, hands: int, seed: int
) -> DuplicateResult:
    """The series result of per-duplicate rows (:func:`play_duplicate`, in duplicate order)."""
    per_duplicate = np.array(rows, dtype=float).reshape(len(rows), game.num_players)
    duplicates = len(rows)
    results = []
    for i, name in enumerate(names):
        column = per_duplicate[:, i]
        error = float(column.std(ddof=1) / math.sqrt(duplicates)) if duplicates > 1 else None
        results.append(AgentResult(name, float(column.mean()), error, tuple(map(float, column))))
    return DuplicateResult(game.name, hands, duplicates, seed, tuple(results), game.rate_unit)


def _check_series(
    game: MatchGame,
    names: Sequence[str],
    factories: Sequence[MatchFactory],
    hands: int,
    seed: int,
) -> None:
    n = game.num_players
    if len(factories) != n or len(names) != n:
        raise InvalidArgumentError("agents", f"{game.name} needs {n} agents, got {len(factories)}")
    if not isinstance(hands, int) or hands < 1:
        raise InvalidArgumentError("hands", f"must be a positive integer, got {hands!r}")
    if not isinstance(seed, int) or seed < 0:
        raise InvalidArgumentError("seed", f"must be a non-negative integer, got {seed!r}")
