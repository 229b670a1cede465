"""The parts of ``serve --ray``'s metrics (``server/ray_metrics.py``) that need no Ray: the board
forgetting a replica that stopped pushing, the merge labelling every series with its replica,
the endpoint answering a scrape before the board exists, and the serve line naming the metrics
URL. The whole path (replicas pushing through Ray to a scraped endpoint) is in
``tests/test_service_ray.py``."""

from __future__ import annotations

import socket
import urllib.request

import grpc
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from oppmodel.clients.commands.serve_cmd import announce_ray
from oppmodel.server.app import ServerConfig
from oppmodel.server.metrics import Metrics
from oppmodel.server.ray_metrics import MetricsBoard, ReplicaMetricsEndpoint, labelled
from oppmodel.server.ray_serve import RayServeConfig

STORE = "postgresql://nobody@127.0.0.1:1/x"


def replica_metrics(calls: int, refused: int, observations: int) -> Metrics:
    """A replica's registry after ``calls`` OK and ``refused`` NOT_FOUND GetAction calls."""
    metrics = Metrics()
    for _ in range(calls):
        metrics.count("GetAction", grpc.StatusCode.OK, 0.001)
    for _ in range(refused):
        metrics.count("GetAction", grpc.StatusCode.NOT_FOUND, 0.001)
    metrics.observations.inc(observations)
    metrics.live_sessions.set(calls)
    return metrics


class _Fixed(Collector):
    def __init__(self, families: list) -> None:
        self.families = families

    def collect(self) -> list:
        return self.families


def exposed(families: list) -> dict[tuple[str, frozenset], float]:
    """{(sample name, labels): value} of ``families`` as Prometheus scrapes them."""
    registry = CollectorRegistry()
    registry.register(_Fixed(families))
    text = generate_latest(registry).decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_every_series_is_labelled_with_its_replica_and_sums_to_the_service_total() -> None:
    one, two = replica_metrics(3, 1, 7), replica_metrics(5, 0, 2)
    scraped = exposed(
        labelled({"r1": list(one.registry.collect()), "r2": list(two.registry.collect())})
    )
    requests = {
        (dict(labels)["replica"], dict(labels)["code"]): value
        for (name, labels), value in scraped.items()
        if name == "oppmodel_requests_total"
    }
    assert requests == {("r1", "OK"): 3, ("r1", "NOT_FOUND"): 1, ("r2", "OK"): 5}
    # the single process's series, each once per replica, with nothing but the label added
    alone = exposed(list(one.registry.collect()))
    assert {
        (name, labels | {("replica", "r1")}): value for (name, labels), value in alone.items()
    } == {key: value for key, value in scraped.items() if ("replica", "r1") in key[1]}
    assert all(("replica", "r1") in labels or ("replica", "r2") in labels for _, labels in scraped)
    assert scraped[("oppmodel_observations_applied_total", frozenset({("replica", "r2")}))] == 2
    assert scraped[("oppmodel_live_sessions", frozenset({("replica", "r1")}))] == 3


def test_the_board_forgets_a_replica_not_heard_from_for_the_stale_bound() -> None:
    now = [100.0]
    board = MetricsBoard(stale_seconds=5.0, clock=lambda: now[0])
    first, second = list(Metrics().registry.collect()), list(Metrics().registry.collect())
    board.push("a", first)
    board.push("b", first)
    now[0] += 3.0
    board.push("b", second)  # the latest push replaces the earlier one
    assert board.snapshot() == {"a": first, "b": second}
    now[0] += 2.0  # "a" was heard from 5 s ago: still listed
    assert set(board.snapshot()) == {"a", "b"}
    now[0] += 0.5
    assert board.snapshot() == {"b": second}
    board.push("a", first)  # a replica that comes back is listed again
    assert set(board.snapshot()) == {"a", "b"}


def test_the_endpoint_answers_before_the_board_exists_and_refuses_a_busy_port() -> None:
    endpoint = ReplicaMetricsEndpoint(0, "127.0.0.1")
    try:
        url = f"http://127.0.0.1:{endpoint.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as reply:
            assert reply.status == 200 and reply.read() == b""
        with pytest.raises(OSError, match=f"metrics endpoint: 127.0.0.1:{endpoint.port} is al"):
            ReplicaMetricsEndpoint(endpoint.port, "127.0.0.1")
    finally:
        endpoint.close()
        endpoint.close()  # idempotent
    with socket.socket() as probe:  # the port is free again
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (past TIME_WAIT)
        probe.bind(("127.0.0.1", endpoint.port))


def test_the_serve_line_names_the_metrics_url_as_the_single_process_servers(
    capsys: pytest.CaptureFixture,
) -> None:
    config = RayServeConfig(ServerConfig(db_path=STORE, metrics_port=0))
    announce_ray(config, 50051, 9100)
    announce_ray(config, 50051, None)
    with_metrics, without = capsys.readouterr().out.splitlines()
    assert with_metrics.startswith("serving on port 50051 of every Ray node")
    assert with_metrics.split()[-1] == "http://127.0.0.1:9100/metrics"
    assert without.endswith("store postgresql://nobody@127.0.0.1:1/x)")
