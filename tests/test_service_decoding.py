"""Requests that are not valid protobuf get INVALID_ARGUMENT naming the field (server/decoding.py).

The wire-format walk that names the field is checked against the real parser (upb) on mutated
messages of every request type: it must find a fault exactly when the parser refuses the bytes.
Then, over a real server: undecodable bytes to every unary method, and an undecodable message in
the middle of each bidirectional stream (what came before it is acknowledged and kept).
"""

from __future__ import annotations

import pickle
import urllib.request
from typing import Any

import grpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from service_support import GAME, connected, random_observations

from oppmodel.clients.client import observation_message
from oppmodel.clients.grpc_base import domain_error
from oppmodel.clients.perfect_info_client import ChoiceEvidence, Opponent, PerfectInfoClient
from oppmodel.modeling.errors import InvalidArgumentError, UnknownGameError
from oppmodel.server.app import free_ports
from oppmodel.server.decoding import MAX_DEPTH, Undecodable, locate_decode_error, malformation
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import perfect_info_pb2 as pi

OPPONENT_MODEL = pb.DESCRIPTOR.services_by_name["OpponentModelService"]
PERFECT_INFO = pi.DESCRIPTOR.services_by_name["PerfectInfoService"]


def _identity(data: bytes) -> bytes:
    return data


def _valid_requests() -> list:
    """One well-filled request of every method of both services (every field kind exercised)."""
    obs = random_observations(1, seed=3, game=GAME)[0]
    infosets = [pb.InfosetPolicy(infostate="2pb", probabilities=[0.25, 0.75])]
    config = pb.SessionConfig(
        game="kuhn_poker(players=3)",
        our_label="us",
        opponent_labels=["a", "b"],
        mbbr=pb.MbbrParams(
            epsilon=0.1, k=7, eta=2.0, prior_mean=[pb.PositionStrategy(infosets=infosets)]
        ),
        seed=2**63,
    )
    return [
        pb.CreateSessionRequest(config=config),
        pb.GetSessionRequest(session_id="s1"),
        pb.ListSessionsRequest(),
        pb.DeleteSessionRequest(session_id="s1"),
        pb.ObserveRequest(session_id="s1", observation=observation_message(4, obs)),
        pb.GetModelRequest(session_id="s1", opponent_label="a", opponent_position=2),
        pb.GetResponseRequest(session_id="s1", our_position=1, kind=pb.RESPONSE_KIND_BAYES),
        pb.GetActionRequest(session_id="s1", matchstate="MATCHSTATE:0:0::Ks||", draw=2**40),
        pi.CreatePerfectInfoSessionRequest(
            config=pi.PerfectInfoSessionConfig(
                game="spades3p",
                opponents=[pi.OpponentModels(label="w", models=["MT", "mOT"], alpha=[1, 2])],
                gibbs=pi.GibbsSettings(sweeps=10, level=0.9),
            )
        ),
        pi.GetPerfectInfoSessionRequest(session_id="p1"),
        pi.DeletePerfectInfoSessionRequest(session_id="p1"),
        pi.ObserveChoicesRequest(
            session_id="p1",
            observations=[
                ChoiceEvidence.from_likelihoods("w", [0.5, 0.25]).to_proto(1),
                ChoiceEvidence.from_utilities("w", [[1, 2], [3, 4]], chosen=1, epsilon=0.1)
                .to_proto(2),
            ],
        ),
        pi.GetModelWeightsRequest(session_id="p1", opponent="w"),
        pi.GetProbMaxnMoveRequest(
            position=pi.SpadesPosition(
                hands=["AS 2C", "KH 3D", "QC 4S"], tricks=[0, 1, 0], bids=[1, 1, 0]
            ),
            searcher=1,
            given=pi.GivenWeights(seats=[pi.ModelValues(values=[0.5, 0.5])] * 3),
            epsilon=0.2,
        ),
    ]  # fmt: skip


VALID = _valid_requests()


def _parses(message_class, data: bytes) -> bool:
    try:
        message_class.FromString(data)
    except Exception:
        return False
    return True


