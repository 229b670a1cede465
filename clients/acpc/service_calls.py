"""The ACPC service agent's calls, apart from its policy (``service_policy.py``): which targets
are probed over TCP, the name of what went wrong with a call, the record of a stretch on the
fallback, and a client whose calls share one deadline (the start's)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import grpc

from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.grpc_base import ERROR_BY_CODE
from oppmodel.modeling.errors import OppModelError, ServiceError

ServiceFailure = (grpc.RpcError, OppModelError)
_STATUS_OF: dict[type[BaseException], str] = {e: code.name for code, e in ERROR_BY_CODE.items()}


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
