"""experiments/oracle_gap.py: its trajectories are oracle_share's (learning_cost's), and its
counterfactual responses meet their known answers where nothing has been seen yet."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.oracle_gap import WINDOWS, gap_trajectory
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play.learning_cost import trajectory


@pytest.mark.parametrize(
    ("game", "pair", "hands"),
    [("kuhn3p", ("calling-station@0.35", "n1"), 130), ("leduc2p", ("maniac@0.35", None), 106)],
)
def test_the_played_values_are_learning_costs_trajectory_hand_by_hand(game, pair, hands):
    """The same stream and model: the played window sums equal trajectory()'s values summed (a
    different card stream or observation would move them)."""
    config = MBBRConfig()
    values = trajectory((*pair, config, 1, hands, False, game))[0]
    gap = gap_trajectory((*pair, config, 1, hands, 1, False, None, game))
    for w, (a, b) in enumerate(WINDOWS):
        assert gap["played"][w][0] == pytest.approx(float(values[a:b].sum()), abs=1e-9)
        assert gap["played"][w][1] == len(values[a:b])


@pytest.mark.parametrize(
    ("budget", "game", "pair"),
    [
        (0.5, "kuhn3p", ("n2", "maniac@0.35")),
        (float("inf"), "kuhn3p", ("n2", "maniac@0.35")),
        (0.5, "leduc2p", ("calling-station@0.35", None)),
    ],
)
def test_before_any_hand_the_truth_at_unseen_sets_is_the_oracle_and_at_seen_sets_the_mean(
    budget, game, pair
):
    """At the first hand no set has been visited: the models with the truth at every unseen set
    are the truth (their response wins the oracle's value), and with the truth at every seen set
    they are the models (their response wins the mean response's); the default phase plays the
    default, so nothing but the first hand is compared."""
    config = MBBRConfig(safety_budget=budget)
    gap = gap_trajectory((*pair, config, 0, 1, 1, False, None, game))
    first = {name: sums[0][0] for name, sums in gap.items()}
    assert first["true_unseen"] == pytest.approx(first["oracle"], abs=1e-9)
    assert first["true_rare"] == pytest.approx(first["oracle"], abs=1e-9)
    assert first["true_seen"] == pytest.approx(first["mean"], abs=1e-9)
    # every set is rare and unseen: more or less shrinkage of nothing seen is the prior itself
    assert first["prior_rare"] == pytest.approx(first["mean"], abs=1e-9)
    assert first["light_rare"] == pytest.approx(first["mean"], abs=1e-9)
    assert first["true_loss"] == pytest.approx(first["oracle"] - first["mean"], abs=1e-9)
    assert first["oracle"] > first["mean"]  # the prior's response is not the oracle's here
    assert np.isfinite(first["model_edge"]) and first["model_edge"] >= -1e-9


def test_the_nut_fold_probes_change_the_aces_folds_only():
    """The probe's prior and the no_nut_fold models differ from the library's at the folds of the
    information sets holding the ace, and nowhere else."""
    from experiments.oracle_gap import _nut_fold_floored, _without_nut_folds
    from oppmodel.modeling.games.acpc.compiler import limit_game
    from oppmodel.modeling.mbbr import priors
    from oppmodel.modeling.mbbr.model import build_model

    game = limit_game("kuhn3p")
    mean = build_model(game, MBBRConfig()).prior_mean
    kwargs = {"epsilon": 0.05, "eta": 4.0, "prior": "informed"}
    library = priors.prior_alpha(game, mean, **kwargs)
    probe = _nut_fold_floored(1e-4)(game, mean, **kwargs)
    models = _without_nut_folds(game, library / library.sum(axis=2, keepdims=True))
    changed = np.argwhere(probe != library)
    aces = [
        (q, i, 0)
        for q in range(3)
        for i in game.infosets(q)
        if game.infoset_string(q, i).startswith("As:") and game.legal_mask[q, i, 0]
    ]
    assert sorted(map(tuple, changed.tolist())) == aces and len(aces) == 9  # 3 a seat
    assert all(probe[c] == pytest.approx(4e-4) and models[c] == 0.0 for c in aces)
    assert np.allclose(models.sum(axis=2)[game.legal_mask.any(axis=2)], 1.0)


def test_the_robust_response_is_the_mean_response_or_the_default_at_each_set():
    """After 150 hands some of our sets keep the mean response's play and the others take the
    default's (where a posterior draw at the rarely seen sets flips the choice); nothing else."""
    from experiments.oracle_gap import _robust_response
    from oppmodel.modeling.games.acpc.compiler import limit_game
    from oppmodel.modeling.mbbr.model import build_model
    from oppmodel.modeling.play.diluted import fixed_profile
    from oppmodel.modeling.play.learning_cost import _sample_observation
    from oppmodel.modeling.play.tournament import seated_profile

    game = limit_game("kuhn3p")
    model = build_model(game, MBBRConfig(hands_default=0))
    pair = [fixed_profile(game, name) for name in ("n2", "calling-station@0.35")]
    rng = np.random.default_rng(3)
    for t in range(150):
        us = model.default_strategy.copy()
        us[t % 3] = model.policy(t % 3)
        model.observe(_sample_observation(game, seated_profile(game, t % 3, us, pair), t % 3, rng))
    rows = np.asarray(game.infosets(0))
    mean = model.response(0)[0][rows]
    default = model.default_strategy[0, rows]
    robust = _robust_response(game, model, 0, np.random.default_rng(0))[rows]
    kept = (robust == mean).all(axis=1)
    assert ((robust == default).all(axis=1) | kept).all()
    assert kept.any() and not kept.all()  # both happen here


def test_a_stride_that_shares_a_factor_with_the_players_is_refused(capsys):
    """Every 4th hand of a 2-player match is always the same position: its counterfactuals
    would value one position only (and the oracle's rate with it)."""
    from experiments.oracle_gap import main

    with pytest.raises(SystemExit):
        main(["--game", "leduc2p", "--stride", "4", "--hands", "8"])
    assert "--stride: must share no factor with the 2 players" in capsys.readouterr().err
