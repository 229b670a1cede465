"""The safety bankroll in limit games (Leduc, ...): what learning costs against opponents who play
the default strategy is bounded by a budget ``B``, in the game's unit (``game.rate_unit``: mA/h in
ante games such as Kuhn and Leduc, mbb/h with blinds).

In the spirit of Ganzfried & Sandholm's "risk what you've won in expectation" (EC 2012), made exact
for a multiplayer game by keeping one bankroll per *hypothesis* about the opponents, and made to
fit a game of 25,800 information sets and a default strategy of full support.

**Hypotheses.** A guard set G of profiles, by default the model's default strategy alone (the
game's solved strategy; in 3-player Kuhn the family N1, N2, N3 the default N1 is drawn from): a
hypothesis o assigns one guard to each
opponent seat offset, so by default there is one, "every opponent plays the default".

**Bankroll, per hand and hole.** bank(o) starts at 0 and gains B/1000 units at every hand (B/1000
chips with an ante of 1 chip, B x 2/1000 chips with a big blind of 2). What is played is the
hand-level mixture lambda * candidate + (1 - lambda) * default, the candidate being MBBR's policy
(the default for the first H hands, then its response), and lambda is chosen once we know our
position *and our hole cards*: the largest lambda in [0, 1] with bank(o) + lambda *
gain(o) >= 0 for every live o, where gain(o) is the exact expected value of the candidate minus the
default's against o, conditional on the position and the hole (one sweep of the limit evaluation
kernel over the deals of that hole: 1/8 of Leduc 3p's, the part of the tree the response for that
hole was solved on). After the hand bank(o) += lambda * gain(o). Conditioning on the hole costs
nothing in the guarantee (the hole is known before we act, as the position is) and lets the holes
where the response is safe play it in full.

**Ruling a hypothesis out.** The bundled CFR strategies give every legal action positive
probability, so unlike Kuhn's N1-N3 no move is impossible under them and a hypothesis would
never die: the bankroll would bind against the weakest opponent. A hypothesis o dies when what
was seen is impossible under o or when the likelihood ratio of all hands seen so far,
under MBBR's own opponent models (the posterior means before each hand) against under o, reaches
``RULE_OUT_ODDS``. Each hand's ratio is the probability of the opponents' moves summed over the
hidden cards, our own moves and the deal cancelling; the models are fixed before the hand, so
under o the running product is a nonnegative supermartingale of mean at most 1 and, by Ville's
inequality, reaches ``RULE_OUT_ODDS`` with probability at most 1 / ``RULE_OUT_ODDS`` over a
match of any length.

**Guarantee.** If the opponents play the guards of a hypothesis o for the whole match, then on
every path of play on which o is alive, for every T, the sum over the first T hands of the exact
expected value of the policy played minus the default's, each conditional on the hands before
and on that hand's position and hole, is at least -B * T / 1000 units. o dies with probability at
most 1 / ``RULE_OUT_ODDS``, after which a hand can cost at most the widest range of one hand's
payoff, ``payoff_range`` (R chips). So the exact expected learning cost against opponents who play
the default strategy is at most B + 1000 * R / (u * ``RULE_OUT_ODDS``) in the game's unit, u chips
to the unit (Leduc 3p: R = 39, u = 1, the second term 3.9e-5 mA/h). Nothing is claimed against
opponents outside G^(n-1).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from oppmodel.modeling.evaluation import _limit_kernels as evaluation_kernels
from oppmodel.modeling.games.acpc.limit_game import LimitGame, LimitTree
from oppmodel.modeling.mbbr._safety_kernels import mix_rows
from oppmodel.modeling.mbbr.evidence import Evidence, hand_likelihood, mover_seats
from oppmodel.modeling.observation import LimitObservation

RULE_OUT_ODDS = 1e9  # likelihood ratio, models against a hypothesis, that rules the hypothesis out


def payoff_range(game: LimitGame) -> float:
    """Chips between the best and the worst payoff any position can get in one hand: the most a
    hand's expected value can differ between two policies."""
    tree = game.tree
    spent = tree.terminal_spent
    return float((tree.terminal_pot[:, None] - spent).max() + spent.max())


