"""Exact evaluation of limit-game profiles: expected values, best responses, nash_conv and the
per-information-set deviation gains, for any game :mod:`oppmodel.modeling.games.acpc.compiler`
compiles.

Every quantity is exact: the kernels (``_limit_evaluation_kernels``) enumerate every deal and
betting sequence, carrying a vector over deals through the public tree. A best response is a
backward induction over the responder's information sets: per deal the counterfactual value of
each action comes up from below, and each information set (many deals: the cards the responder
cannot see, in later rounds fewer) takes the action whose summed value is largest, so the
response is one action per information set even as board cards refine what the player knows.
nash_conv = sum over positions of (best-response value - expected value), OpenSpiel's definition.
"""

from __future__ import annotations

import functools

import numpy as np

from oppmodel.modeling.evaluation import _limit_kernels as kernels
from oppmodel.modeling.games.acpc.betting import NUM_ACTIONS
from oppmodel.modeling.games.acpc.limit_game import LimitGame, LimitTree
from oppmodel.modeling.games.acpc.strategy import validate_profile


def expected_values(game: LimitGame, profile: np.ndarray) -> np.ndarray:
    """Expected chips per hand won by each position under ``profile``."""
    profile = validate_profile(game, profile)
    return kernels.expected_values(game.tree, profile) / game.num_deals


def counterfactual_values(
    game: LimitGame, profile: np.ndarray, position: int, *, best: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One sweep for ``position`` over a validated profile (no checks: for the solver's loop).

    Returns ``(cfv, own_reach, choice, value)``: ``cfv[I, a]`` the counterfactual value of
    action a at information set I (chance included), ``own_reach[I]`` the position's own reach
    probability of I, ``choice[I]`` the best action (with ``best``; -1 otherwise), and the root
    value: the position's expected value, or a best response's value with ``best``.
    """
    size = game.num_infosets
    cfv = np.zeros((size, NUM_ACTIONS))
    own_reach = np.zeros(size)
    choice = np.full(size, -1, dtype=np.int64)
    value = kernels.sweep(game.tree, profile, position, best, cfv, own_reach, choice)
    return cfv / game.num_deals, own_reach, choice, float(value) / game.num_deals


def best_response(game: LimitGame, profile: np.ndarray, position: int) -> tuple[np.ndarray, float]:
    """A pure best response of ``position`` to the others' strategies in ``profile`` and its
    value. ``profile[position]`` is ignored (but must be valid); ties go to the lower action
    code (fold before call before raise)."""
    game.check_position(position)
    profile = validate_profile(game, profile)
    strategy = np.zeros((game.num_infosets, NUM_ACTIONS))
    value = kernels.best_response(*packed_tree(game), profile, position, strategy)
    return strategy, float(value) / game.num_deals


@functools.cache  # per game object: compiled games are cached and immutable
def packed_tree(game: LimitGame) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pack_tree` of the game's tree."""
    return pack_tree(game.tree)


def pack_tree(tree: LimitTree) -> tuple[np.ndarray, np.ndarray]:
    """A tree as two read-only arrays (integers, floats) that ``_limit_kernels.unpack_tree``
    turns back into the tree inside a kernel: what a call from Python unboxes."""
    spent = tree.terminal_spent
    sizes = (len(tree.node_player), len(spent), spent.shape[1], len(tree.share))
    header = [*sizes, tree.share.shape[1], len(tree.round_views), tree.max_depth]
    ints = [tree.node_player, tree.node_round, tree.node_children, tree.node_action]
    ints += [tree.node_parent, tree.node_depth, tree.node_terminal, tree.node_base]
    ints += [tree.terminal_class, tree.deal_view, tree.round_views]
    packed = np.concatenate([np.array(header), *(a.ravel() for a in ints)]).astype(np.int64)
    floats = np.concatenate([a.ravel() for a in (spent, tree.terminal_pot, tree.share)])
    packed.setflags(write=False)
    floats.setflags(write=False)
    return packed, floats


def nash_conv(game: LimitGame, profile: np.ndarray) -> float:
    """Sum over positions of what a best response gains over the profile's own value."""
    profile = validate_profile(game, profile)
    ev = kernels.expected_values(game.tree, profile) / game.num_deals
    return float(
        sum(
            counterfactual_values(game, profile, p, best=True)[3] - ev[p]
            for p in range(game.num_players)
        )
    )


def deviation_gains(game: LimitGame, profile: np.ndarray, position: int) -> np.ndarray:
    """(num_infosets,) what ``position`` would gain by switching to its better action at one
    information set, keeping the rest of ``profile[position]``: where, and by how much, a
    strategy falls short of a best response. All zero exactly when it is one on the paths it
    reaches. Gain = own reach x (best action's counterfactual value - the strategy's)."""
    game.check_position(position)
    profile = validate_profile(game, profile)
    cfv, own_reach, _, _ = counterfactual_values(game, profile, position)
    legal = game.legal_mask[position]
    best = np.where(legal, cfv, -np.inf).max(axis=1)
    current = (profile[position] * cfv).sum(axis=1)
    gains = own_reach * (best - current)
    gains[~game.valid_infoset_mask[position]] = 0.0
    return gains


def payoff_range(game: LimitGame) -> float:
    """Chips between the best and the worst payoff any position can get in one hand: the most a
    hand's expected value can differ between two policies."""
    spent = game.tree.terminal_spent
    return float((game.tree.terminal_pot[:, None] - spent).max() + spent.max())


def deal_lines(game: LimitGame, p: int, tree: LimitTree) -> tuple[np.ndarray, np.ndarray]:
    """For the deals of ``tree`` (one hole of position ``p``): the line (column) of each deal,
    one per view ``p`` has in the last round, and the (rounds, lines) views of ``p`` along each
    line (its earlier views follow from the last one: players remember their cards)."""
    last = tree.deal_view[-1, :, p]
    _, first, columns = np.unique(last, return_index=True, return_inverse=True)
    views = np.ascontiguousarray(tree.deal_view[:, first, p])
    return columns.astype(np.int64), views.astype(np.int64)


def improving_response(game: LimitGame, profile: np.ndarray, position: int) -> np.ndarray:
    """A best response of ``position`` to the others in ``profile`` that keeps the rows of
    ``profile[position]`` wherever they are already best given what follows them (a pure best
    response breaks ties against them): backward induction one switch at a time, always at the
    deepest information set (reached or not) where an action's counterfactual value exceeds the
    row's; nothing below it is switched later, so each is switched at most once."""
    profile = np.array(validate_profile(game, profile), dtype=np.float64)
    nodes = game.infoset_node[position]  # pre-order: a descendant has a larger node
    legal = game.legal_mask[position, : len(nodes)]
    while True:
        cfv = counterfactual_values(game, profile, position)[0][: len(nodes)]
        best = np.where(legal, cfv, -np.inf)
        row = (profile[position, : len(nodes)] * cfv).sum(axis=1)
        short = np.flatnonzero(best.max(axis=1) - row > 1e-12)
        if len(short) == 0:
            return profile[position]
        i = int(short[np.argmax(nodes[short])])
        profile[position, i] = np.eye(NUM_ACTIONS)[int(np.argmax(best[i]))]
