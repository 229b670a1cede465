"""Change detection in limit games (``change.py``): the run weights against an exact BOCPD
recursion by enumeration over the hidden cards in exact fractions, snapshots of the bank, the
plain model's policy against opponents who never change, and a planted switch found in time."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import limit_mbbr_oracle as oracle
import numpy as np
import pytest

from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr import snapshot
from oppmodel.modeling.mbbr.change import GRID, MAX_RUNS, ChangeDetectingModel, _logaddexp
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import (
    SampleModel,
    build_model,
)
from oppmodel.modeling.observation import observe_limit_hand
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.match import sample_terminal
from oppmodel.modeling.play.tournament import seated_profile
from oppmodel.modeling.tilted_prior import TiltedModel

DETECTION_DELAY = GRID + 15  # hands after a maniac turns tight-passive


def _play(model, game, pairs, hands: int, seed: int, *, twin=None, on_hand=None) -> list:
    """MBBR (its own policy, our position rotating) against ``pairs(t)``; ``twin`` is fed the
    same hands. The observations, in order."""
    rng = np.random.default_rng(seed)
    n, seen = game.num_players, []
    for t in range(hands):
        p = t % n
        us = model.default_strategy.copy()
        us[p] = model.policy(p)
        if twin is not None:
            np.testing.assert_array_equal(twin.policy(p), us[p])
        deal = int(rng.integers(game.num_deals))
        terminal = sample_terminal(game, seated_profile(game, p, us, pairs(t)), deal, rng)
        obs = observe_limit_hand(game, p, deal, terminal)
        model.observe(obs)
        if twin is not None:
            twin.observe(obs)
        seen.append(obs)
        if on_hand is not None:
            on_hand(t + 1, model)
    return seen


def _switching(game, first: str, then: str, at: int):
    a, b = fixed_profile(game, first), fixed_profile(game, then)
    return lambda t: (a if t < at else b,) * (game.num_players - 1)


@pytest.mark.parametrize("posterior", ["dirichlet", "samples"])
def test_hazard_zero_is_the_plain_model_and_a_hazard_a_bank_of_plain_runs(posterior):
    game = limit_game("leduc2p")
    # (the Dirichlet posterior at its default prior: the tilted prior's class, since session 50)
    plain = {"dirichlet": TiltedModel, "samples": SampleModel}[posterior]
    config = MBBRConfig(posterior=posterior, k=3, change_hazard=0.0)
    assert type(build_model(game, config)) is plain
    model = build_model(game, dataclasses.replace(config, change_hazard=1e-3))
    assert isinstance(model, ChangeDetectingModel)
    (run,) = model.runs
    assert type(run) is plain
    assert run.config.change_hazard == 0.0 and math.isinf(run.config.safety_budget)


@pytest.mark.parametrize(
    ("posterior", "prior"),
    [("dirichlet", "informed"), ("dirichlet", "typed"), ("samples", "informed")],
)
def test_a_run_opened_mid_match_learns_as_a_model_built_then(posterior, prior):
    """Runs after the first are copies of a model at the prior (cheaper than building one): one
    opened after GRID hands and fed the later hands holds what a fresh model fed them holds."""
    game = limit_game("kuhn3p")
    config = MBBRConfig(posterior=posterior, prior=prior, k=4, change_hazard=0.05)
    model = build_model(game, config)
    hands = [observe_limit_hand(game, t % 3, (7 * t) % 24, (5 * t) % 13) for t in range(2 * GRID)]
    for obs in hands[:GRID]:
        model.observe(obs)
    fresh = build_model(
        game, dataclasses.replace(config, change_hazard=0.0, safety_budget=math.inf)
    )
    for obs in hands[GRID:]:
        model.observe(obs)
        fresh.observe(obs)
    run = model.runs[model.starts.index(GRID)]
    assert run.hands_observed == fresh.hands_observed == GRID
    _, ours = run.snapshot_parts()
    _, theirs = fresh.snapshot_parts()
    assert ours.keys() == theirs.keys()
    for name, array in theirs.items():
        np.testing.assert_array_equal(ours[name], array, err_msg=name)


def test_run_weights_equal_the_exact_recursion_by_enumeration():
    """Every hand multiplies each run's mass by the probability its models gave the opponents'
    moves, summed over every deal of the hidden cards (the oracle enumerates them through the
    game's public API, in exact fractions of the models' floats); every GRID hands a new run
    enters with h = 1 - (1 - H)^GRID. Each run's models are those of a plain model fed only the
    hands since the run began."""
    game = limit_game("leduc2p")
    hazard = 0.05
    config = MBBRConfig(hands_default=0, change_hazard=hazard, seed=1)
    model = build_model(game, config)
    plain = dataclasses.replace(config, change_hazard=0.0, safety_budget=math.inf)
    hands = _play(model, game, _switching(game, "cfr", "maniac", 14), 3 * GRID, seed=4)
    h = 1 - (1 - Fraction(hazard)) ** GRID
    mass = {0: Fraction(1)}
    for t, obs in enumerate(hands):
        p = obs.position
        for start in mass:
            run = build_model(game, plain)
            for earlier in hands[start:t]:
                run.observe(earlier)
            profile = run.models_profile(p)
            likelihood = Fraction(0)
            for moves in oracle.assignments(game, obs):
                prob = Fraction(1)
                for d_1, infoset, action in moves:
                    prob *= Fraction(float(profile[(p + d_1 + 1) % 2, infoset, action]))
                likelihood += prob
            mass[start] *= likelihood
        if (t + 1) % GRID == 0:
            total = sum(mass.values())
            mass = {start: m * (1 - h) for start, m in mass.items()}
            mass[t + 1] = h * total
    assert list(mass) == [0, GRID, 2 * GRID, 3 * GRID]  # no run dropped: the bank holds them all
    total = sum(mass.values())
    got = model.run_masses()
    assert list(got) == list(mass)
    for start, m in mass.items():
        assert got[start] == pytest.approx(float(m / total), rel=1e-9, abs=1e-300)
    for run, start in zip(model.runs, model.starts, strict=True):
        again = build_model(game, plain)
        for obs in hands[start:]:
            again.observe(obs)
        for p in range(2):
            np.testing.assert_array_equal(run.models_profile(p), again.models_profile(p))


def test_the_banks_logaddexp_gives_numpys_bits():
    """The bank keeps its log masses as Python floats; their normalisation must give the bits
    ``np.logaddexp`` gave when they were arrays (snapshots written then restore into this code)."""
    rng = np.random.default_rng(3)
    values = [*rng.normal(0.0, 30.0, 200), 0.0, -0.0, -math.inf, math.log(1e-4), -20.7]
    for x in values:
        for y in values[::7]:
            assert _logaddexp(x, y) == np.logaddexp(x, y), (x, y)
            assert _logaddexp(y, x) == np.logaddexp(y, x), (y, x)


def test_restore_then_observe_equals_observe_all():
    """A snapshot mid-grid, after the switch was found, restored into a fresh model and fed the
    rest: the same bank (runs, masses, posteriors, bankroll) and policy as the model that saw
    every hand; a bank whose runs do not add up is refused and changes nothing."""
    game = limit_game("leduc2p")
    config = MBBRConfig(hands_default=0, change_hazard=1e-3, seed=2)
    whole = build_model(game, config)
    hands = _play(whole, game, _switching(game, "maniac", "tight-passive", 41), 77, seed=3)
    assert whole.run_start >= 40  # the switch was found: a later run plays
    part = build_model(game, config)
    for obs in hands[:53]:
        part.observe(obs)
    restored = build_model(game, config)
    restored.restore(part.snapshot())
    for obs in hands[53:]:
        restored.observe(obs)
    assert restored.snapshot() == whole.snapshot()
    assert restored.run_masses() == whole.run_masses()
    for p in range(2):
        np.testing.assert_array_equal(restored.policy(p), whole.policy(p))
    meta, arrays = snapshot.decode(part.snapshot())
    fresh = build_model(game, config)
    before = fresh.snapshot()
    for bad in (
        {**arrays, "run_hands": arrays["run_hands"] + 1},
        {**arrays, "run_log_mass": arrays["run_log_mass"] + 1.0},
        {k: a for k, a in arrays.items() if not k.startswith("run1.")},
    ):
        with pytest.raises(snapshot.SnapshotError):
            fresh.restore(snapshot.encode(meta, bad))
        assert fresh.snapshot() == before


@pytest.mark.parametrize(("name", "hands"), [("leduc2p", 300), ("leduc3p", 150)])
def test_against_opponents_who_never_change_the_policy_is_the_plain_models(name, hands):
    """Against two (one) cfr agents the first run keeps the mass: at every hand the policy,
    within the safety budget, is bit for bit the plain model's fed the same hands."""
    game = limit_game(name)
    model = build_model(game, MBBRConfig(hands_default=20, seed=5))
    plain = build_model(game, MBBRConfig(hands_default=20, seed=5, change_hazard=0.0))
    cfr = fixed_profile(game, "cfr")
    opened = []
    _play(
        model,
        game,
        lambda t: (cfr,) * (game.num_players - 1),
        hands,
        seed=6,
        twin=plain,
        on_hand=lambda t, m: opened.append(len(m.run_masses())),
    )
    assert max(opened) == MAX_RUNS and model.run_start == 0  # runs were tried, none taken


