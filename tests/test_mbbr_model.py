"""MBBR's factory and its classes, on Kuhn compiled from its game file: one class per posterior
(and change detection's over a bank of them), each with every attribute in every instance and the
whole interface a served game's model needs; the string enums keep the stored names."""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest
from test_limit_mbbr import random_hands

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.interface import ServedModel
from oppmodel.modeling.mbbr.change import ChangeDetectingModel
from oppmodel.modeling.mbbr.config import (
    CHANGE_HAZARD_RANGE,
    MBBRConfig,
    Posterior,
    Prior,
    Response,
)
from oppmodel.modeling.mbbr.model import (
    DirichletModel,
    SampleModel,
    build_model,
)
from oppmodel.modeling.tilted_prior import TiltedModel

KUHN3P = limit_game("kuhn3p")


@pytest.mark.parametrize(
    ("posterior", "cls"), [("dirichlet", TiltedModel), ("samples", SampleModel)]
)
def test_the_factory_builds_the_class_of_the_posterior(posterior, cls):
    """Without change detection the class of the posterior (the Dirichlet's at its default
    prior, the tilted prior's subclass of DirichletModel, since session 50); with it, the
    detector over a bank of models of that class."""
    model = build_model(KUHN3P, MBBRConfig(posterior=posterior, change_hazard=0.0))
    assert type(model) is cls and model.config.posterior is Posterior(posterior)
    model = build_model(KUHN3P, MBBRConfig(posterior=posterior, change_hazard=1e-3))
    assert type(model) is ChangeDetectingModel
    assert type(model._playing) is cls and model._playing.config.change_hazard == 0.0


def test_a_class_refuses_another_posterior_naming_the_field():
    with pytest.raises(InvalidArgumentError) as info:
        SampleModel(KUHN3P, MBBRConfig(posterior="dirichlet"))
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
            _note_attributes(seen, build_model(limit_game(f"kuhn{n}p"), config))
    assert {cls: len(sets) for cls, sets in seen.items()} == {
        DirichletModel: 1,
        SampleModel: 1,
        ChangeDetectingModel: 1,
    }


def _note_attributes(seen: dict[type, set[frozenset]], model) -> None:
    """Record the attribute names of ``model`` fresh, after hands and a response, and restored
    (25 hands: change detection has opened runs by then)."""
    attributes = seen.setdefault(type(model), set())
    attributes.add(frozenset(vars(model)))
    for obs in random_hands(model.game, 25, seed=model.game.num_players):
        model.observe(obs)
    model.response(0)
    attributes.add(frozenset(vars(model)))
    model.restore(model.snapshot())
    attributes.add(frozenset(vars(model)))


def test_every_class_implements_what_a_served_model_needs():
    members = {name for name in (*ServedModel.__annotations__, *vars(ServedModel))}
    members = {name for name in members if not name.startswith("_")} | {"policy", "run_start"}
    assert {"observe", "opponent_model", "response", "action_probabilities", "snapshot"} <= members
    configs = (MBBRConfig(k=2, change_hazard=0.0), MBBRConfig(k=2, posterior="samples"))
    for config in configs:
        model = build_model(KUHN3P, config)
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
        '"change_hazard": 1e-05, "mixture_eta": 4.0, "weak_eta": 1.0}'
    )
    assert MBBRConfig(prior="informed ").prior == "informed "  # not a name: validate() refuses it
