"""Ray Serve hands a gRPC call to the deployment's method of the call's *method name* alone (the
service in the path is not looked at), so every RPC the deployment serves must have a name of its
own across all the services registered with the proxy, and a method of that name."""

from __future__ import annotations

from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2

from oppmodel.server.ray_replica import OppModelDeployment
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import perfect_info_pb2 as pi_pb

SERVED = (
    pb.DESCRIPTOR.services_by_name["OpponentModelService"],
    pi_pb.DESCRIPTOR.services_by_name["PerfectInfoService"],
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
