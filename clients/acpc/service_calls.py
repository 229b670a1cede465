"""The ACPC service agent's calls, apart from its policy (``service_policy.py``): which targets
are probed over TCP, the name of what went wrong with a call, the record of a stretch on the
fallback, a client whose calls share one deadline (the start's), the stream the hands go on and
the stream the decisions go on."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from oppmodel.clients.client import ActionDecision, OpponentModelClient
from oppmodel.clients.grpc_base import ERROR_BY_CODE
from oppmodel.clients.outbox import Hand, observation_message
from oppmodel.modeling.errors import (
    DeadlineExceededError,
    IdleStreamError,
    InvalidArgumentError,
    OppModelError,
    ServiceError,
    UnavailableError,
)
from oppmodel.v1 import opponent_model_pb2 as pb

ServiceFailure = (grpc.RpcError, OppModelError)
_STATUS_OF: dict[type[BaseException], str] = {e: code.name for code, e in ERROR_BY_CODE.items()}


def warm_up(client: OpponentModelClient, session_id: str) -> None:
    """Ask a new session's first response now, not while the dealer waits for a decision: it
    loads the server's kernels (a server started without its warm-up, as in tests). A game with
    no response table (3-player hold'em responds at each decision) refuses it: nothing to load."""
    with contextlib.suppress(InvalidArgumentError):
        client.response(session_id, 0)


def tcp_address(target: str) -> tuple[str, int] | None:
    """(host, port) of a plain ``HOST:PORT`` or ``[IPV6]:PORT`` target, None for other gRPC
    target forms (``dns:///...``, ``unix:...``), which are not probed over TCP."""
    host, _, port = target.rpartition(":")
    if not (port.isascii() and port.isdigit()) or not host or "/" in host:
        return None
    if host.startswith("[") and host.endswith("]"):
        return host[1:-1], int(port)
    return None if ":" in host else (host, int(port))


def failure_reason(exc: BaseException) -> str:
    """A short name of what went wrong: its gRPC status, or the error's class and message.

    A cancelled call is UNAVAILABLE: the policy reports no call it cancelled itself (only
    ``close`` cancels, and reports nothing), so the server cancelled it, as a stopping server
    does with the calls in flight: the service went away (the message keeps the CANCELLED)."""
    if isinstance(exc, grpc.RpcError):
        status = exc.code().name
    elif isinstance(exc, ServiceError):
        status = exc.code
    else:
        status = _STATUS_OF.get(type(exc)) or f"{type(exc).__name__}: {exc}"
    return "UNAVAILABLE" if status == "CANCELLED" else status


@dataclass(frozen=True)
class Outage:
    """A stretch on the fallback: from ``first_hand`` to ``back_at_hand`` (the hand of the first
    service decision after it; None if the service never came back), and why it began."""

    first_hand: int
    back_at_hand: int | None
    reason: str


class Deadline(OpponentModelClient):
    """A client whose every call's deadline is what is left until ``deadline`` (monotonic)."""

    def __init__(self, target: str, deadline: float, options: tuple[tuple[str, int], ...]) -> None:
        super().__init__(target, reconnect_seconds=0.0, channel_options=options)
        self._deadline = deadline

    @property
    def timeout(self) -> float:
        """Seconds left (at least a millisecond: gRPC refuses a deadline in the past)."""
        return max(self._deadline - time.monotonic(), 0.001)

    @timeout.setter
    def timeout(self, value: float) -> None:
        pass  # set by GrpcClient.__init__; the deadline rules


class CallWatch:
    """One thread that cancels a streaming call that outlives a wait's deadline (a message on a
    stream has no deadline of its own): ``arm`` before the wait, ``disarm`` after it, which says
    whether the watch cancelled the call. One thread for all waits: a timer per wait would start
    a thread per message."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._armed: tuple[Any, float] | None = None  # (call, deadline) a wait is on
        self._missed = False  # the watch cancelled the call at its deadline
        self._waking_at: float | None = None  # the deadline the watch waits for (None: a wait)
        self._closed = False
        self._watcher: threading.Thread | None = None

    def arm(self, call: Any, seconds: float) -> None:
        """A wait on ``call`` begins; cancel the call if it lasts ``seconds``."""
        with self._lock:
            deadline = time.monotonic() + seconds
            self._armed, self._missed = (call, deadline), False
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._run, name="call-watch", daemon=True)
                self._watcher.start()
            elif self._waking_at is None or deadline < self._waking_at:
                self._lock.notify()  # else it wakes at an earlier deadline and waits on

    def disarm(self) -> bool:
        """The wait is over; whether the watch cancelled its call."""
        with self._lock:
            self._armed = None
            return self._missed

    def close(self) -> None:
        """End the watch's thread."""
        with self._lock:
            self._closed = True
            self._lock.notify()

    def _run(self) -> None:
        with self._lock:
            while not self._closed:
                if self._armed is None:
                    self._waking_at = None
                    self._lock.wait()
                    continue
                call, deadline = self._armed
                left = deadline - time.monotonic()
                if left > 0:
                    self._waking_at = deadline
                    self._lock.wait(left)
                    continue
                self._armed, self._missed = None, True
                call.cancel()


class KeptStream:
    """A bidirectional stream kept open across requests, each of which is answered within a
    deadline as a call of its own would be: the client's timeout at most (the watch cancels the
    stream: DeadlineExceededError), any failure raised as the call's domain exception, and the
    stream dropped on any failure, so the next request opens a new one and never reads an
    answer meant for an earlier one. A stream the server closed as idle raises ``_StreamEnded``
    (the request goes again on a new stream, no failure); its own deadline
    (``STREAM_SECONDS``) only bounds a stream's life.

    A call per request cost the server the opening and closing of a call each time (~1-3 ms of
    its CPU a hand in a hold'em match) against a message on an open stream."""

    STREAM_SECONDS = 86_400.0

    def __init__(self, client: OpponentModelClient, method: str) -> None:
        self._client = client
        self._method = method
        self._session_id: str | None = None
        self._requests: queue.SimpleQueue | None = None
        self._responses: Any = None  # the call: an iterator of answers, cancellable
        self._watch = CallWatch()

    def _exchange(
        self,
        session_id: str,
        requests: Sequence[Any],
        *,
        deadline: float,
        late: str,
        done: Callable[[Any], bool],
        wait_for_ready: bool = False,
    ) -> Any:
        """Put ``requests`` on the session's stream and return the first answer for which
        ``done`` holds, by ``deadline`` (``time.monotonic``; DeadlineExceededError(``late``)
        after it). A stream the server closed as idle is replaced once and the requests go
        again."""
        for attempt in (0, 1):
            self._put(session_id, requests, wait_for_ready)
            try:
                return self._answer(deadline, late, done)
            except _StreamEnded:
                if attempt:
                    message = f"the server keeps ending the {self._method} stream"
                    raise UnavailableError(message) from None
        raise AssertionError("two attempts either return or raise")

    def _put(self, session_id: str, requests: Sequence[Any], wait_for_ready: bool = False) -> None:
        """Put ``requests`` on the session's stream, opened if it is not (``wait_for_ready``
        applies to an opening, as to a call)."""
        if self._session_id != session_id or self._responses is None:
            self.drop()
            self._session_id, self._requests = session_id, queue.SimpleQueue()
            self._responses = self._client.open_stream(
                self._method,
                iter(self._requests.get, None),
                session_id=session_id,
                timeout=self.STREAM_SECONDS,
                wait_for_ready=wait_for_ready,
            )
        assert self._requests is not None
        for request in requests:
            self._requests.put(request)

    def _answer(self, deadline: float, late: str, done: Callable[[Any], bool]) -> Any:
        """The first answer for which ``done`` holds, by ``deadline`` (``time.monotonic``);
        DeadlineExceededError(``late``) after it."""
        responses = self._responses
        self._watch.arm(responses, deadline - time.monotonic())
        try:
            while not done(answer := next(responses)):
                pass
            return answer
        except StopIteration:
            self.drop()
            raise _StreamEnded from None
        except grpc.RpcError as exc:
            self.drop()
            if self._watch.disarm():
                raise DeadlineExceededError(late) from None
            error = self._client.error_of(exc)
            if isinstance(error, IdleStreamError) and time.monotonic() < deadline:
                raise _StreamEnded from None
            raise error from None
        except BaseException:  # Ctrl-C, say: the stream holds a request not answered
            self.drop()
            raise
        finally:
            if self._watch.disarm():  # cancelled as its answer came: not to be used again
                self.drop()

    def drop(self) -> None:
        """End the stream (the next request opens another)."""
        if self._requests is not None:
            self._requests.put(None)  # ends the requests: the server closes the stream
        self._requests = self._responses = None

    def close(self) -> None:
        """End the stream and the watch."""
        self.drop()
        self._watch.close()


class HandStream(KeptStream):
    """The background sender's Observe stream: ``send`` puts a piece of hands on it and returns
    once the last is acknowledged (or sends the piece in ObserveBatch calls, the client's
    ``observe``, when the client sends batches: a Ray Serve deployment). After a failure the
    next ``send`` goes on a new stream with the hands not acknowledged (the server's sequence
    numbers make a resend safe)."""

    def __init__(self, client: OpponentModelClient) -> None:
        super().__init__(client, "Observe")

    def send(self, session_id: str, first: int, hands: Sequence[Hand]) -> None:
        """Hands ``first``, ``first + 1``, ... of the session, acknowledged within the client's
        timeout (and 10 ms a hand), as its ``observe`` would."""
        if self._client.observe_batches:
            self._client.observe(session_id, hands, first_sequence=first)
            return
        timeout = self._client.timeout + 0.01 * len(hands)
        deadline, last = time.monotonic() + timeout, first + len(hands) - 1
        messages = (observation_message(first + i, hand) for i, hand in enumerate(hands))
        requests = [pb.ObserveRequest(session_id=session_id, observation=m) for m in messages]
        self._exchange(
            session_id,
            requests,
            deadline=deadline,
            late=f"hands: not acknowledged within {timeout:g} s",
            done=lambda ack: ack.sequence >= last,
        )


class ActionStream(KeptStream):
    """The decisions' GetActions stream: ``action`` asks one, as the client's ``action`` asks it
    at a MATCHSTATE line, and returns its answer within the client's timeout."""

    def __init__(self, client: OpponentModelClient) -> None:
        super().__init__(client, "GetActions")

    def action(
        self, session_id: str, *, matchstate: str, draw: int, wait_for_ready: bool = False
    ) -> ActionDecision:
        """The client's ``action(session_id, matchstate=..., draw=...)``, on the stream."""
        request = pb.GetActionsRequest(
            request=pb.GetActionRequest(session_id=session_id, matchstate=matchstate, draw=draw)
        )
        deadline = time.monotonic() + self._client.timeout
        answer = self._exchange(
            session_id,
            [request],
            deadline=deadline,
            late=f"{self._client.target}: Deadline Exceeded",
            done=lambda _: True,
            wait_for_ready=wait_for_ready,
        )
        return ActionDecision.from_proto(answer.response)


class _StreamEnded(Exception):
    """The stream ended without a failure of its request (the server found it idle)."""