mutation = st.one_of(
    st.tuples(st.just("truncate"), st.integers(0, 400)),
    st.tuples(st.just("set"), st.integers(0, 400), st.integers(0, 255)),
    st.tuples(st.just("insert"), st.integers(0, 400), st.binary(min_size=1, max_size=6)),
    st.tuples(st.just("delete"), st.integers(0, 400), st.integers(1, 4)),
)


def _mutate(data: bytes, ops: list) -> bytes:
    for op in ops:
        at = op[1] % (len(data) + 1)
        if op[0] == "truncate":
            data = data[:at]
        elif op[0] == "set" and data:
            at %= len(data)
            data = data[:at] + bytes([op[2]]) + data[at + 1 :]
        elif op[0] == "insert":
            data = data[:at] + op[2] + data[at:]
        elif op[0] == "delete":
            data = data[:at] + data[at + op[2] :]
    return data


@settings(max_examples=1500)
@given(
    which=st.integers(0, len(VALID) - 1),
    ops=st.lists(mutation, min_size=1, max_size=4),
)
def test_the_walk_finds_a_fault_exactly_when_the_parser_refuses(which: int, ops: list) -> None:
    message = VALID[which]
    data = _mutate(message.SerializeToString(), ops)
    fault = malformation(message.DESCRIPTOR, data)
    assert (fault is None) == _parses(type(message), data), (data, fault)


@settings(max_examples=500)
@given(which=st.integers(0, len(VALID) - 1), data=st.binary(max_size=40))
def test_the_walk_agrees_with_the_parser_on_random_bytes(which: int, data: bytes) -> None:
    message = VALID[which]
    fault = malformation(message.DESCRIPTOR, data)
    assert (fault is None) == _parses(type(message), data), (data, fault)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@st.composite
def wire_tokens(draw, depth: int = 0) -> bytes:
    """A field as the wire format writes it, often slightly wrong: any field number (ours, 0,
    unknown, the largest), any wire type, lengths that may lie, nested fields, odd bytes."""
    number = draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 9, 2**29 - 1]))
    wire = draw(st.integers(0, 7))
    tag = _varint(number << 3 | wire)
    if wire == 0:
        return tag + draw(st.sampled_from([b"\x01", b"\xff\x01", b"\xff" * 9 + b"\x01", b"\xff"]))
    if wire in (1, 5):
        return tag + bytes(draw(st.sampled_from([8, 4, 3])))
    if wire == 2:
        if depth < 2 and draw(st.booleans()):
            body = b"".join(draw(st.lists(wire_tokens(depth + 1), max_size=3)))
        else:
            body = draw(st.sampled_from([b"ok", b"\xff", b"\xc3\xa9", b"\xed\xa0\x80", b"\x08"]))
        length = len(body) + draw(st.sampled_from([0, 0, 0, 1, -1]))
        return tag + _varint(max(length, 0)) + body
    if wire == 3:
        inner = b"".join(draw(st.lists(wire_tokens(depth + 1), max_size=2))) if depth < 2 else b""
        end = draw(st.sampled_from([number, number, number + 1]))
        return tag + inner + _varint(end << 3 | 4)
    return tag


@settings(max_examples=1500)
@given(which=st.integers(0, len(VALID) - 1), tokens=st.lists(wire_tokens(), max_size=4))
def test_the_walk_agrees_with_the_parser_on_wire_fragments(which: int, tokens: list) -> None:
    message = VALID[which]
    data = b"".join(tokens)
    fault = malformation(message.DESCRIPTOR, data)
    assert (fault is None) == _parses(type(message), data), (data, fault)


def _with_bad_utf8(message, text: str) -> bytes:
    """``message`` serialized with the string ``text`` turned into invalid UTF-8."""
    data = message.SerializeToString()
    encoded = text.encode()
    assert data.count(encoded) == 1
    return data.replace(encoded, b"\xff" * len(encoded))


def _group(depth: int) -> bytes:
    return b"\x3b" * depth + b"\x3c" * depth  # field 7, start/end group


