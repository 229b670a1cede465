"""Both clients raise only ``oppmodel.modeling.errors`` exceptions, as docs/service.md says, against
real servers: unreachable, silent, TLS on one side only, an untrusted certificate, a refused
token."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from service_support import random_observations, running_server

from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.grpc_base import ERROR_BY_CODE, GrpcClient, domain_error
from oppmodel.clients.perfect_info_client import ChoiceEvidence, Opponent, PerfectInfoClient
from oppmodel.modeling import errors
from oppmodel.modeling.games.spades.cards import parse_hand
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.server.app import free_ports
from oppmodel.v1 import opponent_model_pb2 as pb

OBS = random_observations(2, seed=1)
POSITION = SpadesState(
    hands=tuple(parse_hand(h) for h in ("AS 2C", "KH 3D", "QC 4S")), leader=0, turn=0
)


def _opponent_model_calls(client: OpponentModelClient) -> dict[str, Callable[[], object]]:
    """Every public call of the opponent-model client, on a session that need not exist."""
    return {
        "create_session": lambda: client.create_session(),
        "get_session": lambda: client.get_session("s"),
        "list_sessions": client.list_sessions,
        "delete_session": lambda: client.delete_session("s"),
        "observe": lambda: client.observe("s", OBS, first_sequence=1),
        "observe_stream": lambda: list(client.observe_stream(iter([pb.ObserveRequest()]))),
        "observation_stream": lambda: client.observation_stream("s", first_sequence=1).send(OBS[0]),
        "model": lambda: client.model("s", "opp_A", 1),
        "response": lambda: client.response("s", 0),
        "action": lambda: client.action("s", matchstate="MATCHSTATE:0:0::Ks||"),
    }  # fmt: skip


def _perfect_info_calls(client: PerfectInfoClient) -> dict[str, Callable[[], object]]:
    """Every public call of the perfect-information client."""
    evidence = [ChoiceEvidence.from_likelihoods("w", [0.5, 0.5])]
    return {
        "create_session": lambda: client.create_session(opponents=[Opponent("w"), Opponent("e")]),
        "get_session": lambda: client.get_session("s"),
        "delete_session": lambda: client.delete_session("s"),
        "observe_choices": lambda: client.observe_choices("s", evidence, first_sequence=1),
        "model_weights": lambda: client.model_weights("s"),
        "probmaxn_move": lambda: client.probmaxn_move(
            POSITION, searcher=0, weights=[[0.5, 0.5]] * 3
        ),
    }


def _within(seconds: float, call: Callable[[], object]) -> BaseException | None:
    """Run ``call`` in a thread; the exception it raised (None if none); fails if it hangs."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still waiting after {seconds} s"
    return outcome[0]


def test_an_unreachable_server_raises_unavailable_error_from_every_call() -> None:
    target = f"127.0.0.1:{free_ports()[0]}"  # nothing listens there
    with (
        OpponentModelClient(target, timeout=5, reconnect_seconds=0.3) as client,
        PerfectInfoClient(target, timeout=5) as perfect,
    ):
        calls = {**_opponent_model_calls(client), **_perfect_info_calls(perfect)}
        for name, call in calls.items():
            error = _within(20, call)  # the observation stream used to wait forever here
            assert isinstance(error, errors.UnavailableError), (name, repr(error))
            assert not isinstance(error, grpc.RpcError)
            assert target in str(error) and "nothing listens there" in str(error), str(error)


