"""The MBBR protocol and its factory: one class per posterior, each with every attribute in every
instance; the string enums keep the stored names; snapshots of the earlier release still load."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from service_support import random_observations

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.mbbr import snapshot
from oppmodel.modeling.mbbr.change import ChangeDetectingModel
from oppmodel.modeling.mbbr.config import (
    CHANGE_HAZARD_RANGE,
    MBBRConfig,
    Posterior,
    Prior,
    Response,
)
from oppmodel.modeling.mbbr.dirichlet import DirichletModel
from oppmodel.modeling.mbbr.evidence import EvidenceCache
from oppmodel.modeling.mbbr.memory import ENTRY_BYTES, array_bytes
from oppmodel.modeling.mbbr.model import MBBRModel, build_model
from oppmodel.modeling.mbbr.samples import SampleModel

SNAPSHOTS = Path(__file__).parent / "data" / "snapshots"
# The configurations of tests/data/snapshots/v1-*.npz (see tests/data/README.md), written before
# the safety budget existed: without one (inf) they restore as they were.
STORED = {
    "samples": MBBRConfig(
        k=4,
        hands_default=0,
        seed=3,
        posterior="samples",
        response="bayes",
        safety_budget=math.inf,
        change_hazard=0.0,
    ),
    "dirichlet": MBBRConfig(
        hands_default=0, seed=3, posterior="dirichlet", safety_budget=math.inf, change_hazard=0.0
    ),
    "typed": MBBRConfig(
        hands_default=0,
        seed=3,
        posterior="dirichlet",
        prior="typed",
        safety_budget=math.inf,
        change_hazard=0.0,
    ),
}


@pytest.mark.parametrize(
    ("posterior", "cls"), [("dirichlet", DirichletModel), ("samples", SampleModel)]
)
def test_the_factory_builds_the_class_of_the_posterior(posterior, cls):
    """Without change detection the class of the posterior; with it, the detector over a bank of
    models of that class."""
    model = build_model(kuhn_game(3), MBBRConfig(posterior=posterior, change_hazard=0.0))
    assert type(model) is cls and model.config.posterior is Posterior(posterior)
    model = build_model(kuhn_game(3), MBBRConfig(posterior=posterior, change_hazard=1e-3))
    assert type(model) is ChangeDetectingModel
    assert type(model._model) is cls and model._model.config.change_hazard == 0.0


def test_a_class_refuses_another_posterior_naming_the_field():
    with pytest.raises(InvalidArgumentError) as info:
        SampleModel(kuhn_game(3), MBBRConfig(posterior="dirichlet"))
    assert info.value.field == "posterior"


def test_every_instance_of_a_class_has_every_attribute():
    """Whatever the posterior, prior, player count, hands seen or a restore: one set of
    attributes per class."""
    kinds = [("samples", "informed"), ("samples", "uninformed")]
    kinds += [("dirichlet", "informed"), ("dirichlet", "uninformed"), ("dirichlet", "typed")]
    seen: dict[type, set[frozenset]] = {}
    for (posterior, prior), n in itertools.product(kinds, (2, 3, 4)):
        for hazard in (0.0, 0.5 * CHANGE_HAZARD_RANGE[1]):
            config = MBBRConfig(
                k=2, hands_default=0, posterior=posterior, prior=prior, change_hazard=hazard
            )
            _note_attributes(seen, build_model(kuhn_game(n), config))
    assert {cls: len(sets) for cls, sets in seen.items()} == {
        DirichletModel: 1,
        SampleModel: 1,
        ChangeDetectingModel: 1,
    }


def _note_attributes(seen: dict[type, set[frozenset]], model: MBBRModel) -> None:
    """Record the attribute names of ``model`` fresh, after hands and a response, and restored
    (25 hands: change detection has opened runs by then)."""
    attributes = seen.setdefault(type(model), set())
    attributes.add(frozenset(vars(model)))
    for obs in random_observations(25, seed=model.game.num_players, game=model.game):
        model.observe(obs)
    model.response(0)
    attributes.add(frozenset(vars(model)))
    model.restore(model.snapshot())
    attributes.add(frozenset(vars(model)))


def test_both_classes_implement_the_whole_protocol():
    members = {
        name for name in (*MBBRModel.__annotations__, *vars(MBBRModel)) if not name.startswith("_")
    }
    assert {"observe", "opponent_model", "response", "policy", "snapshot"} <= members
    for config in (MBBRConfig(k=2), MBBRConfig(k=2, posterior="samples")):
        model = build_model(kuhn_game(3), config)
        missing = [name for name in members if not hasattr(model, name)]
        assert not missing, (type(model).__name__, missing)


def test_choices_are_stored_as_the_names_they_always_had():
    config = MBBRConfig(prior="typed", response="bayes", posterior="dirichlet")
    assert (config.prior, config.response) == (Prior.TYPED, Response.BAYES)
    assert config == MBBRConfig(prior=Prior.TYPED, response=Response.BAYES)
    assert hash(config) == hash(MBBRConfig(prior=Prior.TYPED, response=Response.BAYES))
    assert json.dumps(dataclasses.asdict(config)) == (
        '{"epsilon": 0.05, "k": 10, "hands_default": 100, "eta": 4.0, "prior": "typed", '
        '"response": "bayes", "seed": 0, "posterior": "dirichlet", "safety_budget": 0.5, '
        '"change_hazard": 1e-05, "mixture_eta": 4.0}'
    )
    assert MBBRConfig(prior="informed ").prior == "informed "  # not a name: validate() refuses it


@pytest.mark.parametrize("name", sorted(STORED))
def test_snapshots_written_by_the_earlier_release_restore_unchanged(name):
    """v1-*.npz were written before the posteriors had classes of their own: they restore, the
    header and arrays the new code writes are the same, and the restored model goes on as a
    model that saw every hand."""
    config, hands = STORED[name], random_observations(40, seed=5)
    blob = (SNAPSHOTS / f"v1-{name}.npz").read_bytes()
    replayed = build_model(kuhn_game(3), config)
    for obs in hands[:30]:
        replayed.observe(obs)
    stored_meta, stored_arrays = snapshot.decode(blob)
    meta, arrays = snapshot.decode(replayed.snapshot())
    assert meta == stored_meta
    assert {k: (a.dtype, a.shape) for k, a in arrays.items()} == {
        k: (a.dtype, a.shape) for k, a in stored_arrays.items()
    }
    restored = build_model(kuhn_game(3), config)
    restored.restore(blob)
    assert restored.hands_observed == 30
    for obs in hands[30:]:
        restored.observe(obs)
        replayed.observe(obs)
    for p in range(3):
        for d in (1, 2):
            got, spread = restored.opponent_model(p, (p + d) % 3)
            want, want_spread = replayed.opponent_model(p, (p + d) % 3)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
            assert spread == pytest.approx(want_spread, rel=1e-12)
        np.testing.assert_allclose(restored.response(p)[0], replayed.response(p)[0], atol=1e-12)


def test_the_evidence_cache_counts_its_bytes_as_entries_are_added():
    """``EvidenceCache.nbytes`` (asked after every hand by the service) keeps a running count;
    it equals a recount of every entry's arrays."""
    game = kuhn_game(3)
    cache = EvidenceCache(game)
    hands = random_observations(300, seed=4) + random_observations(300, seed=5, profile="bluffer")
    for obs in hands:
        cache.validate(obs)
        cache.move_table(obs)
        arrays = [a for moves in cache._moves.values() for pair in moves for a in pair]
        arrays += [*cache._assignments.values()]
        arrays += [a for table in cache._tables.values() for a in table]
        entries = sum(map(len, (cache._valid, cache._moves, cache._assignments, cache._tables)))
        assert cache.nbytes() == array_bytes(arrays) + entries * ENTRY_BYTES