@pytest.mark.parametrize(
    ("message_class", "data", "field", "reason"),
    [
        (pb.ObserveRequest, _with_bad_utf8(VALID[4], "bbb"), "observation.history", "UTF-8"),
        (pb.CreateSessionRequest, _with_bad_utf8(VALID[0], "us"), "config.our_label", "UTF-8"),
        (pb.CreateSessionRequest, b"\x0a\x08\x1a\x02ab\x1a\x02\xc0\x80",
         "config.opponent_labels[1]", "UTF-8"),
        (pb.CreateSessionRequest, _with_bad_utf8(VALID[0], "2pb"),
         "config.mbbr.prior_mean[0].infosets[0].infostate", "UTF-8"),
        (pi.GetProbMaxnMoveRequest, _with_bad_utf8(VALID[13], "QC 4S"), "position.hands[2]",
         "UTF-8"),
        (pi.ObserveChoicesRequest, b"\x12\x02\x08\x01\x12\x03\x12\x01\xed",
         "observations[1].opponent", "UTF-8"),
        (pb.GetSessionRequest, b"\x0a\x05ab", "session_id", "runs past the end"),
        (pb.GetActionRequest, b"\x20\xff\xff", "draw", "truncated varint"),
        (pb.GetActionRequest, b"\x20" + b"\xff" * 10 + b"\x01", "draw", "longer than 10 bytes"),
        (pi.ModelValues, b"\x0a\x07" + bytes(7), "values", "packed 8-byte values"),
        (pb.GetSessionRequest, b"\x0f", "session_id", "invalid wire type 7"),
        (pb.GetSessionRequest, b"\x3e", "request", "invalid wire type 6"),
        (pb.GetSessionRequest, b"\x00", "request", "invalid field tag 0"),
        (pb.GetSessionRequest, b"\x0c", "request", "without its start"),
        (pb.GetSessionRequest, b"\x3b\x08\x01", "request", "never ends"),
        (pb.GetSessionRequest, _group(MAX_DEPTH + 1), "request", "levels deep"),
        (pb.ListSessionsRequest, b"\xff\xff\xff\xff\xff\xff", "request", "field tag"),
    ],
)  # fmt: skip
def test_the_fault_is_named(message_class, data: bytes, field: str, reason: str) -> None:
    assert not _parses(message_class, data)
    fault = malformation(message_class.DESCRIPTOR, data)
    assert fault is not None and fault.field == field and reason in str(fault), fault


def test_nesting_limit_is_the_parsers() -> None:
    assert _parses(pb.GetSessionRequest, _group(MAX_DEPTH))
    assert malformation(pb.GetSessionRequest.DESCRIPTOR, _group(MAX_DEPTH)) is None


@pytest.mark.parametrize(
    "error",
    [
        locate_decode_error(pb.GetSessionRequest.DESCRIPTOR, b"\x0a\x02\xff\xfe"),
        UnknownGameError("config.game", "'chess' is not a game this service models"),
    ],
)
def test_an_undecodable_request_survives_pickling(error: InvalidArgumentError) -> None:
    """Ray Serve's proxy decodes a request and pickles it on to a replica (server/ray_proxy.py):
    an Undecodable must arrive with its error's class, field and message."""
    back = pickle.loads(pickle.dumps(Undecodable(error))).error
    assert (type(back), back.field, str(back)) == (type(error), error.field, str(error))


# -- over a real server ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("decoding") / "db.sqlite"
    with connected(db) as (client, port):
        yield client, port


UNARY = {
    f"/{service.full_name}/{method.name}": method.input_type
    for service in (OPPONENT_MODEL, PERFECT_INFO)
    for method in service.methods
    if not method.client_streaming
}


@pytest.mark.parametrize("path", UNARY)
def test_undecodable_unary_request_is_invalid_argument_naming_the_field(server, path: str) -> None:
    _, port = server
    # field 1, where a request has one, is a string or a message that starts with one
    first = UNARY[path].fields_by_number.get(1)
    undecodable = [b"\xff\xff\xff", b"\x0a\x05ab"]
    if first is not None:
        undecodable.append(b"\x0a\x02\xff\xfe")
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(
            path, request_serializer=_identity, response_deserializer=_identity
        )
        for data in undecodable:
            with pytest.raises(grpc.RpcError) as info:
                call(data, timeout=10)
            error = info.value
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
            assert "DecodeError" not in error.details()
            expected = domain_error(error)
            assert isinstance(expected, InvalidArgumentError)
            if first is not None and data != b"\xff\xff\xff":
                assert expected.field.startswith(first.name), error.details()
            else:
                assert expected.field == "request"


