"""Both clients name the session a call is about in metadata ``session_id``: Ray Serve's proxy
routes by it (``server/ray_serve.py``), so a session's calls reach the replica that holds it.
Checked against a real gRPC server on a loopback port that records each call's metadata.

A replica's replies carry trailing metadata ``oppmodel-replica``: the client then sends hands in
ObserveBatch calls, whichever call the replica answered."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from grpc_health.v1 import health_pb2
from test_client_errors import OBS, POSITION, _opponent_model_calls, _perfect_info_calls, _within

from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.grpc_base import ROUTING_KEY
from oppmodel.clients.perfect_info_client import PerfectInfoClient
from oppmodel.modeling import errors
from oppmodel.v1_services import REPLICA_KEY


class _Recorder(grpc.GenericRpcHandler):
    """Records (method, the ``session_id`` metadata or None) of each call; serves none of them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> None:
        metadata = dict(handler_call_details.invocation_metadata or ())
        method = handler_call_details.method.rpartition("/")[2]
        self.calls.append((method, metadata.get(ROUTING_KEY)))


@contextlib.contextmanager
def _recording_server() -> Iterator[tuple[str, _Recorder]]:
    recorder = _Recorder()
    server = grpc.server(ThreadPoolExecutor(2), handlers=[recorder])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", recorder
    finally:
        server.stop(0)


def test_calls_about_a_session_carry_its_id_for_the_ray_router() -> None:
    with (
        _recording_server() as (target, recorder),
        OpponentModelClient(target, timeout=5, reconnect_seconds=0) as client,
        PerfectInfoClient(target, timeout=5) as perfect,
    ):
        calls = {**_opponent_model_calls(client), **_perfect_info_calls(perfect)}
        calls["probmaxn_move (session)"] = lambda: perfect.probmaxn_move(
            POSITION, searcher=0, session_id="s"
        )
        routes: dict[str, set[str | None]] = {}  # call -> the session_id its RPCs carried
        for name, call in calls.items():
            before = len(recorder.calls)
            error = _within(20, call)
            assert isinstance(error, errors.OppModelError), (name, repr(error))  # UNIMPLEMENTED
            routes[name] = {route for _, route in recorder.calls[before:]}
    unrouted = {"create_session", "list_sessions", "observe_stream", "probmaxn_move"}
    assert {name for name, seen in routes.items() if seen == {None}} == unrouted
    assert {name for name, seen in routes.items() if seen == {"s"}} == set(calls) - unrouted


class _Replica(grpc.GenericRpcHandler):
    """Answers every unary call as a Ray Serve replica does: an (empty) reply with trailing
    metadata ``oppmodel-replica``; records the method of each call, streams included."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = handler_call_details.method
        self.methods.append(method.rpartition("/")[2])
        if method.endswith("/Observe"):
            return grpc.stream_stream_rpc_method_handler(lambda requests, context: iter(()))
        reply = b""
        if method == "/grpc.health.v1.Health/Check":
            serving = health_pb2.HealthCheckResponse.SERVING
            reply = health_pb2.HealthCheckResponse(status=serving).SerializeToString()

        def answer(request: bytes, context: grpc.ServicerContext) -> bytes:
            context.set_trailing_metadata(((REPLICA_KEY, "replica-1"),))
            return reply

        return grpc.unary_unary_rpc_method_handler(answer)


@pytest.mark.parametrize(
    "attach",
    ["create_session", "get_session", "list_sessions", "model", "response", "action",
     "check_health", "observe_batch"],
)  # fmt: skip
def test_any_reply_from_a_replica_sends_hands_in_batches(attach: str) -> None:
    """Whichever call a replica answered first (a client that attaches to a session with
    ``get_session`` never calls ``create_session``), ``observe`` then uses ObserveBatch."""
    replica = _Replica()
    server = grpc.server(ThreadPoolExecutor(2), handlers=[replica])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=10, reconnect_seconds=0) as client:
            calls = {
                **_opponent_model_calls(client),
                "check_health": client.check_health,
                "observe_batch": lambda: client.observe_batch("s", OBS, first_sequence=1),
            }
            calls[attach]()
            assert client.observe_batches
            before = len(replica.methods)
            client.observe("s", OBS, first_sequence=1)
            assert replica.methods[before:] == ["ObserveBatch"]
    finally:
        server.stop(0)
