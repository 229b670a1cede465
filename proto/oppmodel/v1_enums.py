"""The v1 API's enums and the domain names they stand for: the one table of them.

Each enum of ``opponent_model.proto`` whose values are choices of the modeling core (MBBR's prior,
posterior and response kind, a population's kind) maps here, value by value (by name:
:func:`enum_names`), to the name the core gives the choice
(``MBBRConfig.prior`` ``"informed"``, ``.posterior`` ``"dirichlet"``, ``.response`` ``"mean"``,
...). Keys are those names as strings, so a core enum whose values are these strings (a
``StrEnum``) looks up the same. An enum's ``*_UNSPECIFIED`` value (0) has no name here: what an
unset field means is decided where it is read (the server fills a request's defaults; the client
reads an older server's sessions).

Why here, beside the generated code (``proto/oppmodel/v1/``, which stays generated and untouched)
and not in ``server/`` or ``clients/``: both ends of the wire read and write these fields, and
neither may import the other. ``clients/`` sits above ``server/`` (the ``serve``, ``demo`` and
``replay`` commands start servers), so the service must not import clients; and a client of the
service must not need the service's own code. The API package is below both and, like this
table, knows protobuf and at most the core's records it carries (``oppmodel.v1_codec``:
``MBBRConfig``); the core (``modeling/``) knows no protobuf.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar, overload

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from oppmodel.v1 import opponent_model_pb2 as pb

UNSPECIFIED = 0  # every enum's first value (tests/test_service_proto.py checks it)


E = TypeVar("E", bound=int)  # a generated enum type (its values are ints)


@dataclass(frozen=True)
class EnumNames(Generic[E]):
    """One proto enum: the domain name of each of its values but UNSPECIFIED."""

    values: Mapping[str, E]  # domain name -> enum value

    @property
    def names(self) -> tuple[str, ...]:
        """The domain names, in the enum's order."""
        return tuple(self.values)

    @overload
    def name(self, value: int) -> str | None: ...
    @overload
    def name(self, value: int, default: str) -> str: ...
    def name(self, value: int, default: str | None = None) -> str | None:
        """The domain name of ``value``; ``default`` for UNSPECIFIED or an unknown value."""
        for name, known in self.values.items():
            if known == value:
                return name
        return default


def enum_names(enum: EnumTypeWrapper, prefix: str) -> EnumNames:
    """The table of ``enum``, each value but UNSPECIFIED named as the core names its choice: the
    value's name without ``prefix``, in lower case, ``_`` written ``-`` (``PRIOR_ETA_MIXTURE`` is
    ``"eta-mixture"``). So a new choice is a value of the core's enum and a value of the proto's,
    and nothing else (``tests/test_api_codec.py`` checks every choice of the core has its value)."""
    return EnumNames(
        {
            name.removeprefix(prefix).lower().replace("_", "-"): value
            for name, value in enum.items()
            if value != UNSPECIFIED
        }
    )


PRIOR = enum_names(pb.Prior, "PRIOR_")
POSTERIOR = enum_names(pb.Posterior, "POSTERIOR_")
RESPONSE_KIND = enum_names(pb.ResponseKind, "RESPONSE_KIND_")
POPULATION_KIND = enum_names(pb.PopulationKind, "POPULATION_KIND_")
