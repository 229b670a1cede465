"""What one seat's observation of a finished hand says about each opponent: the list of distinct
assignments of the hole cards we did not see (each equally likely given what we saw) and, per
assignment, the information set of every opponent move. Opponents are indexed by seat offset
d = 1..n-1 (position (p + d) mod n while we sit at p).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.games.acpc.betting import NUM_ACTIONS
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.kernel_cache import njit
from oppmodel.modeling.observation import LimitObservation

HIDDEN = -2  # ``_known_cards``' mark of a hidden hole card


@dataclass(frozen=True, eq=False)
class Evidence:
    """One observation's evidence. ``rows[r]`` lists assignment r's opponent moves as
    (offset - 1, information set, action); every assignment has the same moves, at information
    sets that differ only where the mover's cards are hidden; row r stands for ``weights[r]``."""

    deal: int  # the first deal (``game.deal_cards``) that agrees with every card seen
    rows: np.ndarray  # (m, L, 3) int64: m assignments, L opponent moves each
    revealed: tuple[bool, ...]  # per offset d - 1: the opponent's hole cards were seen
    # (m, L) int64: each move as one index into a flat (n - 1, num_infosets, 3) table
    entries: np.ndarray
    weights: np.ndarray  # (m,) int64, at least 1


def hand_evidence(game: LimitGame, obs: LimitObservation) -> Evidence:
    """The evidence of a validated observation (see the module docstring)."""
    tree, n, p = game.tree, game.num_players, obs.position
    terminal = int(tree.node_terminal[game.node(obs.betting)])
    deal, rows, entries = _evidence_tables(
        game.deal_cards, _known_cards(game, obs), len(game.deck), *_terminal_moves(game)[terminal],
        p, n, tree.node_base, tree.node_round, tree.deal_view, game.num_infosets,
    )  # fmt: skip
    revealed = tuple(obs.hole[(p + d) % n] is not None for d in range(1, n))
    return Evidence(deal, rows, revealed, entries, np.ones(len(rows), dtype=np.int64))


@njit(cache=True)
def hand_likelihood(rows, weights, position, profile):
    """The probability of the opponents' moves ``rows`` (``Evidence.rows``, ``weights``) in a
    hand seen from ``position``, each opponent playing its row of ``profile`` (n, num_infosets,
    3), summed over the assignments of the cards we did not see; up to a factor that is the
    same whatever the profile (the deal, and our own moves)."""
    n = profile.shape[0]
    total = 0.0
    for r in range(rows.shape[0]):
        prob = float(weights[r])
        for j in range(rows.shape[1]):
            prob *= profile[(position + 1 + rows[r, j, 0]) % n, rows[r, j, 1], rows[r, j, 2]]
        total += prob
    return total


def _known_cards(game: LimitGame, obs: LimitObservation) -> np.ndarray:
    """The card every column of ``game.deal_cards`` must hold: ``HIDDEN`` at a hidden hole card,
    -1 at a board card not dealt. A group's cards are stored sorted, so are these."""
    index, h, board_columns = _card_columns(game)
    known = [-1] * game.deal_cards.shape[1]
    holes = zip(range(0, h * len(obs.hole), h), obs.hole, strict=True)
    for column, text in (*holes, *zip(board_columns, obs.board, strict=False)):
        if text is None:
            known[column : column + h] = [HIDDEN] * h
        elif text:
            cards = sorted(index[text[i : i + 2]] for i in range(0, len(text), 2))
            known[column : column + len(cards)] = cards
    return np.array(known, dtype=np.int64)


@njit(cache=True)
def _evidence_tables(
    deal_cards, known, deck_size, nodes, actions, movers, p, n, node_base, node_round,
    deal_view, num_infosets,
):  # fmt: skip
    """(the first deal that holds every known card; ``Evidence.rows`` and ``entries``): one row
    per distinct assignment of the hidden hole cards (``known``: ``_known_cards``'), at the
    first deal (in deal order) that makes it, of every move of the terminal's path (``nodes``,
    ``actions``, ``movers``) not made by ``p``."""
    firsts = np.empty(deal_cards.shape[0], dtype=np.int64)
    keys = np.empty(deal_cards.shape[0], dtype=np.int64)
    m = 0
    for d in range(deal_cards.shape[0]):
        key = 0
        for c in range(known.shape[0]):
            if known[c] == HIDDEN:
                key = key * deck_size + deal_cards[d, c]
            elif known[c] >= 0 and deal_cards[d, c] != known[c]:
                key = -1
                break
        for j in range(m if key >= 0 else 0):
            if keys[j] == key:
                key = -1
                break
        if key >= 0:
            keys[m] = key
            firsts[m] = d
            m += 1
    moves = np.sum(movers != p)
    rows = np.empty((m, moves, 3), dtype=np.int64)
    entries = np.empty((m, moves), dtype=np.int64)
    for r in range(m):
        j = 0
        for k in range(nodes.shape[0]):
            q = movers[k]
            if q != p:
                d_1 = (q - p) % n - 1
                i = node_base[nodes[k]] + deal_view[node_round[nodes[k]], firsts[r], q]
                rows[r, j, 0], rows[r, j, 1], rows[r, j, 2] = d_1, i, actions[k]
                entries[r, j] = (d_1 * num_infosets + i) * NUM_ACTIONS + actions[k]
                j += 1
    return firsts[0], rows, entries


@functools.cache  # per game object: compiled games are cached and immutable
def _card_columns(game: LimitGame) -> tuple[dict[str, int], int, list[int]]:
    """(each card's index in the deck, hole cards per position, the first column of each
    round's board cards in ``game.deal_cards``)."""
    gamedef = game.gamedef
    h = gamedef.num_hole_cards
    starts = np.cumsum([game.num_players * h, *gamedef.num_board_cards])[:-1]
    return {card: i for i, card in enumerate(game.deck)}, h, [int(s) for s in starts]


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
