"""MBBR's response where the abstract game does not compile (the ACPC 3-player game): the value of
each of our actions estimated at the decision, against the posterior means.

At a decision of ours (position p, our hole pair, the board so far, the betting) the value Q(a)
of a legal action a is our expected chips if we play a and then follow the blueprint, while each
opponent plays its posterior mean from our position (:meth:`HoldemPosterior.mean_rows`: the
prior's mean at a node no hand numbered; a rollout numbers nothing). The expectation is over:

- **the rest of the board**: ``boards`` completions drawn uniformly once a round from the cards
  we do not see, kept for our later decisions of that round (their buckets are then cached);
- **the opponents' hole pairs**: each opponent's live pairs weighted by its reach, the product
  of its rows' probabilities of its moves so far in the hand at the sets its pair gives on the
  boards dealt then; ``per_board`` draws of both pairs for each completion, a draw whose pairs
  share a card redrawn, so a draw follows ``w1 w2 [disjoint]`` given the completion; each
  completion weighs by the mass of such pairs it leaves (``sample_pairs``), which makes the
  uniform completion and the draws the joint distribution of holes and board;
- **the rest of the hand's actions**, each drawn from its row with one uniform per step.

Every action of ours reuses the same completions, holes and uniforms (common random numbers),
so a gain ``Q(a) - sum_b blueprint(b) Q(b)`` has a small variance. The rollouts run in one kernel
(``_decision_kernels.walk``) over a betting tree made as they meet it: a rollout reaching a child
not made yet waits, the children are made (their rows read), and the kernel goes on. The tree of
each of our positions is kept from hand to hand (making a node, its rows read, was 60% of a
decision's CPU): after a hand the rows of its numbered nodes are read again and a node numbered
since is read as numbered, and after a refit of the prior the prior's rows of every node not
numbered are computed again (all at once: a refit made the tree again, and its nodes were ~40%
of those made), so its rows are what a tree made afresh would read; past ``TREE_NODES_KEPT``
nodes it is made again. The prior's rows of the nodes not numbered are computed for all the
nodes made since the last read at once, not node by node.

The same estimate with the opponents playing the blueprint (their reach and rows the
blueprint's) is the deviation's loss against the blueprint's own play, which the bank books
(:class:`~oppmodel.modeling.holdem.response.HoldemMBBR`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, cast

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc._hand_rank_kernels import CARD_BITS
from oppmodel.modeling.games.acpc.betting import (
    ACTION_LETTERS,
    NUM_ACTIONS,
    RAISE,
    BettingState,
    after,
    legal_actions,
    opening,
)
from oppmodel.modeling.holdem import _decision_kernels as kernels
from oppmodel.modeling.holdem.blueprint import range_views
from oppmodel.modeling.holdem.policy import DECK_SIZE, Spot, live_holes
from oppmodel.modeling.holdem.posterior import HoldemPosterior
from oppmodel.modeling.holdem.sets import LazySets
from oppmodel.modeling.holdem.strength import hole_rows
from oppmodel.modeling.holdem.tilt import row_offsets
from oppmodel.modeling.holdem.window import dropped_means, keeps_dropped

BOARDS = 12  # board completions a round
PER_BOARD = 8  # draws of the opponents' holes per completion
MAX_STEPS = 96  # uniforms a rollout may use: more than a hand's actions (57 in 3-player ACPC)
ROWS_KEPT = 100_000  # bettings whose blueprint rows are kept (~0.2 KB each)
TREE_NODES_KEPT = 50_000  # a position's tree is made again past this many nodes (~0.5 KB each)
MODEL, BLUEPRINT = "model", "blueprint"  # whom the opponents play: the posterior means, or not
_CARDS = CARD_BITS[:DECK_SIZE].astype(np.int64)
_COLUMNS = 7  # a node's row: 3 children, player, round, first row, whether a raise is legal
_NO_ACTION = np.zeros(NUM_ACTIONS, dtype=bool)  # the legal actions at a hand's end


class Values(NamedTuple):
    """Q of each action per sample (S, 3; 0 where illegal; the samples of a completion of the
    board together, ``boards`` of them) and each sample's weight (S,, mean 1; None if the
    opponents could not have made their moves)."""

    values: np.ndarray
    weights: np.ndarray | None
    boards: int

    def means(self) -> np.ndarray:
        """(boards, 3) the weighted mean of each completion's samples: independent, so the
        estimate's standard error is theirs."""
        assert self.weights is not None
        weighted = self.values * self.weights[:, None]
        return weighted.reshape(self.boards, -1, NUM_ACTIONS).mean(axis=1)


