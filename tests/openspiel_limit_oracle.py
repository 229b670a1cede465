"""OpenSpiel's game tree as an oracle for limit games too large for OpenSpiel's own evaluators
to run on dozens of profiles in a test (3-player Leduc: 1.8 million histories; OpenSpiel's
C++ ``TabularBestResponse`` takes seconds per profile and position).

The tree is walked once with pyspiel (every history, OpenSpiel's chance probabilities, its
information-state strings, its returns) and flattened into arrays; each profile is then
evaluated level by level (small numba loops): expected values from reach probabilities, and
each position's best response by backward induction over OpenSpiel's own information sets (the
members of one set all lie at one depth in poker). Nothing of our compiler or kernels is used.
"""

from __future__ import annotations

import numpy as np
import pyspiel
from numba import njit


class FlatTree:
    """Every history of an OpenSpiel game, parents before children."""

    def __init__(self, os_game) -> None:
        parent, action, player, info, chance_prob, depth = [], [], [], [], [], []
        ended, returns = [], []
        self.info_ids: dict[str, int] = {}
        self.num_players = os_game.num_players()
        self.num_actions = os_game.num_distinct_actions()
        stack = [(os_game.new_initial_state(), -1, -1, 1.0, 0)]
        pop, push = stack.pop, stack.append
        ids = self.info_ids
        while stack:
            state, up, via, prob, d = pop()
            me = len(parent)
            parent.append(up)
            action.append(via)
            chance_prob.append(prob)
            depth.append(d)
            p = state.current_player()  # one call tells a terminal, a chance node and a player
            player.append(p if p >= -1 else -2)
            if p >= 0:
                info.append(ids.setdefault(state.information_state_string(p), len(ids)))
                for a in state.legal_actions():
                    push((state.child(a), me, a, 1.0, d + 1))
            else:
                info.append(-1)
                if p == pyspiel.PlayerId.CHANCE:
                    for a, q in state.chance_outcomes():
                        push((state.child(a), me, a, q, d + 1))
                else:
                    ended.append(me)
                    returns.append(state.returns())
        # the walk numbers parents before children; renumber level by level, so that every level
        # is one contiguous, ordered range
        depth = np.array(depth)
        order = np.argsort(depth, kind="stable")
        new_id = np.empty_like(order)
        new_id[order] = np.arange(len(order))
        old_parent = np.array(parent)[order]
        self.parent = np.where(old_parent >= 0, new_id[np.maximum(old_parent, 0)], -1)
        self.action = np.array(action)[order]
        self.player = np.array(player)[order]
        self.info = np.array(info)[order]
        self.chance_prob = np.array(chance_prob)[order]
        ended_at = new_id[ended]  # the walk met terminals in increasing number; the levels did not
        by_level = np.argsort(ended_at)
        self.terminals = ended_at[by_level]
        self.returns = np.array(returns)[by_level]
        self.starts = np.searchsorted(depth[order], np.arange(depth.max() + 2))
        self.edge_player = np.where(
            self.parent >= 0, self.player[np.maximum(self.parent, 0)], -1
        )  # who acted on the edge into each node (-1: chance or root)
        self.decided_at = np.where(self.parent >= 0, self.info[np.maximum(self.parent, 0)], -1)
        # the information set the edge into each node was chosen at (-1: chance or root)
        self.legal = np.zeros((len(self.info_ids), self.num_actions), dtype=bool)
        into_decision = np.flatnonzero(self.edge_player >= 0)
        self.legal[self.decided_at[into_decision], self.action[into_decision]] = True

    def edge_probabilities_of(self, pairing, profile: np.ndarray) -> np.ndarray:
        """Probability of the edge into each node under our profile, through a
        :class:`~oppmodel.modeling.games.acpc.openspiel.Pairing` (no table of strings per profile:
        the pairing's keys are looked up once)."""
        if getattr(self, "_paired", None) is not pairing:
            self._rows = np.array([self.info_ids[key] for key in pairing.keys])
            self._paired = pairing
        probs = np.zeros((len(self.info_ids), self.num_actions))
        theirs = pairing.theirs
        rows = np.repeat(self._rows[:, None], theirs.shape[1], axis=1)
        used = theirs >= 0
        probs[rows[used], theirs[used]] = pairing.probabilities(profile)[used]
        return _edge_probabilities(self.parent, self.info, self.action, self.chance_prob, probs)

    def expected_values(self, edge: np.ndarray) -> np.ndarray:
        reach = _reach(self.parent, edge)
        return reach[self.terminals] @ self.returns

    def best_response_value(self, edge: np.ndarray, position: int) -> float:
        return _best_response_value(
            self.parent, self.decided_at, self.action, self.edge_player, self.legal,
            self.starts, self.terminals, self.returns[:, position].copy(), edge, position,
        )  # fmt: skip


@njit(cache=True)
def _edge_probabilities(parent, info, action, chance_prob, probs):
    edge = chance_prob.copy()
    for node in range(1, parent.shape[0]):
        i = info[parent[node]]
        if i >= 0:
            edge[node] = probs[i, action[node]]
    return edge


@njit(cache=True)
def _reach(parent, factor):
    """Product of ``factor`` along each path (parents are numbered before children)."""
    reach = np.ones(parent.shape[0])
    for node in range(1, parent.shape[0]):
        reach[node] = reach[parent[node]] * factor[node]
    return reach


@njit(cache=True)
def _best_response_value(
    parent, decided_at, action, edge_player, legal, starts, terminals, returns, edge, position
):
    """The others' reach of every node (``position``'s own edges count 1), its terminals' values
    to ``position``, then backward induction, deepest level first: the responder's information
    sets at that level (all their members lie there) take the action whose summed value is
    largest; every parent adds the value of its children that are played."""
    n = parent.shape[0]
    reach = np.ones(n)
    for node in range(1, n):
        reach[node] = reach[parent[node]] * (1.0 if edge_player[node] == position else edge[node])
    value = np.zeros(n)
    for k in range(terminals.shape[0]):
        value[terminals[k]] = reach[terminals[k]] * returns[k]
    q = np.zeros(legal.shape)
    best = np.full(legal.shape[0], -1)
    for level in range(starts.shape[0] - 2, 0, -1):
        for c in range(starts[level], starts[level + 1]):
            if edge_player[c] == position:
                q[decided_at[c], action[c]] += value[c]
        for c in range(starts[level], starts[level + 1]):
            if edge_player[c] == position:
                i = decided_at[c]
                if best[i] < 0:
                    for a in range(legal.shape[1]):
                        if legal[i, a] and (best[i] < 0 or q[i, a] > q[i, best[i]]):
                            best[i] = a
                if action[c] != best[i]:
                    continue
            value[parent[c]] += value[c]
    return value[0]
