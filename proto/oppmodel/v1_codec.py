"""The one codec between MBBR's configuration (``MBBRConfig``) and its messages.

A session's configuration travels as ``SessionConfig.seed`` and the parameter fields of
``MbbrParams``, each named as ``MBBRConfig``'s field it carries (``epsilon``, ``k``, ...,
``mixture_eta``); the enum fields go through the API's table of them (:mod:`oppmodel.v1_enums`).
The mapping is derived from the dataclass's fields, so a new MBBR parameter is a field of
``MBBRConfig`` and a field of the same name in ``MbbrParams`` (``tests/test_api_codec.py`` fails
until both are there). The client (``clients/client.py``) and the server
(``server/conversion.py``) both write and read the configuration here and nowhere else.

What an unset field means is the reader's: the server gives it MBBRConfig's default (a limit
game's change hazard excepted: 0, change detection off unless asked for); the client reading a
Session gives it the value of a server older than the field (:data:`UNSET_BY_OLDER_SERVERS`).

Why here, in the API package, and not in ``server/`` or ``clients/``: both ends of the wire use
it, and neither may import the other (see :mod:`oppmodel.v1_enums`). It knows the core's
configuration record (``modeling/mbbr/config.py``) and the generated messages, nothing else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.mbbr.config import FIELDS_ADDED_LATER, MBBRConfig, Posterior, Prior
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1_enums import POSTERIOR, PRIOR, RESPONSE_KIND, UNSPECIFIED, EnumNames

SEED = "seed"  # the one configuration field SessionConfig carries itself (not in MbbrParams)
# MBBRConfig's choice fields and the table of their enum
ENUMS: dict[str, EnumNames] = {"prior": PRIOR, "response": RESPONSE_KIND, "posterior": POSTERIOR}
# MbbrParams' fields that are not configuration but the profiles a session is given
# (server/conversion.py reads and writes them against the session's game)
PROFILE_FIELDS = ("prior_mean", "prior_mean_json", "default_strategy", "default_strategy_json")
# What a Session's unset field means to a client: the server predates the field (a posterior
# unset: before posteriors were a setting, samples; a safety budget unset: no bankroll, ...)
UNSET_BY_OLDER_SERVERS: Mapping[str, object] = {
    **FIELDS_ADDED_LATER,
    "posterior": Posterior.SAMPLES,
    "prior": Prior.INFORMED,  # the default before the eta mixture
}

_INTEGER_RANGES = {
    FieldDescriptor.CPPTYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.CPPTYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.CPPTYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.CPPTYPE_UINT64: (0, 2**64 - 1),
}


def config_fields() -> tuple[str, ...]:
    """MBBRConfig's field names, in its order."""
    return tuple(field.name for field in dataclasses.fields(MBBRConfig))


def field_path(name: str) -> str:
    """The request's path of MBBRConfig's field ``name`` (``config.seed``, ``config.mbbr.k``),
    as errors name it."""
    return f"config.{name}" if name == SEED else f"config.mbbr.{name}"


def set_field(message: Message, name: str, value: object, field: str) -> None:
    """``message.name = value``; a value the field cannot hold (an integer beyond its range, a
    non-integer where one goes, text where a number goes) is InvalidArgumentError naming
    ``field`` as the server would, not protobuf's ValueError or TypeError. What the field can
    hold but the server refuses (k = 0, NaN) is left to the server, which names it too."""
    try:
        setattr(message, name, value)
    except (TypeError, ValueError):
        kind = message.DESCRIPTOR.fields_by_name[name].cpp_type
        if kind in _INTEGER_RANGES:
            low, high = _INTEGER_RANGES[kind]
            reason = f"must be an integer from {low} to {high}, got {value!r}"
        else:
            reason = f"must be a number, got {value!r}"
        raise InvalidArgumentError(field, reason) from None


def write_config(config: MBBRConfig, session: pb.SessionConfig, *, every_field: bool) -> None:
    """Write ``config`` into ``session`` (its seed and ``session.mbbr``'s parameters).

    ``every_field`` False leaves a field added later (``FIELDS_ADDED_LATER``) unset when it holds
    MBBRConfig's default, so that it means what the server makes of an unset field (its default;
    in a limit game, change detection off); True writes every field, so the session runs
    ``config`` itself. InvalidArgumentError naming the field for a value its message field cannot
    hold, or a choice the API does not know."""
    defaults = MBBRConfig()
    for name in config_fields():
        value = getattr(config, name)
        if not every_field and name in FIELDS_ADDED_LATER and value == getattr(defaults, name):
            continue
        target = session if name == SEED else session.mbbr
        table = ENUMS.get(name)
        if table is None:
            set_field(target, name, value, field_path(name))
        elif value in table.values:
            setattr(target, name, table.values[value])
        else:
            raise InvalidArgumentError(
                field_path(name), f"must be one of {table.names}, got {value!r}"
            )


def read_config(session: pb.SessionConfig, *, unset: Mapping[str, object]) -> MBBRConfig:
    """The MBBRConfig of ``session``'s seed and parameters, not validated; a field left unset
    (an enum UNSPECIFIED) is ``unset``'s value for it if given, else MBBRConfig's default.
    InvalidArgumentError naming the field for an enum value the API does not know."""
    values: dict[str, Any] = {SEED: int(session.seed)}  # (proto3: a seed is always there)
    params = session.mbbr
    for name in config_fields():
        if name == SEED:
            continue
        table = ENUMS.get(name)
        if table is not None and getattr(params, name) != UNSPECIFIED:
            values[name] = table.name(getattr(params, name))
            if values[name] is None:
                raise InvalidArgumentError(
                    field_path(name), f"unknown value {getattr(params, name)}"
                )
        elif table is None and params.HasField(name):
            values[name] = getattr(params, name)
        elif name in unset:
            values[name] = unset[name]
    return MBBRConfig(**values)
