"""The v1 API's services as a server serves them, and the constants both ends of the wire share.

Every RPC of the services (:data:`SERVICES`) is read from their descriptors (:func:`rpcs`): a
server that relays calls (the Ray Serve deployment, ``server/ray_replica.py``) serves each one
from this list, so a new RPC in a proto is served there without a list kept by hand. Imports only
the generated code.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import message_factory
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message

from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import perfect_info_pb2 as pi_pb

# Trailing metadata a Ray Serve replica puts on every reply it serves: its id. The client reads it
# to learn that it talks to Ray (where unary batches are cheaper than a stream).
REPLICA_KEY = "oppmodel-replica"
# Observations per ObserveBatch call that a server takes by default
# (``Limits.max_batch_observations``), and what a client sends per call.
MAX_BATCH = 1024

SERVICES: tuple[ServiceDescriptor, ...] = (
    pb.DESCRIPTOR.services_by_name["OpponentModelService"],
    pi_pb.DESCRIPTOR.services_by_name["PerfectInfoService"],
)


@dataclass(frozen=True)
class Rpc:
    """One RPC of a service: its name, whether its requests and replies stream (the API's RPCs
    are unary or streamed both ways), and its reply's message class."""

    service: str  # the service's full name, "oppmodel.v1.OpponentModelService"
    name: str
    streaming: bool
    reply: type[Message]


def rpcs() -> tuple[Rpc, ...]:
    """Every RPC of :data:`SERVICES`, in their order; ValueError for one that streams one way
    only (none does: a server relaying calls serves these two kinds)."""
    found = []
    for service in SERVICES:
        for method in service.methods:
            if method.client_streaming != method.server_streaming:
                raise ValueError(f"{service.full_name}/{method.name} streams one way only")
            found.append(
                Rpc(
                    service.full_name,
                    method.name,
                    method.server_streaming,
                    message_factory.GetMessageClass(method.output_type),
                )
            )
    return tuple(found)
