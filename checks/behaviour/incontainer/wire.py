"""Length-prefixed JSON messages over a stream socket, with a size cap and a deadline."""

from __future__ import annotations

import json
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


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    """Send one message (a JSON object) as a single framed write."""
    payload = json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode()
    if len(payload) > MAX_MESSAGE:
        raise ValueError(f"a message of {len(payload)} bytes is over the {MAX_MESSAGE}-byte cap")
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def receive(sock: socket.socket, timeout: float | None = None) -> dict[str, Any]:
    """Return the next message; raise ChannelTimeout or ChannelClosed."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (size,) = _HEADER.unpack(_read(sock, _HEADER.size, deadline))
    if size > MAX_MESSAGE:
        raise ChannelClosed(f"the other side announced a {size}-byte message")
    try:
        message = json.loads(_read(sock, size, deadline))
    except (ValueError, RecursionError):  # nested past the parser's depth: not a message we read
        raise ChannelClosed("the other side sent a malformed message") from None
    if not isinstance(message, dict):
        raise ChannelClosed("the other side sent a message that is not an object")
    return message


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
