"""Length-prefixed JSON messages over a stream socket, with a size cap and a deadline."""

from __future__ import annotations

import json
import json.scanner
import socket
import struct
import time
from typing import Any

# One message; the grader decodes what the subject sends, so this bounds its memory too.
MAX_MESSAGE = 16 * 1024 * 1024
_HEADER = struct.Struct(">I")


class ChannelClosed(Exception):
    """The other side closed the connection, broke the framing or sent too much."""


class ChannelTimeout(Exception):
    """No whole message arrived before the deadline."""


# One encoder for every message: json.dumps with arguments of its own builds a new one each call.
_ENCODE = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode
# And one scanner: json.loads would guess the bytes' encoding and match whitespace around the value on
# every message; ours are UTF-8 (ASCII, as sent) with nothing around the value.
_SCAN = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed: its own class


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    """Send one message (a JSON object) as a single framed write."""
    payload = _ENCODE(message).encode()
    if len(payload) > MAX_MESSAGE:
        raise ValueError(f"a message of {len(payload)} bytes is over the {MAX_MESSAGE}-byte cap")
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def measure(value: object) -> int:
    """The size ``value`` takes in a message, as ``send`` encodes it."""
    return len(_ENCODE(value))


def weight(encoded: Any) -> int:
    """An upper bound of ``encoded``'s size in a message (exact for anything but a scalar or a string)."""
    kind = type(encoded)
    if kind is int:
        return int(encoded.bit_length()) // 3 + 8  # decimal digits, with room: ints cross as JSON numbers
    if encoded is None or kind is bool or kind is float:
        return 32
    if kind is str and len(encoded) < 256:
        return 12 * len(encoded) + 8  # a character is at most two six-byte escapes
    return measure(encoded) + 8


def receive(sock: socket.socket, timeout: float | None = None) -> dict[str, Any]:
    """Return the next message; raise ChannelTimeout or ChannelClosed."""
    deadline = None if timeout is None else time.monotonic() + timeout
    size = _size(_read(sock, _HEADER.size, deadline))
    return _parse(_read(sock, size, deadline))


def _size(header: bytes | bytearray) -> int:
    (size,) = _HEADER.unpack_from(header)
    if size > MAX_MESSAGE:
        raise ChannelClosed(f"the other side announced a {size}-byte message")
    return int(size)


def _parse(payload: bytes | bytearray | memoryview) -> dict[str, Any]:
    try:
        text = str(payload, "utf-8")
        message, end = _SCAN(text, 0)
    except (ValueError, RecursionError, StopIteration):  # nested past the parser's depth: not ours to read
        raise ChannelClosed("the other side sent a malformed message") from None
    if end != len(text):
        raise ChannelClosed("the other side sent a malformed message")
    if not isinstance(message, dict):
        raise ChannelClosed("the other side sent a message that is not an object")
    return message


class Reader:
    """Messages off a blocking socket that only this reader reads, a whole buffer per ``recv``.

    ``receive`` takes one message at two system calls per read (wait, read) with its timeout
    set and cleared on every read; this reader leaves the socket blocking, and one ``recv``
    brings every message the other side has sent so far.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = bytearray()
        # Read into one buffer of ours: a fresh 1 MiB bytes object per recv costs the allocator a
        # mapping and an unmapping each time.
        self._chunk = bytearray(_CHUNK)

    def pending(self) -> bool:
        """Whether a whole message is already buffered (``next`` returns it without reading)."""
        return len(self._buf) >= _HEADER.size and len(self._buf) >= _HEADER.size + _size(self._buf)

    def fill(self) -> int:
        """Read what has arrived, without waiting (how many bytes: 0 when nothing had); raise
        ChannelClosed at the connection's end."""
        try:
            count = self.sock.recv_into(self._chunk, 0, socket.MSG_DONTWAIT)
        except BlockingIOError:  # nothing yet, or another thread of ours read it first
            return 0
        except OSError as exc:
            raise ChannelClosed(f"the connection failed: {exc}") from None
        if not count:
            raise ChannelClosed("the other side closed the connection")
        self._buf += memoryview(self._chunk)[:count]
        return count

    def next(self) -> dict[str, Any]:
        """Return the buffered message (``pending`` said there is one)."""
        end = _HEADER.size + _size(self._buf)
        try:
            with memoryview(self._buf) as view, view[_HEADER.size : end] as payload:
                return _parse(payload)  # read in place: no copy of the bytes before the text
        finally:
            del self._buf[:end]


_CHUNK = 1 << 20


def _read(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    buf = bytearray()
    while len(buf) < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout("no answer in time")
            sock.settimeout(left)
        else:
            sock.settimeout(None)
        try:
            chunk = sock.recv(min(size - len(buf), 1 << 20))
        except TimeoutError:
            raise ChannelTimeout("no answer in time") from None
        except OSError as exc:
            raise ChannelClosed(f"the connection failed: {exc}") from None
        if not chunk:
            raise ChannelClosed("the other side closed the connection")
        buf += chunk
    return bytes(buf)
