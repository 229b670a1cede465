"""A compiled game's deals and information sets grouped by one position's hole cards: what MBBR's
responses and safety bankroll solve one hole at a time."""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from oppmodel.modeling.evaluation.limit import pack_tree
from oppmodel.modeling.games.acpc.limit_game import LimitGame, LimitTree


class HoleSplit(NamedTuple):
    """A game's deals and information sets grouped by one position's hole cards."""

    hole_of_infoset: tuple[np.ndarray, ...]  # position -> (I_p,) hole (round-0 view) of each set
    hole_of_deal: tuple[np.ndarray, ...]  # position -> (D,) its hole in each deal
    infosets_of_hole: tuple[tuple[np.ndarray, ...], ...]  # position -> hole -> its sets
    deals_of_hole: tuple[tuple[np.ndarray, ...], ...]  # position -> hole -> its deals
    subtrees: tuple[tuple[LimitTree, ...], ...]  # position -> hole -> tree over its deals
    packed: tuple[tuple[tuple[np.ndarray, np.ndarray], ...], ...]  # the same, ``pack_tree``'s
    row_in_hole: tuple[list[int], ...]  # position -> each set's index among its hole's sets


@functools.cache  # per game object: compiled games are cached and immutable
def hole_split(game: LimitGame) -> HoleSplit:
    """Per position, the deals and the information sets of each of its hole cards, and the tree
    restricted to those deals (the evaluation kernels take it as they take the whole tree)."""
    tree = game.tree
    hole_of_view = []
    for r in range(game.num_rounds):
        mapping = np.full(int(tree.round_views[r]), -1, dtype=np.int64)
        mapping[tree.deal_view[r].ravel()] = tree.deal_view[0].ravel()
        hole_of_view.append(mapping)
    of_infoset, infosets, deals, subtrees, row_in_hole = [], [], [], [], []
    for p in range(game.num_players):
        rounds = tree.node_round[game.infoset_node[p]]
        holes = np.array(
            [hole_of_view[r][v] for r, v in zip(rounds, game.infoset_view[p], strict=True)],
            dtype=np.int64,
        )
        count = int(tree.deal_view[0, :, p].max()) + 1
        of_infoset.append(holes)
        infosets.append(tuple(np.flatnonzero(holes == h) for h in range(count)))
        row_in_hole.append([int(np.searchsorted(infosets[p][h], i)) for i, h in enumerate(holes)])
        by_hole = tuple(np.flatnonzero(tree.deal_view[0, :, p] == h) for h in range(count))
        deals.append(by_hole)
        contiguous = np.ascontiguousarray
        views = [(contiguous(tree.deal_view[:, d]), contiguous(tree.share[:, d])) for d in by_hole]
        subtrees.append(tuple(tree._replace(deal_view=v, share=s) for v, s in views))
    of_deal = tuple(np.ascontiguousarray(tree.deal_view[0, :, p]) for p in range(game.num_players))
    packed = tuple(tuple(pack_tree(tree) for tree in trees) for trees in subtrees)
    return HoleSplit(
        tuple(of_infoset),
        of_deal,
        tuple(infosets),
        tuple(deals),
        tuple(subtrees),
        packed,
        tuple(row_in_hole),
    )
