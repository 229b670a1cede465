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

    def readline(self, timeout: float | None) -> str | None:
        """The next line including its ``\\n``; None at end of stream or on a socket error.

        Raises TimeoutError if no whole line arrives within ``timeout`` seconds (None: no limit).
        A line longer than 64 KiB is returned in pieces. Bytes are decoded as Latin-1, so nothing a
        client sends can fail to decode.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0 or len(self._buffer) >= MAX_LINE_BYTES:
                end = end + 1 if end >= 0 else MAX_LINE_BYTES
                line = self._buffer[:end].decode("latin-1")
                del self._buffer[:end]
                return line
            if deadline is None:
                self.sock.settimeout(None)
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(MAX_LINE_BYTES)
            except TimeoutError:
                raise
            except OSError:
                return None
            if not data:
                return None
            self._buffer += data

    def send(self, text: str) -> bool:
        """Send ``text`` whole; False if the peer is gone."""
        try:
            self.sock.settimeout(None)
            self.sock.sendall(text.encode("latin-1"))
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
