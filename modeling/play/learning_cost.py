"""What MBBR pays to learn, exactly: its policy's expected value hand by hand against fixed play.

A match against fixed profiles is played as the duplicate protocol plays it (our position rotating
every hand), but each hand's figure is the *exact* expected value, against the true opponents, of
the policy MBBR would play in it, so no card luck is left in it: only the learning trajectory's own
variation. Against copies of one equilibrium the best-response ceiling is 0, and every milli-ante
below it is the cost of learning (``experiments/learning_cost.py``, ``experiments/leduc_field.py``).
"""

from __future__ import annotations

import numpy as np

from oppmodel.modeling.evaluation.limit import deviation_gains, expected_values
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import LimitObservation, observe_limit_hand
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.match import sample_terminal
from oppmodel.modeling.play.tournament import seated_profile


def trajectory(task: tuple) -> tuple[np.ndarray, np.ndarray, int]:
    """One match against (first, second) in order: exact rate of MBBR's policy at each hand, and
    (with ``attribute``) the deviation gains of our information sets summed over the hands, in
    mbb (3, num_infosets; zeros without), and the hands played on a later run of change detection
    (0: every policy was the plain posterior's). ``task`` is (first, second, config, seed, hands,
    attribute[, game[, switch[, population]]]); the game defaults to kuhn3p; with ``switch`` =
    (hand, first', second') the pair plays (first', second') from that hand on; ``population``:
    the fitted prior of a ``prior="population"`` config. In a 2-player game ``second`` is None:
    ``first`` is the opponent."""
    first, second, config, seed, hands, attribute, *rest = task
    game = limit_game(rest[0] if rest else "kuhn3p")
    switch = rest[1] if len(rest) > 1 else None
    n = game.num_players
    pair = tuple(fixed_profile(game, name) for name in (first, second)[: n - 1])
    model = build_model(game, config, population=rest[2] if len(rest) > 2 else None)
    rng = np.random.default_rng([seed, 7])
    values = np.empty(hands)
    gains = np.zeros((game.num_players, game.num_infosets))
    later_run = 0
    for t in range(hands):
        later_run += model.run_start > 0
        if switch is not None and t == switch[0]:
            pair = tuple(fixed_profile(game, name) for name in switch[1:n])
        p = t % n
        us = model.default_strategy.copy()
        us[p] = model.policy(p)
        profile = seated_profile(game, p, us, pair)
        values[t] = game.rate_unit.rate(expected_values(game, profile)[p])
        if attribute:
            gains[p] += game.rate_unit.rate(deviation_gains(game, profile, p))
        model.observe(_sample_observation(game, profile, p, rng))
    return values, gains, later_run


def _sample_observation(
    game: LimitGame, profile: np.ndarray, position: int, rng: np.random.Generator
) -> LimitObservation:
    """What ``position`` sees of one hand dealt and played from ``profile``."""
    deal = int(rng.integers(game.num_deals))
    return observe_limit_hand(game, position, deal, sample_terminal(game, profile, deal, rng))
