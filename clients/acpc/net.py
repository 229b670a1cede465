"""Line-oriented TCP for the ACPC protocol: lines end at ``\\n`` (a ``\\r`` before it is kept)."""

from __future__ import annotations

import contextlib
import socket
import time

MAX_LINE_BYTES = 1 << 16


class LineSocket:
    """A connected socket, read line by line with per-call timeouts and written whole lines."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = bytearray()
        self._timeout: float | None = sock.gettimeout()

    def _set_timeout(self, timeout: float | None) -> None:
        if timeout != self._timeout:  # each change is a system call; most reads reuse the last
            self.sock.settimeout(timeout)
            self._timeout = timeout

    def readline(self, timeout: float | None) -> str | None:
        """The next line including its ``\\n``; None at end of stream or on a socket error.

        Raises TimeoutError if no whole line arrives within ``timeout`` seconds (None: no limit).
        A line longer than 64 KiB is returned in pieces. Bytes are decoded as Latin-1, so nothing a
        client sends can fail to decode.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        wait = timeout
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0 or len(self._buffer) >= MAX_LINE_BYTES:
                end = end + 1 if end >= 0 else MAX_LINE_BYTES
                line = self._buffer[:end].decode("latin-1")
                del self._buffer[:end]
                return line
            self._set_timeout(wait)
            try:
                data = self.sock.recv(MAX_LINE_BYTES)
            except TimeoutError:
                raise
            except OSError:
                return None
            if not data:
                return None
            self._buffer += data
            if deadline is not None:  # a partial line: wait only for the rest of the time
                wait = deadline - time.monotonic()
                if wait <= 0:
                    raise TimeoutError

    def send(self, text: str) -> bool:
        """Send ``text`` whole; False if the peer is gone (or, with a read timeout set, does not
        take the data within that time)."""
        try:
            self.sock.sendall(text.encode("latin-1"))
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