def is_off(budget: float) -> bool:
    """An infinite budget never binds: no bankroll at all (plain MBBR)."""
    return math.isinf(budget)


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
    """The bankrolls, live hypotheses and safe policy of one limit-game MBBR model (see the
    module docstring). Policies are asked per (position, hole): ``hole`` indexes
    ``holes.hole_split(game)``'s holes of the position and ``rows`` are its information
    sets."""

    def __init__(
        self,
        game: LimitGame,
        default_strategy: np.ndarray,
        budget: float,
        *,
        holes: Sequence[Sequence[np.ndarray]],
        subtrees: Sequence[Sequence[LimitTree]],
        guards: Sequence[np.ndarray] | None = None,
    ) -> None:
        """``budget``: B in the game's unit (``game.rate_unit``; finite, >= 0); ``holes[p][h]``: the
        information sets of hole h of position p, ``subtrees[p][h]``: the tree over its deals
        (``hole_split``); ``guards``: the guard set (default: the default strategy alone)."""
        n = game.num_players
        self.game = game
        self.default_strategy = default_strategy
        self.budget_chips = game.rate_unit.to_chips(budget)
        self.guards = tuple(guards) if guards is not None else (default_strategy,)
        self.hypotheses = list(itertools.product(range(len(self.guards)), repeat=n - 1))
        self._holes = holes
        self._scratch = np.array(default_strategy, dtype=np.float64)  # our rows, per position
        self._own_reach = np.zeros(game.num_infosets)
        # Per (position, hole): the views of each line of our cards (a hole and its boards) by
        # round; per (hypothesis, position, hole): each terminal's worth per line against the
        # guards, and the default's value over the hole's deals.
        self._lines = [[_lines_of(game, p, tree) for tree in subtrees[p]] for p in range(n)]
        self._deals = [[float(len(tree.deal_view[0])) for tree in subtrees[p]] for p in range(n)]
        self._leaf: dict[tuple[int, int, int], np.ndarray] = {}
        self._default_value = np.zeros((len(self), n, max(len(h) for h in holes)))
        self._default_reach = np.zeros((n, game.num_infosets))
        for o, assignment in enumerate(self.hypotheses):
            for p in range(n):
                seated = np.array(default_strategy, dtype=np.float64)
                for d, g in enumerate(assignment, start=1):
                    seated[(p + d) % n] = self.guards[g][(p + d) % n]
                for h, tree in enumerate(subtrees[p]):
                    columns, views = self._lines[p][h]
                    leaf = np.zeros((game.num_terminals, views.shape[1]))
                    evaluation_kernels.fixed_others_leaf_values(tree, seated, p, columns, leaf)
                    self._leaf[o, p, h] = leaf
                    self._default_value[o, p, h] = self._value(o, p, h, default_strategy[p])
                    rows = holes[p][h]
                    self._default_reach[p, rows] = self._own_reach[rows]
        self.bank = np.zeros(len(self))  # chips, before this hand's budget
        self.alive = np.ones(len(self), dtype=bool)
        self.log_odds = np.zeros(len(self))  # log likelihood ratio, models against hypothesis
        # (position, hole) -> (the caller's stamp, share, gains per hypothesis, the rows played)
        self._played: dict[tuple[int, int], tuple[object, float, np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.hypotheses)

    def _value(self, o: int, p: int, h: int, strategy: np.ndarray) -> float:
        """Value over the hole's deals of our ``strategy`` (I, 3) against hypothesis ``o``, with
        our own reach of the hole's information sets left in ``_own_reach``."""
        views = self._lines[p][h][1]
        reach = np.empty((self.game.tree.node_player.shape[0], views.shape[1]))
        return evaluation_kernels.own_strategy_value(
            self.game.tree, strategy, p, views, self._leaf[o, p, h], reach, self._own_reach
        )

    def policy(
        self, position: int, hole: int, candidate: np.ndarray | None, stamp: object = None
    ) -> tuple[np.ndarray, float]:
        """The rows to play at hole ``hole`` of ``position`` this hand (do not modify them) and
        the candidate's share in them, given the candidate's rows there (None: the default's).
        Cached until the next :meth:`record` for as long as the caller's ``stamp`` (which must
        change whenever the candidate does) stays the same."""
        key = (position, hole)
        cached = self._played.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[3], cached[1]
        rows = self._holes[position][hole]
        gains = np.zeros(len(self))
        share = 1.0
        if candidate is None:
            mixed = self.default_strategy[position, rows]
        elif not self.alive.any():
            mixed = candidate
        else:
            strategy = self._scratch[position]
            strategy[rows] = candidate
            for o in np.flatnonzero(self.alive):
                value = self._value(int(o), position, hole, strategy)
                gain = value - self._default_value[o, position, hole]
                gains[o] = gain / self._deals[position][hole]
            share = covered_share(self.bank, self.budget_chips, self.alive, gains)
            if share >= 1.0:
                mixed = candidate
            elif share <= 0.0:
                mixed = self.default_strategy[position, rows]
            else:
                mixed = np.empty_like(candidate)
                default = self.default_strategy[position]
                reach = self._default_reach[position]
                mix_rows(default, candidate, rows, reach, self._own_reach, share, mixed)
        self._played[key] = (stamp, share, gains, mixed)
        return mixed, share

    def record(
        self,
        obs: LimitObservation,
        hole: int,
        candidate: np.ndarray | None,
        stamp: object,
        evidence: Evidence,
        models: np.ndarray,
    ) -> None:
        """Book the hand just played in ``obs.position`` with hole ``hole`` (the policy
        :meth:`policy` gave for ``candidate`` and ``stamp``) into every bankroll, and
        rule out the hypotheses that ``obs`` (its ``evidence``) makes impossible or, with the
        hands before, ``RULE_OUT_ODDS`` times less likely than the opponent ``models`` (the
        profile MBBR's response was computed from before this hand) do."""
        _, share = self.policy(obs.position, hole, candidate, stamp)
        gains = self._played[(obs.position, hole)][2]
        self.bank = self.bank + self.budget_chips + share * gains
        if self.alive.any():
            self._weigh(obs.position, evidence, models)
        self._played.clear()

    def _weigh(self, p: int, evidence: Evidence, models: np.ndarray) -> None:
        """Multiply each live hypothesis's odds by this hand's likelihood ratio (see the module
        docstring), killing it at probability 0 or at ``RULE_OUT_ODDS``."""
        rows = evidence.rows  # (assignments, moves, (offset - 1, information set, action))
        seats = mover_seats(evidence, p, self.game.num_players)
        alternative = hand_likelihood(evidence, p, models)
        for o in np.flatnonzero(self.alive):
            likelihood = np.ones(len(rows))
            for j in range(rows.shape[1]):  # a move's mover is the same in every assignment
                guard = self.guards[self.hypotheses[o][rows[0, j, 0]]]
                likelihood *= guard[seats[:, j], rows[:, j, 1], rows[:, j, 2]]
            under = float(likelihood.sum())
            if under <= 0.0:
                self.alive[o] = False
                continue
            # a ratio of 0 (the models call the hand impossible) sets the odds to 0 for good
            ratio = math.log(alternative / under) if alternative > 0.0 else -math.inf
            self.log_odds[o] += ratio
            self.alive[o] = self.log_odds[o] < math.log(RULE_OUT_ODDS)

    def state(self) -> dict[str, np.ndarray]:
        """What the observations changed: the bankrolls, the live hypotheses and their odds."""
        return {
            "bank": self.bank.copy(),
            "alive": self.alive.astype(np.int64),
            "log_odds": self.log_odds.copy(),
        }

    def restore(self, bank: np.ndarray, alive: np.ndarray, log_odds: np.ndarray) -> None:
        """Set the state of :meth:`state` (already checked for shape and type)."""
        self.bank = np.array(bank, dtype=np.float64)
        self.alive = np.asarray(alive) != 0
        self.log_odds = np.array(log_odds, dtype=np.float64)
        self._played.clear()

    def nbytes(self) -> int:
        """Bytes of the arrays held."""
        arrays = [self._scratch, self._own_reach, self._default_reach, self._default_value]
        arrays += [self.bank, self.alive, self.log_odds, *self._leaf.values()]
        arrays += [a for by_hole in self._lines for line in by_hole for a in line]
        return sum(a.nbytes for a in arrays)


def _lines_of(game: LimitGame, p: int, tree: LimitTree) -> tuple[np.ndarray, np.ndarray]:
    """For the deals of ``tree`` (one hole of position ``p``): the line (column) of each deal,
    one per view ``p`` has in the last round, and the (rounds, lines) views of ``p`` along each
    line (its earlier views follow from the last one: players remember their cards)."""
    last = tree.deal_view[-1, :, p]
    _, first, columns = np.unique(last, return_index=True, return_inverse=True)
    views = np.ascontiguousarray(tree.deal_view[:, first, p])
    return columns.astype(np.int64), views.astype(np.int64)
