"""The OpponentModelService servicer: proto -> convert -> domain -> proto, nothing else.

Every RPC goes through ``_rpc`` (unary) or ``_streamed`` (Observe, GetActions), which
authenticate the caller, count and time the call, and turn exceptions into status codes through
the one table in
``server/errors.py``. With bearer tokens configured, a session belongs to the token that created it;
any other token gets NOT_FOUND for it, exactly as for a session that does not exist (so tokens
cannot even learn which session ids exist).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from oppmodel.modeling.errors import IdleStreamError, ResourceExhaustedError, UnauthenticatedError
from oppmodel.server import conversion
from oppmodel.server.decoding import Undecodable, refuse, takes_undecodable
from oppmodel.server.errors import error_details
from oppmodel.server.metrics import Metrics
from oppmodel.server.session_spec import Game, ResponseAnswer
from oppmodel.server.sessions import SessionManager, owner_of_token
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc
from oppmodel.v1_enums import POPULATION_KIND

_OBSERVE_WINDOW = 256  # requests read ahead of the one being processed, per stream
MAX_WINNINGS_HANDS = 10_000  # hands per GetWinnings answer (80 KB of chips)


@dataclass(frozen=True)
class _EndOfStream:
    """Queued after the last request (with the error, if reading failed)."""

    error: Exception | None = None


_IDLE = _EndOfStream()  # queued by an _IdleWatch: the handler waited too long for a request


async def _read_into(
    requests: AsyncIterator[Any],
    queue: asyncio.Queue,
    *,
    max_bytes: int,
) -> None:
    """Move every request of the stream into ``queue``, then an _EndOfStream. A request that
    could not be decoded ends the stream with its InvalidArgumentError (``takes_undecodable``),
    and so does one larger than ``max_bytes`` (an observation is a few dozen), so the
    read-ahead of a stream holds at most ``queue.maxsize * max_bytes``."""
    try:
        async for request in requests:
            if isinstance(request, Undecodable):
                raise request.error
            size = request.ByteSize()
            if size > max_bytes:
                raise ResourceExhaustedError(
                    f"request: {size} bytes; a streamed request holds at most {max_bytes}"
                )
            if queue.full():
                await queue.put(request)
            else:
                queue.put_nowait(request)
    except Exception as exc:
        await queue.put(_EndOfStream(exc))
    else:
        await queue.put(_EndOfStream())


class _IdleWatch:
    """Ends the wait of a stream's handler (Observe, GetActions) for its next request once it lasted
    ``seconds``, with one timer per stream: a timer per message (``asyncio.timeout`` around
    each wait) cost the event loop a TimerHandle scheduled and cancelled per hand.

    The handler calls ``waiting()`` before it waits on an empty queue and ``woken()`` after. The
    timer is armed for the deadline of a wait when none is pending; when it fires, the handler
    is idle if it still waits and its wait began ``seconds`` before the timer's time (then
    ``_IDLE`` is queued: the queue is empty while the handler waits), else the timer is armed
    again for the current wait's deadline, or not at all if the handler is not waiting. The
    handler is so told at the same time of the loop's clock as a timeout per wait would.
    """

    def __init__(self, queue: asyncio.Queue, seconds: float) -> None:
        self._queue = queue
        self._seconds = seconds
        self._loop = asyncio.get_running_loop()
        self._since: float | None = None  # when the current wait began; None: not waiting
        self._timer: asyncio.TimerHandle | None = None

    def waiting(self) -> None:
        """The handler begins to wait for the next request."""
        self._since = self._loop.time()
        if self._timer is None:
            self._arm(self._since + self._seconds)

    def woken(self) -> None:
        """The handler's wait ended (a request or the end of the stream arrived)."""
        self._since = None

    def close(self) -> None:
        """The stream ended: no timer is left behind."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, when: float) -> None:
        self._timer = self._loop.call_at(when, self._fire, when)

    def _fire(self, when: float) -> None:
        self._timer = None
        if self._since is None:
            return  # re-armed by the next wait
        deadline = self._since + self._seconds
        if deadline > when:
            self._arm(deadline)
        elif self._queue.empty():
            self._queue.put_nowait(_IDLE)


async def _next_round(queue: asyncio.Queue, idle: _IdleWatch, idle_seconds: float) -> list:
    """What a stream's handler takes in one round: every request queued, up to
    ``_OBSERVE_WINDOW``, after waiting for the first (IdleStreamError if none came for
    ``idle_seconds``, as ``idle`` tells)."""
    if queue.empty():
        idle.waiting()
        first = await queue.get()
        idle.woken()
        if first is _IDLE:
            raise IdleStreamError(
                f"stream: nothing arrived for {idle_seconds:g} s "
                "(oppmodel serve --stream-idle-seconds); open a new stream to go on"
            )
    else:
        first = queue.get_nowait()
    batch = [first]
    while not queue.empty() and len(batch) < _OBSERVE_WINDOW:
        batch.append(queue.get_nowait())
    return batch


Req = TypeVar("Req")
Resp = TypeVar("Resp")
Handler = Callable[[Any, Req, grpc.aio.ServicerContext, str], Awaitable[Resp]]


def _rpc(name: str) -> Callable[[Handler], Callable[..., Awaitable[Resp]]]:
    """Wrap a unary handler ``(self, request, context, owner)`` with auth, metrics and errors
    (an undecodable request too: ``decoding.takes_undecodable``)."""

    def decorate(handler: Handler) -> Callable[..., Awaitable[Resp]]:
        @takes_undecodable
        @functools.wraps(handler)
        async def wrapper(self: OpponentModelServicer, request: Req, context: Any) -> Resp:
            if isinstance(request, Undecodable):
                await refuse(request.error, context, method=name, metrics=self.metrics)
            start = time.perf_counter()
            try:
                response = await handler(self, request, context, self.owner(context))
            except Exception as exc:
                code, message, metadata = error_details(exc)
                self.metrics.count(name, code, time.perf_counter() - start)
                context.set_trailing_metadata(metadata)
                await context.abort(code, message)
                raise  # not reached: abort() raises
            # Counted before the reply leaves, so a client that saw it also sees it counted.
            self.metrics.count(name, grpc.StatusCode.OK, time.perf_counter() - start)
            return response

        return wrapper

    return decorate


class OpponentModelServicer(pb_grpc.OpponentModelServiceServicer):
    """Serves sessions of a SessionManager."""

    def __init__(
        self,
        manager: SessionManager,
        *,
        metrics: Metrics,
        tokens: frozenset[str] | None,
        max_label_length: int,
    ) -> None:
        self.manager = manager
        self.metrics = metrics
        self.tokens = tokens
        self.max_label_length = max_label_length
        self._streams = 0  # streams open now (Observe, GetActions)

    def owner(self, context: grpc.aio.ServicerContext) -> str:
        """The caller's owner id: "" without auth, else the hash of its valid bearer token. A
        call with several ``authorization`` headers is refused whatever they hold: which one
        counts would be a guess (a proxy and the client may each have added one)."""
        if self.tokens is None:
            return ""
        values = [v for k, v in context.invocation_metadata() or () if k == "authorization"]
        if len(values) > 1:
            raise UnauthenticatedError(
                f"authorization: {len(values)} authorization headers; send exactly one bearer token"
            )
        for value in values:
            if isinstance(value, str) and value.startswith("Bearer "):
                token = value[len("Bearer ") :]
                if token in self.tokens:
                    return owner_of_token(token)
        raise UnauthenticatedError("authorization: missing or unknown bearer token")

    @_rpc("CreateSession")
    async def CreateSession(self, request, context, owner):
        # On the worker pool: a limit game given by its rules is compiled here (once per rules)
        read = functools.partial(
            conversion.spec_from_proto, request.config, max_label_length=self.max_label_length
        )
        spec = await self.manager.run_cpu(read)
        info = await self.manager.create(owner, spec)
        return pb.CreateSessionResponse(session=conversion.session_to_proto(info))

    @_rpc("GetSession")
    async def GetSession(self, request, context, owner):
        session = await self.manager.get(owner, request.session_id)
        return pb.GetSessionResponse(session=conversion.session_to_proto(session.info()))

    @_rpc("ListSessions")
    async def ListSessions(self, request, context, owner):
        infos = await self.manager.list(owner)
        return pb.ListSessionsResponse(sessions=[conversion.session_to_proto(i) for i in infos])

    @_rpc("FitPopulation")
    async def FitPopulation(self, request, context, owner):
        manager = self.manager
        kind = conversion.population_kind(request.kind)
        fit = await manager.populations.fit(manager, owner, request.game, kind)
        fields = dataclasses.asdict(fit) | {"kind": POPULATION_KIND.values[fit.kind]}
        return pb.FitPopulationResponse(**fields)

    @_rpc("DeleteSession")
    async def DeleteSession(self, request, context, owner):
        await self.manager.delete(owner, request.session_id)
        return pb.DeleteSessionResponse()

    @takes_undecodable
    async def Observe(
        self, request_iterator: AsyncIterator[pb.ObserveRequest | Undecodable], context: Any
    ) -> AsyncIterator[pb.ObserveResponse]:
        """Acknowledge observations in order; what arrived together is committed together.

        A reader task queues incoming requests; each round takes everything queued, so a client
        that writes ahead gets one commit per round instead of one per hand (same results, same
        order). The first bad request ends the stream after the acks of those before it.
        """
        async for reply in self._streamed("Observe", request_iterator, context, self._observed):
            yield reply

    async def _observed(self, batch: list, owner: str) -> AsyncIterator[pb.ObserveResponse]:
        """One round of an Observe stream: its requests' acks, a session's together."""
        start = time.perf_counter()
        for session_id, group in itertools.groupby(batch, key=lambda r: r.session_id):
            requests = list(group)
            session = await self.manager.get(owner, session_id)
            items, error = [], None
            for request in requests:
                try:
                    items.append(
                        conversion.observation_from_proto(session.game, request.observation)
                    )
                except Exception as exc:
                    error = exc
                    break
            acks, refused = await self.manager.observe(session, items)
            elapsed = time.perf_counter() - start
            for ack in acks:
                self.metrics.observe_latency(elapsed)
                yield conversion.ack_to_proto(session_id, ack)
            stop = refused or error
            if stop is not None:
                raise stop

    @takes_undecodable
    async def GetActions(
        self, request_iterator: AsyncIterator[pb.GetActionsRequest | Undecodable], context: Any
    ) -> AsyncIterator[pb.GetActionsResponse]:
        """GetAction's requests on one stream, each answered in order (see the proto)."""
        async for reply in self._streamed("GetActions", request_iterator, context, self._acted):
            yield reply

    async def _acted(self, batch: list, owner: str) -> AsyncIterator[pb.GetActionsResponse]:
        """One round of a GetActions stream: each decision as GetAction answers it, counted as
        one (its latency too); the first that fails ends the stream with its status."""
        for request in batch:
            start = time.perf_counter()
            reply = await self._action(request.request, owner)
            self.metrics.count("GetAction", grpc.StatusCode.OK, time.perf_counter() - start)
            yield pb.GetActionsResponse(response=reply)

    async def _streamed(
        self,
        name: str,
        request_iterator: AsyncIterator[Any],
        context: Any,
        answer: Callable[[list, str], AsyncIterator[Any]],
    ) -> AsyncIterator[Any]:
        """A bidirectional stream ``name``: ``answer``'s replies to each round of requests (what
        arrived since the last), until the client ends it; the first failure (of a request or of
        reading one) ends it with its status, after the replies to those before it. A stream is
        refused beyond the server's limit of open streams and ends once idle too long."""
        limits = self.manager.limits
        queue: asyncio.Queue = asyncio.Queue(maxsize=_OBSERVE_WINDOW)
        reader = None
        idle = _IdleWatch(queue, limits.stream_idle_seconds)
        self._streams += 1
        try:
            if self._streams > limits.max_streams:
                raise ResourceExhaustedError(
                    f"streams: this server serves at most {limits.max_streams} streams "
                    "(Observe, GetActions) at once (oppmodel serve --max-streams)"
                )
            owner = self.owner(context)
            reader = asyncio.create_task(
                _read_into(request_iterator, queue, max_bytes=limits.max_observe_request_bytes)
            )
            done = False
            while not done:
                batch = await _next_round(queue, idle, limits.stream_idle_seconds)
                failure = None  # reading failed after the requests before it: answer those first
                if isinstance(batch[-1], _EndOfStream):
                    done = True
                    failure = batch.pop().error
                async for reply in answer(batch, owner):
                    yield reply
                if failure is not None:
                    raise failure
        except Exception as exc:
            code, message, metadata = error_details(exc)
            self.metrics.count(name, code, None)
            context.set_trailing_metadata(metadata)
            await context.abort(code, message)
        finally:
            self._streams -= 1
            idle.close()
            if reader is not None:
                reader.cancel()
        self.metrics.count(name, grpc.StatusCode.OK, None)

    @_rpc("ObserveBatch")
    async def ObserveBatch(self, request, context, owner):
        """The observations of one call, all or nothing (see the proto)."""
        limits = self.manager.limits
        if len(request.observations) > limits.max_batch_observations:
            raise ResourceExhaustedError(
                f"observations: {len(request.observations)} in one call; this server takes at "
                f"most {limits.max_batch_observations} (send the rest in the next call)"
            )
        session = await self.manager.get(owner, request.session_id)
        items = [
            conversion.observation_from_proto(session.game, message, f"observations[{i}].")
            for i, message in enumerate(request.observations)
        ]
        start = time.perf_counter()
        acks, refused = await self.manager.observe(session, items, all_or_nothing=True)
        if refused is not None:
            raise refused
        elapsed = time.perf_counter() - start
        for _ in acks:
            self.metrics.observe_latency(elapsed)
        return pb.ObserveBatchResponse(
            acks=[conversion.ack_to_proto(request.session_id, ack) for ack in acks],
            hands_observed=acks[-1].hands_observed if acks else session.hands_observed,
        )

    @_rpc("GetModel")
    async def GetModel(self, request, context, owner):
        session = await self.manager.get(owner, request.session_id)
        insight, our_position, hands = await self.manager.model(
            session, request.opponent_label, request.opponent_position
        )
        return conversion.model_to_proto(
            session.game, request.opponent_position, insight, our_position, hands
        )

    @_rpc("GetResponse")
    async def GetResponse(self, request, context, owner):
        session = await self.manager.get(owner, request.session_id)
        kind = conversion.kind_from_proto(request.kind)
        answer = await self.manager.response(
            session, request.our_position, kind, played=request.include_played
        )
        return _response_reply(session.game, request.our_position, answer)

    @_rpc("GetModels")
    async def GetModels(self, request, context, owner):
        session = await self.manager.get(owner, request.session_id)
        kind = conversion.kind_from_proto(request.kind)
        insights, answers, hands = await self.manager.models(
            session, kind, played=request.include_played
        )
        players = session.spec.num_players
        models = [
            conversion.model_to_proto(session.game, i % players, insight, our_position, hands)
            for i, (insight, our_position) in enumerate(insights)
        ]
        responses = [_response_reply(session.game, p, a) for p, a in enumerate(answers)]
        return pb.GetModelsResponse(
            models=models, responses=responses, hands_observed=hands, players=players
        )

    @_rpc("GetWinnings")
    async def GetWinnings(self, request, context, owner):
        session = await self.manager.get(owner, request.session_id)
        most = request.max_hands or MAX_WINNINGS_HANDS
        chips, hands = await self.manager.winnings(
            session, request.after_hand, min(most, MAX_WINNINGS_HANDS)
        )
        unit = session.game.compiled.rate_unit
        return pb.GetWinningsResponse(
            chips=chips, hands_observed=hands, unit_chips=unit.chips, unit_label=unit.label
        )

    @_rpc("GetAction")
    async def GetAction(self, request, context, owner):
        return await self._action(request, owner)

    async def _action(self, request: pb.GetActionRequest, owner: str) -> pb.GetActionResponse:
        """GetAction's answer (on its own call or a GetActions stream)."""
        session = await self.manager.get(owner, request.session_id)
        spot = conversion.info_state_from_proto(session.game, request)
        choice, decision = await self.manager.action(session, spot, draw=request.draw)
        return conversion.action_to_proto(choice, session.game, decision.betting)


def _response_reply(game: Game, position: int, answer: ResponseAnswer) -> pb.GetResponseResponse:
    """GetResponse's answer: our response in ``position`` (and what is played, if read)."""
    reply = pb.GetResponseResponse(
        infosets=conversion.policy_to_proto(game, position, answer.strategy),
        expected_value=answer.value,
        kind=conversion.kind_to_proto(answer.kind),
        hands_observed=answer.hands,
    )
    if answer.played is not None:
        table, value = answer.played
        reply.played.extend(conversion.policy_to_proto(game, position, table))
        reply.played_expected_value = float(value)
    return reply
