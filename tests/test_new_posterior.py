"""Issue 30: adding a posterior type touches three files of ``modeling/`` (README's layout): a
``Posterior`` value (``mbbr/config.py``), its ``MODEL_CLASSES`` entry (``mbbr/model.py``) and a
module of its own holding its subclass of ``MBBRModel``.

This test adds one by those three means alone: the value is added to ``Posterior`` in place (what
an edit of config.py does), the entry to ``MODEL_CLASSES``, and the module is this file, whose
posterior is the Dirichlet one under another name. Nothing else in ``modeling/`` is touched, and
``build_model``, change detection, the safety bankroll, snapshots and restores take it: its answers
are the Dirichlet model's on the same hands, bit for bit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_limit_mbbr import random_hands

from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.change import ChangeDetectingModel
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior
from oppmodel.modeling.mbbr.model import MODEL_CLASSES, DirichletModel, build_model
from oppmodel.modeling.mbbr.snapshot import SnapshotError

NAME, VALUE = "DIRICHLET_AGAIN", "dirichlet-again"


def add_posterior_value(monkeypatch: pytest.MonkeyPatch) -> Posterior:
    """``Posterior.DIRICHLET_AGAIN = "dirichlet-again"``, as if written in config.py (undone after
    the test)."""
    member = str.__new__(Posterior, VALUE)
    member._name_, member._value_ = NAME, VALUE
    monkeypatch.setitem(Posterior._member_map_, NAME, member)
    monkeypatch.setitem(Posterior._value2member_map_, VALUE, member)
    monkeypatch.setattr(Posterior, "_member_names_", [*Posterior._member_names_, NAME])
    return member


@pytest.fixture
def new_posterior(monkeypatch: pytest.MonkeyPatch) -> type[DirichletModel]:
    member = add_posterior_value(monkeypatch)

    class DirichletAgainModel(DirichletModel):  # "a module of its own": its MBBRModel subclass
        POSTERIOR = member

    monkeypatch.setitem(MODEL_CLASSES, member, DirichletAgainModel)  # model.py's entry
    return DirichletAgainModel


@pytest.mark.parametrize("change_hazard", [0.0, 0.05])
def test_a_posterior_added_by_three_files_plays_detects_changes_and_snapshots(
    new_posterior: type[DirichletModel], change_hazard: float
) -> None:
    game = limit_game("kuhn3p")
    config = MBBRConfig(posterior=VALUE, hands_default=5, change_hazard=change_hazard, seed=3)
    assert VALUE in Posterior.names()
    config.validate()
    added = build_model(game, config)
    shipped = build_model(game, dataclasses.replace(config, posterior=Posterior.DIRICHLET))
    if change_hazard:
        assert isinstance(added, ChangeDetectingModel)
        assert all(type(run) is new_posterior for run in added.runs)
    else:
        assert type(added) is new_posterior
    hands = random_hands(game, 60, seed=8)
    for h, obs in enumerate(hands):
        added.observe(obs)
        shipped.observe(obs)
        if h % 20 == 19:
            for p in range(3):
                np.testing.assert_array_equal(added.policy(p), shipped.policy(p))
    if change_hazard:
        assert len(added.runs) > 1 and all(type(run) is new_posterior for run in added.runs)
    assert added._safety is not None  # the default budget's bankroll guards it too

    blob = added.snapshot()
    restored = build_model(game, config)
    restored.restore(blob)
    for obs in random_hands(game, 9, seed=9):
        for model in (added, restored):
            model.observe(obs)
    for p in range(3):
        np.testing.assert_array_equal(restored.policy(p), added.policy(p))
    with pytest.raises(SnapshotError):  # a snapshot names its posterior
        build_model(game, dataclasses.replace(config, posterior=Posterior.DIRICHLET)).restore(blob)
