"""GetActions: GetAction's decisions on one stream kept open (the ACPC agent's ``ActionStream``).

Its answers are GetAction's, message for message; a failure ends the stream with GetAction's
status after the answers before it; the agent makes every decision of a match on one stream; a
decision that misses its budget fails alone (its late answer is never read as the next one's); a
stream the server closed as idle is reopened for the decision."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from service_support import LOADED_DEADLINE, Relay, connected

from oppmodel.clients.acpc.agent import Decision, SeatHand
from oppmodel.clients.acpc.service_calls import ActionStream
from oppmodel.clients.acpc.service_policy import ServicePolicy
from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import DeadlineExceededError, NotFoundError
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.matchstate import parse_matchstate
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.server.session_spec import Limits
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc

GAME = read_game_def("kuhn3p")
CARDS = ("Js", "Qs", "Ks", "As")


def matchstate(hand: int) -> str:
    """Position ``hand % 3``'s first decision of hand ``hand`` (the betting before it: checks)."""
    position = hand % 3
    holes = ["", "", ""]
    holes[position] = CARDS[hand % 4]
    return f"MATCHSTATE:{position}:{hand}:{'c' * position}:{'|'.join(holes)}"


def requests(session_id: str, hands: range) -> list[pb.GetActionRequest]:
    """A decision of each hand, by MATCHSTATE line and by information state in turn."""
    out = []
    for hand in hands:
        request = pb.GetActionRequest(session_id=session_id, draw=hand * 7919)
        if hand % 2:
            request.matchstate = matchstate(hand)
        else:
            state = pb.InfoState(position=hand % 3, card=hand % 4, history="p" * (hand % 3))
            request.info_state.CopyFrom(state)
        out.append(request)
    return out


def test_a_stream_answers_each_decision_as_getaction_and_ends_at_the_first_failure(
    tmp_path: Path,
) -> None:
    with connected(tmp_path / "db.sqlite") as (client, port):
        sid = client.create_session().session_id
        asked = requests(sid, range(24))
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.OpponentModelServiceStub(channel)
            alone = [stub.GetAction(r, timeout=LOADED_DEADLINE) for r in asked]
            stream = [
                reply.response
                for reply in stub.GetActions(
                    iter([pb.GetActionsRequest(request=r) for r in asked]),
                    timeout=LOADED_DEADLINE,
                )
            ]
            assert stream == alone
            assert len({reply.infostate for reply in alone}) > 10
            # a decision that fails ends the stream with GetAction's status, after the others
            missing = pb.GetActionRequest(session_id="no-such-session", matchstate=matchstate(1))
            sent = [asked[0], missing, asked[1]]
            replies: list[pb.GetActionsResponse] = []
            with pytest.raises(grpc.RpcError) as failed:
                for reply in stub.GetActions(
                    iter([pb.GetActionsRequest(request=r) for r in sent]), timeout=LOADED_DEADLINE
                ):
                    replies.append(reply)
            with pytest.raises(grpc.RpcError) as alone_failed:
                stub.GetAction(missing, timeout=LOADED_DEADLINE)
        assert [reply.response for reply in replies] == alone[:1]
        assert failed.value.code() == alone_failed.value.code() == grpc.StatusCode.NOT_FOUND
        assert failed.value.details() == alone_failed.value.details()
        assert dict(failed.value.trailing_metadata())["oppmodel-error"] == "NotFoundError"
        # the agent's stream: the client's answers, on one stream; NOT_FOUND as the client's
        actions = ActionStream(client)
        try:
            for hand in range(1, 24, 2):
                got = actions.action(sid, matchstate=matchstate(hand), draw=hand * 7919)
                assert got == client.action(sid, matchstate=matchstate(hand), draw=hand * 7919)
            with pytest.raises(NotFoundError):
                actions.action("no-such-session", matchstate=matchstate(1), draw=0)
            assert actions.action(sid, matchstate=matchstate(3), draw=1) == client.action(
                sid, matchstate=matchstate(3), draw=1
            )
        finally:
            actions.close()


def decision(hand: int) -> Decision:
    line = f"MATCHSTATE:0:{hand}::Js||"
    return Decision(GAME, *parse_matchstate(GAME, line), line)


