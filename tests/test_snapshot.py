"""Snapshots of MBBR on Kuhn, compiled from its game file (2 to 4 players): restore + the tail of
hands is bit for bit a full replay, for every posterior, prior and accepted configuration; the
format needs no pickle; foreign or damaged ones are refused and change nothing (Leduc's and
change detection's: ``test_limit_snapshot.py``)."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mbbr_support import POSTERIORS_AND_PRIORS, PROFILES, accepted_configs
from test_limit_mbbr import random_hands
from test_limit_snapshot import assert_identical

from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr import snapshot
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.play.panel import named_profile


def _replayed(game, config, hands, prior_mean=None):
    model = build_model(game, config, prior_mean=prior_mean)
    for obs in hands:
        model.observe(obs)
    return model


def _assert_identical(model, other) -> None:
    """Same state (every array, exactly, and the same bytes) and the same answers to every query,
    both responses included."""
    assert model.snapshot() == other.snapshot()  # the encoding is deterministic
    _, arrays = snapshot.decode(model.snapshot())
    _, others = snapshot.decode(other.snapshot())
    assert arrays.keys() == others.keys()
    for name, array in arrays.items():
        assert array.dtype == others[name].dtype and np.array_equal(array, others[name]), name
    assert_identical(model, other)
    for p in range(model.game.num_players):
        a, b = model.response(p, "bayes"), other.response(p, "bayes")
        assert np.array_equal(a[0], b[0]) and a[1] == b[1]


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize(("posterior", "prior"), POSTERIORS_AND_PRIORS)
def test_restore_plus_tail_is_bit_identical_to_full_replay(n, posterior, prior):
    game = limit_game(f"kuhn{n}p")
    config = MBBRConfig(k=5, hands_default=0, seed=11, posterior=posterior, prior=prior)
    hands = random_hands(game, 90, seed=n)
    full = _replayed(game, config, hands)
    for split in (0, 1, 37, 90):
        restored = build_model(game, config)
        restored.restore(_replayed(game, config, hands[:split]).snapshot())
        assert restored.hands_observed == split
        for obs in hands[split:]:
            restored.observe(obs)
        _assert_identical(restored, full)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.sampled_from([2, 3, 4]))
def test_any_accepted_config_snapshot_restores_exactly(data, n):
    game = limit_game(f"kuhn{n}p")
    config = data.draw(accepted_configs(max_k=6 if n == 4 else 12), label="config")
    prior_mean = None
    if config.prior != "uninformed" and data.draw(st.booleans(), label="own prior mean"):
        prior_mean = named_profile(game, "tight-passive")
    profile = named_profile(game, data.draw(st.sampled_from(PROFILES), label="profile"))
    hands = random_hands(game, 40, seed=data.draw(st.integers(0, 99)), profile=profile)
    split = data.draw(st.integers(0, len(hands)), label="split")
    restored = build_model(game, config, prior_mean=prior_mean)
    restored.restore(_replayed(game, config, hands[:split], prior_mean).snapshot())
    for obs in hands[split:]:
        restored.observe(obs)
    _assert_identical(restored, _replayed(game, config, hands, prior_mean))


def test_the_format_is_self_describing_and_needs_no_pickle():
    game = limit_game("kuhn3p")
    config = MBBRConfig(posterior="dirichlet", change_hazard=0.0)
    model = _replayed(game, config, random_hands(game, 5, seed=1))
    with np.load(io.BytesIO(model.snapshot()), allow_pickle=False) as archive:
        meta = json.loads(str(archive["meta"]))
        names = set(archive.files)
    assert meta["format"] == snapshot.FORMAT and meta["version"] == snapshot.VERSION
    assert meta["posterior"] == "dirichlet" and meta["hands_observed"] == 5
    assert meta["config"]["seed"] == 0 and meta["num_players"] == 3
    assert len(meta["game_sha256"]) == 64
    assert {"meta", "p0.expected", "p0.counts", "p2.key_betting", "safety.bank"} <= names


def _with_meta(blob: bytes, **changes: object) -> bytes:
    meta, arrays = snapshot.decode(blob)
    meta.update(changes)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, array in {"meta": np.array(json.dumps(meta)), **arrays}.items():
            with archive.open(f"{name}.npy", "w") as entry:
                np.lib.format.write_array(entry, array)
    return out.getvalue()


@pytest.mark.parametrize("posterior", ["samples", "dirichlet"])
def test_a_snapshot_that_does_not_fit_is_refused_and_changes_nothing(posterior):
    game = limit_game("kuhn3p")
    config = MBBRConfig(k=4, posterior=posterior, seed=3)
    hands = random_hands(game, 12, seed=2)
    blob = _replayed(game, config, hands).snapshot()
    model = _replayed(game, config, hands[:4])
    before = model.snapshot()
    other = MBBRConfig(k=4, posterior=posterior, seed=4)
    bad = [
        b"not a snapshot",
        blob[: len(blob) // 2],
        _replayed(game, other, hands).snapshot(),  # another seed
        _replayed(game, config, hands, named_profile(game, "maniac")).snapshot(),
        _with_meta(blob, version=snapshot.VERSION + 1),
        _with_meta(blob, format="something else"),
        _with_meta(blob, hands_observed=-1),
    ]
    _, arrays = snapshot.decode(blob)
    for name in list(arrays)[:3]:
        damaged = dict(arrays)
        damaged[name] = damaged[name][..., :1].astype(np.float32)
        meta, _ = snapshot.decode(blob)
        bad.append(snapshot.encode(meta, damaged))
    for blob_ in bad:
        with pytest.raises(snapshot.SnapshotError):
            model.restore(blob_)
        assert model.snapshot() == before