class _Tree:
    """The betting nodes the hand's rollouts met, with the rows of the player to act at each:
    the blueprint's (ours and the opponents') and the posterior means' (the opponents'). The
    posterior means' rows of the opponents' nodes not numbered are the prior's, computed for
    all the nodes made since the last read at once (:meth:`table`), and again for every such
    node after a refit of the prior (:meth:`refresh`)."""

    def __init__(
        self,
        posterior: HoldemPosterior,
        me: int,
        blueprint: Callable[[BettingState], tuple[np.ndarray, np.ndarray]],
    ):
        self.posterior, self.me, self.blueprint = posterior, me, blueprint
        self.sets = sets = cast(LazySets, posterior.sets)
        self.prior = posterior.thetas[me]  # the prior the rows of nodes not numbered are of
        self.bettings_seen = len(sets.bettings)  # the numbering's, at the start
        self.renumbered = sets.renumbered  # the set indices held are this numbering's
        self.unnumbered: dict[str, int] = {}  # betting -> node, of opponents' nodes not numbered
        self.numbered: list[tuple[int, int, int, int]] = []  # (q, base, views, first row)
        self.gather: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.pending: list[int] = []  # unnumbered nodes whose prior rows are not computed
        self.legal: list[np.ndarray] = []  # each node's legal actions (an end's: none)
        n = sets.num_players
        self.nodes = np.full((64, _COLUMNS), -1, dtype=np.int64)
        self.spent, self.folded = np.zeros((64, n)), np.zeros((64, n), dtype=bool)
        self.rows = {MODEL: np.zeros((256, NUM_ACTIONS)), BLUEPRINT: np.zeros((256, NUM_ACTIONS))}
        self.states: list[BettingState] = []
        self.index: dict[str, int] = {}
        self.row_count = 0

    def node(self, state: BettingState) -> int:
        """The node of ``state`` (made now if new)."""
        key = state.betting if state.player >= 0 else state.betting + "."
        found = self.index.get(key)
        if found is not None:
            return found
        k = self.index[key] = len(self.states)
        self.states.append(state)
        if k == len(self.nodes):
            self.nodes = np.concatenate([self.nodes, np.full_like(self.nodes, -1)])
            self.spent = np.concatenate([self.spent, np.zeros_like(self.spent)])
            self.folded = np.concatenate([self.folded, np.zeros_like(self.folded)])
        self.nodes[k, 3:] = [state.player, state.round, self.row_count, 0]
        self.spent[k], self.folded[k] = state.spent, state.folded
        legal = _NO_ACTION
        if state.player >= 0:
            legal, blueprint = self.blueprint(state)
            self.nodes[k, 6] = legal[RAISE]
            start, self.row_count = self.row_count, self.row_count + len(blueprint)
            if self.row_count > len(self.rows[BLUEPRINT]):
                for kind, rows in self.rows.items():
                    self.rows[kind] = np.concatenate([rows, np.zeros_like(rows)])
            self.rows[BLUEPRINT][start : self.row_count] = blueprint
            self.rows[MODEL][start : self.row_count] = blueprint
            if state.player != self.me:
                numbered = self.sets.numbered(state.betting)
                if numbered is None:
                    self.unnumbered[state.betting] = k
                    self.pending.append(k)
                else:
                    base, _, q = numbered
                    self.numbered.append((q, base, len(blueprint), start))
                    profile = self.posterior.models_profile(self.me)
                    self.rows[MODEL][start : self.row_count] = profile[
                        q, base : base + len(blueprint)
                    ]
                    self.gather = None
        self.legal.append(legal)
        return k

    def child(self, node: int, action: int) -> int:
        made = self.nodes[node, action] = self.node(
            after(self.sets.gamedef, self.states[node], action)
        )
        return int(made)

    def refresh(self) -> None:
        """The posterior means' rows brought to the posterior now (after a hand): those of the
        numbered nodes read again, a node numbered since read as numbered from now on, and
        after a refit of the prior (its tilts changed) the prior's rows of every node not
        numbered computed again."""
        posterior, sets = self.posterior, self.sets
        bettings = sets.bettings
        for betting in bettings[self.bettings_seen :]:
            k = self.unnumbered.pop(betting, None)
            if k is not None:
                base, _, q = sets.numbered(betting)  # type: ignore[misc]
                views = sets.views[self.states[k].round]
                self.numbered.append((q, base, views, int(self.nodes[k, 5])))
                self.gather = None
        self.bettings_seen = len(bettings)
        if posterior.thetas[self.me] is not self.prior:
            self.prior = posterior.thetas[self.me]
            self.pending = list(self.unnumbered.values())
        else:  # numbered since: no prior rows to compute
            self.pending = [k for k in self.pending if self.states[k].betting in self.unnumbered]
        if self.numbered:
            if self.gather is None:
                q, base, views, row0 = np.array(self.numbered, dtype=np.int64).T
                offsets = row_offsets(views)
                self.gather = (
                    np.repeat(q, views),
                    np.repeat(base, views) + offsets,
                    np.repeat(row0, views) + offsets,
                )
            who, rows, into = self.gather
            self.rows[MODEL][into] = posterior.models_profile(self.me)[who, rows]

    def table(self, kind: str) -> np.ndarray:
        """(rows, 3) every node's rows of ``kind`` (the pending prior rows computed first)."""
        if kind == MODEL and self.pending:
            self._prior_rows(np.array(self.pending, dtype=np.int64))
            self.pending = []
        return self.rows[kind]

    def _prior_rows(self, nodes: np.ndarray) -> None:
        """The posterior means' rows of the unnumbered opponents' ``nodes``: the prior's mean
        (:meth:`HoldemPosterior.prior_means`, as ``mean_rows`` gives it), all at once, but a
        dropped node's kept whole (:func:`~oppmodel.modeling.holdem.window.dropped_means`)."""
        player, round_, row0 = self.nodes[nodes, 3], self.nodes[nodes, 4], self.nodes[nodes, 5]
        views = np.array(self.sets.views)[round_]
        offsets = row_offsets(views)
        rows = np.repeat(row0, views) + offsets
        legal = np.repeat(np.array([self.legal[k] for k in nodes.tolist()]), views, axis=0)
        rounds, opponent = np.repeat(round_, views), np.repeat(player, views)
        for d, q in enumerate(self.posterior.seats[self.me]):
            mine = opponent == q
            blueprint = self.rows[BLUEPRINT][rows[mine]]
            self.rows[MODEL][rows[mine]] = self.posterior.prior_means(
                self.me, d, blueprint, legal[mine], rounds[mine]
            )
        if keeps_dropped(self.posterior):  # a dropped node kept whole: its own rows
            seats = self.posterior.seats[self.me]
            for k in nodes.tolist():
                state = self.states[k]
                d = seats.index(state.player)
                kept = dropped_means(self.posterior, self.me, d, state.betting)
                if kept is not None:
                    start = int(self.nodes[k, 5])
                    self.rows[MODEL][start : start + len(kept)] = kept


