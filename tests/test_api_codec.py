"""The one codec between MBBRConfig and its messages (``oppmodel.v1_codec``): every field of the
configuration has its message field and round-trips through it, every parameter field of the
message is a configuration field, and what a client sends is what the session runs."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from service_support import connected

from oppmodel.modeling.choice import Choice
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.mbbr.config import FIELDS_ADDED_LATER, MBBRConfig
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1_codec import (
    ENUMS,
    PROFILE_FIELDS,
    SEED,
    UNSET_BY_OLDER_SERVERS,
    config_fields,
    read_config,
    write_config,
)

PARAMS = pb.MbbrParams.DESCRIPTOR


def other_value(name: str) -> object:
    """A value of MBBRConfig's field ``name`` other than its default (of the same kind)."""
    default = getattr(MBBRConfig(), name)
    if isinstance(default, Choice):
        return next(member for member in type(default) if member != default)
    if isinstance(default, bool):
        raise AssertionError(f"{name}: a bool field needs a rule here")
    if isinstance(default, int):
        return default + 3
    return 0.25 if math.isinf(default) else default / 2 + 0.001


def differing() -> MBBRConfig:
    """A configuration whose every field differs from MBBRConfig's default."""
    return MBBRConfig(**{name: other_value(name) for name in config_fields()})


def test_every_config_field_has_its_message_field_and_every_parameter_field_a_config_field():
    in_params = [name for name in config_fields() if name != SEED]
    assert [n for n in in_params if n not in PARAMS.fields_by_name] == []
    assert SEED in pb.SessionConfig.DESCRIPTOR.fields_by_name
    assert SEED not in PARAMS.fields_by_name
    unmapped = set(PARAMS.fields_by_name) - set(in_params) - set(PROFILE_FIELDS)
    assert unmapped == set()


def test_every_enum_parameter_has_the_table_of_its_enum():
    enums = {f.name: f.enum_type for f in PARAMS.fields if f.enum_type is not None}
    assert set(enums) == set(ENUMS)
    for name, enum in enums.items():
        numbers = {v.number for v in enum.values if v.number != 0}
        assert set(ENUMS[name].values.values()) == numbers, name


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_every_choice_of_the_core_has_its_value_in_the_api(name: str) -> None:
    """A choice added to the core (``Prior``, ...) needs its value in the proto's enum, named
    as ``oppmodel.v1_enums.enum_names`` derives it (``"eta-mixture"``: ``PRIOR_ETA_MIXTURE``)."""
    core = type(getattr(MBBRConfig(), name))
    assert set(ENUMS[name].names) == {member.value for member in core}, (
        f"{core.__name__}: the core's choices and the API's enum {ENUMS[name].names} differ"
    )


@pytest.mark.parametrize("every_field", [True, False])
def test_a_config_differing_in_every_field_round_trips(every_field: bool) -> None:
    config = differing()
    assert all(getattr(config, n) != getattr(MBBRConfig(), n) for n in config_fields())
    message = pb.SessionConfig()
    write_config(config, message, every_field=every_field)
    assert read_config(pb.SessionConfig.FromString(message.SerializeToString()), unset={}) == config


def test_the_fields_added_later_are_left_unset_at_their_defaults_unless_every_field() -> None:
    sparse, full = pb.SessionConfig(), pb.SessionConfig()
    write_config(MBBRConfig(), sparse, every_field=False)
    write_config(MBBRConfig(), full, every_field=True)
    for name in FIELDS_ADDED_LATER:
        assert not sparse.mbbr.HasField(name) and full.mbbr.HasField(name), name
    assert read_config(sparse, unset={}) == MBBRConfig()
    # a client reading a Session of a server older than those fields (and than posteriors)
    assert read_config(sparse, unset=UNSET_BY_OLDER_SERVERS) == dataclasses.replace(
        MBBRConfig(), **FIELDS_ADDED_LATER
    )
    sparse.mbbr.ClearField("posterior")
    assert read_config(sparse, unset=UNSET_BY_OLDER_SERVERS).posterior == "samples"


def test_a_choice_the_api_does_not_know_is_refused_naming_its_field() -> None:
    bad = dataclasses.replace(MBBRConfig(), posterior="bogus")
    with pytest.raises(InvalidArgumentError, match=r"^config\.mbbr\.posterior: must be one of"):
        write_config(bad, pb.SessionConfig(), every_field=False)
    message = pb.SessionConfig(mbbr=pb.MbbrParams(response=7))
    with pytest.raises(InvalidArgumentError, match=r"^config\.mbbr\.response: unknown value 7"):
        read_config(message, unset={})


def test_the_session_runs_the_config_the_client_sent(tmp_path: Path) -> None:
    """Every field of a config differing from the defaults (the prior aside: the mixture and a
    sample posterior do not go together) reaches a limit session and comes back."""
    config = dataclasses.replace(differing(), prior="mixture", posterior="dirichlet")
    config.validate()
    with connected(tmp_path / "s.sqlite") as (client, _):
        created = client.create_session(game="leduc2p", opponent_labels=["solo"], config=config)
        assert created.config == config
        assert client.get_session(created.session_id).config == config
        with pytest.raises(InvalidArgumentError, match=r"^config\.mbbr\.response: must be one"):
            client.create_session(
                game="leduc2p",
                opponent_labels=["solo"],
                config=dataclasses.replace(config, response="bogus"),
            )
