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
from numba import njit


class FlatTree:
    """Every history of an OpenSpiel game, parents before children."""

    def __init__(self, os_game) -> None:
        parent, action, player, info, chance_prob, returns = [], [], [], [], [], {}
        self.info_ids: dict[str, int] = {}
        self.num_players = os_game.num_players()
        self.num_actions = os_game.num_distinct_actions()
        stack = [(os_game.new_initial_state(), -1, -1, 1.0)]
        while stack:
            state, up, via, prob = stack.pop()
            me = len(parent)
            parent.append(up)
            action.append(via)
            chance_prob.append(prob)
            if state.is_terminal():
                player.append(-2)
                info.append(-1)
                returns[me] = state.returns()
            elif state.is_chance_node():
                player.append(-1)
                info.append(-1)
                stack.extend((state.child(a), me, a, p) for a, p in state.chance_outcomes())
            else:
                p = state.current_player()
                player.append(p)
                key = state.information_state_string(p)
                info.append(self.info_ids.setdefault(key, len(self.info_ids)))
                stack.extend((state.child(a), me, a, 1.0) for a in state.legal_actions())
        depth = np.zeros(len(parent), dtype=np.int64)
        for node in range(1, len(parent)):  # the walk numbers parents before children
            depth[node] = depth[parent[node]] + 1
        # renumber level by level, so that every level is one contiguous, ordered range
        order = np.argsort(depth, kind="stable")
        new_id = np.empty_like(order)
        new_id[order] = np.arange(len(order))
        old_parent = np.array(parent)[order]
        self.parent = np.where(old_parent >= 0, new_id[np.maximum(old_parent, 0)], -1)
        self.action = np.array(action)[order]
        self.player = np.array(player)[order]
        self.info = np.array(info)[order]
        self.chance_prob = np.array(chance_prob)[order]
        self.terminals = np.sort(new_id[sorted(returns)])
        self.returns = np.array([returns[t] for t in order[self.terminals]])
        self.starts = np.searchsorted(depth[order], np.arange(depth.max() + 2))
        self.edge_player = np.where(
            self.parent >= 0, self.player[np.maximum(self.parent, 0)], -1
        )  # who acted on the edge into each node (-1: chance or root)
        self.legal = np.zeros((len(self.info_ids), self.num_actions), dtype=bool)
        into_decision = np.flatnonzero(self.edge_player >= 0)
        self.legal[self.info[self.parent[into_decision]], self.action[into_decision]] = True

    def edge_probabilities(self, table: dict) -> np.ndarray:
        """Probability of the edge into each node under a pyspiel-form policy table."""
        probs = np.zeros((len(self.info_ids), self.num_actions))
        for key, i in self.info_ids.items():
            for a, p in table[key]:
                probs[i, a] = p
        return _edge_probabilities(self.parent, self.info, self.action, self.chance_prob, probs)

    def edge_probabilities_of(self, pairing, profile: np.ndarray) -> np.ndarray:
        """The same for our profile, through a
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
        mine = self.edge_player == position
        reach = _reach(self.parent, np.where(mine, 1.0, edge))
        value = np.zeros(len(self.parent))
        value[self.terminals] = reach[self.terminals] * self.returns[:, position]
        return _backward_induction(
            self.parent, self.info, self.action, mine, self.legal, self.starts, value
        )


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
def _backward_induction(parent, info, action, mine, legal, starts, value):
    """Deepest level first: the responder's information sets at that level (all their members
    lie there) take the action whose summed value is largest; every parent then adds the value
    of its children that are played."""
    q = np.zeros(legal.shape)
    best = np.full(legal.shape[0], -1)
    for level in range(starts.shape[0] - 2, 0, -1):
        nodes = range(starts[level], starts[level + 1])
        for c in nodes:
            if mine[c]:
                q[info[parent[c]], action[c]] += value[c]
        for c in nodes:
            i = info[parent[c]]
            if mine[c] and best[i] < 0:
                for a in range(legal.shape[1]):
                    if legal[i, a] and (best[i] < 0 or q[i, a] > q[i, best[i]]):
                        best[i] = a
        for c in nodes:
            if not mine[c] or action[c] == best[info[parent[c]]]:
                value[parent[c]] += value[c]
    return value[0]