@pytest.mark.parametrize("seed", range(3))
def test_a_planted_switch_is_found_within_the_stated_delay(seed):
    """A maniac turning tight-passive at an off-grid hand: within DETECTION_DELAY hands the
    model plays a run that began at most one grid step before the switch; before it, never a
    later run."""
    game = limit_game("leduc2p")
    switch = 203
    model = build_model(game, MBBRConfig(hands_default=0, seed=seed))
    found = []

    def watch(t, m):
        if t <= switch:
            assert m.run_start == 0, t
        elif m.run_start >= switch - GRID and not found:
            found.append(t - switch)

    pairs = _switching(game, "maniac", "tight-passive", switch)
    _play(model, game, pairs, switch + DETECTION_DELAY, seed=seed, on_hand=watch)
    assert found and found[0] <= DETECTION_DELAY


def test_a_bad_observation_changes_nothing():
    game = limit_game("leduc2p")
    model = build_model(game, MBBRConfig(hands_default=0, change_hazard=1e-3))
    good = observe_limit_hand(game, 0, 7, 3)
    for _ in range(GRID):
        model.observe(good)
    before = model.snapshot()
    bad = type(good)(0, good.betting, ("Zz", None), good.board)
    with pytest.raises(Exception):  # noqa: B017  the error type is test_limit_mbbr's subject
        model.observe(bad)
    assert model.snapshot() == before and model.hands_observed == GRID
