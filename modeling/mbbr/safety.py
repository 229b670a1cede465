"""The safety bankroll (docs/modeling.md, "The safety budget"; after Ganzfried & Sandholm, EC
2012, made exact per hypothesis o: one guard of the set G per opponent seat offset). bank(o) gains
B/1000 units a hand; MBBR plays lambda * candidate + (1 - lambda) * anchor, lambda the largest in
[0, 1] with bank(o) + lambda * gain(o) >= 0 for every live o (gain: the candidate's exact expected
value minus the anchor's against o, given position and hole), and books the expectation over the
position's holes of lambda * gain(o): each hole's share is covered, so their mean is, and the bank
then bounds the hole-averaged value a match's exact learning cost sums on every path, not only in
expectation (booking the hand's hole alone bounded the realised holes' sum). The anchor is the
default, but while a pair of different guards (no Nash profile in 3-player Kuhn, whatever we play)
is the only live hypothesis it is a best response to that pair that keeps the default wherever
the default is already best (``evaluation.limit.improving_response``): against that pair it gains
over the default, so the bound there still holds, and against pairs near it (other members of the
family, near-members) it wins what the default held back. o dies
at a hand impossible under it or once ``mixture_log_odds`` reaches ``RULE_OUT_ODDS`` (Ville's
inequality: the true o dies with probability at most 1 / ``RULE_OUT_ODDS``). Against the guards
the expected learning cost is at most B + 1000 R / (u ``RULE_OUT_ODDS``), R =
``evaluation.limit.payoff_range`` chips, u chips to the unit; nothing is claimed outside G^(n-1).
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable

import numpy as np

from oppmodel.modeling.evaluation import _limit_kernels as evaluation_kernels
from oppmodel.modeling.evaluation.limit import deal_lines, improving_response
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.solved import safety_guards
from oppmodel.modeling.mbbr._limit_kernels import mix_rows
from oppmodel.modeling.mbbr.evidence import Evidence, hand_likelihood
from oppmodel.modeling.mbbr.holes import hole_split
from oppmodel.modeling.mbbr.snapshot import take
from oppmodel.modeling.observation import LimitObservation

RULE_OUT_ODDS = 1e9  # likelihood ratio, models against a hypothesis, that rules the hypothesis out


class SafetyBankroll:
    """The bankrolls, live hypotheses and safe policy of one limit-game MBBR model (see the
    module docstring), the guard set G the game's (``solved.safety_guards``). Policies are asked
    per (position, hole): ``hole`` indexes ``holes.hole_split(game)``'s holes of the position
    and ``rows`` are its information sets."""

    def __init__(self, game: LimitGame, default_strategy: np.ndarray, budget: float) -> None:
        """``budget``: B in the game's unit (``game.rate_unit``; finite, >= 0)."""
        n = game.num_players
        self.game = game
        self.default_strategy = default_strategy
        self.budget_chips = game.rate_unit.to_chips(budget)
        self.guards = safety_guards(game, default_strategy)
        split = hole_split(game)  # per position and hole: its information sets, its deals' tree
        holes, subtrees = split.infosets_of_hole, split.subtrees
        self.hypotheses = list(itertools.product(range(len(self.guards)), repeat=n - 1))
        self._holes = holes
        self._scratch = np.array(default_strategy, dtype=np.float64)  # our rows, per position
        self._own_reach = np.zeros(game.num_infosets)
        # Per (position, hole): the views of each line of our cards (a hole and its boards) by
        # round; per (hypothesis, position, hole): each terminal's worth per line against the
        # guards, and the default's value over the hole's deals.
        self._lines = [[deal_lines(game, p, tree) for tree in subtrees[p]] for p in range(n)]
        self._deals = [[float(len(tree.deal_view[0])) for tree in subtrees[p]] for p in range(n)]
        self._leaf: dict[tuple[int, int, int], np.ndarray] = {}
        self._default_value = np.zeros((len(self), n, max(len(h) for h in holes)))
        self._default_reach = np.zeros((n, game.num_infosets))
        # per (hypothesis, our position): the profile with its guards in the opponents' seats
        self._seated = np.tile(np.asarray(default_strategy, np.float64), (len(self), n, 1, 1, 1))
        for o, assignment in enumerate(self.hypotheses):
            for p in range(n):
                seated = self._seated[o, p]
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
        # per hypothesis: its anchor (see the module docstring), with its value against it and
        # its own reach per (position, hole); the default but for a pair of different guards
        self._anchor = np.tile(np.asarray(default_strategy, np.float64), (len(self), 1, 1, 1))
        self._anchor_value = self._default_value.copy()
        self._anchor_reach = np.tile(self._default_reach, (len(self), 1, 1))
        for o in (o for o, guards in enumerate(self.hypotheses) if len(set(guards)) > 1):
            for p in range(n):
                response = improving_response(game, self._seated[o, p], p)
                for h, rows in enumerate(holes[p]):
                    self._anchor[o, p, rows] = response[rows]
                    self._anchor_value[o, p, h] = self._value(o, p, h, self._anchor[o, p])
                    self._anchor_reach[o, p, rows] = self._own_reach[rows]
        self.bank = np.zeros(len(self))  # chips, before this hand's budget
        self.alive = np.ones(len(self), dtype=bool)
        self.live = True  # some hypothesis is alive
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
        cached = self._played.get((position, hole))
        if cached is not None and cached[0] == stamp:
            return cached[3], cached[1]
        rows = self._holes[position][hole]
        gains = np.zeros(len(self))
        share = 1.0
        if candidate is None:
            mixed = self.default_strategy[position, rows]
        elif not self.live:
            mixed = candidate
        else:
            live = np.flatnonzero(self.alive)
            k = int(live[0]) if len(live) == 1 else None  # the sole live hypothesis's anchor
            anchor = self.default_strategy if k is None else self._anchor[k]
            anchored = self._default_value if k is None else self._anchor_value
            strategy = self._scratch[position]
            strategy[rows] = candidate
            for o in live:
                value = self._value(int(o), position, hole, strategy)
                gains[o] = (value - anchored[o, position, hole]) / self._deals[position][hole]
            # the largest share whose expected loss every live bankroll, with this hand's
            # budget, covers: bank + budget + share * gain >= 0
            for o in np.flatnonzero(self.alive & (gains < 0.0)):
                share = min(share, max(self.bank[o] + self.budget_chips, 0.0) / -gains[o])
            if share >= 1.0:
                mixed = candidate
            elif share <= 0.0:
                mixed = anchor[position, rows]
            else:
                mixed = np.empty_like(candidate)
                reach = (self._default_reach if k is None else self._anchor_reach[k])[position]
                mix_rows(anchor[position], candidate, rows, reach, self._own_reach, share, mixed)
        self._played[position, hole] = (stamp, share, gains, mixed)
        return mixed, share

    def record(
        self,
        obs: LimitObservation,
        candidate: Callable[[int], tuple[np.ndarray | None, object]],
        evidence: Evidence,
        models: Callable[[int], np.ndarray],
    ) -> None:
        """Book the hand just played in ``obs.position`` into every bankroll: the expectation,
        over the position's holes, of what :meth:`policy` plays at each (for the
        ``candidate(h)`` rows and stamp of hole h), and rule out the hypotheses that ``obs``
        (its ``evidence``) makes impossible or, with the hands before, ``RULE_OUT_ODDS`` times
        less likely than the opponent models of the position (``models(position)``: the profile
        MBBR's response was computed from before this hand) do. With none live every share is 1
        and every gain 0: the budget alone."""
        if self.live:
            p, booked = obs.position, np.zeros(len(self))
            for h, deals in enumerate(self._deals[p]):  # every deal equally likely
                _, share = self.policy(p, h, *candidate(h))
                booked += deals * share * self._played[(p, h)][2]
            self.bank = self.bank + self.budget_chips + booked / sum(self._deals[p])
            self._weigh(p, evidence, models(p))
            self.live = bool(self.alive.any())
        else:
            self.bank = self.bank + self.budget_chips
        self._played.clear()

    def _weigh(self, p: int, evidence: Evidence, models: np.ndarray) -> None:
        """Multiply each live hypothesis's odds (the models' against it) by this hand's
        likelihood ratio, killing it at probability 0 or when :meth:`mixture_log_odds` reaches
        ``RULE_OUT_ODDS`` (see the module docstring)."""
        alternative = hand_likelihood(evidence.rows, evidence.weights, p, models)
        weighed = []
        for o in np.flatnonzero(self.alive):
            under = hand_likelihood(evidence.rows, evidence.weights, p, self._seated[o, p])
            if under <= 0.0:  # impossible under o: the models' odds against it are infinite
                self.alive[o] = False
                self.log_odds[o] = math.inf
                continue
            # a ratio of 0 (the models call the hand impossible) sets the odds to 0 for good
            self.log_odds[o] += math.log(alternative / under) if alternative > 0.0 else -math.inf
            weighed.append(o)
        odds = [self.mixture_log_odds(int(o)) for o in weighed]  # before any of them dies
        self.alive[weighed] = np.less(odds, math.log(RULE_OUT_ODDS))

    def mixture_log_odds(self, o: int) -> float:
        """Log odds against hypothesis ``o`` of the mixture alternative: MBBR's models at weight
        1/2, every other hypothesis at 1/(2 (H - 1)) (the models alone when H = 1), a
        nonnegative martingale under ``o`` as each component is. A hypothesis ruled out by odds
        stays a component (its odds froze), one with infinite odds adds nothing, one ruled out
        by the mixture is left out (which only lowers it). The true pair, a component, rules out
        the others at the rate of its own evidence from the first hand."""
        own = float(self.log_odds[o])
        others = len(self) - 1
        if others == 0 or math.isinf(own):  # -inf: the models called a hand impossible
            return own
        threshold = math.log(RULE_OUT_ODDS)
        parts = [math.log(0.5) + own]
        for j in range(len(self)):
            if j != o and (self.alive[j] or self.log_odds[j] >= threshold):
                parts.append(math.log(0.5 / others) + own - float(self.log_odds[j]))
        return float(np.logaddexp.reduce(parts))

    def state(self) -> dict[str, np.ndarray]:
        """What the observations changed: the bankrolls, the live hypotheses and their odds."""
        return {
            "bank": self.bank.copy(),
            "alive": self.alive.astype(np.int64),
            "log_odds": self.log_odds.copy(),
        }

    def restored(self, arrays: dict[str, np.ndarray]) -> SafetyBankroll:
        """This bankroll in the state of :meth:`state`, read from a snapshot's ``safety.<name>``
        arrays (a copy sharing what hands never change); SnapshotError if they do not fit."""
        out, size = copy.copy(self), (len(self),)
        names = ("safety.bank", "safety.log_odds")
        out.bank, out.log_odds = (take(arrays, name, "f8", size) for name in names)
        out.alive = take(arrays, "safety.alive", "i8", size) != 0
        out.live, out._played = bool(out.alive.any()), {}
        return out

    def nbytes(self) -> int:
        """Bytes of the arrays held."""
        arrays = [self._scratch, self._own_reach, self._default_reach, self._default_value]
        arrays += [self._seated, self._anchor, self._anchor_value, self._anchor_reach]
        arrays += [self.bank, self.alive, self.log_odds, *self._leaf.values()]
        arrays += [a for by_hole in self._lines for line in by_hole for a in line]
        return sum(a.nbytes for a in arrays)
