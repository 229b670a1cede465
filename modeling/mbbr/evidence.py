"""What one seat's observation of a finished hand says about each opponent, as both posteriors
read it: the opponent's moves (decision node, action) and every assignment of the cards we did not
see (folded cards, and all cards when everyone else folded, stay hidden) that is consistent with it.

Opponents are indexed by seat offset: while we sit at position p, the opponent at offset d sits at
(p + d) mod n; with ACPC rotation that is always the same player.
"""

from __future__ import annotations

import itertools

import numpy as np

from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.observation import HandObservation

# Per opponent (offset d = 1..n-1): its decision nodes and its actions there, in order.
Moves = list[tuple[np.ndarray, np.ndarray]]


def path_of(game: KuhnGame, terminal: int) -> list[tuple[int, int]]:
    """The (decision node, action) pairs from the root to ``terminal``."""
    length = int(game.path_len[terminal])
    return [
        (int(game.path_nodes[terminal, i]), int(game.path_actions[terminal, i]))
        for i in range(length)
    ]


def opponent_moves(game: KuhnGame, position: int, history: str) -> Moves:
    """Per opponent of ``position`` (d = 1..n-1): its decision nodes and actions in ``history``
    (a finished hand)."""
    n = game.num_players
    path = path_of(game, int(game.node_terminal[game.node(history)]))
    return [
        (
            np.array([nd for nd, _ in path if game.node_player[nd] == (position + d) % n]),
            np.array([a for nd, a in path if game.node_player[nd] == (position + d) % n]),
        )
        for d in range(1, n)
    ]


def hidden_assignments(game: KuhnGame, obs: HandObservation) -> np.ndarray:
    """Every assignment of cards to the opponents consistent with what we saw: (m, n - 1)."""
    n, p = game.num_players, obs.position
    opponents = [(p + d) % n for d in range(1, n)]
    known = {c for c in obs.cards if c is not None}
    free = [c for c in range(game.num_cards) if c not in known]
    hidden = [j for j, q in enumerate(opponents) if obs.cards[q] is None]
    rows = []
    for pick in itertools.permutations(free, len(hidden)):
        cards = [obs.cards[q] for q in opponents]
        for j, c in zip(hidden, pick, strict=True):
            cards[j] = c
        rows.append(cards)
    return np.array(rows, dtype=np.int64)