class DecisionValues:
    """The values of a decision's actions (the module's text), seeded; one hand at a time
    (:meth:`new_hand` between hands)."""

    def __init__(
        self,
        posterior: HoldemPosterior,
        *,
        boards: int = BOARDS,
        per_board: int = PER_BOARD,
        seed: int = 0,
    ) -> None:
        if not posterior.sets.numbered_as_met or posterior.sets.num_players != 3:
            raise InvalidArgumentError("posterior", "needs 3 players' sets numbered as met")
        if boards < 2 or per_board < 1:
            raise InvalidArgumentError("boards", f"need 2+ boards, 1+ draws: {boards}, {per_board}")
        self.posterior = posterior
        self.sets = cast(LazySets, posterior.sets)
        self.spots = posterior.spots
        self.boards, self.per_board = boards, per_board
        self.rng = np.random.default_rng(seed)
        self._rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._trees: dict[int, _Tree] = {}
        self.drawn = 0  # the samples drawn so far (completions x draws, every estimate)
        self.new_hand()

    def new_hand(self) -> None:
        """Forget the hand's completions; the trees' posterior rows are read again before
        their next use (the posterior changes between hands)."""
        self._completions: tuple[tuple[int, ...], np.ndarray] | None = None
        # per completion of the round, each round's view of our hole and of each live pair
        self._seen: dict[tuple[int, ...], list[tuple[int, np.ndarray]]] = {}
        self._fresh: set[int] = set()  # the positions whose tree was refreshed this hand

    def _tree_of(self, me: int) -> _Tree:
        """Our position ``me``'s tree, its posterior rows the posterior's now: kept from hand to
        hand, made again when it holds ``TREE_NODES_KEPT`` nodes."""
        tree = self._trees.get(me)
        if me not in self._fresh:
            self._fresh.add(me)
            if tree is not None and (
                len(tree.states) >= TREE_NODES_KEPT or tree.renumbered != self.sets.renumbered
            ):
                tree = None
            elif tree is not None:
                tree.refresh()
        if tree is None:
            tree = self._trees[me] = _Tree(self.posterior, me, self.blueprint_rows)
        return tree

    def blueprint_rows(self, state: BettingState) -> tuple[np.ndarray, np.ndarray]:
        """``LazySets.rows_of``, kept for the last ``ROWS_KEPT`` bettings asked (read-only; the
        blueprint never changes, and the rollouts of every hand meet the same nodes)."""
        found = self._rows.get(state.betting)
        if found is None:
            if len(self._rows) >= ROWS_KEPT:
                self._rows.clear()
            legal, rows = found = self.sets.rows_of(state)
            legal.setflags(write=False)
            rows.setflags(write=False)
            self._rows[state.betting] = found
        return found

    def values(
        self, spot: Spot, hole: Sequence[int], opponents: str = MODEL, boards: int | None = None
    ) -> Values:
        """Q of every legal action at ``spot`` holding ``hole``, the opponents playing their
        posterior means (``MODEL``) or the blueprint (``BLUEPRINT``), on the first ``boards``
        of the round's completions (2 to ``self.boards``; all if None)."""
        me, board, state = spot.position, tuple(spot.board), spot.betting
        gamedef = self.sets.gamedef
        count = self.boards if boards is None else boards
        if not 2 <= count <= self.boards:
            raise InvalidArgumentError("boards", f"need 2 to {self.boards}: {boards}")
        tree = self._tree_of(me)
        live = live_holes([*hole, *board])
        bits = _CARDS[live[:, 0]] | _CARDS[live[:, 1]]
        ranged = hole_rows(live)
        reach = self._reach(me, board, state, ranged, opponents)
        if any(w.sum() <= 0 for w in reach):
            return Values(np.zeros((count * self.per_board, NUM_ACTIONS)), None, count)
        rest = self._rest(board, hole)[:count]
        self.drawn += count * self.per_board
        board_bits = np.bitwise_or.reduce(_CARDS[rest], axis=1)  # 0s on the river
        seed = int(self.rng.integers(2**31))
        first, second, mass = kernels.sample_pairs(
            live, bits, reach[0], reach[1], board_bits, self.per_board, seed
        )
        if mass.sum() <= 0:  # no completion leaves the opponents a pair of holes
            return Values(np.zeros((len(first), NUM_ACTIONS)), None, count)
        views = self._views(me, board, state.round, hole, ranged, bits, rest, first, second)
        own = int(_CARDS[hole[0]] | _CARDS[hole[1]])
        seats = np.zeros((len(first), 3), dtype=np.int64)
        seats[:, me] = own
        opp = self.posterior.seats[me]
        seats[:, opp[0]], seats[:, opp[1]] = bits[first], bits[second]
        full = np.repeat(board_bits, self.per_board) | int(
            np.bitwise_or.reduce(_CARDS[list(board)])
        )
        ranks = kernels.showdown_ranks(seats, full)
        at = np.full((len(first), NUM_ACTIONS), kernels.DONE, dtype=np.int64)
        root = tree.node(state)
        for a in legal_actions(gamedef, state):
            at[first >= 0, a] = tree.child(root, a)
        steps, want = np.zeros_like(at), np.zeros_like(at)
        values = np.zeros(at.shape)
        uniforms = self.rng.random((len(first), MAX_STEPS))
        walked = (at, steps, want, values)
        while kernels.walk(
            *walked,
            tree.nodes,
            tree.spent,
            tree.folded,
            tree.table(opponents),
            views,
            ranks,
            uniforms,
            me,
        ):
            waiting = at >= 0
            for node, action in set(zip(at[waiting].tolist(), want[waiting].tolist(), strict=True)):
                tree.child(node, action)
        weights = np.repeat(mass / mass.mean(), self.per_board)
        return Values(values, weights, count)

    def _reach(
        self, me: int, board: tuple[int, ...], state: BettingState, ranged: np.ndarray, kind: str
    ) -> list[np.ndarray]:
        """Each opponent's weight of each of the live pairs (``ranged``: their rows of
        ``ALL_HOLES``): the product of its rows' (the
        posterior means' or the blueprint's) probabilities of its moves so far."""
        gamedef, spots = self.sets.gamedef, self.spots
        opp = self.posterior.seats[me]
        reach = [np.ones(len(ranged)) for _ in opp]
        views: dict[int, np.ndarray] = {}  # by round: the same for all its moves
        now = opening(gamedef)
        for letter in state.betting.replace("/", ""):
            action = ACTION_LETTERS.index(letter)
            if now.player != me:
                rows = (
                    self.posterior.mean_rows(me, now)
                    if kind == MODEL
                    else self.blueprint_rows(now)[1]
                )
                if now.round not in views:
                    at = (spots.config, spots.cards, spots.flops, board, now.round)
                    views[now.round] = range_views(*at, ranged)
                reach[opp.index(now.player)] *= rows[views[now.round], action]
            now = after(gamedef, now, action)
        return reach

    def _rest(self, board: tuple[int, ...], hole: Sequence[int]) -> np.ndarray:
        """(boards, cards to come) the completions of ``board``, drawn once a round."""
        if self._completions is None or self._completions[0] != board:
            need = sum(self.sets.gamedef.num_board_cards) - len(board)
            deck = np.setdiff1d(np.arange(DECK_SIZE), [*hole, *board])
            rest = np.array([self.rng.permutation(deck)[:need] for _ in range(self.boards)])
            self._completions = (board, rest.reshape(self.boards, need).astype(np.int64))
            self._seen = {}
        return self._completions[1]

    def _views(
        self,
        me: int,
        board: tuple[int, ...],
        round_: int,
        hole: Sequence[int],
        ranged: np.ndarray,
        bits: np.ndarray,
        rest: np.ndarray,
        first: np.ndarray,
        second: np.ndarray,
    ) -> np.ndarray:
        """(S, 3, rounds) each seat's view in each round from ``round_`` on, per sample (the live
        pairs' rows of ``ALL_HOLES`` ``ranged``, their cardsets ``bits``)."""
        rounds = len(self.sets.gamedef.num_board_cards)
        out = np.zeros((len(first), 3, rounds), dtype=np.int64)
        opp = self.posterior.seats[me]
        pick = np.maximum(first, 0), np.maximum(second, 0)
        ours = hole_rows(np.asarray([hole]))
        spots = self.spots
        made = self._seen  # the round's completions' views: the same for all its estimates
        for b, cards in enumerate(rest.tolist()):
            full = (*board, *cards)
            if full not in made:  # a completion drawn again (on the turn: 44 cards)
                clear = (bits & int(np.bitwise_or.reduce(_CARDS[cards]))) == 0
                holes = np.concatenate([ours, ranged[clear]])  # ours first: one bucketing
                made[full] = []
                for r in range(round_, rounds):
                    views = range_views(spots.config, spots.cards, spots.flops, full, r, holes)
                    seen = np.zeros(len(ranged), dtype=np.int64)
                    seen[clear] = views[1:]
                    made[full].append((int(views[0]), seen))
            rows = slice(b * self.per_board, (b + 1) * self.per_board)
            for r, (mine, seen) in enumerate(made[full], start=round_):
                out[rows, me, r] = mine
                out[rows, opp[0], r] = seen[pick[0][rows]]
                out[rows, opp[1], r] = seen[pick[1][rows]]
        return out


def gains(
    estimate: Values, blueprint: np.ndarray, legal: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(3,) each action's mean gain over the blueprint's mix ``blueprint`` and its standard error
    over the completions (NaN where illegal, or where the estimate has no weight)."""
    mean = np.full(NUM_ACTIONS, np.nan)
    error = np.full(NUM_ACTIONS, np.nan)
    if estimate.weights is None:
        return mean, error
    means = estimate.means()
    per = means - (means @ blueprint)[:, None]  # by completion: the samples of one share it
    mean[legal] = per[:, legal].mean(axis=0)
    error[legal] = per[:, legal].std(axis=0, ddof=1) / np.sqrt(len(per))
    return mean, error
