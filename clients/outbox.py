"""What every sending path of the clients shares: the hands a session has not acknowledged, the
reconnect policy, and the long-lived Observe stream.

A session's hands are numbered 1, 2, ... (``Observation.sequence``); the server acknowledges each
and takes a resent one as a duplicate, never applying it twice. So a sender keeps what is not yet
acknowledged (:class:`Outbox`) and, when the connection fails, sends it again (:class:`Retry`: an
UNAVAILABLE call is retried for a while, anything else raises the server's error). The client's
``observe`` (a stream per call) and ``observe_batch``, :class:`ObservationStream` (one stream across
hands) and the ACPC service policy (``clients/acpc/service_policy.py``: hands in pieces, a new
session sent every hand again) are the senders.
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import grpc

from oppmodel.modeling import errors
from oppmodel.modeling.observation import HandObservation, LimitObservation
from oppmodel.v1 import opponent_model_pb2 as pb

if TYPE_CHECKING:
    from oppmodel.clients.client import OpponentModelClient

RETRYABLE = (grpc.StatusCode.UNAVAILABLE,)
RETRY_PAUSE_S = 0.05  # between the attempts of a call that failed UNAVAILABLE

Hand = HandObservation | LimitObservation | str  # a finished hand; str: its MATCHSTATE line


def observation_message(sequence: int, obs: Hand) -> pb.Observation:
    """The Observation message of a finished hand: a HandObservation (Kuhn fields, betting in
    OpenSpiel letters), or a LimitObservation or MATCHSTATE line (sent as the line)."""
    if isinstance(obs, str):
        return pb.Observation(sequence=sequence, matchstate=obs)
    return pb.Observation(sequence=sequence, **obs.message_fields())


class Outbox:
    """The hands of one session, numbered ``first_sequence``, ``first_sequence + 1``, ... as they
    are added, and how far the service has acknowledged them: what is not acknowledged is what a
    (re)send sends. ``keep``: keep acknowledged hands too, so that :meth:`rewind` can send every
    hand again (to a session created anew); otherwise they are dropped once acknowledged."""

    def __init__(self, first_sequence: int = 1, *, keep: bool = False) -> None:
        self.first_sequence = first_sequence
        self.keep = keep
        self._hands: list[Hand] = []  # sequences _base, _base + 1, ...
        self._base = first_sequence
        self.acknowledged = first_sequence - 1  # the last sequence the service acknowledged

    @property
    def next_sequence(self) -> int:
        """The sequence the next hand added gets."""
        return self._base + len(self._hands)

    def add(self, hand: Hand) -> int:
        """Number the next hand; its sequence."""
        self._hands.append(hand)
        return self.next_sequence - 1

    def unacknowledged(self, limit: int | None = None) -> list[Hand]:
        """The hands not acknowledged, oldest first (at most ``limit``); the first is numbered
        ``acknowledged + 1``."""
        start = self.acknowledged + 1 - self._base
        return self._hands[start : None if limit is None else start + limit]

    def messages(self) -> list[pb.Observation]:
        """The messages of the hands not acknowledged, oldest first."""
        first = self.acknowledged + 1
        return [observation_message(first + i, h) for i, h in enumerate(self.unacknowledged())]

    def acknowledge(self, sequence: int) -> None:
        """The service acknowledged every hand up to ``sequence``."""
        self.acknowledged = max(self.acknowledged, sequence)
        if not self.keep:
            del self._hands[: self.acknowledged + 1 - self._base]
            self._base = self.acknowledged + 1

    def rewind(self) -> None:
        """Nothing acknowledged any more (a new session): every kept hand is to be sent."""
        self.acknowledged = self.first_sequence - 1

    def __len__(self) -> int:
        """How many hands are not acknowledged."""
        return self.next_sequence - 1 - self.acknowledged


class Retry:
    """The reconnect policy of one send: a call that failed UNAVAILABLE (the server went away,
    or is restarting) is tried again, ``RETRY_PAUSE_S`` apart, for up to ``seconds``; any other
    failure, or one after that, raises the server's error."""

    def __init__(self, client: OpponentModelClient, seconds: float) -> None:
        self.client = client
        self.deadline = time.monotonic() + seconds

    def after(self, exc: grpc.RpcError) -> None:
        """Wait before the next attempt, or raise the domain error of ``exc``."""
        if exc.code() not in RETRYABLE or self.expired():
            raise self.client.error_of(exc) from None
        time.sleep(RETRY_PAUSE_S)

    def expired(self) -> bool:
        return time.monotonic() > self.deadline


