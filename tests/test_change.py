"""Change detection on Kuhn, compiled from its game file: the plain model exactly where nothing
changes, a bounded bank against opponents who never change, a planted switch found within the
stated delay, and stored specs and snapshots from before change detection (the run weights
against the exact recursion and the bank's snapshots: ``test_limit_change.py``)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from test_limit_change import DETECTION_DELAY, _play, _switching
from test_limit_mbbr import random_hands

from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.strategy import kuhn_strategy_of
from oppmodel.modeling.games.kuhn3p import equilibria
from oppmodel.modeling.mbbr import snapshot
from oppmodel.modeling.mbbr.change import GRID, MAX_RUNS, ChangeDetectingModel
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.server.session_spec import SessionSpec

GAME = limit_game("kuhn3p")


def _plain(config: MBBRConfig):
    return build_model(GAME, dataclasses.replace(config, change_hazard=0.0))


@pytest.mark.parametrize("posterior", ["dirichlet", "samples"])
def test_hazard_zero_is_the_plain_model_exactly(posterior):
    """With hazard 0 no run is ever opened: every policy (within the default safety budget),
    model and snapshot array is the plain posterior's, bit for bit."""
    config = MBBRConfig(posterior=posterior, k=4, hands_default=5, change_hazard=0.0)
    wrapped, plain = ChangeDetectingModel(GAME, config), _plain(config)
    for t, obs in enumerate(random_hands(GAME, 60, seed=3)):
        p = t % 3
        assert np.array_equal(wrapped.policy(p), plain.policy(p))
        for q in {0, 1, 2} - {p}:
            a, b = wrapped.opponent_model(p, q), plain.opponent_model(p, q)
            assert np.array_equal(a[0], b[0]) and a[1] == b[1]
        wrapped.observe(obs)
        plain.observe(obs)
    assert wrapped.run_masses() == {0: 1.0} and wrapped.run_start == 0
    _, arrays = snapshot.decode(wrapped.snapshot())
    _, plain_arrays = snapshot.decode(plain.snapshot())
    assert any(name.startswith("safety.") for name in plain_arrays)  # the default budget
    for name, array in plain_arrays.items():  # the bankroll is the wrapper's, the posterior run 0's
        ours = name if name.startswith("safety.") else f"run0.{name}"
        assert np.array_equal(arrays[ours], array), name


def test_against_opponents_who_never_change_it_plays_the_plain_policy():
    """The default hazard against a stationary equilibrium pair: the first run keeps the mass,
    so every policy of a 600-hand match is the plain model's exactly, while runs open and are
    dropped (never more than MAX_RUNS)."""
    config = MBBRConfig()
    assert config.change_hazard > 0.0
    model, plain = build_model(GAME, config), _plain(config)
    family = equilibria(GAME)
    opened: set[int] = set()

    def note(t, m):
        assert len(m.run_masses()) <= MAX_RUNS and m.run_start == 0
        opened.update(m.run_masses())

    _play(model, GAME, lambda t: (family["n3"], family["n2"]), 600, 5, twin=plain, on_hand=note)
    assert len(opened) == 1 + 600 // GRID  # a run was opened at every grid point


@pytest.mark.parametrize("seed", range(3))
def test_a_planted_switch_is_found_within_the_stated_delay(seed):
    """A maniac pair turns tight-passive at an off-grid hand: no change is reported before it,
    the run found starts at one of the grid points next to it, and it is found within
    DETECTION_DELAY hands; without change detection the model still expects a maniac."""
    switch = 400 + 3 + 2 * seed
    pairs = _switching(GAME, "maniac", "tight-passive", switch)
    found = []

    def note(t, model):
        if model.run_start > 0 and not found:
            found.append((t, model.run_start))

    model = build_model(GAME, MBBRConfig(seed=seed))
    _play(model, GAME, pairs, switch + 60, seed, on_hand=note)
    assert found, "the switch was not found"
    hand, start = found[0]
    assert hand >= switch and switch - GRID < start <= GRID * math.ceil(switch / GRID)
    assert hand - switch <= DETECTION_DELAY
    plain = _plain(MBBRConfig(seed=seed))
    _play(plain, GAME, pairs, switch + 60, seed)
    bets = [
        kuhn_strategy_of(GAME, 1, m.opponent_model(0, 1)[0])[:, 1].mean() for m in (model, plain)
    ]
    assert bets[0] + 0.2 < bets[1], bets


def test_stored_specs_and_snapshots_from_before_change_detection_keep_it_off():
    """A session stored before the field existed was built without change detection: its spec
    reads back with hazard 0, and a hazard-0 snapshot's header leaves the field out, as the
    earlier release wrote it."""
    spec = SessionSpec(
        game="kuhn_poker(players=3)",
        num_players=3,
        our_label="us",
        opponent_labels=("a", "b"),
        config=MBBRConfig(posterior="dirichlet"),
    ).to_json()
    assert spec["config"].pop("change_hazard") == MBBRConfig.change_hazard > 0.0
    assert SessionSpec.from_json(spec).config.change_hazard == 0.0
    meta, _ = snapshot.decode(_plain(MBBRConfig()).snapshot())
    assert "change_hazard" not in meta["config"]
    meta, _ = snapshot.decode(build_model(GAME, MBBRConfig()).snapshot())
    assert meta["config"]["change_hazard"] == MBBRConfig.change_hazard
