"""What the web page reads from the service, through the API's RPCs only, with the token of the
browser's user (the UI holds no token of its own, so an owner sees only its sessions).

A session's view cached for a token is answered as it is, with no call at all, for
``model_seconds`` after it was read (it was read with that token, so the token may see it). Then it
is GetWinnings for the hands after the cached view's (answered, as GetSession, only to the
session's owner, with the session's hands now), and, only when the session has seen new hands
since the cached view, GetModels (every opponent in every position and our response, with the
played policy, in every position of ours, at one posterior). A page watching an idle session so
costs the service one GetWinnings per refresh, and one watching a busy one 2 calls once per
``model_seconds``, not per refresh; the first read of a session for a token is GetSession (its
configuration), GetModels and GetWinnings.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import numpy as np

from oppmodel.clients.client import OpponentModel, model_of
from oppmodel.clients.grpc_base import domain_error
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc
from oppmodel.v1 import perfect_info_pb2 as pi
from oppmodel.v1 import perfect_info_pb2_grpc as pi_grpc

# the generated stub classes (untyped: grpcio-tools writes no annotations)
_STUB: Callable[[grpc.aio.Channel], Any] = pb_grpc.OpponentModelServiceStub
_PERFECT_INFO_STUB: Callable[[grpc.aio.Channel], Any] = pi_grpc.PerfectInfoServiceStub
MAX_CACHED_VIEWS = 256  # (token, session) views kept; the least recently used leave first
HISTORY_POINTS = 400  # points of a session's value curve kept (the oldest leave first)


@dataclass(frozen=True)
class OpponentView:
    """GetModel's answer for one opponent (``label``) in one position."""

    label: str
    position: int
    model: OpponentModel


@dataclass(frozen=True)
class ResponseView:
    """GetResponse's answer for one position of ours: the best response and what is played."""

    our_position: int
    expected_value: float  # the best response's, chips per hand against the posterior-mean models
    played_expected_value: float  # the played policy's (what GetAction draws from), likewise
    held_back: int  # information states where the played policy is not the best response
    infostates: int  # our information states in that position


@dataclass(frozen=True)
class Winnings:
    """Our cumulative chips over the hands (GetWinnings): ``curve`` holds (hand, chips won
    through it) at every ``stride``-th hand (the stride doubles to keep at most 2 x
    HISTORY_POINTS of them) and at the last hand; the game's unit of win rates is 1000 x chips
    per hand / ``unit_chips``, in ``unit_label``."""

    hands: int = 0  # through this hand
    chips: float = 0.0
    curve: tuple[tuple[int, float], ...] = ()
    stride: int = 1
    unit_chips: int = 1
    unit_label: str = ""

    def rate(self) -> float:
        """Milli-units won per hand over the hands so far (0 before any)."""
        return 1000.0 * self.chips / (self.hands * self.unit_chips) if self.hands else 0.0

    def extended(self, chips: Sequence[float], unit_chips: int, unit_label: str) -> Winnings:
        """These with the chips of the next hands added."""
        stride = self.stride
        curve = [point for point in self.curve if point[0] % stride == 0]
        hand, total = self.hands, self.chips
        for won in chips:
            hand, total = hand + 1, total + won
            if hand % stride == 0:
                curve.append((hand, total))
                if len(curve) > 2 * HISTORY_POINTS:
                    stride *= 2
                    curve = [point for point in curve if point[0] % stride == 0]
        if not curve or curve[-1][0] != hand:
            curve.append((hand, total))
        return Winnings(hand, total, tuple(curve), stride, unit_chips, unit_label)


@dataclass
class SessionView:
    """One session as the page shows it; ``values``: at each hand count this UI saw, oldest
    first, the mean over our positions of the best response's value and of the played
    policy's."""

    session: pb.Session
    opponents: list[OpponentView]
    responses: list[ResponseView]
    values: list[tuple[int, float, float]] = field(default_factory=list)
    winnings: Winnings = field(default_factory=Winnings)
    read_at: float = field(default_factory=time.monotonic)  # when the models were read
    html: str | None = None  # the panel drawn from this view (drawn once: the view never changes)

    @property
    def hands(self) -> int:
        """Hands the service had observed when the view was read."""
        return int(self.session.hands_observed)

    @property
    def version(self) -> int:
        """What the cache compares: the hands observed."""
        return self.hands

    @property
    def tag(self) -> str:
        """The HTTP entity tag of the panel drawn from this view: a page holding it is current."""
        return _tag(self.version, self.read_at)


