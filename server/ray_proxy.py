"""What Ray Serve's gRPC proxy registers for ``oppmodel serve --ray`` (it imports these by path).

The proxy decodes each request with the registered handler's deserializer, then hands the decoded
message on to a replica; a deserializer that raises (bytes that are not valid protobuf: bad UTF-8
in a string field, a truncated varint, ...) made grpc answer UNKNOWN ("Unexpected <class
'google.protobuf.message.DecodeError'>") before any of our code ran. Registered here, every
deserializer is total (``decoding.add_totally_decoded``): such bytes reach the replica as an
``Undecodable`` naming the field, which the replica refuses with INVALID_ARGUMENT and the error
trailers, as the single-process server does. Kept light: the proxy process imports only the
generated protos and ``server/decoding.py``.
"""

from __future__ import annotations

from typing import Any

from grpc_health.v1 import health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2_grpc

from oppmodel.server.decoding import add_totally_decoded
from oppmodel.v1 import opponent_model_pb2_grpc, perfect_info_pb2_grpc


def add_opponent_model_service(servicer: Any, server: Any) -> None:
    """Register OpponentModelService on the proxy's server, its requests totally decoded."""
    add_totally_decoded(
        opponent_model_pb2_grpc.add_OpponentModelServiceServicer_to_server, servicer, server
    )


def add_perfect_info_service(servicer: Any, server: Any) -> None:
    """Register PerfectInfoService on the proxy's server, its requests totally decoded."""
    add_totally_decoded(
        perfect_info_pb2_grpc.add_PerfectInfoServiceServicer_to_server, servicer, server
    )


def add_health_service(servicer: Any, server: Any) -> None:
    """Register grpc.health.v1.Health (answered by the replicas), totally decoded too."""
    add_totally_decoded(health_pb2_grpc.add_HealthServicer_to_server, servicer, server)


def add_reflection_service(servicer: Any, server: Any) -> None:
    """Register grpc.reflection.v1alpha (answered by the replicas, in place of the proxy's own,
    which decodes as grpc does), totally decoded too."""
    add_totally_decoded(
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server, servicer, server
    )
