"""Docker's multiplexed exec stream, read with a deadline and kept under a byte cap."""

from __future__ import annotations

import contextlib
import struct
from typing import Protocol

# https://docs.docker.com/engine/api/v1.41/#tag/Container/operation/ContainerAttach
# (section "Stream format"): an 8-byte header [stream, 0, 0, 0, size uint32 BE], then size bytes.
_HEADER = struct.Struct(">BxxxL")
STDERR = 2
READ_SIZE = 65536


class RawSocket(Protocol):
    def settimeout(self, value: float | None) -> None: ...

    def recv(self, size: int, /) -> bytes: ...

    def close(self) -> None: ...


class Demux:
    """Split the stream into stdout and stderr, keeping at most ``cap`` bytes of both together.

    Bytes past the cap are dropped, never buffered, so a program printing
    gigabytes costs the host at most ``cap`` bytes plus one read.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.exceeded = False
        self._header = bytearray()
        self._stream = 0
        self._left = 0

    def feed(self, data: bytes) -> None:
        """Consume one chunk read from the socket."""
        view = memoryview(data)
        while view:
            if self._left == 0:
                need = _HEADER.size - len(self._header)
                self._header += view[:need]
                view = view[need:]
                if len(self._header) == _HEADER.size:
                    self._stream, self._left = _HEADER.unpack(self._header)
                    self._header.clear()
                continue
            part = view[: self._left]
            view = view[len(part) :]
            self._left -= len(part)
            self._keep(part)

    def _keep(self, part: memoryview) -> None:
        room = self.cap - len(self.stdout) - len(self.stderr)
        if len(part) > room:
            self.exceeded = True
        if room > 0:
            sink = self.stderr if self._stream == STDERR else self.stdout
            sink += part[:room]


class ExecStream:
    """The hijacked socket of one exec: read with a timeout, so the caller keeps control."""

    def __init__(self, handle: object) -> None:
        # docker-py returns a SocketIO for unix sockets (the socket is its ``_sock``),
        # the socket itself for TLS, a channel for ssh: all three have recv/settimeout.
        self._raw: RawSocket = getattr(handle, "_sock", None) or handle  # type: ignore[assignment]
        self._handle = handle

    def read(self, timeout: float) -> bytes | None:
        """Return the next bytes, b"" at end of stream, or None when ``timeout`` passed first."""
        self._raw.settimeout(max(timeout, 0.001))
        try:
            return self._raw.recv(READ_SIZE)
        except TimeoutError:
            return None
        except ConnectionResetError:
            return b""

    def close(self) -> None:
        """Close the socket and the HTTP response it came from."""
        for thing in (self._raw, self._handle):
            close = getattr(thing, "close", None)
            if close is not None:
                with contextlib.suppress(OSError):
                    close()
