"""``oppmodel serve --ray``: the service through Ray Serve's gRPC proxy, two replicas on a real
PostgreSQL store, one local Ray instance for the module, started as ``serve --ray`` starts one
(``init_local_ray``: ``ray.init(address="local")``, a new cluster even if someone runs ``ray
start`` on the machine; never ``ray stop``, which stops every Ray on it).

What is proven here: the API through the proxy with the single-process server's status codes,
details and error trailers, for bytes that are not valid protobuf too; the perfect-information
service's answers equal to the single-process server's, its calls routed by session id; the
fuzz of ``test_service_fuzz.py`` through the proxy; health (NOT_SERVING while the store is down)
and reflection; the proxy's port answering on every interface, and the local instance's own ports
on loopback only; a session's calls staying on one replica; hands sent to both replicas applied
exactly once; a 3-player Kuhn match through ``oppmodel acpc-agent --service``; and a replica
killed mid-match losing no acknowledged hand, the final posterior equal to the library's over the
dealer's log.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import psycopg
import pytest
from acpc_support import GAME as ACPC_GAME
from acpc_support import GAME_FILE, AgentThread, log_observations, run_dealer
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from postgres_support import PostgresServer
from prometheus_client.parser import text_string_to_metric_families
from service_support import (
    GAME,
    LOADED_DEADLINE,
    kuhn_library,
    random_observations,
    running_server,
    wait_until,
)
from test_acpc_service_agent import CommandThread
from test_cli_interrupt import session_processes
from test_service_fuzz import LIMITS, PI_LIMITS, REQUESTS, fuzz

from oppmodel.clients.acpc.agent import SeatHand, make_policy
from oppmodel.clients.acpc.convert import kuhn_for
from oppmodel.clients.acpc.log import parse_log
from oppmodel.clients.acpc.service_policy import ServicePolicy
from oppmodel.clients.client import OpponentModelClient, observation_message
from oppmodel.clients.perfect_info_client import (
    ChoiceEvidence,
    GibbsSettings,
    Opponent,
    PerfectInfoClient,
)
from oppmodel.modeling import errors
from oppmodel.modeling.games.spades.cards import deal
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.server.app import ServerConfig, free_ports
from oppmodel.server.ray_metrics import PUSH_SECONDS, STALE_SECONDS, ReplicaMetricsEndpoint
from oppmodel.server.ray_serve import (
    QUIET_RETRIES,
    START_SECONDS,
    RayServeConfig,
    init_local_ray,
    start_serve,
)
from oppmodel.server.storage import redacted
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc
from oppmodel.v1 import perfect_info_pb2 as pi_pb
from oppmodel.v1 import perfect_info_pb2_grpc as pi_pb_grpc
from oppmodel.v1_services import REPLICA_KEY

ray = pytest.importorskip("ray", reason="ray is not installed (extra 'ray')")

pytestmark = pytest.mark.slow

CONFIG = MBBRConfig(k=5, hands_default=0, seed=4)
TOKEN = "tok-ray"


class Deployment:
    """The running application: where its proxy listens, its store, and redeploying it."""

    def __init__(self, store: str, port: int, http_port: int, *, metrics_port: int) -> None:
        self.store = store
        self.target = f"127.0.0.1:{port}"
        self.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        self._ports = (port, http_port)
        self._metrics_port = metrics_port
        self._deployed: tuple | None = None  # what ``ensure`` deployed last
        self.hung_gcs = HungGcs()  # how the module's instance started

    def ensure(
        self, tokens: frozenset[str] | None = None, *, store: str | None = None, **limits: object
    ) -> Deployment:
        """Two replicas requiring ``tokens`` (None: no auth) on ``store`` (default: the module's)
        with ``limits`` (``ServerConfig``'s ``limits``, ``perfect_info_limits``); redeployed only
        on a change."""
        wanted = (tokens, store or self.store, tuple(sorted(limits.items())))
        if wanted != self._deployed:
            server = ServerConfig(
                db_path=wanted[1], auth_tokens=tokens, metrics_port=self._metrics_port, **limits
            )
            port, http_port = self._ports
            start_serve(
                RayServeConfig(server, replicas=2, warm_up=False), port=port, http_port=http_port
            )
            self._deployed = wanted
        return self

    def shutdown(self) -> None:
        """Stop Serve (controller, proxy, replicas); the next ``ensure`` starts it anew."""
        from ray import serve

        serve.shutdown()
        self._deployed = None


class HungGcs:
    """The first GCS server a node start runs hangs (SIGSTOP) when Ray begins to wait for its
    port, and that wait fails as it does when it runs out ("Timed out waiting for file
    .../gcs_server_port_..."), at once instead of after the wait. Later starts are left alone.
    ``stopped`` gets the hung server's pid, ``said`` what ``oppmodel.server`` logged."""

    def __init__(self) -> None:
        self.stopped: list[int] = []
        self.said: list[str] = []

    @contextlib.contextmanager
    def first_start(self) -> Iterator[None]:
        from ray._private import node

        wait = node.wait_for_persisted_port

        def hung(session_dir: str, node_id: str, name: str, **options: Any) -> int:
            if name != node.GCS_SERVER_PORT_NAME or self.stopped:
                return wait(session_dir, node_id, name, **options)
            (pid,) = [p for p in children(os.getpid()) if program_of(p, ("gcs_server",))]
            os.kill(pid, signal.SIGSTOP)
            self.stopped.append(pid)
            raise RuntimeError(f"Timed out waiting for file {session_dir}/{name}_{node_id}")

        said = self.said

        class Said(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                said.append(record.getMessage())

        logger, handler = logging.getLogger("oppmodel.server"), Said()
        logger.addHandler(handler)
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(node, "wait_for_persisted_port", hung)
                yield
        finally:
            logger.removeHandler(handler)


def children(parent: int) -> list[int]:
    """Live child processes of ``parent``, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):  # gone meanwhile; not a process
            state, ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            if int(ppid) == parent and state != "Z":
                found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def ray_app(postgres_server: PostgresServer) -> Iterator[Deployment]:
    """A local Ray instance with Serve's gRPC proxy and the replicas' metrics endpoint, for the
    module; tests deploy through ``ensure``. Its first GCS server hangs (``HungGcs``): the
    instance is the start's second try."""
    store = postgres_server.new_database()
    # as `serve --ray` starts its local instance: Ray's own ports on loopback, and Serve's stop
    # (the module's end) printing no "Task ServeController.graceful_shutdown failed" line
    hung = HungGcs()
    with hung.first_start():
        init_local_ray(
            num_cpus=2, include_dashboard=False, log_to_driver=False, _system_config=QUIET_RETRIES
        )
    metrics = ReplicaMetricsEndpoint(0, "127.0.0.1")  # as `serve --ray --metrics-port 0`
    deployed = Deployment(store, *free_ports(2), metrics_port=metrics.port)
    deployed.hung_gcs = hung
    try:
        metrics.start_board()
        yield deployed
    finally:
        metrics.close()
        deployed.shutdown()
        ray.shutdown()
        postgres_server.drop_database(store)


@pytest.fixture
def deployment(ray_app: Deployment) -> Deployment:
    """The application without auth."""
    return ray_app.ensure(None)


def client_of(deployment: Deployment, **options: object) -> OpponentModelClient:
    return OpponentModelClient(deployment.target, timeout=LOADED_DEADLINE, **options)


def library_model(observations: list) -> object:
    return kuhn_library(CONFIG, observations)


def program_of(pid: int, programs: tuple[str, ...]) -> str | None:
    """Which of ``programs`` process ``pid`` runs, if any: its executable or, for Python, its
    script (an argument ending in it; the raylet's arguments naming its agents' commands go on
    past them)."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return next((p for p in programs if any(a.endswith(p.encode()) for a in argv)), None)


def stall_at_start(session: int, seconds: float, programs: tuple[str, ...]) -> list[str]:
    """In a thread: SIGSTOP each of ``programs`` (see :func:`program_of`) in process session
    ``session`` as soon as it runs, and SIGCONT it ``seconds`` later (a loaded machine's slow
    start). The list gets each program's name when it is stopped; the thread ends once every
    one is resumed (or the session ended)."""
    stopped: list[str] = []

    def stall() -> None:
        resume: dict[int, float] = {}  # pid: when
        while (len(stopped) < len(programs) or resume) and (
            processes := session_processes(session)
        ):
            for pid in processes:
                with contextlib.suppress(OSError):  # gone meanwhile
                    program = program_of(pid, programs)
                    if program is not None and program not in stopped:
                        os.kill(pid, signal.SIGSTOP)
                        stopped.append(program)
                        resume[pid] = time.monotonic() + seconds
            for pid, when in list(resume.items()):
                if time.monotonic() >= when:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGCONT)
                    del resume[pid]
            time.sleep(0.01)

    threading.Thread(target=stall, daemon=True).start()
    return stopped


# Ray's parts that a start waits on, each stalled past the wait it was given: the GCS server
# (Ray's default wait 30 s), the dashboard agent and the runtime environment agent (the
# raylet's, 15 s)
SLOW_PARTS = ("gcs_server", "dashboard/agent.py", "runtime_env/agent/main.py")


def test_serve_ray_starts_though_its_gcs_and_agents_are_slow_and_ctrl_c_ends_it_in_one_line(
    postgres_url: str, tmp_path: Path
) -> None:
    """``oppmodel serve --ray`` on a loaded machine: Ray waited 30 s for its GCS server to
    publish its port and the start failed ("Timed out waiting for file .../gcs_server_port_...");
    its raylet waited 15 s for its dashboard agent's ports and aborted ("... metrics_agent_port_
    ...", at load 20-47 the agent's imports took 17-25 s). Here the GCS server and both agents
    are stopped as soon as they run for 31 s, just past the longest of those waits (which began
    when each was started, before it was stopped), and the command serves all the same.
    Then Ctrl-C (SIGINT to its process group, as a terminal sends it): what it says after it is
    the one interrupted line, on stdout and stderr together (Ray's and Serve's shutdown logging
    silenced, and the driver's warning that Serve's stop failed its own call to the controller:
    "(raylet) Task ServeController.graceful_shutdown failed ..."), status 130, and nothing of its
    session left running (raylet, GCS server, workers). First in the module: the module's own Ray
    instance is not started yet."""
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "oppmodel"), "serve", "--ray", "--store",
         postgres_url, "--port", "0", "--replicas", "1"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group and session, as a shell's job
    )  # fmt: skip
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=lambda s=s, ls=ls: ls.extend(line.rstrip("\n") for line in s))
        for s, ls in ((process.stdout, out), (process.stderr, err))
    ]
    for reader in readers:
        reader.start()
    try:
        stalled = stall_at_start(process.pid, 31.0, SLOW_PARTS)
        wait_until(lambda: bool(out) or process.poll() is not None, "serving", seconds=600)
        assert out and out[0].startswith("serving on port "), err
        assert sorted(stalled) == sorted(SLOW_PARTS)  # it served though they were stalled
        said_before = len(out), len(err)
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=120) == 130, err
        wait_until(lambda: session_processes(process.pid) == [], "its processes' end")
    finally:
        for pid in session_processes(process.pid):  # only if the test failed
            os.kill(pid, signal.SIGKILL)
        process.kill()
        process.wait()
        for reader in readers:
            reader.join(timeout=60)
    printed, logged = out[said_before[0] :], err[said_before[1] :]
    said = printed + [line for line in logged if not line.startswith("{")]  # not JSON log lines
    kept = f"the sessions are kept in {redacted(postgres_url)}"
    assert said == [f"oppmodel serve: interrupted; {kept}"]


def kill_the_first_proxy(stop: threading.Event) -> list[str]:
    """In a thread: kill Serve's proxy actor as soon as it exists, once (as Serve's controller
    kills a proxy that does not report ready in time); the list gets the killed actor's name."""
    from ray.serve._private.constants import SERVE_NAMESPACE, SERVE_PROXY_NAME

    killed: list[str] = []

    def watch() -> None:
        deadline = time.monotonic() + 120
        while not stop.is_set() and time.monotonic() < deadline:
            for actor in ray.util.list_named_actors(all_namespaces=True):
                if actor["name"].startswith(SERVE_PROXY_NAME):
                    ray.kill(ray.get_actor(actor["name"], namespace=SERVE_NAMESPACE))
                    killed.append(actor["name"])
                    return
            time.sleep(0.02)

    threading.Thread(target=watch, daemon=True).start()
    return killed


def test_serve_starts_though_its_first_proxy_is_replaced(ray_app: Deployment) -> None:
    """Serve's controller gives a new proxy 5 s to report ready, then kills it and starts another;
    on a loaded machine the first proxy missed that, and ``serve.start``, waiting on it, raised
    ActorDiedError though Serve went on with the next one (``serve --ray`` failed to start, the
    module's set-up errored). Here the first proxy is killed before it is ready: the application
    is served all the same. (First in the module: Serve is not running yet, so the fresh start
    costs nothing extra.)"""
    ray_app.shutdown()  # a new Serve: serve.start waits for its proxy only when it starts one
    stop = threading.Event()
    killed = kill_the_first_proxy(stop)
    try:
        ray_app.ensure(None)
    finally:
        stop.set()
    assert killed  # the start did wait through a replaced proxy
    with client_of(ray_app) as client:
        sid = client.create_session(config=CONFIG).session_id
        assert client.get_session(sid).hands_observed == 0


def test_the_api_works_through_the_proxy(deployment: Deployment) -> None:
    observations = random_observations(40, seed=3)
    with client_of(deployment) as client:
        sid = client.create_session(config=CONFIG).session_id
        assert client.observe_batches  # told by the replica's trailer
        assert client.observe(sid, observations[:25], first_sequence=1) == 25
        # a resend overlapping what was stored: acknowledged, applied once
        assert client.observe_batch(sid, observations[20:], first_sequence=21) == 40
        assert client.get_session(sid).hands_observed == 40
        with client_of(deployment) as attached:  # attaches to the session, creates none
            assert attached.get_session(sid).hands_observed == 40
            assert attached.observe_batches
        assert sid in [s.session_id for s in client.list_sessions()]
        library = library_model(observations)
        got = client.model(sid, "opp_A", 1)
        want, ess = library.opponent_model(got.our_position, 1)
        assert np.array_equal(got.strategy.probabilities, want[GAME.infosets(1)])
        assert got.effective_sample_size == ess
        assert client.response(sid, 0, "bayes").expected_value == library.response(0, "bayes")[1]
        assert len(client.winnings(sid).chips) == 40  # routed to the session's replica
        move = client.action(sid, position=0, card=2, history="", draw=1)
        assert move.action in (0, 1) and move.hands_observed == 40
        client.check_health()
        client.delete_session(sid)
        with pytest.raises(errors.NotFoundError):
            client.get_session(sid)


def test_the_observe_stream_works_through_the_proxy_and_ends_with_the_refusal_code(
    deployment: Deployment,
) -> None:
    """Bidi Observe through Ray: acks in order; a gap ends the stream with FAILED_PRECONDITION
    and its details (Serve drops the trailers of a stream that replied: the client falls back to
    the code's class)."""
    observations = random_observations(4, seed=5)
    with client_of(deployment) as client:
        sid = client.create_session(config=CONFIG).session_id
        sequences = [1, 2, 3, 5]
        requests = [
            pb.ObserveRequest(session_id=sid, observation=observation_message(s, o))
            for s, o in zip(sequences, observations, strict=True)
        ]
        acks: list[int] = []
        with pytest.raises(errors.FailedPreconditionError, match="sequence"):
            for ack in client.observe_stream(iter(requests)):
                acks.append(ack.sequence)
        assert acks == [1, 2, 3]
        assert client.get_session(sid).hands_observed == 3


def status(call, request, metadata=()) -> tuple[grpc.StatusCode, str, dict]:
    """(code, details, our trailers) of a call that fails."""
    with pytest.raises(grpc.RpcError) as failure:
        call(request, metadata=metadata, timeout=LOADED_DEADLINE)
    trailers = dict(failure.value.trailing_metadata() or ())
    ours = {k: v for k, v in trailers.items() if k.startswith("oppmodel-")}
    return failure.value.code(), failure.value.details(), ours


def refusals(target: str, token: str | None) -> list[tuple[grpc.StatusCode, str, dict]]:
    """What the server at ``target`` answers to bad requests, each as (code, details, trailers).
    Sessions are made fresh, so both servers see the same ids' effects (the ids are not in any
    details compared)."""
    auth = () if token is None else (("authorization", f"Bearer {token}"),)
    with grpc.insecure_channel(target) as channel:
        stub = pb_grpc.OpponentModelServiceStub(channel)
        config = pb.SessionConfig(
            game="kuhn_poker(players=3)",
            our_label="us",
            opponent_labels=["a", "b"],
            method=pb.METHOD_MBBR,
            seed=1,
        )
        sid = stub.CreateSession(
            pb.CreateSessionRequest(config=config), metadata=auth
        ).session.session_id
        observation = observation_message(5, random_observations(1, seed=1)[0])  # a gap
        bad_game = pb.SessionConfig(game="chess", our_label="us", opponent_labels=["a"])
        return [
            status(stub.CreateSession, pb.CreateSessionRequest(config=bad_game), auth),
            status(
                stub.GetModel,
                pb.GetModelRequest(session_id=sid, opponent_label="a", opponent_position=9),
                auth,
            ),
            status(
                stub.ObserveBatch,
                pb.ObserveBatchRequest(session_id=sid, observations=[observation]),
                auth,
            ),
            status(
                stub.ObserveBatch,
                pb.ObserveBatchRequest(session_id=sid, observations=[observation] * 1025),
                auth,
            ),
            status(stub.GetSession, pb.GetSessionRequest(session_id="no-such-session"), auth),
            status(
                stub.GetSession,
                pb.GetSessionRequest(session_id=sid),
                (("authorization", "Bearer wrong"),),
            ),
            status(stub.GetSession, pb.GetSessionRequest(session_id=sid), ()),
        ]


def test_refusals_are_the_single_process_servers(ray_app: Deployment, tmp_path: Path) -> None:
    """Bad input: INVALID_ARGUMENT naming the field, the error class and field in the trailers,
    a gap FAILED_PRECONDITION, too many observations RESOURCE_EXHAUSTED, a wrong or missing
    token UNAUTHENTICATED: through Ray exactly as from the single-process server."""
    deployment = ray_app.ensure(frozenset({TOKEN}))
    with running_server(tmp_path / "s.sqlite", auth_tokens=frozenset({TOKEN})) as port:
        want = refusals(f"127.0.0.1:{port}", TOKEN)
    got = refusals(deployment.target, TOKEN)
    assert [code for code, _, _ in want] == [
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.UNAUTHENTICATED,
    ]
    assert got == want
    assert want[0][2]["oppmodel-field"].startswith("config.game")


def perfect_info_refusals(target: str, token: str) -> list[tuple[grpc.StatusCode, str, dict]]:
    """What the server at ``target`` answers to bad perfect-information requests: (code, details,
    trailers) of unary calls, (code, details) of the choices stream a bad choice ends."""
    auth = (("authorization", f"Bearer {token}"),)
    with grpc.insecure_channel(target) as channel:
        stub = pi_pb_grpc.PerfectInfoServiceStub(channel)
        opponents = [
            pi_pb.OpponentModels(label=label, models=["MT", "mOT"]) for label in ("west", "east")
        ]
        config = pi_pb.PerfectInfoSessionConfig(game="spades3p", opponents=opponents, seed=1)
        sid = stub.CreatePerfectInfoSession(
            pi_pb.CreatePerfectInfoSessionRequest(config=config), metadata=auth
        ).session.session_id
        chess = pi_pb.PerfectInfoSessionConfig(game="chess", opponents=opponents)
        position = pi_pb.SpadesPosition(hands=["AS KS 2C", "QS 3C 4D", "5H 6H 6H"])
        bad_choice = pi_pb.ChoiceObservation(
            sequence=1, opponent="west", likelihoods=pi_pb.ModelValues(values=[0.5])
        )
        answers = [
            status(
                stub.CreatePerfectInfoSession,
                pi_pb.CreatePerfectInfoSessionRequest(config=chess),
                auth,
            ),
            status(
                stub.GetModelWeights,
                pi_pb.GetModelWeightsRequest(session_id=sid, opponent="north"),
                auth,
            ),
            status(
                stub.GetProbMaxnMove,
                pi_pb.GetProbMaxnMoveRequest(position=position, session_id=sid),
                auth,
            ),
            status(stub.GetPerfectInfoSession, pi_pb.GetPerfectInfoSessionRequest(session_id=sid)),
        ]
        with pytest.raises(grpc.RpcError) as failure:
            list(
                stub.ObserveChoices(
                    iter([pi_pb.ObserveChoicesRequest(session_id=sid, observations=[bad_choice])]),
                    metadata=auth,
                    timeout=LOADED_DEADLINE,
                )
            )
        answers.append((failure.value.code(), failure.value.details(), {}))
    return answers


def test_perfect_info_refusals_are_the_single_process_servers(
    ray_app: Deployment, tmp_path: Path
) -> None:
    """Bad perfect-information requests through Ray: INVALID_ARGUMENT naming the field (in the
    details and the trailers), a missing token UNAUTHENTICATED, a bad choice ending the stream
    with INVALID_ARGUMENT; exactly as from the single-process server (a stream's trailers aside)."""
    deployment = ray_app.ensure(frozenset({TOKEN}))
    with running_server(tmp_path / "s.sqlite", auth_tokens=frozenset({TOKEN})) as port:
        want = perfect_info_refusals(f"127.0.0.1:{port}", TOKEN)
    got = perfect_info_refusals(deployment.target, TOKEN)
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    assert [code for code, _, _ in want] == [
        invalid,
        invalid,
        invalid,
        grpc.StatusCode.UNAUTHENTICATED,
        invalid,
    ]
    assert [trailers.get("oppmodel-field") for _, _, trailers in want[:3]] == [
        "config.game",
        "opponent",
        "position.hands[2]",
    ]
    assert want[4][1].startswith("observations[0].likelihoods")
    assert got == want


def test_a_message_beyond_the_size_limit_is_refused(deployment: Deployment) -> None:
    """Serve's proxy takes messages up to 2 GiB; the replica applies the server's limit."""
    with grpc.insecure_channel(deployment.target) as channel:
        stub = pb_grpc.OpponentModelServiceStub(channel)
        request = pb.GetSessionRequest(session_id="x" * (300 * 1024))
        code, details, trailers = status(stub.GetSession, request)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert (
        details.startswith("request: ") and trailers["oppmodel-error"] == "ResourceExhaustedError"
    )


OPPONENT_MODEL = pb.DESCRIPTOR.services_by_name["OpponentModelService"]
PERFECT_INFO = pi_pb.DESCRIPTOR.services_by_name["PerfectInfoService"]
HEALTH_CHECK = "/grpc.health.v1.Health/Check"


def undecodable_refusals(target: str) -> list[tuple[grpc.StatusCode, str, dict]]:
    """What the server at ``target`` answers to bytes that are not valid protobuf (sent raw): to
    every unary method of both services a truncated field tag and, where the request has a field
    1 (a string, or a message that starts with one), that field with bad UTF-8; to the health
    check, its ``service`` with bad UTF-8."""
    calls = [
        (f"/{service.full_name}/{method.name}", data)
        for service in (OPPONENT_MODEL, PERFECT_INFO)
        for method in service.methods
        if not method.client_streaming
        for data in (b"\xff\xff\xff", b"\x0a\x02\xff\xfe")
        if data[0] != 0x0A or 1 in method.input_type.fields_by_number
    ]
    with grpc.insecure_channel(target) as channel:
        return [
            status(channel.unary_unary(path), data)
            for path, data in [*calls, (HEALTH_CHECK, b"\x0a\x02\xff\xfe")]
        ]


def test_undecodable_requests_are_invalid_argument_naming_the_field(
    deployment: Deployment, tmp_path: Path
) -> None:
    """Ray's proxy decodes a request before a replica sees it; bytes that do not parse get
    INVALID_ARGUMENT naming the field with the error trailers, as from the single-process server
    (server/decoding.py), never UNKNOWN."""
    with running_server(tmp_path / "s.sqlite") as port:
        want = undecodable_refusals(f"127.0.0.1:{port}")
    got = undecodable_refusals(deployment.target)
    assert {code for code, _, _ in want} == {grpc.StatusCode.INVALID_ARGUMENT}
    fields = [(details, trailers["oppmodel-field"]) for _, details, trailers in want]
    assert ("session_id: not valid UTF-8", "session_id") in fields
    assert ("position: truncated field tag at byte 2", "position") in fields  # GetProbMaxnMove
    assert got == want


def test_an_undecodable_message_ends_the_observe_stream_naming_the_field(
    deployment: Deployment,
) -> None:
    """Mid-stream, bytes that do not parse: the hands before them are acknowledged and kept, then
    the stream ends with INVALID_ARGUMENT naming the field (its details only, as every refusal
    that ends a stream through Ray)."""
    with client_of(deployment) as client, grpc.insecure_channel(deployment.target) as channel:
        sid = client.create_session(config=CONFIG).session_id
        requests = [
            pb.ObserveRequest(session_id=sid, observation=observation_message(s, o))
            for s, o in enumerate(random_observations(4, seed=8), start=1)
        ]
        raw = [r.SerializeToString() for r in requests]
        history = requests[2].observation.history.encode()
        raw[2] = raw[2].replace(history, b"\xff" * len(history))
        acks: list[int] = []
        observe = channel.stream_stream(f"/{OPPONENT_MODEL.full_name}/Observe")
        with pytest.raises(grpc.RpcError) as failure:
            for ack in observe(iter(raw), metadata=(("session_id", sid),), timeout=LOADED_DEADLINE):
                acks.append(pb.ObserveResponse.FromString(ack).sequence)
        assert failure.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert failure.value.details() == "observation.history: not valid UTF-8"
        assert acks == [1, 2]
        assert client.get_session(sid).hands_observed == 2


PI_OPPONENTS = (Opponent("west", ("MT", "mOT"), (1.0, 2.0)), Opponent("east", ("mOT", "MT")))
PI_GIBBS = GibbsSettings(sweeps=60, burn_in=10, chains=2, level=0.9)


def perfect_info_answers(target: str) -> dict:
    """What the server at ``target`` answers to one perfect-information session's calls (seeded,
    so two servers on the same inputs answer alike): the session, the acks of its choices (some
    resent), its learned weights and a prob-max^n move under them, and the move under given
    weights; session ids and creation times left out."""
    rng = np.random.default_rng(11)
    choices = [
        ChoiceEvidence.from_likelihoods(PI_OPPONENTS[t % 2].label, rng.random(2) + 0.01)
        for t in range(10)
    ]
    choices[3] = ChoiceEvidence.from_utilities(
        "east", [[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]], chosen=2, epsilon=0.3
    )
    position = SpadesState.start(deal(np.random.default_rng(5), 4), leader=1)
    with PerfectInfoClient(target, timeout=LOADED_DEADLINE) as client:
        sid = client.create_session(opponents=PI_OPPONENTS, gibbs=PI_GIBBS, seed=7).session_id
        acks = client.observe_choices(sid, choices[:6], first_sequence=1, per_message=3)
        acks += client.observe_choices(sid, choices[4:], first_sequence=5, per_message=4)
        session = client.get_session(sid)
        answers = {
            "session": (session.opponents, session.gibbs, session.seed, session.choices_observed),
            "acks": acks,
            "weights": client.model_weights(sid),
            "west": client.model_weights(sid, "west"),
            "learned move": client.probmaxn_move(
                position, searcher=position.turn, session_id=sid, searcher_weights=(0.25, 0.75)
            ),
            "given move": client.probmaxn_move(
                position, searcher=0, weights=[[0.5, 0.5], [0.8, 0.2], [0.3, 0.7]], epsilon=0.2
            ),
        }
        client.delete_session(sid)
        with pytest.raises(errors.NotFoundError):
            client.get_session(sid)
    return answers


def same(a: object, b: object) -> bool:
    """Equal, comparing numpy arrays inside dataclasses, dicts and sequences exactly."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if hasattr(a, "__dataclass_fields__") and type(a) is type(b):
        return all(same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    return a == b


def test_the_perfect_info_service_works_through_the_proxy(
    deployment: Deployment, tmp_path: Path
) -> None:
    """Create, observe (with resends), weights, prob-max^n moves and delete through Ray answer
    exactly as the single-process server does on the same inputs; health names the service."""
    with running_server(tmp_path / "s.sqlite") as port:
        want = perfect_info_answers(f"127.0.0.1:{port}")
    got = perfect_info_answers(deployment.target)
    assert want["session"][3] == 10 and want["acks"][-1].choices_observed == 10
    assert want["learned move"].move is not None
    assert same(got, want)
    with grpc.insecure_channel(deployment.target) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=PERFECT_INFO.full_name), timeout=LOADED_DEADLINE
        )
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_an_undecodable_message_ends_the_choices_stream_naming_the_field(
    deployment: Deployment, tmp_path: Path
) -> None:
    """Bytes that do not parse in the ObserveChoices stream end it with INVALID_ARGUMENT naming the
    field, through Ray as from the single-process server."""
    path = f"/{PERFECT_INFO.full_name}/ObserveChoices"
    bad = b"\x0a\x02\xff\xfe"  # session_id with bad UTF-8
    with running_server(tmp_path / "s.sqlite") as port:
        want = stream_ending(f"127.0.0.1:{port}", path, bad, "stream_stream")
    assert want == (grpc.StatusCode.INVALID_ARGUMENT, "session_id: not valid UTF-8")
    assert stream_ending(deployment.target, path, bad, "stream_stream") == want


REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"


def stream_ending(target: str, path: str, data: bytes, kind: str) -> tuple[grpc.StatusCode, str]:
    """(code, details) that end a streaming call of ``path`` sending the raw ``data``."""
    with grpc.insecure_channel(target) as channel:
        call = getattr(channel, kind)(path)
        with pytest.raises(grpc.RpcError) as failure:
            list(call(iter([data]) if kind == "stream_stream" else data, timeout=LOADED_DEADLINE))
    return failure.value.code(), failure.value.details()


def test_reflection_is_served_and_refuses_undecodable_requests(
    deployment: Deployment, tmp_path: Path
) -> None:
    """Reflection (``grpcurl list``) names the services served through Ray, and describes ours;
    bytes that do not parse end its stream, and the health Watch, with INVALID_ARGUMENT and the
    single-process server's details. Watch itself is not served through Ray: UNIMPLEMENTED."""
    requests = [
        reflection_pb2.ServerReflectionRequest(list_services=""),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol=OPPONENT_MODEL.full_name),
    ]
    with grpc.insecure_channel(deployment.target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        listed, described = stub.ServerReflectionInfo(iter(requests), timeout=LOADED_DEADLINE)
    assert sorted(s.name for s in listed.list_services_response.service) == [
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
        OPPONENT_MODEL.full_name,
        PERFECT_INFO.full_name,
    ]
    files = described.file_descriptor_response.file_descriptor_proto
    assert OPPONENT_MODEL.file.serialized_pb in files
    bad = [(REFLECTION, "stream_stream"), ("/grpc.health.v1.Health/Watch", "unary_stream")]
    with running_server(tmp_path / "s.sqlite") as port:
        want = [stream_ending(f"127.0.0.1:{port}", p, b"\x0a\x02\xff\xfe", k) for p, k in bad]
    got = [stream_ending(deployment.target, p, b"\x0a\x02\xff\xfe", k) for p, k in bad]
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    assert want == [(invalid, "host: not valid UTF-8"), (invalid, "service: not valid UTF-8")]
    assert got == want
    code, details = stream_ending(
        deployment.target, "/grpc.health.v1.Health/Watch", b"", "unary_stream"
    )
    assert code == grpc.StatusCode.UNIMPLEMENTED and "poll Check" in details


def test_the_health_list_is_unimplemented_as_on_the_single_process_server(
    deployment: Deployment, tmp_path: Path
) -> None:
    """``grpc.health.v1.Health/List`` (grpcio-health-checking leaves it unimplemented):
    UNIMPLEMENTED through Ray as from one server, not Serve's error for a method the deployment
    lacks (Serve dispatches by method name: tests/test_ray_dispatch.py)."""
    path = "/grpc.health.v1.Health/List"
    with (
        running_server(tmp_path / "s.sqlite") as port,
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        want, _, _ = status(channel.unary_unary(path), b"")
    with grpc.insecure_channel(deployment.target) as channel:
        got, details, _ = status(channel.unary_unary(path), b"")
    assert want == got == grpc.StatusCode.UNIMPLEMENTED
    assert "poll Check" in details


def test_a_second_serve_on_the_same_cluster_is_refused_and_the_first_keeps_serving(
    deployment: Deployment, postgres_server: PostgresServer
) -> None:
    """Serve keeps one application per name: a second ``oppmodel serve --ray --address`` on the
    cluster that runs ours would have taken over its calls with replicas on another store, and
    removed both on its exit. It is refused in one line, exit 2, before it deploys anything."""
    with client_of(deployment) as client:
        session = client.create_session(config=CONFIG).session_id
    other_store = postgres_server.new_database()
    address = ray.get_runtime_context().gcs_address
    argv = ["serve", "--ray", "--port", "0", "--address", address, "--store", other_store]
    try:
        second = subprocess.run(
            [sys.executable, "-m", "oppmodel.clients.cli", *argv],
            capture_output=True,
            text=True,
            timeout=120,
            # the module's instance is on loopback (init_local_ray): a driver joining it keeps
            # 127.0.0.1 only with Ray's cluster mode off (else ray.init rewrites the address)
            env={**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"},
        )
    finally:
        postgres_server.drop_database(other_store)
    assert second.returncode == 2, second.stderr
    assert second.stdout == ""
    last = second.stderr.strip().splitlines()[-1]
    assert last.startswith("oppmodel serve: error: address: ") and "already runs" in last
    with client_of(deployment) as client:  # the first still serves, on its own store
        assert client.get_session(session).session_id == session


def machine_address() -> str | None:
    """This machine's address on its route out (a UDP connect sends nothing), None if none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # (TEST-NET-1: any routed address would do)
        except OSError:
            return None
        return str(probe.getsockname()[0])


def test_the_proxy_answers_on_every_interface(deployment: Deployment) -> None:
    """Why ``serve --ray`` refuses --host: Serve's gRPC proxy binds ``[::]:PORT``
    (``ray.serve._private.grpc_util.start_grpc_server``; gRPCOptions has no host), so the port
    answers on this machine's non-loopback address too. Should Ray ever bind one interface, this
    fails: then give --ray the single-process server's --host."""
    address = machine_address()
    if address is None or ipaddress.ip_address(address).is_loopback:
        pytest.skip("this machine has no address but loopback")
    port = deployment.target.rpartition(":")[2]
    with OpponentModelClient(f"{address}:{port}", timeout=LOADED_DEADLINE) as client:
        client.check_health()


def process_tree(root: int) -> dict[int, str]:
    """{pid: name} of ``root`` and every process descended from it, read from /proc."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()  # "pid (name) state ppid ..."
        except OSError:  # ended meanwhile
            continue
        name, _, rest = stat.partition(" (")[2].rpartition(") ")
        names[int(entry.name)] = name
        children.setdefault(int(rest.split()[1]), []).append(int(entry.name))
    tree, todo = {}, [root]
    while todo:
        pid = todo.pop()
        tree[pid] = names.get(pid, "?")
        todo.extend(children.get(pid, ()))
    return tree


def tcp_listeners() -> dict[int, tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]]:
    """{socket inode: (address, port)} of every listening TCP socket, from /proc/net/tcp{,6}
    (addresses in 32-bit words of host byte order)."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A":  # TCP_LISTEN
                continue
            word, port = fields[1].split(":")
            raw = b"".join(bytes.fromhex(word[i : i + 8])[::-1] for i in range(0, len(word), 8))
            found[int(fields[9])] = (ipaddress.ip_address(raw), int(port, 16))
    return found


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets process ``pid`` holds open (none if it ended meanwhile)."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(int(target[len("socket:[") : -1]))
    except OSError:
        pass
    return inodes


def test_the_local_instance_keeps_rays_own_ports_on_loopback(deployment: Deployment) -> None:
    """This module starts Ray as ``serve --ray`` without --address does (``init_local_ray``):
    of every TCP port that Ray's processes (all descended from this one) listen on, only
    Serve's two that Ray 2.60 binds to ``[::]`` are off loopback: the gRPC proxy's and each
    replica's inter-deployment gRPC port (``ray.serve._private.replica``: ``[::]:0``), one per
    replica. A plain ``ray.init`` puts GCS, raylet, object manager, workers and agents on every
    interface or on the machine's address."""
    listeners = tcp_listeners()
    listening: set[str] = set()
    exposed: list[tuple[str, int, int]] = []  # (process name, pid, port)
    for pid, name in process_tree(os.getpid()).items():
        for inode in socket_inodes(pid) & listeners.keys():
            address, port = listeners[inode]
            listening.add(name)
            mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
            if not (mapped or address).is_loopback:
                exposed.append((name, pid, port))
    # the instance's own processes were found (names as /proc shows them, cut at 15 characters)
    assert {"gcs_server", "raylet", "ray::ServeRepli", "ray::ProxyActor"} <= listening
    proxy_port = int(deployment.target.rpartition(":")[2])
    assert ("ray::ProxyActor", proxy_port) in [(name, port) for name, _, port in exposed]
    others = [(name, pid) for name, pid, port in exposed if port != proxy_port]
    assert {name for name, _ in others} <= {"ray::ServeRepli"}, exposed
    assert len(others) == len(set(others)), exposed  # one port per replica


def replica_serving(stub, session_id: str, route: str | None) -> str:
    """The replica that answers GetSession for ``session_id``, routed by ``route``."""
    metadata = () if route is None else (("session_id", route),)
    _, call = stub.GetSession.with_call(
        pb.GetSessionRequest(session_id=session_id), metadata=metadata, timeout=LOADED_DEADLINE
    )
    return dict(call.trailing_metadata())[REPLICA_KEY]


def test_the_local_instance_gives_a_loaded_machine_time(ray_app: Deployment) -> None:
    """The processes of the instance ``init_local_ray`` starts wait START_SECONDS for what two
    busy cores started slowly (``LOADED_WAITS``): at load 30-48 Serve's controller killed each
    new proxy that missed its 5 s ready check (the next one 10 s, ...), the proxies were still
    STARTING after 120 s and the module's deployments failed ("Proxies not available")."""

    @ray.remote(num_cpus=0)
    def proxy_ready_check_seconds() -> float:
        from ray.serve._private.constants import PROXY_READY_CHECK_TIMEOUT_S

        return PROXY_READY_CHECK_TIMEOUT_S

    assert ray.get(proxy_ready_check_seconds.remote(), timeout=LOADED_DEADLINE) == START_SECONDS


def test_the_local_instance_starts_again_when_its_gcs_server_hangs(ray_app: Deployment) -> None:
    """A loaded run of the suite saw this module's set-up fail: Ray waited its whole 120 s for the
    GCS server's port ("Timed out waiting for file .../gcs_server_port_..."). A node start that
    fails after it started processes is now shut down and tried again (``init_local_ray``, as
    ``serve --ray`` starts Ray): the module's instance started through a GCS server hung at
    its start (``HungGcs``); the hung server was killed, and the instance runs a task."""
    (pid,) = ray_app.hung_gcs.stopped
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped, though stopped
    assert len(ray_app.hung_gcs.said) == 1
    assert "did not start ('Timed out waiting for file" in ray_app.hung_gcs.said[0]

    @ray.remote(num_cpus=0)
    def negated(value: int) -> int:
        return -value

    assert ray.get(negated.remote(7), timeout=LOADED_DEADLINE) == -7


def test_a_session_stays_on_one_replica_and_hands_sent_to_both_apply_once(
    deployment: Deployment,
) -> None:
    """Calls routed by the session's id all reach one replica. Then two senders route the same
    session's hands to different replicas (the worst case of a moved session plus resends),
    each sending every hand in random batches: every hand is stored once and the posterior is
    the library's."""
    observations = random_observations(60, seed=21)
    with client_of(deployment) as client, grpc.insecure_channel(deployment.target) as channel:
        stub = pb_grpc.OpponentModelServiceStub(channel)
        sid = client.create_session(config=CONFIG).session_id
        by_replica: dict[str, str] = {}
        for i in range(40):
            by_replica.setdefault(replica_serving(stub, sid, f"route-{i}"), f"route-{i}")
            if len(by_replica) == 2:
                break
        assert len(by_replica) == 2, "the second replica never answered"
        # Only now, with both replicas on the proxy's ring: a replica that joins it moves
        # sessions, and a loaded run saw the session's calls answered by two replicas when this
        # came first (the deployment reused, a replica replaced by an earlier test).
        assert len({replica_serving(stub, sid, sid) for _ in range(12)}) == 1
        failures: list[BaseException] = []
        served: list[str] = []

        def send_all(route: str, seed: int) -> None:
            rng = np.random.default_rng(seed)
            start = 0
            try:
                while start < len(observations):
                    batch = observations[start : start + int(rng.integers(1, 8))]
                    request = pb.ObserveBatchRequest(
                        session_id=sid,
                        observations=[
                            observation_message(s, o) for s, o in enumerate(batch, start + 1)
                        ],
                    )
                    _, call = stub.ObserveBatch.with_call(
                        request, metadata=(("session_id", route),), timeout=LOADED_DEADLINE
                    )
                    served.append(dict(call.trailing_metadata())[REPLICA_KEY])
                    start += len(batch)
            except BaseException as exc:
                failures.append(exc)

        threads = [
            threading.Thread(target=send_all, args=(route, seed))
            for seed, route in enumerate(by_replica.values())
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        assert set(served) == set(by_replica)  # both replicas applied or acknowledged hands
        assert client.get_session(sid).hands_observed == 60
        library = library_model(observations)
        for route in by_replica.values():  # each replica's copy is the library's
            for position in range(3):
                reply = stub.GetModel(
                    pb.GetModelRequest(
                        session_id=sid, opponent_label="opp_B", opponent_position=position
                    ),
                    metadata=(("session_id", route),),
                    timeout=LOADED_DEADLINE,
                )
                want, ess = library.opponent_model(reply.our_position, position)
                got = np.array([list(i.probabilities) for i in reply.infosets])
                assert np.array_equal(got, want[GAME.infosets(position)])
                assert reply.effective_sample_size == ess
    with psycopg.connect(deployment.store) as conn:
        rows = conn.execute(
            "SELECT count(*), count(DISTINCT sequence) FROM observations WHERE session_id = %s",
            (sid,),
        ).fetchone()
    assert rows == (60, 60)


def test_a_kuhn_match_through_the_agent_command_completes(
    deployment: Deployment, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """``oppmodel acpc-agent --service`` against the deployment: every decision by the service,
    every hand in the session (sent in ObserveBatch calls, the agent's choice for Ray)."""
    commands: list[CommandThread] = []
    hands = 40

    def start(ports: tuple[int, ...]) -> list:
        argv = [str(GAME_FILE), "127.0.0.1", str(ports[0]), "--service", deployment.target]
        argv += ["--seed", "3", "--mbbr-posterior", "samples", "--mbbr-k", "4", "--mbbr-h", "5"]
        argv += ["--json", "--rpc-deadline-ms", "5000"]  # the shared test machine is busy
        commands.append(CommandThread(argv))
        others = [AgentThread(p, make_policy("n3", ACPC_GAME, s)) for s, p in enumerate(ports[1:])]
        return [commands[0], *others]

    captured, _ = run_dealer(tmp_path, hands=hands, clients=start, quiet=True)
    tally = json.loads(capsys.readouterr().out)
    assert captured.result.status == 0, captured.stderr
    assert commands[0].status == 0
    assert tally["fallback_decisions"] == 0 and tally["service_decisions"] > 0
    with client_of(deployment) as client:
        assert client.get_session(tally["session_id"]).hands_observed == hands


Series = tuple[str, tuple[tuple[str, str], ...]]  # (sample name, sorted labels)


def scrape(url: str) -> dict[Series, float]:
    """Every sample the endpoint at ``url`` serves but the ``_created`` timestamps."""
    with urllib.request.urlopen(url, timeout=10) as reply:
        assert reply.status == 200
        text = reply.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if not sample.name.endswith("_created")
    }


def replicas_listed(url: str) -> set[str]:
    """The replicas whose series the endpoint at ``url`` serves."""
    return {dict(labels)["replica"] for _, labels in scrape(url)}


def settled_scrape(url: str) -> dict[Series, float]:
    """A scrape equal to one taken a couple of pushes earlier: every count is in."""
    deadline = time.monotonic() + 30
    last = scrape(url)
    while True:
        time.sleep(2.5 * PUSH_SECONDS)
        now = scrape(url)
        if now == last or time.monotonic() > deadline:
            return now
        last = now


def totals(
    before: dict[Series, float], after: dict[Series, float], name: str, *by: str
) -> dict[tuple[str, ...], float]:
    """What the series named ``name`` gained from ``before`` to ``after``, summed by the labels
    ``by`` (a series absent before, a new replica's, gained all it has; one absent after, a
    replica gone, gained nothing)."""
    summed: dict[tuple[str, ...], float] = {}
    for (sample, labels), value in after.items():
        if sample == name:
            key = tuple(dict(labels)[label] for label in by)
            gain = value - before.get((sample, labels), 0.0)
            summed[key] = summed.get(key, 0.0) + gain
    return {key: value for key, value in summed.items() if value}


def test_metrics_of_every_replica_reach_the_serve_processs_endpoint(
    deployment: Deployment,
) -> None:
    """Known calls through the proxy (a session created, 12 hands in 3 ObserveBatch calls, 5
    GetAction calls, one GetSession refused NOT_FOUND) show up on the real /metrics within a few
    seconds, exactly: the requests summed by (method, code) and by replica (as the replies'
    trailers name the replica that served them), the observations applied, and the sessions
    loaded (one on each replica that served the session); every series labelled with its
    replica."""
    before = settled_scrape(deployment.metrics_url)
    served: list[tuple[str, str]] = []  # (method, replica) of each call that succeeded

    def call(method: str, request: object, route: str | None = None) -> Any:
        metadata = () if route is None else (("session_id", route),)
        reply, rpc = getattr(stub, method).with_call(
            request, metadata=metadata, timeout=LOADED_DEADLINE
        )
        served.append((method, dict(rpc.trailing_metadata())[REPLICA_KEY]))
        return reply

    observations = random_observations(12, seed=31)
    config = pb.SessionConfig(
        game="kuhn_poker(players=3)", our_label="us", opponent_labels=["a", "b"], seed=2
    )
    with grpc.insecure_channel(deployment.target) as channel:
        stub = pb_grpc.OpponentModelServiceStub(channel)
        sid = call("CreateSession", pb.CreateSessionRequest(config=config)).session.session_id
        for start in range(0, 12, 4):
            batch = [observation_message(s, o) for s, o in enumerate(observations, 1)]
            request = pb.ObserveBatchRequest(session_id=sid, observations=batch[start : start + 4])
            call("ObserveBatch", request, sid)
        for draw in range(5):
            info_state = pb.InfoState(position=0, card=2, history="")
            request = pb.GetActionRequest(session_id=sid, info_state=info_state, draw=draw)
            call("GetAction", request, sid)
        code, _, _ = status(stub.GetSession, pb.GetSessionRequest(session_id="no-such-session"))
        assert code == grpc.StatusCode.NOT_FOUND
    want_requests = {
        ("CreateSession", "OK"): 1,
        ("ObserveBatch", "OK"): 3,
        ("GetAction", "OK"): 5,
        ("GetSession", "NOT_FOUND"): 1,
    }
    want_by_replica: dict[tuple[str, ...], float] = {}
    for method, replica in served:
        key = (method, "OK", replica)
        want_by_replica[key] = want_by_replica.get(key, 0) + 1
    loaded_on = {replica for _, replica in served}  # the creator and the routed replica
    deadline = time.monotonic() + 15
    while True:  # a push a second: the counts arrive within a couple of seconds
        after = scrape(deployment.metrics_url)
        got = totals(before, after, "oppmodel_requests_total", "method", "code")
        if got == want_requests or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    time.sleep(2 * PUSH_SECONDS)  # and nothing more arrives
    after = scrape(deployment.metrics_url)
    assert totals(before, after, "oppmodel_requests_total", "method", "code") == want_requests
    by_replica = totals(before, after, "oppmodel_requests_total", "method", "code", "replica")
    assert {k: v for k, v in by_replica.items() if k[1] == "OK"} == want_by_replica
    assert totals(before, after, "oppmodel_observations_applied_total") == {(): 12}
    assert totals(before, after, "oppmodel_live_sessions", "replica") == {
        (replica,): 1 for replica in loaded_on
    }
    latency = totals(before, after, "oppmodel_request_seconds_count", "method")
    assert latency == {
        ("Observe",): 12,  # each hand's time to store and apply, as in the single process
        ("CreateSession",): 1,
        ("ObserveBatch",): 3,
        ("GetAction",): 5,
        ("GetSession",): 1,
    }
    assert all("replica" in dict(labels) for _, labels in after)
    assert loaded_on <= replicas_listed(deployment.metrics_url)


def kill_replica_holding(deployment: Deployment, session_id: str) -> str:
    """SIGKILL the replica that serves ``session_id``; returns its id."""
    from ray import serve

    with grpc.insecure_channel(deployment.target) as channel:
        replica = replica_serving(pb_grpc.OpponentModelServiceStub(channel), session_id, session_id)
    (name,) = [
        actor["name"]
        for actor in ray.util.list_named_actors(all_namespaces=True)
        if actor["name"].endswith(f"#{replica}")
    ]
    handle = ray.get_actor(name, namespace=serve._private.constants.SERVE_NAMESPACE)
    pid = ray.get(handle.__ray_call__.remote(lambda _: os.getpid()), timeout=LOADED_DEADLINE)
    os.kill(pid, signal.SIGKILL)
    return replica


@pytest.fixture(scope="module")
def own_database(own_postgres_server: PostgresServer) -> str:
    """A database on a PostgreSQL server of the module's own, which a test may pause."""
    return own_postgres_server.new_database()


@pytest.fixture
def own_store(ray_app: Deployment, own_database: str) -> Deployment:
    """The application on ``own_database`` with the fuzz's small limits (the next test on
    ``deployment`` redeploys it on the module's store)."""
    return ray_app.ensure(store=own_database, limits=LIMITS, perfect_info_limits=PI_LIMITS)


def test_fuzzing_through_the_proxy_gets_documented_codes_and_changes_no_state(
    own_store: Deployment, own_database: str
) -> None:
    """``test_service_fuzz.py``'s fuzz through Ray's proxy (a session id with a NUL was INTERNAL
    there); a refusal that ends a stream arrives without trailers through Ray (documented)."""
    fuzz(own_store.target, own_database, requests=REQUESTS, stream_trailers=False)


def test_health_is_not_serving_while_the_store_is_unreachable(
    own_store: Deployment, own_postgres_server: PostgresServer
) -> None:
    """Each replica's health Check asks its store: NOT_SERVING while it is down (calls answer
    UNAVAILABLE, saying nothing of where the store is), SERVING once it is back."""
    deployment = own_store
    with grpc.insecure_channel(deployment.target) as channel:
        health = health_pb2_grpc.HealthStub(channel)

        def status() -> int:
            return health.Check(health_pb2.HealthCheckRequest(), timeout=60).status

        assert status() == health_pb2.HealthCheckResponse.SERVING
        own_postgres_server.pause()
        try:
            for _ in range(4):  # whichever replica answers
                assert status() == health_pb2.HealthCheckResponse.NOT_SERVING
            with pytest.raises(grpc.RpcError) as caught:
                pb_grpc.OpponentModelServiceStub(channel).ListSessions(
                    pb.ListSessionsRequest(), timeout=60
                )
            assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
            assert caught.value.details() == "store unavailable; send again"
        finally:
            own_postgres_server.resume()
        wait_until(lambda: status() == health_pb2.HealthCheckResponse.SERVING, "SERVING again")


def test_killing_the_replica_holding_the_session_loses_no_hand(
    deployment: Deployment, tmp_path: Path
) -> None:
    """Mid-match, the replica holding the agent's session is killed: the calls in flight fail,
    the agent plays its fallback meanwhile and resends what was not acknowledged, another replica
    loads the session from the store, and at the end the session holds every hand of the
    dealer's log with the posterior of the library fed that log (an uninterrupted run's)."""
    config = MBBRConfig(k=6, hands_default=20, seed=5)
    hands, kill_at = 90, 30
    killed: list[str] = []
    err = io.StringIO()

    class KillAt(ServicePolicy):
        def observe(self, hand: SeatHand) -> None:
            super().observe(hand)
            if hand.hand >= kill_at and not killed and self.session_id is not None:
                killed.append(kill_replica_holding(deployment, self.session_id))

    policy = KillAt(
        ACPC_GAME, deployment.target, config=config, stderr=err, deadline=5.0, connect_timeout=10.0
    )
    policies = [policy, make_policy("n1", ACPC_GAME, 1), make_policy("always-bet", ACPC_GAME, 2)]
    try:
        captured, _ = run_dealer(
            tmp_path,
            hands=hands,
            clients=lambda ports: [AgentThread(p, q) for p, q in zip(ports, policies, strict=True)],
            quiet=True,
        )
    finally:
        policy.close()
    assert captured.result.status == 0, captured.stderr
    assert killed and policy.service_decisions > 0
    log = parse_log(captured.log)
    assert len(log.hands) == hands
    kuhn = kuhn_for(ACPC_GAME)
    views = [obs for _, obs in log_observations(ACPC_GAME, log, "Alice")]
    replayed = kuhn_library(config, views)
    sid = policy.session_id
    with client_of(deployment) as client, grpc.insecure_channel(deployment.target) as channel:
        assert client.get_session(sid).hands_observed == hands
        now = replica_serving(pb_grpc.OpponentModelServiceStub(channel), sid, sid)
        assert now != killed[0]  # served by another replica: it loaded the session from the store
        for position in range(3):
            for d, label in enumerate(policy.opponent_labels, start=1):
                q = (position + d) % 3
                model = client.model(sid, label, q)
                expected, ess = replayed.served_opponent_model(position, q)
                assert np.array_equal(model.strategy.probabilities, expected)
                assert model.effective_sample_size == np.float64(ess)
    with psycopg.connect(deployment.store) as conn:
        stored = conn.execute(
            "SELECT history FROM observations WHERE session_id = %s ORDER BY sequence", (sid,)
        ).fetchall()
    assert [h for (h,) in stored] == [kuhn.history_to_acpc(v.history) for v in views]
    # the killed replica's series left /metrics once it stopped pushing; its successor's are in
    deadline = time.monotonic() + STALE_SECONDS + 10
    while killed[0] in replicas_listed(deployment.metrics_url) and time.monotonic() < deadline:
        time.sleep(0.5)
    listed = replicas_listed(deployment.metrics_url)
    assert killed[0] not in listed and now in listed
