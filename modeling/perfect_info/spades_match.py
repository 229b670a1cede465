"""Spades matches between search agents: the experimental protocol of Sturtevant, Zinkevich &
Bowling (2006) and Sturtevant (2004).

Protocol (Sturtevant, Zinkevich & Bowling 2006, "Experimental Results"; Sturtevant 2004, Table 3):
a *deal sequence* is a seeded stream of 7-card deals (hand ``h`` of sequence ``s`` is dealt from
``default_rng([seed, s, h])``). Each sequence is played six times, once per way of seating two
player types A and B in three seats with both types present (``SEATINGS``, Sturtevant, Zinkevich
& Bowling 2006, Table 3), each time as a full game to 300
(``oppmodel.modeling.games.spades.scoring.Scoreboard``). Every agent bids by the same fixed rule
(``oppmodel.modeling.games.spades.bidding.bid``); the first trick of hand ``h`` is led by seat
``h % 3``.

The player types and their agents: ``oppmodel.modeling.perfect_info.spades_agents``.

Reported per (A, B) experiment: each type's mean final score and share of wins (a tie for the
lead splits the win), with 95% confidence intervals from the t distribution over the deal-sequence
means (the six seatings of one sequence share its cards, so sequences are the independent units);
with learning, the share of (learner, max^n opponent) pairs whose final posterior mean put more
than 1/2 on the opponent's true utility, and less than 0.3 ("far off" in the paper).
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.spades import bidding
from oppmodel.modeling.games.spades.cards import DEFAULT_HAND_SIZE, MAX_HAND_SIZE, deal
from oppmodel.modeling.games.spades.scoring import Scoreboard
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.modeling.perfect_info.spades_agents import (
    MAXN_TYPES,
    SOFT_TYPES,
    Agent,
    ProbMaxnAgent,
    check_type,
    make_agent,
    true_model,
)

SEATINGS = ("AAB", "ABA", "ABB", "BAA", "BAB", "BBA")
_IGNORE_SIGINT = (signal.SIGINT, signal.SIG_IGN)  # a worker's initializer: the parent ends it


@dataclass(frozen=True)
class GameRecord:
    """Result of one game: final scores and bags, each seat's share of the win, hands played,
    and, for learning agents, their final weights for each seat (row = seat, NaN if none)."""

    types: tuple[str, str, str]
    scores: tuple[int, int, int]
    bags: tuple[int, int, int]
    win_shares: tuple[float, float, float]
    hands: int
    learned: tuple[tuple[tuple[float, ...], ...] | None, ...]


def play_game(
    agents: Sequence[Agent],
    *,
    seed: int,
    sequence: int,
    hand_size: int = DEFAULT_HAND_SIZE,
    target: int = 300,
    max_hands: int = 200,
) -> GameRecord:
    """Play one game to ``target`` points on deal sequence ``sequence`` of ``seed``."""
    if len(agents) != 3:
        raise InvalidArgumentError("agents", "a game needs exactly three agents")
    for seat, agent in enumerate(agents):
        agent.start_game(seat)
    board = Scoreboard()
    h = 0
    while h < max_hands and not board.is_over(target):
        hands = deal(np.random.default_rng([seed, sequence, h]), hand_size)
        bids = bidding.bids(hands)
        for agent in agents:
            agent.start_hand(bids)
        state = SpadesState.start(hands, h % 3)
        while not state.is_terminal:
            card = agents[state.turn].choose(state)
            for seat, agent in enumerate(agents):
                if seat != state.turn:
                    agent.observe(state, card)
            state = state.play(card)
        for agent in agents:
            agent.end_hand()
        board = board.after_hand(bids, state.tricks)
        h += 1
    learned = tuple(
        tuple(tuple(float(x) for x in row) for row in a.weights)
        if isinstance(a, ProbMaxnAgent) and a.learning
        else None
        for a in agents
    )
    return GameRecord(
        types=tuple(a.player_type for a in agents),  # type: ignore[arg-type]
        scores=board.scores,
        bags=board.bags,
        win_shares=board.win_shares(),
        hands=h,
        learned=learned,
    )


def seating_types(seating: str, type_a: str, type_b: str) -> tuple[str, str, str]:
    """Player types by seat for one row of ``SEATINGS``."""
    return tuple(type_a if x == "A" else type_b for x in seating)  # type: ignore[return-value]


def play_sequence(
    type_a: str,
    type_b: str,
    *,
    seed: int,
    sequence: int,
    eps: float = 0.1,
    hand_size: int = DEFAULT_HAND_SIZE,
    target: int = 300,
) -> list[GameRecord]:
    """The six games (one per seating) of one deal sequence."""
    out = []
    for k, seating in enumerate(SEATINGS):
        types = seating_types(seating, type_a, type_b)
        agents = [
            make_agent(t, eps=eps, seed=(seed * 7919 + sequence) * 16 + 3 * k + i)
            for i, t in enumerate(types)
        ]
        out.append(
            play_game(agents, seed=seed, sequence=sequence, hand_size=hand_size, target=target)
        )
    return out


@dataclass(frozen=True)
class Estimate:
    """A mean with its 95% confidence interval half-width."""

    mean: float
    half_width: float

    def __str__(self) -> str:
        return f"{self.mean:.1f} ± {self.half_width:.1f}"


def _estimate(per_sequence: np.ndarray) -> Estimate:
    n = per_sequence.size
    mean = float(per_sequence.mean())
    if n < 2:
        return Estimate(mean, float("nan"))
    sem = float(per_sequence.std(ddof=1)) / np.sqrt(n)
    return Estimate(mean, float(stats.t.ppf(0.975, n - 1)) * sem)


@dataclass(frozen=True)
class ExperimentSummary:
    """Sturtevant et al. 2006's table row for one (A, B) experiment, with 95% intervals."""

    type_a: str
    type_b: str
    sequences: int
    games: int
    score_a: Estimate
    score_b: Estimate
    win_pct_a: Estimate
    mean_hands: float
    leaned_true: float | None = None
    far_off: float | None = None
    learned_pairs: int = 0


