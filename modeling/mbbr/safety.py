"""Safe exploitation: a bankroll that bounds what learning can cost against equilibrium players.

MBBR best-responds to a model that is wrong early in a match; against opponents who cannot be
exploited (a pair of equilibrium players) every such deviation from the default strategy is a loss.
This wrapper sits above any posterior and limits the deviation by a risk budget ``B`` (mbb/h), in
the spirit of Ganzfried & Sandholm's "risk what you've won in expectation" (EC 2012), made exact for
a multiplayer game by keeping one bankroll per *hypothesis* about the opponents.

**Hypotheses.** A guard set G of profiles (in 3-player Kuhn the robust equilibria N1, N2 and N3 of
the family the default N1 is drawn from). A hypothesis o assigns one guard to each opponent seat
offset: o = (g_1, ..., g_{n-1}), the opponent at offset d (always the same player under ACPC
rotation) playing g_d's strategy for whatever position it sits in. There are |G|^(n-1) of them.

**Bankroll.** For each hypothesis, bank(o) starts at 0 and gains B/1000 chips at every hand. The
candidate policy (MBBR's: the default for the first H hands, then its response) is played as a
hand-level mixture with the default, lambda * candidate + (1 - lambda) * default (as the equivalent
behaviour strategy, so its value is linear in lambda), with the largest lambda in [0, 1] such that
bank(o) + lambda * gain(o) >= 0 for every live hypothesis, where gain(o) is the exact expected
value of the candidate minus the default's against o in the current position. After the hand,
bank(o) += lambda * gain(o). A hypothesis dies when a hand is observed that has probability 0
under it (a move no guard of that seat makes with any card consistent with what was seen); dead
hypotheses no longer constrain, so against opponents who show non-equilibrium play the candidate
is played in full.

**Guarantee.** If the opponents follow a hypothesis o in G^(n-1) for the whole match, then for
every T >= 1 and every sequence of T hands that has positive probability (any deals, any actions,
any positions), the sum over those hands of the exact expected value of the policy played minus the
default's, each conditional on the hands before, is at least -B * T / 1000 chips. (o never dies:
every hand it produces has positive probability under it; so bank(o) >= 0 holds after every hand,
and bank(o) is B * T / 1000 plus exactly that sum.) In particular the expected winnings over any
T hands are at least the default's minus B mbb/h; with the default N1 against any pair of N1, N2 and
N3 (where N1 earns exactly 0 over the rotation) the exact learning cost is at most B mbb/h.
Nothing is claimed against opponents outside G^(n-1).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from oppmodel.modeling.evaluation.kuhn import leaf_weights, values_against_weights
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.mbbr.config import MBBRConfig, Response
from oppmodel.modeling.observation import HandObservation


def guard_profiles(game: KuhnGame, default_strategy: np.ndarray) -> tuple[np.ndarray, ...]:
    """The guard set: N1, N2 and N3 in 3-player Kuhn, else the default strategy alone."""
    if game.num_players == 3:
        return tuple(robust_profile(name) for name in ("N1", "N2", "N3"))
    return (np.array(default_strategy, dtype=np.float64),)


def own_reach(game: KuhnGame, position: int, strategy: np.ndarray) -> np.ndarray:
    """(num_infosets,) probability that ``position``'s own actions under ``strategy`` lead to
    each of its information sets (chance and the others' actions left out)."""
    reach = np.zeros((game.num_nodes, game.num_cards))
    reach[0] = 1.0  # the root; children have larger ids than their parents
    out = np.zeros(game.num_infosets)
    for node in range(game.num_nodes):
        player = int(game.node_player[node])
        if player < 0:
            continue
        rows = game.infoset_of[node]
        if player == position:
            out[rows] = reach[node]
        for action in range(2):
            step = strategy[rows, action] if player == position else 1.0
            reach[game.node_children[node, action]] = reach[node] * step
    return out


def mix_strategies(
    game: KuhnGame, position: int, default: np.ndarray, candidate: np.ndarray, share: float
) -> np.ndarray:
    """The behaviour strategy of playing ``candidate`` with probability ``share`` and ``default``
    otherwise, the choice made once per hand: its expected value against any opponents is exactly
    ``share`` * candidate's + (1 - ``share``) * default's (perfect recall)."""
    if share >= 1.0:
        return candidate.copy()
    if share <= 0.0:
        return default.copy()
    rows = game.infosets(position)
    weight_default = (1.0 - share) * own_reach(game, position, default)[rows, None]
    weight_candidate = share * own_reach(game, position, candidate)[rows, None]
    mass = weight_default * default[rows] + weight_candidate * candidate[rows]
    total = mass.sum(axis=1, keepdims=True)
    mixed = default.copy()
    reached = total[:, 0] > 0.0
    mixed[np.asarray(rows)[reached]] = mass[reached] / total[reached]
    return mixed


def covered_share(
    bank: np.ndarray, budget_chips: float, alive: np.ndarray, gains: np.ndarray
) -> float:
    """The largest share in [0, 1] of the candidate such that every live hypothesis's bankroll,
    with this hand's budget, covers the share's expected loss: bank + budget + share * gain >= 0."""
    allowance = bank + budget_chips
    share = 1.0
    for h in np.flatnonzero(alive & (gains < 0.0)):
        share = min(share, max(allowance[h], 0.0) / -gains[h])
    return share


class SafetyBankroll:
    """The bankrolls, live hypotheses and the safe policy of one MBBR model (module docstring)."""

    def __init__(
        self,
        game: KuhnGame,
        default_strategy: np.ndarray,
        budget: float,
        *,
        guards: Sequence[np.ndarray] | None = None,
    ) -> None:
        """``budget``: B in mbb/h (finite, >= 0); ``guards``: the guard set (default
        :func:`guard_profiles`)."""
        n = game.num_players
        self.game = game
        self.default_strategy = default_strategy
        self.budget_chips = budget / 1000.0
        self.guards = (
            tuple(guards) if guards is not None else guard_profiles(game, default_strategy)
        )
        self.hypotheses = list(itertools.product(range(len(self.guards)), repeat=n - 1))
        self._hypothesis_guards = np.array(self.hypotheses, dtype=np.int64).reshape(-1, n - 1)
        self._guard_stack = np.stack(self.guards)  # (guards, n, num_infosets, 2)
        # Per our position: the leaf weights (chance x the opponents' reach x our payoff) of each
        # hypothesis, so that the value of any strategy against all of them is one kernel call.
        self._weights = np.empty((n, len(self.hypotheses), game.num_cards, game.num_terminals))
        for h, assignment in enumerate(self.hypotheses):
            for p in range(n):
                profile = np.array(default_strategy, dtype=np.float64)
                for d, g in enumerate(assignment, start=1):
                    profile[(p + d) % n] = self.guards[g][(p + d) % n]
                self._weights[p, h] = leaf_weights(game, profile, p)
        self._default_value = np.array(
            [self._values(p, default_strategy[p]) for p in range(n)]
        )  # (n, hypotheses)
        self.bank = np.zeros(len(self))  # chips, before this hand's budget
        self.alive = np.ones(len(self), dtype=bool)
        self._compatible: dict[tuple, np.ndarray] = {}
        # per position: (candidate, share, gains per hypothesis, the mixture played)
        self._played: dict[int, tuple[np.ndarray, float, np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.hypotheses)

    def _values(self, p: int, strategy: np.ndarray) -> np.ndarray:
        """(hypotheses,) the expected value of ``strategy`` in position ``p`` under each."""
        return values_against_weights(self.game, strategy, self._weights[p], p)

    def policy(self, position: int, candidate: np.ndarray) -> tuple[np.ndarray, float]:
        """What to play in ``position`` this hand given MBBR's ``candidate``: the mixture with the
        default, and the share of the candidate in it (cached until the next :meth:`record`)."""
        cached = self._played.get(position)
        if cached is not None and np.array_equal(cached[0], candidate):
            return cached[3], cached[1]
        default = self.default_strategy[position]
        if np.array_equal(candidate, default):  # nothing gained or lost: no need to evaluate
            gains = np.zeros(len(self))
        else:
            gains = self._values(position, candidate) - self._default_value[position]
        share = covered_share(self.bank, self.budget_chips, self.alive, gains)
        mixed = mix_strategies(self.game, position, default, candidate, share)
        self._played[position] = (candidate.copy(), share, gains, mixed)
        return mixed.copy(), share

    def record(
        self, obs: HandObservation, candidate: np.ndarray, move_table: tuple[np.ndarray, np.ndarray]
    ) -> None:
        """Book the hand just played in ``obs.position`` (the policy :meth:`policy` gave for
        ``candidate``) into every bankroll, and kill the hypotheses that cannot have produced
        ``obs`` (``move_table``: the opponents' moves in it, ``EvidenceCache.move_table``)."""
        _, share = self.policy(obs.position, candidate)
        gains = self._played[obs.position][2]
        self.bank = self.bank + self.budget_chips + share * gains
        self.alive &= self._compatible_with(obs, move_table)
        self._played.clear()

    def _compatible_with(
        self, obs: HandObservation, move_table: tuple[np.ndarray, np.ndarray]
    ) -> np.ndarray:
        """Which hypotheses give ``obs`` positive probability: some assignment of the hidden
        cards under which no move has probability 0 (cached per distinct observation)."""
        key = (obs.position, obs.history, obs.cards)
        if key not in self._compatible:
            n, p = self.game.num_players, obs.position
            entries, ends = move_table
            offset, infoset, action = entries[:, 0], entries[:, 1], entries[:, 2]
            # impossible[h, e]: move e has probability 0 under hypothesis h
            seat_guard = self._hypothesis_guards[:, offset]  # (hypotheses, moves)
            impossible = self._guard_stack[seat_guard, (p + offset + 1) % n, infoset, action] == 0.0
            before = np.zeros((len(self), len(entries) + 1), dtype=np.int64)
            np.cumsum(impossible, axis=1, out=before[:, 1:])
            starts = np.concatenate(([0], ends[:-1]))
            explained = before[:, ends] - before[:, starts] == 0  # (hypotheses, assignments)
            self._compatible[key] = explained.any(axis=1)
        return self._compatible[key]

    def state(self) -> dict[str, np.ndarray]:
        """What the observations changed: the bankrolls and the live hypotheses."""
        return {"bank": self.bank.copy(), "alive": self.alive.astype(np.int64)}

    def restore(self, bank: np.ndarray, alive: np.ndarray) -> None:
        """Set the state of :meth:`state` (already checked for shape and type)."""
        self.bank = np.array(bank, dtype=np.float64)
        self.alive = np.asarray(alive) != 0
        self._played.clear()

    def nbytes(self) -> int:
        """Bytes of the arrays held (the per-observation cache at one small array per entry)."""
        arrays = (self._weights, self._default_value, self.bank, self.alive)
        return sum(a.nbytes for a in arrays) + len(self._compatible) * (len(self) + 100)


def is_off(budget: float) -> bool:
    """An infinite budget never binds: no wrapper at all (plain MBBR)."""
    return math.isinf(budget)


class SafelyPlayed:
    """What a model that owns a safety bankroll plays: its candidate (the default strategy for the
    first H hands, then its response), mixed with the default as far as the bankroll allows. The
    posteriors' base and the change-detection bank both play this way."""

    game: KuhnGame
    config: MBBRConfig
    default_strategy: np.ndarray
    hands_observed: int
    _safety: SafetyBankroll | None

    def response(
        self, our_position: int, kind: Response | str | None = None
    ) -> tuple[np.ndarray, float]:
        raise NotImplementedError

    def policy(self, our_position: int) -> np.ndarray:
        """What the agent plays: the default strategy for the first H hands, then the response;
        with a finite ``config.safety_budget``, mixed with the default as far as the safety
        bankroll allows (it changes after every hand, whatever the position)."""
        candidate = self._candidate(our_position)
        if self._safety is None:
            return candidate
        return self._safety.policy(our_position, candidate)[0]

    def safety_share(self, our_position: int) -> float:
        """The share of the response in what is played in ``our_position`` now (1 without a
        safety budget)."""
        if self._safety is None:
            self.game.check_position(our_position, "our_position")
            return 1.0
        return self._safety.policy(our_position, self._candidate(our_position))[1]

    def _candidate(self, our_position: int) -> np.ndarray:
        """The unconstrained policy: the default for the first H hands, then the response."""
        if self.hands_observed < self.config.hands_default:
            self.game.check_position(our_position, "our_position")
            return self.default_strategy[our_position].copy()
        return self.response(our_position)[0]