@contextlib.contextmanager
def _silent_server() -> Iterator[str]:
    """A TCP port that accepts connections and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_a_server_that_never_answers_raises_deadline_exceeded_error() -> None:
    with (
        _silent_server() as target,
        OpponentModelClient(target, timeout=0.3, reconnect_seconds=0) as client,
        PerfectInfoClient(target, timeout=0.3) as perfect,
    ):
        for name, call in {**_opponent_model_calls(client), **_perfect_info_calls(perfect)}.items():
            if name in ("observation_stream", "observe_stream"):
                continue  # long-lived streams have no deadline: they wait for their acks
            error = _within(20, call)
            assert isinstance(error, errors.DeadlineExceededError), (name, repr(error))
            assert target in str(error)


def test_an_unknown_or_missing_token_raises_unauthenticated_error(tmp_path: Path) -> None:
    tokens = frozenset({"alice-token"})
    with running_server(tmp_path / "db.sqlite", auth_tokens=tokens) as port:
        target = f"127.0.0.1:{port}"
        for token in (None, "mallory-token"):
            with (
                OpponentModelClient(target, token=token, timeout=10) as client,
                PerfectInfoClient(target, token=token, timeout=10) as perfect,
            ):
                calls = {**_opponent_model_calls(client), **_perfect_info_calls(perfect)}
                for name, call in calls.items():
                    if name == "probmaxn_move":
                        continue  # given weights need no session, but still a token:
                    error = _within(20, call)
                    assert type(error) is errors.UnauthenticatedError, (name, repr(error))
                with pytest.raises(errors.UnauthenticatedError):
                    perfect.probmaxn_move(POSITION, searcher=0, weights=[[0.5, 0.5]] * 3)
        with OpponentModelClient(target, token="alice-token", timeout=10) as alice:
            assert alice.list_sessions() == []


def _certificate(folder: Path, name: str) -> tuple[Path, Path]:
    """(key, cert) of a fresh self-signed certificate for 127.0.0.1 (openssl CLI)."""
    key, cert = folder / f"{name}.key", folder / f"{name}.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name}",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return key, cert


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> Iterator[tuple[str, bytes, bytes, str]]:
    """(TLS target, its root certificate, an unrelated one, a plaintext target), token 't'."""
    folder = tmp_path_factory.mktemp("tls")
    key, cert = _certificate(folder, "server")
    _, other = _certificate(folder, "stranger")
    tokens = frozenset({"t"})
    with (
        running_server(
            folder / "tls.sqlite", tls_cert=str(cert), tls_key=str(key), auth_tokens=tokens
        ) as port,
        running_server(folder / "plain.sqlite", auth_tokens=tokens) as plain_port,
    ):
        yield f"127.0.0.1:{port}", cert.read_bytes(), other.read_bytes(), f"127.0.0.1:{plain_port}"


def test_both_clients_talk_tls_with_root_certificates_and_a_token(tls) -> None:
    target, root, _, _ = tls
    with OpponentModelClient(target, token="t", root_certificates=root, timeout=10) as client:
        sid = client.create_session().session_id
        assert client.observe(sid, OBS, first_sequence=1) == 2
    with PerfectInfoClient(target, token="t", root_certificates=root, timeout=30) as perfect:
        session = perfect.create_session(opponents=[Opponent("w"), Opponent("e")], seed=1)
        evidence = [ChoiceEvidence.from_likelihoods("w", [0.9, 0.1])]
        acks = perfect.observe_choices(session.session_id, evidence, first_sequence=1)
        assert acks[-1].choices_observed == 1


@pytest.mark.parametrize(
    ("which", "hint"),
    [
        ("plaintext client, TLS server", "this client is plaintext: if the server uses TLS"),
        ("TLS client, plaintext server", "the server does not seem to use TLS"),
        ("untrusted certificate", "root_certificates do not verify the server's certificate"),
    ],
)
def test_a_tls_mismatch_says_what_is_likely_wrong(tls, which: str, hint: str) -> None:
    target, root, other, plain = tls
    target, root = {
        "plaintext client, TLS server": (target, None),
        "TLS client, plaintext server": (plain, root),
        "untrusted certificate": (target, other),
    }[which]
    for client_class in (OpponentModelClient, PerfectInfoClient):
        with client_class(target, token="t", root_certificates=root, timeout=10) as client:
            with pytest.raises(errors.UnavailableError) as info:
                client.get_session("s")
            assert hint in str(info.value), str(info.value)


class _NoSuchServiceStub:
    def __init__(self, channel: grpc.Channel) -> None:
        self.Nothing = channel.unary_unary(
            "/oppmodel.v1.NoSuchService/Nothing",
            request_serializer=pb.ListSessionsRequest.SerializeToString,
            response_deserializer=pb.ListSessionsResponse.FromString,
        )


class _NoSuchServiceClient(GrpcClient):
    stub_class = _NoSuchServiceStub


def test_a_code_the_server_never_sends_on_purpose_is_a_service_error(tmp_path: Path) -> None:
    with running_server(tmp_path / "db.sqlite") as port:
        client = _NoSuchServiceClient(f"127.0.0.1:{port}", timeout=10)
        with client, pytest.raises(errors.ServiceError) as info:
            client._call("Nothing", pb.ListSessionsRequest())
    assert info.value.code == "UNIMPLEMENTED"


class _Failed(grpc.RpcError):
    """A failed call as grpc reports one: code, details, trailing metadata."""

    def __init__(self, code: grpc.StatusCode, metadata: tuple = ()) -> None:
        self._code, self._metadata = code, metadata

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "field: why"

    def trailing_metadata(self) -> tuple:
        return self._metadata


@pytest.mark.parametrize("code", [c for c in grpc.StatusCode if c is not grpc.StatusCode.OK])
def test_every_status_code_becomes_one_domain_exception(code: grpc.StatusCode) -> None:
    error = domain_error(_Failed(code), target="host:1")
    assert isinstance(error, errors.OppModelError) and not isinstance(error, grpc.RpcError)
    assert type(error) is ERROR_BY_CODE.get(code, errors.ServiceError)
    # the class the server names wins (a subclass the code alone cannot tell)
    named = domain_error(_Failed(code, (("oppmodel-error", "UnknownGameError"),)))
    assert type(named) is errors.UnknownGameError and named.field == "field"
