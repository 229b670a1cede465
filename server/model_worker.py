"""A child process that holds objects by key and runs functions on them, for the event loop.

The sessions' models live here when the server runs with model workers (``oppmodel serve
--model-workers N``): their updates and responses then run on another core, and the server's
event loop, which gRPC needs for every call it accepts, keeps only the calls' own work. With the
models on the loop, a model update made a loop turn ~0.3 ms longer, and gRPC's asyncio server
takes several turns to accept each call, so at ~70% busy the calls queued (see
``benchmarks/RESULTS.md``, "Models off the event loop").

A request is ``(function, key, args)``: the worker runs ``function(objects, key, *args)``, where
``objects`` is its dict of held objects, and answers with the result or the exception. Functions
travel by reference (module-level functions), arguments and results by pickle. Requests are
answered in the order they were sent, one at a time.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import multiprocessing
import pickle
import signal
import socket
import struct
from collections.abc import Callable
from typing import Any, TypeVar

from oppmodel.modeling.errors import UnavailableError

T = TypeVar("T")
log = logging.getLogger("oppmodel.server")

_HEADER = struct.Struct("<Q")  # the length of the pickle that follows
READY_SECONDS = 120.0  # a worker's start: a fork, then the kernels loaded from numba's cache
Objects = dict[str, Any]


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives a pickle round trip, else a RuntimeError naming it."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def serve_objects(sock: socket.socket) -> None:
    """The child's main: answer requests on ``sock`` until the parent closes it.

    It ignores SIGINT: Ctrl-C at a terminal reaches every process of the group, and the parent,
    which closes the socket as it stops, ends the worker (without a traceback of its own), also
    when it closes it while a request is running: the answer then has no one to go to."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        _answer_requests(sock)


def _answer_requests(sock: socket.socket) -> None:
    objects: Objects = {}
    sock.sendall(_HEADER.pack(0))  # ready
    while (header := _read_exactly(sock, _HEADER.size)) is not None:
        body = _read_exactly(sock, _HEADER.unpack(header)[0])
        if body is None:
            return
        try:
            function, key, args = pickle.loads(body)
            reply = pickle.dumps((True, function(objects, key, *args)), protocol=5)
        except BaseException as exc:  # answered, never fatal: the parent decides
            reply = pickle.dumps((False, _portable(exc)), protocol=5)
        sock.sendall(_HEADER.pack(len(reply)) + reply)