def summarise(type_a: str, type_b: str, games: Sequence[Sequence[GameRecord]]) -> ExperimentSummary:
    """Summarise ``games[s]`` (the six games of deal sequence s)."""
    score_a, score_b, win_a = [], [], []
    leaned, far, pairs = 0, 0, 0
    for seq in games:
        sa: list[int] = []
        sb: list[int] = []
        wa = 0.0
        for g in seq:
            for seat, t in enumerate(g.types):
                is_a = t == type_a
                (sa if is_a else sb).append(g.scores[seat])
                if is_a:
                    wa += g.win_shares[seat]
            for seat, weights in enumerate(g.learned):
                if weights is None:
                    continue
                for opp, t in enumerate(g.types):
                    if opp == seat or t not in MAXN_TYPES:
                        continue
                    p_true = weights[opp][true_model(t)]
                    pairs += 1
                    leaned += p_true > 0.5
                    far += p_true < 0.3
        score_a.append(np.mean(sa))
        score_b.append(np.mean(sb))
        win_a.append(100.0 * wa / len(seq))
    n_games = sum(len(s) for s in games)
    return ExperimentSummary(
        type_a=type_a,
        type_b=type_b,
        sequences=len(games),
        games=n_games,
        score_a=_estimate(np.array(score_a)),
        score_b=_estimate(np.array(score_b)),
        win_pct_a=_estimate(np.array(win_a)),
        mean_hands=float(np.mean([g.hands for s in games for g in s])),
        leaned_true=100.0 * leaned / pairs if pairs else None,
        far_off=100.0 * far / pairs if pairs else None,
        learned_pairs=pairs,
    )


def _sequence_task(
    args: tuple[str, str, int, int, float, int, int],
) -> tuple[str, str, int, list[GameRecord]]:
    type_a, type_b, seed, sequence, eps, hand_size, target = args
    games = play_sequence(
        type_a, type_b, seed=seed, sequence=sequence, eps=eps, hand_size=hand_size, target=target
    )
    return type_a, type_b, sequence, games


