"""Snapshots of limit-game MBBR models (Leduc): restoring one taken after s hands into a fresh
model and observing the rest gives, bit for bit, the model that observed every hand; a snapshot
of other settings, another game or damaged arrays is refused and changes nothing."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from test_limit_mbbr import random_hands

from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.strategy import uniform_profile
from oppmodel.modeling.mbbr import snapshot
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import limit_observation_cards, limit_observation_of

SNAPSHOTS = Path(__file__).parent / "data" / "snapshots"
# The configurations tests/data/snapshots/v1-*.npz were written with (tests/data/README.md)
STORED = {
    "samples": MBBRConfig(
        k=4, hands_default=0, seed=3, posterior="samples", response="bayes",
        safety_budget=math.inf, change_hazard=0.0,
    ),
    "dirichlet": MBBRConfig(
        hands_default=0, seed=3, posterior="dirichlet", safety_budget=math.inf, change_hazard=0.0
    ),
    "typed": MBBRConfig(
        hands_default=0, seed=3, posterior="dirichlet", prior="typed",
        safety_budget=math.inf, change_hazard=0.0,
    ),
}  # fmt: skip
CONFIGS = {
    "dirichlet": MBBRConfig(seed=5),  # the eta mixture
    "informed": MBBRConfig(seed=5, prior="informed"),
    "typed": MBBRConfig(seed=5, prior="typed"),
    "mixture": MBBRConfig(seed=5, prior="mixture"),
    "uninformed": MBBRConfig(seed=5, prior="uninformed"),
    "samples": MBBRConfig(seed=5, posterior="samples", k=6),
    "samples-bayes": MBBRConfig(seed=5, posterior="samples", k=4, response="bayes"),
}


def answers(model) -> list:
    """Everything the model answers, per position: its opponents' models, the response and a
    lazily solved action."""
    game = model.game
    out = []
    for p in range(game.num_players):
        for q in range(game.num_players):
            if q != p:
                out.append(model.opponent_model(p, q))
        out.append(model.response(p))
        out.append(model.action_probabilities(p, 3))
    return out


def assert_identical(a, b) -> None:
    for x, y in zip(answers(a), answers(b), strict=True):
        if isinstance(x, tuple):
            np.testing.assert_array_equal(x[0], y[0])
            assert x[1] == y[1]
        else:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("game_name", ["leduc2p", "leduc3p"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_restore_then_observe_equals_observing_everything(game_name, name):
    game = limit_game(game_name)
    config = CONFIGS[name]
    hands = random_hands(game, 120, seed=11)
    cut = 70
    full = build_model(game, config)
    for obs in hands:
        full.observe(obs)
    first = build_model(game, config)
    for obs in hands[:cut]:
        first.observe(obs)
    answers(first)  # caches filled before the snapshot change nothing
    blob = first.snapshot()
    restored = build_model(game, config)
    restored.restore(blob)
    assert restored.hands_observed == cut
    assert restored.snapshot() == blob
    for obs in hands[cut:]:
        restored.observe(obs)
    assert restored.hands_observed == full.hands_observed
    assert restored.snapshot() == full.snapshot()
    assert_identical(restored, full)


@pytest.mark.parametrize("hazard", [0.0, 1e-5])
def test_a_snapshot_of_other_settings_or_damaged_is_refused_and_changes_nothing(hazard):
    """The plain model's arrays, and with change detection the first run's (``run0.``) and the
    bank's own."""
    game = limit_game("leduc2p")
    config = dataclasses.replace(CONFIGS["dirichlet"], change_hazard=hazard)
    run = "run0." if hazard else ""
    model = build_model(game, config)
    for obs in random_hands(game, 30, seed=2):
        model.observe(obs)
    blob = model.snapshot()
    target = build_model(game, config)
    for obs in random_hands(game, 5, seed=3):
        target.observe(obs)
    before = target.snapshot()
    meta, arrays = snapshot.decode(blob)
    damaged = {
        "seed": build_model(game, dataclasses.replace(config, seed=6)).snapshot(),
        "posterior": build_model(game, CONFIGS["samples"]).snapshot(),
        "game": build_model(limit_game("leduc3p"), config).snapshot(),
        "not a snapshot": b"PK\x03\x04 nonsense",
        "missing array": snapshot.encode(
            meta, {k: a for k, a in arrays.items() if k != f"{run}p0.resp"}
        ),
        "inconsistent": snapshot.encode(
            meta, {**arrays, f"{run}p1.hidden": arrays[f"{run}p1.hidden"][:-1]}
        ),
        "other seat": snapshot.encode(
            meta,
            {**arrays, f"{run}p1.key_position": np.zeros_like(arrays[f"{run}p1.key_position"])},
        ),
        "plain or bank": build_model(
            game, dataclasses.replace(config, change_hazard=1e-5 - hazard)
        ).snapshot(),
    }
    if hazard:
        damaged["runs"] = snapshot.encode(meta, {**arrays, "run_starts": arrays["run_starts"] + 1})
    for case, bad in damaged.items():
        with pytest.raises(snapshot.SnapshotError):
            target.restore(bad)
        assert target.snapshot() == before, case
    uniform = build_model(game, config, prior_mean=uniform_profile(game))
    with pytest.raises(snapshot.SnapshotError):  # another prior mean
        uniform.restore(blob)


@pytest.mark.parametrize("name", ["samples", "dirichlet", "typed"])
def test_a_snapshot_of_the_retired_kuhn_models_is_refused_and_changes_nothing(name):
    """tests/data/snapshots/v1-*.npz were written by the Kuhn-only models (``KuhnGame``, before
    Kuhn was a compiled game): their header names no game, so the compiled model refuses them
    (the service then rebuilds such a session from its stored hands: test_service_stored.py)."""
    blob = (SNAPSHOTS / f"v1-{name}.npz").read_bytes()
    meta, _ = snapshot.decode(blob)  # a readable snapshot of this format and version
    assert "game_sha256" not in meta and meta["hands_observed"] == 30
    game = limit_game("kuhn3p")
    model = build_model(game, STORED[name])
    for obs in random_hands(game, 5, seed=1):
        model.observe(obs)
    before = model.snapshot()
    with pytest.raises(snapshot.SnapshotError, match="game_sha256"):
        model.restore(blob)
    assert model.snapshot() == before and model.hands_observed == 5


def test_the_card_record_reads_back_every_kind_of_hand():
    game = limit_game("leduc3p")
    for obs in random_hands(game, 200, seed=4):
        cards = limit_observation_cards(obs)
        assert len(cards) == game.num_players + len(obs.board)
        assert limit_observation_of(obs.position, obs.betting, cards, game.num_players) == obs
