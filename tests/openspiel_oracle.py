"""OpenSpiel as an independent oracle: our profiles as its tabular policies, and its values.

Test-only helpers (imported by the test modules, which pytest runs with ``tests/`` on the path).
"""

from __future__ import annotations

import numpy as np
import pyspiel
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import expected_game_score

from oppmodel.modeling.games.kuhn import KuhnGame


def openspiel_game(num_players: int) -> pyspiel.Game:
    return pyspiel.load_game(f"kuhn_poker(players={num_players})")


def random_profile(game: KuhnGame, rng: np.random.Generator) -> np.ndarray:
    """A random profile; about a fifth of the information sets are pure, to hit exact ties."""
    profile = np.full((game.num_players, game.num_infosets, 2), 0.5)
    for p in range(game.num_players):
        for i in game.infosets(p):
            u = rng.random()
            q = rng.integers(0, 2) if u < 0.2 else rng.random()
            profile[p, i] = [1.0 - q, q]
    return profile


def tabular_policy(game: KuhnGame, os_game: pyspiel.Game, profile: np.ndarray):
    """``profile`` as an OpenSpiel ``TabularPolicy`` (keys: information-state strings)."""
    pol = os_policy.TabularPolicy(os_game)
    for p in range(game.num_players):
        for i in game.infosets(p):
            pol.action_probability_array[pol.state_lookup[game.infoset_string(p, i)]] = profile[
                p, i
            ]
    return pol


def openspiel_values(os_game: pyspiel.Game, pol) -> np.ndarray:
    """Expected value of every player under ``pol`` (OpenSpiel's Python evaluator)."""
    root = os_game.new_initial_state()
    return np.asarray(
        expected_game_score.policy_value(root, [pol] * os_game.num_players()), dtype=float
    )
