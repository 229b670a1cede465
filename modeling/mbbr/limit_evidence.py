"""What one seat's observation of a finished limit-game hand says about each opponent, as both
limit-game posteriors read it (the limit-game twin of ``evidence.py``).

An observation (``LimitObservation``) fixes the betting, so each opponent's moves (decision node,
action) are known; what is not known are the hole cards we did not see (folded players', and
everyone's when all but one fold). Every assignment of those cards that the dealer could have
made, given our cards, the cards shown and the board, is equally likely (the dealer deals
uniformly, and each assignment leaves the same number of ways to deal the unseen board), so the
evidence is the list of distinct assignments and, per assignment, the information set of every
opponent move: its node's ``node_base`` plus the mover's view under a deal of that assignment.

Opponents are indexed by seat offset d = 1..n-1 (position (p + d) mod n while we sit at p).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.observation import LimitObservation


@dataclass(frozen=True, eq=False)
class LimitEvidence:
    """One observation's evidence. ``rows[r]`` lists assignment r's opponent moves as
    (offset - 1, information set, action); every assignment has the same moves, at information
    sets that differ only where the mover's cards are hidden."""

    terminal: int  # index of the terminal the betting ended at
    rows: np.ndarray  # (m, L, 3) int64: m assignments, L opponent moves each
    revealed: tuple[bool, ...]  # per offset d - 1: the opponent's hole cards were seen


def limit_evidence(game: LimitGame, obs: LimitObservation) -> LimitEvidence:
    """The evidence of a validated observation (see the module docstring)."""
    tree, n, p = game.tree, game.num_players, obs.position
    terminal = int(tree.node_terminal[game.node(obs.betting)])
    nodes, actions, movers = _terminal_moves(game)[terminal]
    theirs = movers != p
    nodes, actions, movers = nodes[theirs], actions[theirs], movers[theirs]
    deals = consistent_deals(game, obs)
    h = game.gamedef.num_hole_cards
    key = np.zeros(len(deals), dtype=np.int64)
    for q in range(n):  # the hidden cards of a deal as one number: one deal per assignment
        if obs.hole[q] is None:
            for c in range(q * h, (q + 1) * h):
                key = key * len(game.deck) + game.deal_cards[deals, c]
    _, first = np.unique(key, return_index=True)
    representatives = deals[np.sort(first)]
    rows = np.empty((len(representatives), len(nodes), 3), dtype=np.int64)
    rows[:, :, 0] = (movers - p) % n - 1
    rows[:, :, 1] = (
        tree.node_base[nodes]
        + tree.deal_view[tree.node_round[nodes][None, :], representatives[:, None], movers[None, :]]
    )
    rows[:, :, 2] = actions
    revealed = tuple(obs.hole[(p + d) % n] is not None for d in range(1, n))
    return LimitEvidence(terminal, rows, revealed)


def consistent_deals(game: LimitGame, obs: LimitObservation) -> np.ndarray:
    """Indices of the deals (``game.deal_cards``) that agree with every card ``obs`` shows."""
    gamedef, n = game.gamedef, game.num_players
    h = gamedef.num_hole_cards
    index = _card_index(game)
    keep = np.ones(game.num_deals, dtype=bool)
    start = n * h
    groups = [(q * h, h, text) for q, text in enumerate(obs.hole)]
    for r, size in enumerate(gamedef.num_board_cards):
        if r < len(obs.board):
            groups.append((start, size, obs.board[r]))
        start += size
    for column, size, text in groups:
        if text is None or size == 0:
            continue
        cards = sorted(index[text[i : i + 2]] for i in range(0, 2 * size, 2))
        for j, card in enumerate(cards):  # a group's cards are stored sorted
            keep &= game.deal_cards[:, column + j] == card
    return np.flatnonzero(keep)


@functools.cache  # per game object: compiled games are cached and immutable
def _card_index(game: LimitGame) -> dict[str, int]:
    return {card: i for i, card in enumerate(game.deck)}


@functools.cache
def _terminal_moves(game: LimitGame) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per terminal: the (decision node, action, mover) of every move from the root, in order."""
    tree = game.tree
    out = []
    for node in np.flatnonzero(tree.node_terminal >= 0)[
        np.argsort(tree.node_terminal[tree.node_terminal >= 0])
    ]:
        path = []
        while node > 0:
            parent = int(tree.node_parent[node])
            path.append((parent, int(tree.node_action[node]), int(tree.node_player[parent])))
            node = parent
        nodes, actions, movers = (
            np.array(x, dtype=np.int64) for x in zip(*path[::-1], strict=True)
        )
        out.append((nodes, actions, movers))
    return out