@dataclass(frozen=True)
class MatchResult:
    """All experiments of a match: per (A, B) pair, the games of every deal sequence."""

    seed: int
    eps: float
    hand_size: int
    target: int
    games: dict[tuple[str, str], list[list[GameRecord]]]

    def summary(self, type_a: str, type_b: str) -> ExperimentSummary:
        """Sturtevant et al. 2006's table row for ``type_a`` v. ``type_b``."""
        return summarise(type_a, type_b, self.games[(type_a, type_b)])

    def win_pcts(self, type_a: str, type_b: str) -> np.ndarray:
        """A's %win per deal sequence in experiment (A, B); exactly 50 when A is B (symmetry)."""
        if type_a == type_b:
            return np.full(len(next(iter(self.games.values()))), 50.0)
        return np.array(
            [
                100.0
                * sum(g.win_shares[s] for g in seq for s, t in enumerate(g.types) if t == type_a)
                / len(seq)
                for seq in self.games[(type_a, type_b)]
            ]
        )

    def win_difference(self, first: tuple[str, str], second: tuple[str, str]) -> Estimate:
        """Paired difference of A's %win between two experiments on the same deal sequences."""
        return _estimate(self.win_pcts(*first) - self.win_pcts(*second))


def run_match(
    pairs: Sequence[tuple[str, str]],
    *,
    sequences: int,
    seed: int,
    eps: float = 0.1,
    hand_size: int = DEFAULT_HAND_SIZE,
    target: int = 300,
    jobs: int = 1,
    progress: Callable[[int], object] | None = None,
) -> MatchResult:
    """Play every (A, B) pair on deal sequences ``0..sequences-1``; ``progress(n)`` per sequence.

    ``jobs > 1`` plays sequences in that many worker processes; results do not depend on it.
    """
    if sequences < 1:
        raise InvalidArgumentError("sequences", f"must be >= 1, got {sequences}")
    if jobs < 1:
        raise InvalidArgumentError("jobs", f"must be >= 1, got {jobs}")
    if not 0.0 <= eps <= 1.0:
        raise InvalidArgumentError("eps", f"must be in [0, 1], got {eps}")
    if not 1 <= hand_size <= MAX_HAND_SIZE:
        raise InvalidArgumentError("hand_size", f"must be in 1..{MAX_HAND_SIZE}, got {hand_size}")
    for a, b in pairs:
        check_type(a)
        check_type(b)
        if a == b:
            raise InvalidArgumentError("pairs", f"types A and B must differ, got {a} twice")
        if hand_size > 7 and (a in SOFT_TYPES or b in SOFT_TYPES):
            raise InvalidArgumentError("hand_size", "soft-max^n players need hands of <= 7 cards")
    tasks = [(a, b, seed, s, eps, hand_size, target) for a, b in pairs for s in range(sequences)]
    games: dict[tuple[str, str], list[list[GameRecord]]] = {
        (a, b): [[] for _ in range(sequences)] for a, b in pairs
    }

    def record(out: tuple[str, str, int, list[GameRecord]]) -> None:
        a, b, s, recs = out
        games[(a, b)][s] = recs
        if progress is not None:
            progress(1)

    if jobs == 1:
        for task in tasks:
            record(_sequence_task(task))
    else:
        # leaving the block terminates the workers, also on an exception or Ctrl-C (a
        # ProcessPoolExecutor would wait for every running sequence first); they ignore SIGINT,
        # which a terminal sends them too, so they print no traceback of their own
        with multiprocessing.Pool(jobs, initializer=signal.signal, initargs=_IGNORE_SIGINT) as pool:
            for out in pool.imap_unordered(_sequence_task, tasks):
                record(out)
    return MatchResult(seed=seed, eps=eps, hand_size=hand_size, target=target, games=games)


def wrong_and_correct_maxn(type_b: str, own: str = "mOT") -> tuple[str, str]:
    """The max^n types with our utility ``own`` that model opponent ``type_b`` wrongly / correctly.

    Sturtevant et al. 2006's %Gain compares soft-max^n with max^n under the wrong model (Table 4)
    and prob-max^n with soft-max^n (Table 5); %Loss compares with max^n under the correct model.
    """
    b_own = type_b.split("_")[0]
    other = "MT" if b_own == "mOT" else "mOT"
    return f"{own}_{other}", f"{own}_{b_own}"