class ObservationStream:
    """One Observe stream kept open across hands: ``send`` returns once the hand is acknowledged.

    Saves opening a stream per hand. If the stream breaks (UNAVAILABLE: the server went away), the
    next ``send`` reopens it and resends every observation not yet acknowledged, for up to the
    client's ``reconnect_seconds``; the server's sequence numbers make the resend safe. A stream
    the server closed for carrying nothing too long (``IdleStreamError``) is reopened the same
    way.
    """

    def __init__(self, client: OpponentModelClient, session_id: str, first_sequence: int) -> None:
        self._client = client
        self.session_id = session_id
        self._outbox = Outbox(first_sequence)
        self._requests: queue.SimpleQueue | None = None
        self._responses: Iterator[pb.ObserveResponse] | None = None

    @property
    def next_sequence(self) -> int:
        """The sequence the next hand sent gets."""
        return self._outbox.next_sequence

    def __enter__(self) -> ObservationStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _request(self, observation: pb.Observation) -> pb.ObserveRequest:
        return pb.ObserveRequest(session_id=self.session_id, observation=observation)

    def _open(self) -> Iterator[pb.ObserveResponse]:
        """A new stream that resends every unacknowledged observation; returns its responses."""
        self._abandon()
        requests: queue.SimpleQueue = queue.SimpleQueue()
        for observation in self._outbox.messages():
            requests.put(self._request(observation))
        self._requests = requests
        self._responses = responses = self._client.open_stream(
            "Observe", iter(requests.get, None), session_id=self.session_id
        )
        return responses

    def _abandon(self) -> None:
        if self._requests is not None:
            self._requests.put(None)  # ends the request iterator of the old stream
        self._requests = self._responses = None

    def send(self, obs: Hand) -> int:
        """Send the next hand and wait for its acknowledgement; returns hands_observed."""
        sequence = self._outbox.add(obs)
        if self._requests is None or self._responses is None:
            responses = self._open()
        else:
            self._requests.put(self._request(observation_message(sequence, obs)))
            responses = self._responses
        retry = Retry(self._client, self._client.reconnect_seconds)
        hands = 0
        reopened_idle = False
        while self._outbox:
            try:
                ack = next(responses)
            except grpc.RpcError as exc:
                error = self._client.error_of(exc)
                if isinstance(error, errors.IdleStreamError) and not reopened_idle:
                    reopened_idle = True  # closed while we had nothing to send: go on anew
                    responses = self._open()
                    continue
                try:
                    retry.after(exc)
                except errors.OppModelError:
                    self._abandon()
                    raise
                responses = self._open()
                continue
            except StopIteration:  # the server closed the stream without an error
                if retry.expired():
                    self._abandon()
                    raise errors.FailedPreconditionError(
                        "observation: the server keeps ending the stream without an ack"
                    ) from None
                responses = self._open()
                continue
            self._outbox.acknowledge(ack.sequence)
            hands = ack.hands_observed
        return hands

    def close(self) -> None:
        """Finish the stream (every sent hand has been acknowledged)."""
        if self._requests is not None and self._responses is not None:
            self._requests.put(None)
            with contextlib.suppress(grpc.RpcError):  # nothing unacknowledged is lost
                for _ in self._responses:
                    pass
        self._requests = self._responses = None
