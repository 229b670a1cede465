"""Ray Serve hands a gRPC call to the deployment's method of the call's *method name* alone (the
service in the path is not looked at), so every RPC the deployment serves must have a name of its
own across all the services registered with the proxy, and a method of that name, which runs the
RPC of the servicer of its service. Checked here without starting Ray: the routes are the ones
Ray's own proxy server registers from ``serve --ray``'s servicer functions, and each API RPC is
called on a replica as Serve calls it, its servicer's methods noting which one ran
(``tests/test_service_ray.py`` calls them through a live proxy)."""

from __future__ import annotations

import asyncio
import inspect
import warnings
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from unittest.mock import Mock

from google.protobuf import message_factory
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2

from oppmodel.server.app import ServerConfig
from oppmodel.server.ray_replica import SERVICERS, OppModelDeployment
from oppmodel.server.ray_serve import SERVICER_FUNCTIONS
from oppmodel.v1_services import SERVICES, Rpc, rpcs

SERVED = (
    *SERVICES,
    health_pb2.DESCRIPTOR.services_by_name["Health"],
    reflection_pb2.DESCRIPTOR.services_by_name["ServerReflection"],
)


def test_no_two_served_rpcs_share_a_method_name() -> None:
    owners: dict[str, list[str]] = {}
    for service in SERVED:
        for method in service.methods:
            owners.setdefault(method.name, []).append(service.full_name)
    shared = {name: services for name, services in owners.items() if len(services) > 1}
    assert not shared, f"Ray Serve would send these to one method whatever the service: {shared}"


def test_every_served_rpc_has_its_deployment_method() -> None:
    missing = [
        f"{service.full_name}/{method.name}"
        for service in SERVED
        for method in service.methods
        if not callable(getattr(OppModelDeployment, method.name, None))
    ]
    assert not missing


def proxy_routes() -> set[str]:
    """Every ``/package.Service/Method`` that Ray's gRPC proxy hands to a replica with
    ``serve --ray``'s options, registered by Ray's own proxy server as it registers them at its
    start (``start_grpc_server``: each of ``grpc_servicer_functions`` called with a stand-in
    servicer, every handler of it replaced by one that routes to the replica)."""
    with warnings.catch_warnings():  # Ray Serve's modules warn of their pydantic use on import
        warnings.simplefilter("ignore", DeprecationWarning)
        from ray.serve._private.grpc_util import gRPCGenericServer
        from ray.serve.config import gRPCOptions
    routes: set[str] = set()

    def route(service_method: str, streaming_type: object) -> Callable[..., None]:
        routes.add(service_method)
        return lambda *_: None

    async def register() -> None:  # grpc.aio's server takes the running loop (a worker's earlier
        server = gRPCGenericServer(route)  # asyncio.run left the thread none: RuntimeError)
        options = gRPCOptions(grpc_servicer_functions=list(SERVICER_FUNCTIONS))
        assert len(options.grpc_servicer_func_callable) == len(SERVICER_FUNCTIONS)  # all import
        for add in options.grpc_servicer_func_callable:
            add(Mock(), server)  # as Ray does: the proxy never calls the servicer

    asyncio.run(register())
    return routes


def test_rays_proxy_routes_every_method_of_the_served_services() -> None:
    expected = {
        f"/{service.full_name}/{method.name}" for service in SERVED for method in service.methods
    }
    assert proxy_routes() == expected


class _Context:
    """What a deployment method uses of Serve's gRPC context when the servicer answers."""

    def set_trailing_metadata(self, metadata: list[tuple[str, str]]) -> None:
        self.trailers = metadata


def _recording(calls: list[str], where: str, rpc: Rpc) -> Callable[..., Any]:
    """An RPC method that notes ``where`` it ran and answers an empty reply."""
    if rpc.streaming:

        async def streamed(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            calls.append(where)
            yield rpc.reply()

        return streamed

    async def unary(request: Any, context: Any) -> Message:
        calls.append(where)
        return rpc.reply()

    return unary


async def _call_as_serve_does(replica: OppModelDeployment, rpc: Rpc, request: Message) -> Any:
    """Serve runs the replica's method named like the call's method (the path's last part)."""
    method = getattr(replica, rpc.name)
    if not rpc.streaming:
        return await method(request, _Context())

    async def requests() -> AsyncIterator[Message]:
        yield request

    return [reply async for reply in method(requests(), _Context())]


def test_every_routed_rpc_of_the_apis_services_runs_that_rpc_of_its_services_servicer(
    tmp_path: Path,
) -> None:
    """Each RPC the proxy routes, called on a replica as Serve calls it, runs the servicer's
    method of that RPC and no other: a deployment method missing, of the wrong kind (Serve streams
    an async generator's replies) or running another method or servicer fails here."""
    replica = OppModelDeployment(ServerConfig(db_path=str(tmp_path / "s.sqlite")), warm=False)
    try:
        assert set(SERVICERS) == {service.full_name for service in SERVICES}
        calls: list[str] = []
        for rpc in rpcs():  # every servicer method answers, noting where it ran
            servicer = getattr(replica, SERVICERS[rpc.service])
            setattr(servicer, rpc.name, _recording(calls, f"/{rpc.service}/{rpc.name}", rpc))
        routes = proxy_routes()
        for rpc in rpcs():
            path = f"/{rpc.service}/{rpc.name}"
            assert path in routes
            kind = inspect.isasyncgenfunction if rpc.streaming else inspect.iscoroutinefunction
            assert kind(getattr(OppModelDeployment, rpc.name, None)), path
            request = message_factory.GetMessageClass(_input_type(rpc))()
            calls.clear()
            reply = asyncio.run(_call_as_serve_does(replica, rpc, request))
            assert calls == [path]
            assert reply == ([rpc.reply()] if rpc.streaming else rpc.reply()), path
    finally:
        replica.__del__()


def _input_type(rpc: Rpc) -> Any:
    service = next(service for service in SERVICES if service.full_name == rpc.service)
    return service.methods_by_name[rpc.name].input_type