def finished(hand: int) -> SeatHand:
    line = f"MATCHSTATE:0:{hand}:ccc:Js|Qs|Ks"
    return SeatHand(hand, 0, "ccc", ("Js", "Qs", "Ks"), -1.0, ("",), line)


class CountingRelay(Relay):
    """Relays every call; ``calls`` counts them by method name."""

    def __init__(self, target: str) -> None:
        self.calls: Counter[str] = Counter()
        super().__init__(target)

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = details.method
        self.calls[method.rpartition("/")[2]] += 1
        if method.endswith(("/Observe", "/GetActions")):
            stream = self.channel.stream_stream(method)
            return grpc.stream_stream_rpc_method_handler(
                lambda requests, context: stream(requests, timeout=context.time_remaining())
            )
        unary = self.channel.unary_unary(method)
        return grpc.unary_unary_rpc_method_handler(
            lambda request, context: unary(request, timeout=context.time_remaining())
        )


def test_the_agent_makes_every_decision_of_a_match_on_one_stream(tmp_path: Path) -> None:
    with connected(tmp_path / "db.sqlite") as (_, port):
        relay = CountingRelay(f"127.0.0.1:{port}")
        policy = ServicePolicy(
            GAME, f"127.0.0.1:{relay.port}", config=MBBRConfig(hands_default=5, seed=2)
        )
        try:
            for hand in range(30):
                policy.act(decision(hand))
                policy.observe(finished(hand))
        finally:
            policy.close()
            relay.close()
    assert policy.decisions()["service"] == 30  # (a decision that missed would open another)
    assert relay.calls["GetActions"] == 1
    assert relay.calls["GetAction"] == 0


class SlowDecisions(pb_grpc.OpponentModelServiceServicer):
    """GetActions answering each request after ``delays[draw]`` seconds (0 if not given), its
    infostate the draw's number, so an answer shows which decision it belongs to; ``opened``
    counts the streams."""

    def __init__(self, delays: dict[int, float]) -> None:
        self.delays = delays
        self.opened = 0

    def GetActions(
        self, request_iterator: Iterator[pb.GetActionsRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.GetActionsResponse]:
        self.opened += 1
        for message in request_iterator:
            draw = message.request.draw
            stop = time.monotonic() + self.delays.get(draw, 0.0)
            while time.monotonic() < stop and context.is_active():
                time.sleep(0.005)
            yield pb.GetActionsResponse(
                response=pb.GetActionResponse(acpc_action="c", infostate=str(draw))
            )


def test_a_missed_budget_fails_that_decision_only_and_its_late_answer_is_never_read() -> None:
    servicer = SlowDecisions({1: 2.0})
    server = grpc.server(ThreadPoolExecutor(4))
    pb_grpc.add_OpponentModelServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    client = OpponentModelClient(f"127.0.0.1:{port}", timeout=0.5)
    actions = ActionStream(client)
    try:
        assert actions.action("s", matchstate="m", draw=0).infostate == "0"
        began = time.monotonic()
        with pytest.raises(DeadlineExceededError):
            actions.action("s", matchstate="m", draw=1)
        assert time.monotonic() - began < 2.0  # the budget, not the answer's 2 s
        for draw in (2, 3):
            assert actions.action("s", matchstate="m", draw=draw).infostate == str(draw)
        assert servicer.opened == 2  # the missed decision's stream was dropped, not reused
    finally:
        actions.close()
        client.close()
        server.stop(0)


def test_a_stream_the_server_closed_as_idle_is_reopened_for_the_decision(tmp_path: Path) -> None:
    limits = Limits(stream_idle_seconds=0.3)
    with connected(tmp_path / "db.sqlite", limits=limits) as (client, _):
        sid = client.create_session().session_id
        actions = ActionStream(client)
        try:
            first = actions.action(sid, matchstate=matchstate(1), draw=5)
            ended = threading.Event()
            stream = actions._responses
            stream.add_done_callback(lambda _call: ended.set())
            assert ended.wait(LOADED_DEADLINE)  # the server closed it as idle
            assert actions.action(sid, matchstate=matchstate(1), draw=5) == first
            assert actions._responses is not stream
        finally:
            actions.close()
