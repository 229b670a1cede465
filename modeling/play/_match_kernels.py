"""Numba kernel of the match engine for fixed-strategy agents (see modeling/play/match.py).

It plays the same hands as the engine's Python loop and consumes each seat's uniforms in the same
order (one per decision), so both give identical chips.
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.kernel_cache import njit


@njit(cache=True)
def play_fixed(profiles, uniforms, used, deals, first_hand, tree):
    """Chips won per seat over a ``LimitTree``; seat s plays position (s - h) mod n in hand
    h = first_hand + i, ``profiles[s]`` is its profile and ``uniforms[s, used[s]]`` its next
    uniform (``used`` is advanced in place).

    One uniform per decision picks fold below P(fold), call below P(fold) + P(call), else raise;
    a raise the rounding left at probability 0 past the cap is a call (as in the Python loop).
    """
    n = profiles.shape[0]
    chips = np.zeros(n)
    for i in range(deals.shape[0]):
        h = first_hand + i
        d = deals[i]
        node = 0
        while tree.node_player[node] >= 0:
            p = tree.node_player[node]
            seat = (p + h) % n
            u = uniforms[seat, used[seat]]
            used[seat] += 1
            infoset = tree.node_base[node] + tree.deal_view[tree.node_round[node], d, p]
            fold = profiles[seat, p, infoset, 0]
            action = 0 if u < fold else 1 if u < fold + profiles[seat, p, infoset, 1] else 2
            if action == 2 and tree.node_children[node, 2] < 0:
                action = 1
            node = tree.node_children[node, action]
        t = tree.node_terminal[node]
        cls = tree.terminal_class[t]
        pot = tree.terminal_pot[t]
        for p in range(n):
            chips[(p + h) % n] += tree.share[cls, d, p] * pot - tree.terminal_spent[t, p]
    return chips
