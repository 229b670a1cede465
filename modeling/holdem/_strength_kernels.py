"""Numba kernels of the hold'em hand-strength measure (``strength.py``): per two-card hand of the
deck, a value that orders hands now, and the share of an opponent's live hands each hand beats.

Holes are rows of ``ALL_HOLES`` (card integers, ``4 * rank + suit``); cardsets are the
evaluator's int64 layout (``_hand_rank_kernels.py``).
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.games.acpc._hand_rank_kernels import CARD_BITS, rank_cardset
from oppmodel.modeling.kernel_cache import njit


@njit(cache=True)
def board_values(holes, board):
    """(len(holes),) the showdown value of each hole with the ``board`` cardset, -1 where the
    hole shares a card with it."""
    out = np.empty(holes.shape[0])
    for h in range(holes.shape[0]):
        cards = CARD_BITS[holes[h, 0]] | CARD_BITS[holes[h, 1]]
        out[h] = -1.0 if cards & board else float(rank_cardset(cards | board))
    return out


@njit(cache=True)
def beaten_share(holes, values, queries):
    """For each index in ``queries`` (rows of ``holes``), the share of the holes with a value
    (>= 0) and no card in common with it whose value is lower, ties counting one half."""
    out = np.empty(queries.size)
    for k in range(queries.size):
        q = queries[k]
        mine = CARD_BITS[holes[q, 0]] | CARD_BITS[holes[q, 1]]
        ours = values[q]
        won, total = 0.0, 0
        for o in range(holes.shape[0]):
            theirs = values[o]
            if theirs < 0 or (CARD_BITS[holes[o, 0]] | CARD_BITS[holes[o, 1]]) & mine:
                continue
            won += 1.0 if ours > theirs else 0.5 if ours == theirs else 0.0
            total += 1
        out[k] = won / total
    return out


@njit(cache=True)
def pair_rows(holes, index):
    """(k,) the row ``index[a, b]`` of each pair (a, b) of ``holes`` (k, 2), -1 where a card is
    not of the deck (or the two are one card: ``index``'s diagonal)."""
    out = np.empty(holes.shape[0], dtype=np.int64)
    deck = index.shape[0]
    for i in range(holes.shape[0]):
        a, b = holes[i, 0], holes[i, 1]
        out[i] = index[a, b] if 0 <= a < deck and 0 <= b < deck else -1
    return out
