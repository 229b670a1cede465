"""Exact evaluation of Kuhn profiles: expected values, best responses, nash_conv.

The game tree is small, so every quantity is computed exactly by enumerating deals and terminal
histories (numba kernels in ``_evaluation_kernels``). A best response of position i sums the other
players' reach probabilities and chance into leaf weights per (own card, terminal), then takes the
max at i's own public nodes in one backward sweep: with one card per player, a public node plus a
card is exactly one information set. nash_conv = sum_i (BR value_i - EV_i) (OpenSpiel's definition).
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.evaluation import _kuhn_kernels as kernels
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.strategy import validate_profile


def expected_values(game: KuhnGame, profile: np.ndarray) -> np.ndarray:
    """Expected chips per hand won by each position under ``profile``."""
    profile = validate_profile(game, profile)
    return kernels.expected_values(
        profile, game.node_player, game.infoset_of, game.path_nodes, game.path_actions,
        game.path_len, game.deals, game.payoffs,
    )  # fmt: skip


def leaf_weights(game: KuhnGame, profile: np.ndarray, position: int) -> np.ndarray:
    """(num_cards, num_terminals) chance x others' reach x payoff of ``position`` (unvalidated)."""
    return kernels.leaf_weights(
        profile, position, game.num_cards, game.node_player, game.infoset_of, game.path_nodes,
        game.path_actions, game.path_len, game.deals, game.payoffs,
    )  # fmt: skip


def values_against_weights(
    game: KuhnGame, strategy: np.ndarray, weights: np.ndarray, position: int
) -> np.ndarray:
    """(m,) expected values of ``position`` playing ``strategy`` (num_infosets, 2) against each
    of m leaf weights ``weights`` (m, num_cards, num_terminals) (see :func:`leaf_weights`)."""
    return kernels.values_against_weights(
        strategy, weights, position, game.node_player, game.infoset_of, game.path_nodes,
        game.path_actions, game.path_len,
    )  # fmt: skip


def best_response_to_weights(
    game: KuhnGame, weights: np.ndarray, position: int
) -> tuple[np.ndarray, float]:
    """Best response of ``position`` to leaf weights (see :func:`leaf_weights`)."""
    strategy, value = kernels.backward_induction(
        weights, position, game.node_player, game.node_children, game.node_terminal,
        game.infoset_of, game.num_infosets,
    )  # fmt: skip
    return strategy, float(value)


def best_response(game: KuhnGame, profile: np.ndarray, position: int) -> tuple[np.ndarray, float]:
    """A pure best response of ``position`` to the others' strategies in ``profile``, and its value.

    ``profile[position]`` is ignored.
    """
    game.check_position(position)
    profile = validate_profile(game, profile)
    return best_response_to_weights(game, leaf_weights(game, profile, position), position)


def deviation_gains(game: KuhnGame, profile: np.ndarray, position: int) -> np.ndarray:
    """(num_infosets,) what ``position`` would gain by switching to its better action at one
    information set, keeping the rest of ``profile[position]``: where, and by how much, a strategy
    falls short of a best response. All zero exactly when it is one (on the paths it reaches)."""
    game.check_position(position)
    profile = validate_profile(game, profile)
    return kernels.deviation_gains(
        leaf_weights(game, profile, position), profile[position], position, game.node_player,
        game.node_children, game.node_terminal, game.infoset_of, game.num_infosets,
    )  # fmt: skip


def nash_conv(game: KuhnGame, profile: np.ndarray) -> float:
    """Sum over positions of what a best response gains over the profile's own value."""
    profile = validate_profile(game, profile)
    ev = expected_values(game, profile)
    return float(sum(best_response(game, profile, p)[1] - ev[p] for p in range(game.num_players)))
