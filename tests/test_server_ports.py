"""A server refuses a busy port and an out-of-range one, and says which ports it chose.

gRPC sets SO_REUSEPORT on its listeners by default, so a second server on a port already in use
started without error and took half of the new connections, to a different database. The server
now turns that option off and checks the address before binding; the configuration refuses a
port outside 0..65535 (gRPC served ``--port 70000`` on 4464, the number modulo 65536).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from service_support import running_server

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.server.app import BackgroundServer, ServerConfig

ROOT = Path(__file__).resolve().parent.parent


def test_a_second_server_on_the_same_port_is_refused_and_creates_no_database(
    tmp_path: Path,
) -> None:
    with running_server(tmp_path / "first.sqlite") as port:
        second = BackgroundServer(ServerConfig(db_path=str(tmp_path / "second.sqlite"), port=port))
        with pytest.raises(OSError, match=f"127.0.0.1:{port} is already in use"):
            second.start()
    assert not (tmp_path / "second.sqlite").exists()


def test_a_server_that_allows_port_sharing_cannot_join_ours(tmp_path: Path) -> None:
    """With SO_REUSEPORT on both, a plain gRPC server would bind our port and share it."""
    with running_server(tmp_path / "db.sqlite") as port:
        intruder = grpc.server(ThreadPoolExecutor(1))  # gRPC's default options: port sharing on
        with pytest.raises(RuntimeError, match="Failed to bind"):
            intruder.add_insecure_port(f"127.0.0.1:{port}")


def test_ours_refuses_a_port_held_by_a_server_that_allows_sharing(tmp_path: Path) -> None:
    other = grpc.server(ThreadPoolExecutor(1))
    port = other.add_insecure_port("127.0.0.1:0")
    other.start()
    try:
        server = BackgroundServer(ServerConfig(db_path=str(tmp_path / "db.sqlite"), port=port))
        with pytest.raises(OSError, match="already in use"):
            server.start()
    finally:
        other.stop(None)


@pytest.mark.parametrize("field", ["port", "metrics_port"])
@pytest.mark.parametrize("value", [-1, 65536, 70000])
def test_a_port_out_of_range_is_refused_by_the_configuration(field: str, value: int) -> None:
    with pytest.raises(InvalidArgumentError, match=f"must be from 0 to 65535, got {value}") as info:
        ServerConfig(db_path="unused.sqlite", **{field: value})
    assert info.value.field == field


@pytest.mark.parametrize("value", [0, 1, 65535])
def test_every_port_in_range_is_accepted(value: int) -> None:
    assert ServerConfig(db_path="unused.sqlite", port=value, metrics_port=value).port == value


def _oppmodel(*argv: str, **options: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "oppmodel.clients.cli", *argv], text=True, **options
    )


def test_serve_prints_the_ports_it_chose_and_a_second_serve_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    first = _oppmodel(
        "serve", "--db", str(db), "--port", "0", "--metrics-port", "0",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        event = {}
        for line in first.stderr:
            if line.startswith("{") and json.loads(line)["msg"] == "serving":
                event = json.loads(line)
                break
        announced = first.stdout.readline().split()
        port, metrics_port = event["port"], event["metrics_port"]
        assert port > 0 and metrics_port > 0 and port != metrics_port
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        assert announced[:3] == ["serving", "on", f"127.0.0.1:{port}"]
        assert announced[-1] == url
        assert "oppmodel_requests" in urllib.request.urlopen(url, timeout=10).read().decode()
        for argv, message in (
            (["--port", str(port)], f"127.0.0.1:{port} is already in use"),
            (["--port", "0", "--metrics-port", str(metrics_port)], "metrics endpoint: "),
        ):
            second = _oppmodel(
                "serve", "--db", str(tmp_path / "second.sqlite"), *argv,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
            out, err = second.communicate(timeout=120)
            assert second.returncode == 2
            (line,) = err.splitlines()
            assert line.startswith("oppmodel serve: error: ") and message in line
            assert out == ""
            assert not (tmp_path / "second.sqlite").exists()
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
    assert first.returncode == 0
