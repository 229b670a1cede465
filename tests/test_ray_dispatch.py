"""Ray Serve hands a gRPC call to the deployment's method of the call's *method name* alone (the
service in the path is not looked at), so every RPC the deployment serves must have a name of its
own across all the services registered with the proxy, and a method of that name, which runs the
RPC of the servicer of its service: checked here against the services' descriptors, without
starting Ray (``tests/test_service_ray.py`` calls them through a live proxy)."""

from __future__ import annotations

import inspect
from pathlib import Path

from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2

from oppmodel.server.app import ServerConfig
from oppmodel.server.ray_replica import SERVICERS, OppModelDeployment
from oppmodel.v1_services import SERVICES, rpcs

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


def test_every_rpc_of_the_apis_services_runs_on_its_services_servicer(tmp_path: Path) -> None:
    replica = OppModelDeployment(ServerConfig(db_path=str(tmp_path / "s.sqlite")), warm=False)
    try:
        assert set(SERVICERS) == {service.full_name for service in SERVICES}
        for rpc in rpcs():
            method = getattr(OppModelDeployment, rpc.name)
            kind = inspect.isasyncgenfunction if rpc.streaming else inspect.iscoroutinefunction
            assert kind(method), rpc.name  # Serve streams the replies of an async generator
            servicer = getattr(replica, SERVICERS[rpc.service])
            assert callable(getattr(servicer, rpc.name, None)), (rpc.service, rpc.name)
    finally:
        replica.__del__()
