"""Infrastructure: health and reflection, Prometheus metrics, TLS, graceful stop, JSON logs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import subprocess
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from service_support import connected, kuhn_library, random_observations, running_server

from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.commands import serve_cmd
from oppmodel.modeling.errors import NotFoundError, UnavailableError
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.server.app import (
    SERVICE_NAME,
    ServerConfig,
    build_server,
    free_ports,
)
from oppmodel.server.logs import JsonFormatter


def test_health_serving_and_reflection_lists_the_service(tmp_path: Path) -> None:
    with (
        running_server(tmp_path / "db.sqlite") as port,
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", SERVICE_NAME):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        (reply,) = list(stub.ServerReflectionInfo(iter([request]), timeout=5))
        names = {s.name for s in reply.list_services_response.service}
        assert {SERVICE_NAME, "grpc.health.v1.Health"} <= names
        request = reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE_NAME)
        (reply,) = list(stub.ServerReflectionInfo(iter([request]), timeout=5))
        assert reply.file_descriptor_response.file_descriptor_proto


def test_metrics_endpoint(tmp_path: Path) -> None:
    (metrics_port,) = free_ports()
    with connected(tmp_path / "db.sqlite", metrics_port=metrics_port) as (client, _):
        sid = client.create_session(config=MBBRConfig(k=4)).session_id
        client.observe(sid, random_observations(3, seed=1), first_sequence=1)
        client.model(sid, "opp_A", 1)
        with pytest.raises(NotFoundError):
            client.get_session("missing")
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
    assert 'oppmodel_requests_total{code="OK",method="CreateSession"} 1.0' in text
    assert 'oppmodel_requests_total{code="NOT_FOUND",method="GetSession"} 1.0' in text
    assert "oppmodel_observations_applied_total 3.0" in text
    assert "oppmodel_live_sessions 1.0" in text
    assert "oppmodel_posterior_ess_count 1.0" in text
    assert 'oppmodel_request_seconds_count{method="Observe"} 3.0' in text


def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key: (key, cert)."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return key, cert


def test_tls(tmp_path: Path) -> None:
    key, cert = _certificate(tmp_path)
    config = {"tls_cert": str(cert), "tls_key": str(key)}
    with running_server(tmp_path / "db.sqlite", **config) as port:
        target = f"127.0.0.1:{port}"
        with OpponentModelClient(target, root_certificates=cert.read_bytes()) as client:
            assert client.list_sessions() == []
        with (
            OpponentModelClient(target, timeout=2) as plaintext,
            pytest.raises(UnavailableError, match="this client is plaintext"),
        ):
            plaintext.list_sessions()


def test_the_serving_line_says_tls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key, cert = _certificate(tmp_path)

    async def announce(**tls: str) -> None:
        server, _ = build_server(ServerConfig(db_path=str(tmp_path / "db.sqlite"), port=0, **tls))
        try:
            serve_cmd.announce(server)
        finally:
            server.close()

    asyncio.run(announce(tls_cert=str(cert), tls_key=str(key)))
    asyncio.run(announce())
    tls, plaintext = capsys.readouterr().out.splitlines()
    assert tls.startswith("serving TLS on 127.0.0.1:")
    assert plaintext.startswith("serving on 127.0.0.1:")


def test_json_log_lines() -> None:
    record = logging.makeLogRecord(
        {"name": "oppmodel.server", "levelname": "INFO", "msg": "session created",
         "session_id": "abc"}
    )  # fmt: skip
    data = json.loads(JsonFormatter().format(record))
    assert data["msg"] == "session created" and data["session_id"] == "abc"
    assert data["level"] == "INFO"


def test_sigterm_drains_and_sigkill_loses_nothing_acknowledged(store_location: str) -> None:
    db = store_location
    observations = random_observations(20, seed=8)
    config = MBBRConfig(k=5, hands_default=0, seed=2)
    process, port = serve_cmd.spawn(db, "--grace", "2")
    with OpponentModelClient(f"127.0.0.1:{port}") as client:
        sid = client.create_session(config=config).session_id
        client.observe(sid, observations[:10], first_sequence=1)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 0
    assert any(
        line.startswith("{") and json.loads(line)["msg"] == "stopped" for line in process.stderr
    )

    process, port = serve_cmd.spawn(db, "--grace", "2")
    with OpponentModelClient(f"127.0.0.1:{port}") as client:
        client.observe(sid, observations[10:], first_sequence=11)
    process.kill()  # a crash: no shutdown, no checkpoint
    process.wait(timeout=10)

    library = kuhn_library(config, observations)
    with connected(db) as (client, _):
        assert client.get_session(sid).hands_observed == 20
        for position in range(3):
            got = client.response(sid, position, "bayes")
            assert got.expected_value == library.response(position, "bayes")[1]
        got = client.model(sid, "opp_B", 0)
        want, ess = library.opponent_model(got.our_position, 0)
        assert got.effective_sample_size == ess
        assert (got.strategy.probabilities == want[kuhn_game(3).infosets(0)]).all()


def test_health_turns_not_serving_when_the_server_stops(tmp_path: Path) -> None:
    seen: list[int] = []
    with running_server(tmp_path / "db.sqlite") as port:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        watch = health_pb2_grpc.HealthStub(channel).Watch(
            health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=10
        )
        seen.append(next(watch).status)
    with contextlib.suppress(grpc.RpcError):  # the stream ends when the server is gone
        seen.extend(reply.status for reply in watch)
    channel.close()
    serving, not_serving = (
        health_pb2.HealthCheckResponse.SERVING,
        health_pb2.HealthCheckResponse.NOT_SERVING,
    )
    assert seen[:2] == [serving, not_serving]
