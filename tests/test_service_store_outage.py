"""``oppmodel serve`` on a PostgreSQL store that goes away and comes back, its password in the
store's location: health follows the store, and the password (or, to clients, anything about
where the store is) appears in nothing the run prints, logs or answers.

A PostgreSQL server of this module's own (the suite's shared one must not stop), with a role that
logs in by password only; the server runs as ``oppmodel serve`` in a child process, every output
kept: stdout, the JSON log on stderr, and every status detail and trailer a client receives.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from postgres_support import PostgresServer
from service_support import random_observations, wait_until

from oppmodel.clients.client import observation_message
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc
from oppmodel.v1 import perfect_info_pb2 as pi_pb
from oppmodel.v1 import perfect_info_pb2_grpc as pi_pb_grpc

SECRET = "pw-Zq8x3Kd"  # the role's password: in the store's location only
ROLE = "oppmodel_role"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
WAIT_SECONDS = 120  # for a condition that a quiet machine meets in a few seconds


class Serve:
    """``oppmodel serve`` in a child process, its stdout and stderr in files."""

    def __init__(self, store: str, folder: Path) -> None:
        self.out, self.err = folder / "stdout.txt", folder / "stderr.txt"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "oppmodel.clients.cli", "serve", "--store", store,
                 "--port", "0", "--model-workers", "0", "--grace", "1"],
                stdout=out, stderr=err, text=True, cwd=folder,
            )  # fmt: skip
        wait_until(
            lambda: "serving on" in self.out.read_text() or self.process.poll() is not None,
            "serving",
            seconds=WAIT_SECONDS,
        )
        assert self.process.poll() is None, self.err.read_text()
        self.port = int(self.out.read_text().split("serving on 127.0.0.1:")[1].split()[0])

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=WAIT_SECONDS) == 0, self.err.read_text()


def health(channel: grpc.Channel) -> int:
    reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
    return reply.status


def refusals(channel: grpc.Channel, session_id: str) -> list[tuple[grpc.StatusCode, str, str]]:
    """(code, details, trailers) of a call of each kind about the store, as a client sees them."""
    stub, pi_stub = (
        pb_grpc.OpponentModelServiceStub(channel),
        pi_pb_grpc.PerfectInfoServiceStub(channel),
    )
    hand = observation_message(2, random_observations(2, seed=2)[1])
    calls = [
        lambda: stub.GetSession(pb.GetSessionRequest(session_id=session_id), timeout=60),
        lambda: stub.ListSessions(pb.ListSessionsRequest(), timeout=60),
        lambda: stub.ObserveBatch(
            pb.ObserveBatchRequest(session_id=session_id, observations=[hand]), timeout=60
        ),
        lambda: stub.CreateSession(pb.CreateSessionRequest(config=CONFIG), timeout=60),
        lambda: pi_stub.GetPerfectInfoSession(
            pi_pb.GetPerfectInfoSessionRequest(session_id="f" * 32), timeout=60
        ),
    ]
    seen = []
    for call in calls:
        with pytest.raises(grpc.RpcError) as caught:
            call()
        error = caught.value
        trailers = " ".join(f"{k}={v}" for k, v in error.trailing_metadata() or ())
        seen.append((error.code(), error.details() or "", trailers))
    return seen


CONFIG = pb.SessionConfig(
    game="kuhn_poker(players=3)",
    our_label="us",
    opponent_labels=["a", "b"],
    mbbr=pb.MbbrParams(k=3, hands_default=0),
    seed=1,
)


@pytest.mark.parametrize("form", ["url", "connection string"])
def test_health_follows_the_store_and_no_output_shows_its_secrets(
    own_postgres_server: PostgresServer, tmp_path: Path, form: str
) -> None:
    postgres = own_postgres_server
    url = postgres.password_database(f"{ROLE}_{form[0]}", SECRET)
    role = url.rsplit("/", 1)[1]
    store = (
        f"{url}?password={SECRET}"
        if form == "url"
        else f"host=127.0.0.1 port={postgres.port} user={role} password={SECRET} dbname={role}"
    )
    serve = Serve(store, tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{serve.port}") as channel:
            stub = pb_grpc.OpponentModelServiceStub(channel)
            sid = stub.CreateSession(pb.CreateSessionRequest(config=CONFIG), timeout=60)
            sid = sid.session.session_id
            hand = observation_message(1, random_observations(1, seed=2)[0])
            stub.ObserveBatch(pb.ObserveBatchRequest(session_id=sid, observations=[hand]))
            assert health(channel) == SERVING

            postgres.pause()
            try:
                seen = refusals(channel, sid)
                wait_until(
                    lambda: health(channel) == NOT_SERVING, "NOT_SERVING", seconds=WAIT_SECONDS
                )
            finally:
                postgres.resume()
            wait_until(lambda: health(channel) == SERVING, "SERVING again", seconds=WAIT_SECONDS)
            assert stub.GetSession(pb.GetSessionRequest(session_id=sid)).session.hands_observed == 1
    finally:
        serve.stop()
    assert {code for code, _, _ in seen} == {grpc.StatusCode.UNAVAILABLE}, seen
    told = " ".join(f"{details} {trailers}" for _, details, trailers in seen)
    for secret in (SECRET, role, "127.0.0.1", str(postgres.port)):  # nothing about where
        assert secret not in told, told
    printed = serve.out.read_text() + serve.err.read_text()
    assert SECRET not in printed
    log = serve.err.read_text()
    assert log.count("storage: cannot reach the database") == 1  # logged once per outage
    assert "NOT_SERVING" in log
    assert sorted(os.listdir(tmp_path)) == ["stderr.txt", "stdout.txt"]  # no file made