class _Replies(asyncio.Protocol):
    """Reads the worker's framed replies and resolves the oldest waiting call with each."""

    def __init__(self, worker: ModelWorker) -> None:
        self._worker = worker
        self._buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        while len(buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(buffer)
            end = _HEADER.size + size
            if len(buffer) < end:
                return
            body = bytes(buffer[_HEADER.size : end])
            del buffer[:end]
            self._worker._answered(body)

    def connection_lost(self, exc: Exception | None) -> None:
        self._worker._lost()


class ModelWorker:
    """One child process holding objects by key; ``await call(function, key, *args)``.

    The process is forked from multiprocessing's fork server, which imports the modules
    ``preload`` once (each worker starts with them loaded): at ``start()`` and again on the first
    call after it died. ``on_lost(worker)`` is called when it dies, and every call waiting then
    raises UnavailableError.
    """

    def __init__(
        self,
        *,
        preload: list[str],
        on_lost: Callable[[ModelWorker], None] | None = None,
    ) -> None:
        self._preload = preload
        self._on_lost = on_lost
        self._process: multiprocessing.process.BaseProcess | None = None
        self._transport: asyncio.Transport | None = None
        self._starting: asyncio.Future[None] | None = None
        # one entry per request sent, in order: the future its reply resolves (None: no one waits)
        self._waiting: collections.deque[asyncio.Future[Any] | None] = collections.deque()
        self._closed = False

    async def start(self) -> None:
        """Start the process (if it is not running) and return once it takes calls."""
        await self._start()

    def _spawning(self) -> bool:
        return self._starting is not None and not self._starting.done()

    async def call(self, function: Callable[..., T], key: str, *args: object) -> T:
        """``function(objects, key, *args)`` in the worker; its result, or its exception."""
        transport = self._transport
        if transport is None or transport.is_closing():
            transport = await self._start()
        reply = asyncio.get_running_loop().create_future()
        self._send(transport, (function, key, args), reply)
        return await reply

    def forget(self, function: Callable[..., None], key: str) -> None:
        """Send ``function(objects, key)`` without waiting for it (dropping an object)."""
        transport = self._transport
        if transport is None or transport.is_closing():
            return  # nothing is held by a worker that is not running
        self._send(transport, (function, key, ()), None)

    def _send(
        self, transport: asyncio.Transport, request: tuple, reply: asyncio.Future[Any] | None
    ) -> None:
        """Frame and write one request; ``reply`` (None: no one waits) takes its answer."""
        body = pickle.dumps(request, protocol=5)
        self._waiting.append(reply)
        transport.write(_HEADER.pack(len(body)) + body)

    async def _start(self) -> asyncio.Transport:
        if self._closed:
            raise UnavailableError("the server is stopping")
        if not self._spawning():
            self._starting = asyncio.ensure_future(self._spawn())
        await asyncio.shield(self._starting)  # type: ignore[arg-type]  # just set
        if self._transport is None:  # it started and died at once
            raise UnavailableError("the model worker stopped; send again")
        return self._transport

    async def _spawn(self) -> None:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(self._preload)
        process = context.Process(
            target=serve_objects,
            args=(theirs,),
            name="oppmodel-models",
            daemon=True,
        )
        try:
            await loop.run_in_executor(None, process.start)
        except EOFError:  # the fork server exited as it imported the preload (it took no fork)
            ours.close()
            raise UnavailableError(
                "the model worker did not start: its fork server exited while importing "
                f"{', '.join(self._preload)} (its traceback is on the server's stderr)"
            ) from None
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(READY_SECONDS)
        try:
            ready = await loop.run_in_executor(None, _read_exactly, ours, _HEADER.size)
        except TimeoutError:
            ready = None
        if ready is None:
            process.kill()
            ours.close()
            process.join(timeout=5)
            raise UnavailableError(f"the model worker did not start (exit {process.exitcode})")
        self._process = process
        transport, _ = await loop.create_connection(lambda: _Replies(self), sock=ours)
        self._transport = transport
        log.info("model worker started", extra={"pid": process.pid})

    def _answered(self, body: bytes) -> None:
        reply = self._waiting.popleft()
        if reply is None or reply.done():  # no one waits, or its caller gave up
            return
        try:
            ok, value = pickle.loads(body)
        except Exception as exc:
            reply.set_exception(RuntimeError(f"unreadable reply from the model worker: {exc}"))
            return
        if ok:
            reply.set_result(value)
        else:
            reply.set_exception(value)

    def _lost(self) -> None:
        """The worker's socket closed: it died (or we closed it); what it held is gone."""
        self._transport = None
        waiting, self._waiting = self._waiting, collections.deque()
        for reply in waiting:
            if reply is not None and not reply.done():
                reply.set_exception(UnavailableError("the model worker stopped; send again"))
        process, self._process = self._process, None
        if process is not None:
            process.join(timeout=0)
            if not self._closed:
                log.error("model worker died", extra={"exitcode": process.exitcode})
        if not self._closed and self._on_lost is not None:
            self._on_lost(self)

    async def close(self) -> None:
        """Stop the worker (it exits when its socket closes) and wait for it."""
        self._closed = True
        if self._spawning():  # let it finish, so that its process is stopped below
            with contextlib.suppress(Exception):
                await asyncio.shield(self._starting)  # type: ignore[arg-type]
        process, self._process = self._process, None  # joined here, not by ``_lost``
        if self._transport is not None:
            self._transport.close()
        if process is not None:
            await asyncio.get_running_loop().run_in_executor(None, process.join, 10)
            if process.is_alive():
                process.kill()
