"""What one seat's observation of a finished hand says about each opponent: the list of distinct
assignments of the hole cards we did not see (each equally likely given what we saw) and, per
assignment, the information set of every opponent move. Opponents are indexed by seat offset
d = 1..n-1 (position (p + d) mod n while we sit at p).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numba import njit

from oppmodel.modeling.games.acpc.betting import NUM_ACTIONS
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.observation import LimitObservation


@dataclass(frozen=True, eq=False)
class Evidence:
    """One observation's evidence. ``rows[r]`` lists assignment r's opponent moves as
    (offset - 1, information set, action); every assignment has the same moves, at information
    sets that differ only where the mover's cards are hidden."""

    deal: int  # the first deal (``game.deal_cards``) that agrees with every card seen
    rows: np.ndarray  # (m, L, 3) int64: m assignments, L opponent moves each
    revealed: tuple[bool, ...]  # per offset d - 1: the opponent's hole cards were seen
    # (m, L) int64: each move as one index into a flat (n - 1, num_infosets, 3) table
    entries: np.ndarray


def hand_evidence(game: LimitGame, obs: LimitObservation) -> Evidence:
    """The evidence of a validated observation (see the module docstring)."""
    tree, n, p = game.tree, game.num_players, obs.position
    terminal = int(tree.node_terminal[game.node(obs.betting)])
    nodes, actions, movers = _terminal_moves(game)[terminal]
    theirs = movers != p
    known, hidden = _known_cards(game, obs)
    representatives = np.empty(game.num_deals, dtype=np.int64)
    m = _representatives(game.deal_cards, known, hidden, len(game.deck), representatives)
    rows = np.empty((m, int(theirs.sum()), 3), dtype=np.int64)
    _rows(
        representatives[:m], nodes[theirs], actions[theirs], movers[theirs], p, n,
        tree.node_base, tree.node_round, tree.deal_view, rows,
    )  # fmt: skip
    revealed = tuple(obs.hole[(p + d) % n] is not None for d in range(1, n))
    entries = (rows[:, :, 0] * game.num_infosets + rows[:, :, 1]) * NUM_ACTIONS + rows[:, :, 2]
    return Evidence(int(representatives[0]), rows, revealed, entries)


@njit(cache=True)
def hand_likelihood(rows, position, profile):
    """The probability of the opponents' moves ``rows`` (``Evidence.rows``) in a hand seen from
    ``position``, each opponent playing its row of ``profile`` (n, num_infosets, 3), summed over
    the assignments of the cards we did not see; up to a factor that is the same whatever the
    profile (the deal, and our own moves)."""
    n = profile.shape[0]
    total = 0.0
    for r in range(rows.shape[0]):
        prob = 1.0
        for j in range(rows.shape[1]):
            prob *= profile[(position + 1 + rows[r, j, 0]) % n, rows[r, j, 1], rows[r, j, 2]]
        total += prob
    return total


def _known_cards(game: LimitGame, obs: LimitObservation) -> tuple[np.ndarray, np.ndarray]:
    """(the card every column of ``game.deal_cards`` must hold, -1 where unknown; the columns
    of the hidden hole cards). A group's cards are stored sorted, so are these."""
    gamedef, n = game.gamedef, game.num_players
    h = gamedef.num_hole_cards
    index = _card_index(game)
    known = np.full(game.deal_cards.shape[1], -1, dtype=np.int64)
    hidden: list[int] = []
    start = n * h
    groups = [(q * h, h, text) for q, text in enumerate(obs.hole)]
    for r, size in enumerate(gamedef.num_board_cards):
        if r < len(obs.board):
            groups.append((start, size, obs.board[r]))
        start += size
    for column, size, text in groups:
        if text is None:
            hidden.extend(range(column, column + size))
        elif size:
            known[column : column + size] = sorted(
                index[text[i : i + 2]] for i in range(0, 2 * size, 2)
            )
    return known, np.array(hidden, dtype=np.int64)


@njit(cache=True)
def _representatives(deal_cards, known, hidden, deck_size, out):
    """The first deal (in deal order) of every distinct assignment of the hidden hole cards among
    the deals that hold every known card, into ``out``; returns how many."""
    m = 0
    keys = np.empty(deal_cards.shape[0], dtype=np.int64)
    for d in range(deal_cards.shape[0]):
        ok = True
        for c in range(known.shape[0]):
            if known[c] >= 0 and deal_cards[d, c] != known[c]:
                ok = False
                break
        if not ok:
            continue
        key = 0
        for c in hidden:
            key = key * deck_size + deal_cards[d, c]
        fresh = True
        for j in range(m):
            if keys[j] == key:
                fresh = False
                break
        if fresh:
            keys[m] = key
            out[m] = d
            m += 1
    return m


@njit(cache=True)
def _rows(deals, nodes, actions, movers, p, n, node_base, node_round, deal_view, rows):
    """rows[r, j] = (offset - 1, information set, action) of move j under deal ``deals[r]``."""
    for r in range(deals.shape[0]):
        for j in range(nodes.shape[0]):
            q = movers[j]
            rows[r, j, 0] = (q - p) % n - 1
            rows[r, j, 1] = node_base[nodes[j]] + deal_view[node_round[nodes[j]], deals[r], q]
            rows[r, j, 2] = actions[j]


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