@dataclass
class WeightsView:
    """A perfect-information session and the posterior of each opponent's model weights."""

    session: pi.PerfectInfoSession
    weights: list[pi.ModelWeights]
    read_at: float = field(default_factory=time.monotonic)
    html: str | None = None  # as SessionView's

    @property
    def version(self) -> int:
        """What the cache compares: the choices observed."""
        return int(self.session.choices_observed)

    @property
    def tag(self) -> str:
        """As SessionView's."""
        return _tag(self.version, self.read_at)


def _tag(version: int, read_at: float) -> str:
    """An entity tag naming one read of a session's models (its count and when it was read)."""
    return f'"{version}-{read_at:.6f}"'


class ServiceReader:
    """Reads sessions from the service at ``target`` (a grpc.aio channel of this event loop)."""

    def __init__(
        self,
        target: str,
        *,
        root_certificates: bytes | None = None,
        timeout: float = 30.0,
        model_seconds: float = 5.0,
    ) -> None:
        self.target = target
        self.model_seconds = model_seconds
        self.tls = root_certificates is not None
        if root_certificates is None:
            self._channel = grpc.aio.insecure_channel(target)
        else:
            credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.aio.secure_channel(target, credentials)
        self._stub = _STUB(self._channel)
        self._perfect_info = _PERFECT_INFO_STUB(self._channel)
        self.timeout = timeout
        self._views: collections.OrderedDict[tuple[str, str], SessionView | WeightsView] = (
            collections.OrderedDict()
        )

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close()

    async def _call(
        self, method: str, request: object, token: str | None, *, stub: Any = None
    ) -> object:
        metadata = () if token is None else (("authorization", f"Bearer {token}"),)
        try:
            return await getattr(stub or self._stub, method)(
                request, metadata=metadata, timeout=self.timeout
            )
        except grpc.aio.AioRpcError as exc:
            raise domain_error(exc, target=self.target, tls=self.tls) from None

    async def sessions(self, token: str | None) -> list[pb.Session]:
        """The caller's sessions, oldest first (ListSessions)."""
        reply = await self._call("ListSessions", pb.ListSessionsRequest(), token)
        assert isinstance(reply, pb.ListSessionsResponse)
        return list(reply.sessions)

    def _cached(
        self, key: tuple[str, str], version: int | None = None
    ) -> SessionView | WeightsView | None:
        """The view cached for ``key`` if it is still good: read less than ``model_seconds``
        ago (asked before any call: ``version`` None), or read at ``version`` (hands or
        choices, as the service counts them now)."""
        cached = self._views.get(key)
        if cached is not None and (
            cached.version == version or time.monotonic() - cached.read_at < self.model_seconds
        ):
            self._views.move_to_end(key)
            return cached
        return None

    def _keep(self, key: tuple[str, str], view: SessionView | WeightsView) -> None:
        self._views[key] = view
        self._views.move_to_end(key)
        while len(self._views) > MAX_CACHED_VIEWS:
            self._views.popitem(last=False)

    async def session_view(self, token: str | None, session_id: str) -> SessionView:
        """The session's view now: read anew only if it saw hands since the cached one (the
        check: GetWinnings of the hands since, whose chips the new view keeps)."""
        key = (_owner_key(token), session_id)
        cached = self._cached(key)
        if isinstance(cached, SessionView):
            return cached
        before = self._views.get(key)
        if isinstance(before, SessionView):  # the check is a GetWinnings of the hands since
            session, won = await self._check(token, before)
            if session is None:  # no hand since: the view as it was read
                self._views.move_to_end(key)
                return before
        else:
            request = pb.GetSessionRequest(session_id=session_id)
            reply = await self._call("GetSession", request, token)
            assert isinstance(reply, pb.GetSessionResponse)
            session, won = reply.session, Winnings()
        view = await self._read(token, session, won)
        if isinstance(before, SessionView):
            view.values = [*before.values[-HISTORY_POINTS + 1 :]]
        if view.responses and (not view.values or view.values[-1][0] < view.hands):
            count = len(view.responses)
            best = sum(r.expected_value for r in view.responses) / count
            played = sum(r.played_expected_value for r in view.responses) / count
            view.values.append((view.hands, best, played))
        self._keep(key, view)
        return view

    async def weights_view(self, token: str | None, session_id: str) -> WeightsView:
        """A perfect-information session and its opponents' model weights (GetModelWeights,
        read anew only if it saw choices since the cached view)."""
        key = (_owner_key(token), f"perfect-info/{session_id}")
        cached = self._cached(key)
        if isinstance(cached, WeightsView):
            return cached
        request = pi.GetPerfectInfoSessionRequest(session_id=session_id)
        reply = await self._call("GetPerfectInfoSession", request, token, stub=self._perfect_info)
        assert isinstance(reply, pi.GetPerfectInfoSessionResponse)
        cached = self._cached(key, reply.session.choices_observed)
        if isinstance(cached, WeightsView):
            return cached
        weights = await self._call(
            "GetModelWeights",
            pi.GetModelWeightsRequest(session_id=session_id),
            token,
            stub=self._perfect_info,
        )
        assert isinstance(weights, pi.GetModelWeightsResponse)
        view = WeightsView(reply.session, list(weights.weights))
        self._keep(key, view)
        return view

    async def _check(
        self, token: str | None, view: SessionView
    ) -> tuple[pb.Session | None, Winnings]:
        """The session of ``view`` now, or None if it saw no hand since ``view`` was read, and
        the winnings with the chips of the hands since: one GetWinnings, which the service
        answers only to the session's owner, as GetSession (the rest of a session never
        changes: its id, configuration, creation and population)."""
        won = view.winnings
        request = pb.GetWinningsRequest(session_id=view.session.session_id, after_hand=won.hands)
        reply = await self._call("GetWinnings", request, token)
        assert isinstance(reply, pb.GetWinningsResponse)
        if reply.hands_observed == view.hands:
            return None, won
        session = pb.Session()
        session.CopyFrom(view.session)
        session.hands_observed = reply.hands_observed
        return session, won.extended(reply.chips, reply.unit_chips, reply.unit_label)

    async def _winnings(self, token: str | None, session: pb.Session, won: Winnings) -> Winnings:
        """``won`` with the chips of the hands after it, up to the session's hands."""
        while won.hands < session.hands_observed:
            request = pb.GetWinningsRequest(session_id=session.session_id, after_hand=won.hands)
            reply = await self._call("GetWinnings", request, token)
            assert isinstance(reply, pb.GetWinningsResponse)
            if not reply.chips:
                break
            won = won.extended(reply.chips, reply.unit_chips, reply.unit_label)
        return won

    async def _read(self, token: str | None, session: pb.Session, won: Winnings) -> SessionView:
        """Every opponent's model in every position and our response in every position (one
        GetModels, at one posterior) and the chips of the hands after ``won``, read
        concurrently."""
        labels = list(session.config.opponent_labels)
        players = len(labels) + 1
        request = pb.GetModelsRequest(
            session_id=session.session_id, kind=pb.RESPONSE_KIND_MEAN, include_played=True
        )
        reply, winnings = await asyncio.gather(
            self._call("GetModels", request, token), self._winnings(token, session, won)
        )
        assert isinstance(reply, pb.GetModelsResponse)
        where = [(label, p) for label in labels for p in range(players)]
        return SessionView(
            session=session,
            opponents=[
                _opponent(label, p, model)
                for (label, p), model in zip(where, reply.models, strict=True)
            ],
            responses=[_response(p, response) for p, response in enumerate(reply.responses)],
            winnings=winnings,
        )


def _owner_key(token: str | None) -> str:
    """The cache's key of a token: its hash, so the cache holds no token."""
    return "" if token is None else hashlib.sha256(token.encode()).hexdigest()


def _response(position: int, reply: object) -> ResponseView:
    assert isinstance(reply, pb.GetResponseResponse)
    held_back = sum(
        not np.allclose(best.probabilities, played.probabilities, atol=1e-9)
        for best, played in zip(reply.infosets, reply.played, strict=True)
    )
    return ResponseView(
        position,
        reply.expected_value,
        reply.played_expected_value,
        held_back,
        len(reply.infosets),
    )


def _opponent(label: str, position: int, reply: object) -> OpponentView:
    assert isinstance(reply, pb.GetModelResponse)
    return OpponentView(label, position, model_of(reply))