def _raw_stream(port: int, service, method: str, messages: list[bytes]) -> tuple[list, Any]:
    """(the answers received, the RpcError that ended the stream) of raw messages."""
    answers = []
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.stream_stream(f"/{service.full_name}/{method}", _identity, _identity)
        with pytest.raises(grpc.RpcError) as info:
            for answer in call(iter(messages), timeout=30):
                answers.append(answer)
    return answers, info.value


def test_undecodable_message_mid_observe_stream(server) -> None:
    """What came before stands (acknowledged and applied), then INVALID_ARGUMENT, field named."""
    client, port = server
    sid = client.create_session().session_id
    requests = [
        pb.ObserveRequest(session_id=sid, observation=observation_message(i, o))
        for i, o in enumerate(random_observations(4, seed=2), start=1)
    ]
    good = [r.SerializeToString() for r in requests]
    bad = _with_bad_utf8(requests[2], requests[2].observation.history)
    acks, error = _raw_stream(port, OPPONENT_MODEL, "Observe", [*good[:2], bad, good[3]])
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details() == "observation.history: not valid UTF-8"
    assert [pb.ObserveResponse.FromString(a).sequence for a in acks] == [1, 2]
    assert client.get_session(sid).hands_observed == 2


def test_undecodable_requests_are_counted_as_refusals_without_a_latency(tmp_path) -> None:
    """Refused before its handler ran: counted by code, its call's latency not recorded."""
    (metrics_port,) = free_ports()
    with connected(tmp_path / "db.sqlite", metrics_port=metrics_port) as (client, port):
        sid = client.create_session().session_id
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary(
                f"/{OPPONENT_MODEL.full_name}/GetAction", _identity, _identity
            )
            with pytest.raises(grpc.RpcError) as info:
                call(b"\xff\xff\xff", timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        (hand,) = random_observations(1, seed=2)
        request = pb.ObserveRequest(session_id=sid, observation=observation_message(1, hand))
        bad = _with_bad_utf8(request, sid)
        _, error = _raw_stream(port, OPPONENT_MODEL, "Observe", [bad])
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
    for method in ("GetAction", "Observe"):
        assert f'oppmodel_requests_total{{code="INVALID_ARGUMENT",method="{method}"}} 1.0' in text
        assert f'oppmodel_request_seconds_count{{method="{method}"}} 0.0' in text


def test_undecodable_message_mid_observe_choices_stream(server) -> None:
    _, port = server
    with PerfectInfoClient(f"127.0.0.1:{port}", timeout=10) as perfect:
        session = perfect.create_session(opponents=[Opponent("w"), Opponent("e")], seed=1)
        sid = session.session_id
        first = pi.ObserveChoicesRequest(
            session_id=sid,
            observations=[ChoiceEvidence.from_likelihoods("w", [0.9, 0.1]).to_proto(1)],
        )
        second = pi.ObserveChoicesRequest(
            session_id=sid,
            observations=[ChoiceEvidence.from_likelihoods("w", [0.9, 0.1]).to_proto(2)],
        )
        bad = _with_bad_utf8(second, "w")
        answers, error = _raw_stream(
            port, PERFECT_INFO, "ObserveChoices", [first.SerializeToString(), bad]
        )
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error.details() == "observations[0].opponent: not valid UTF-8"
        assert [pi.ObserveChoicesResponse.FromString(a).choices_observed for a in answers] == [1]
        assert perfect.get_session(sid).choices_observed == 1


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/grpc.health.v1.Health/Check", "unary_unary"),
        ("/grpc.health.v1.Health/Watch", "unary_stream"),
        ("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", "stream_stream"),
    ],
)
def test_health_and_reflection_refuse_undecodable_requests_too(server, path: str, kind: str):
    _, port = server
    data = b"\x0a\x02\xff\xfe"  # field 1 (service / host) with bad UTF-8
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = getattr(channel, kind)(path, _identity, _identity)
        with pytest.raises(grpc.RpcError) as info:
            reply = call(iter([data]) if kind.startswith("stream") else data, timeout=10)
            if kind.endswith("stream"):
                list(reply)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details().endswith(": not valid UTF-8")
