"""Change detection (``modeling/mbbr/change.py``): the plain model exactly where nothing changes, a
planted switch found within the stated delay, the predictive likelihood against enumeration, a
bounded bank, and snapshots that restore the bank exactly."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from mbbr_support import kuhn_named_profile
from service_support import random_observations

from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.mbbr import snapshot
from oppmodel.modeling.mbbr.change import (
    GRID,
    MAX_RUNS,
    ChangeDetectingModel,
    predictive_log_likelihood,
)
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import observe_hand
from oppmodel.modeling.play.tournament import seated_profile
from oppmodel.modeling.strategy import sample_history
from oppmodel.server.session_spec import SessionSpec

GAME = kuhn_game(3)
DETECTION_DELAY = GRID + 15  # the delay change.py's docstring states for maniac -> tight-passive


def _plain(config: MBBRConfig):
    return build_model(GAME, dataclasses.replace(config, change_hazard=0.0))


def _play(model, pairs, hands: int, seed: int, on_hand=None) -> None:
    """MBBR (its own policy, our position rotating) against ``pairs(t)`` for ``hands`` hands."""
    rng = np.random.default_rng(seed)
    for t in range(hands):
        p = t % 3
        us = model.default_strategy.copy()
        us[p] = model.policy(p)
        profile = seated_profile(GAME, p, us, pairs(t))
        deal = [int(c) for c in rng.permutation(GAME.num_cards)[:3]]
        model.observe(observe_hand(GAME, p, sample_history(GAME, profile, deal, rng), deal))
        if on_hand is not None:
            on_hand(t + 1, model)


@pytest.mark.parametrize("posterior", ["dirichlet", "samples"])
def test_hazard_zero_is_the_plain_model_exactly(posterior):
    """With hazard 0 no run is ever opened: every policy (within the default safety budget),
    model and snapshot array is the plain posterior's, bit for bit."""
    config = MBBRConfig(posterior=posterior, k=4, hands_default=5, change_hazard=0.0)
    wrapped = ChangeDetectingModel(GAME, config, lambda evidence: _plain(config))
    plain = _plain(config)
    for t, obs in enumerate(random_observations(60, seed=3, profile="uniform")):
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
    pair = (kuhn_named_profile(GAME, "n3"), kuhn_named_profile(GAME, "n2"))
    opened = set()
    rng = np.random.default_rng(5)
    for t in range(600):
        p = t % 3
        us = model.default_strategy.copy()
        us[p] = model.policy(p)
        assert np.array_equal(us[p], plain.policy(p))
        deal = [int(c) for c in rng.permutation(GAME.num_cards)[:3]]
        profile = seated_profile(GAME, p, us, pair)
        obs = observe_hand(GAME, p, sample_history(GAME, profile, deal, rng), deal)
        model.observe(obs)
        plain.observe(obs)
        assert len(model.run_masses()) <= MAX_RUNS and model.run_start == 0
        opened.update(model.run_masses())
    assert len(opened) == 1 + 600 // GRID  # a run was opened at every grid point


@pytest.mark.parametrize("seed", range(4))
def test_a_planted_switch_is_found_within_the_stated_delay(seed):
    """A maniac pair turns tight-passive at an off-grid hand: no change is reported before it,
    the run found starts at one of the grid points next to it, and it is found within
    DETECTION_DELAY hands."""
    switch = 400 + 3 + 2 * seed
    before = (kuhn_named_profile(GAME, "maniac"),) * 2
    after = (kuhn_named_profile(GAME, "tight-passive"),) * 2
    found = []

    def note(t, model):
        if model.run_start > 0 and not found:
            found.append((t, model.run_start))

    model = build_model(GAME, MBBRConfig(seed=seed))
    _play(model, lambda t: before if t < switch else after, switch + 60, seed, note)
    assert found, "the switch was not found"
    hand, start = found[0]
    assert hand >= switch and switch - GRID < start <= GRID * math.ceil(switch / GRID)
    assert hand - switch <= DETECTION_DELAY
    # without change detection the model still expects a maniac 60 hands later
    plain = _plain(MBBRConfig(seed=seed))
    _play(plain, lambda t: before if t < switch else after, switch + 60, seed)
    bets = model.opponent_model(0, 1)[0][:, 1].mean(), plain.opponent_model(0, 1)[0][:, 1].mean()
    assert bets[0] + 0.2 < bets[1], bets


def test_predictive_likelihood_equals_enumeration_over_the_unseen_cards():
    """Against a direct sum over the deals consistent with the observation of the product of
    the opponents' action probabilities, read letter by letter off the history."""
    rng = np.random.default_rng(0)
    models = [rng.dirichlet([1.0, 1.0], size=GAME.num_infosets) for _ in range(2)]
    for obs in random_observations(40, seed=9, profile="uniform"):
        p, n = obs.position, GAME.num_players
        hidden = [q for q in range(n) if obs.cards[q] is None]
        free = [c for c in range(GAME.num_cards) if c not in obs.cards]
        total = 0.0
        for pick in itertools.permutations(free, len(hidden)):
            cards = list(obs.cards)
            for q, c in zip(hidden, pick, strict=True):
                cards[q] = c
            prob = 1.0
            for i, letter in enumerate(obs.history):
                actor = GAME.current_player(obs.history[:i])
                if actor != p:
                    row = GAME.infoset_index(actor, cards[actor], obs.history[:i])
                    prob *= models[(actor - p) % n - 1][row, "pb".index(letter)]
            total += prob
        assert predictive_log_likelihood(GAME, models, obs) == pytest.approx(math.log(total))


def test_snapshots_restore_the_bank_exactly():
    """Restoring a snapshot taken with several runs in the bank, then observing the rest, gives
    the bytes and the answers of observing every hand; a snapshot of another kind is refused and
    changes nothing."""
    config = MBBRConfig(hands_default=0, change_hazard=0.1, seed=2)
    hands = random_observations(70, seed=4, profile="uniform")
    hands += random_observations(40, seed=5, profile="tight-passive")
    full = build_model(GAME, config)
    for obs in hands:
        full.observe(obs)
    assert len(full.run_masses()) > 1
    for split in (0, 37, 80):
        model = build_model(GAME, config)
        for obs in hands[:split]:
            model.observe(obs)
        restored = build_model(GAME, config)
        restored.restore(model.snapshot())
        for obs in hands[split:]:
            restored.observe(obs)
        assert restored.snapshot() == full.snapshot()
        assert restored.run_masses() == full.run_masses()
        for p in range(3):
            assert np.array_equal(restored.policy(p), full.policy(p))
    before = full.snapshot()
    plain_blob = _plain(config).snapshot()
    other_hazard = build_model(GAME, dataclasses.replace(config, change_hazard=0.05)).snapshot()
    meta, arrays = snapshot.decode(before)
    inconsistent = snapshot.encode(meta, {**arrays, "run_starts": arrays["run_starts"] + 1})
    for blob in (plain_blob, other_hazard, inconsistent, before[:100]):
        with pytest.raises(snapshot.SnapshotError):
            full.restore(blob)
        assert full.snapshot() == before
    with pytest.raises(snapshot.SnapshotError):
        _plain(config).restore(before)


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
