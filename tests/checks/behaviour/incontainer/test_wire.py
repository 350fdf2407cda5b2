"""The channel's framing and what each request carries, over a real socketpair.

The reader takes a whole buffer per read: however the other side splits or
packs its frames, what comes out is the same messages, and the caps hold
before anything past a header is kept.
"""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from checks.behaviour.incontainer.channel import wire


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    mine, theirs = socket.socketpair()
    try:
        yield mine, theirs
    finally:
        mine.close()
        theirs.close()


def frame(message: object) -> bytes:
    payload = json.dumps(message).encode()
    return len(payload).to_bytes(4, "big") + payload


def read_all(reader: wire.Reader, sock: socket.socket, count: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while len(found) < count:
        while reader.pending():
            found.append(reader.next())
        if len(found) < count:
            ready, _, _ = select.select([sock], [], [], 10)
            assert ready, "nothing arrived"
            reader.fill()
    return found


def test_frames_packed_together_or_split_byte_by_byte_read_the_same(pair: tuple[socket.socket, ...]) -> None:
    mine, theirs = pair
    messages = [{"q": n, "op": "getattr", "name": "x" * n} for n in range(1, 6)]
    stream = b"".join(frame(m) for m in messages)
    reader = wire.Reader(mine)
    theirs.sendall(stream)
    assert read_all(reader, mine, 5) == messages
    for byte in stream:
        theirs.sendall(bytes([byte]))
    assert read_all(reader, mine, 5) == messages
    assert not reader.pending()


def test_an_announced_size_over_the_cap_closes_before_its_body_is_kept(
    pair: tuple[socket.socket, ...],
) -> None:
    mine, theirs = pair
    theirs.sendall((wire.MAX_MESSAGE + 1).to_bytes(4, "big") + b"{}")
    reader = wire.Reader(mine)
    reader.fill()
    with pytest.raises(wire.ChannelClosed, match="announced"):
        reader.pending()


@pytest.mark.parametrize("payload", [b"[" * 5_000 + b"]" * 5_000, b"[1, 2]", b"{nope"])
def test_a_malformed_or_non_object_message_closes_the_channel(
    pair: tuple[socket.socket, ...], payload: bytes
) -> None:
    mine, theirs = pair
    theirs.sendall(len(payload).to_bytes(4, "big") + payload)
    reader = wire.Reader(mine)
    with pytest.raises(wire.ChannelClosed):
        read_all(reader, mine, 1)


def test_a_closed_peer_is_a_closed_channel(pair: tuple[socket.socket, ...]) -> None:
    mine, theirs = pair
    theirs.sendall(frame({"q": 1})[:5])
    theirs.close()
    reader = wire.Reader(mine)
    with pytest.raises(wire.ChannelClosed, match="closed"):
        read_all(reader, mine, 1)
