"""Demux: Docker's multiplexed stream split by stream and capped, whatever the chunking."""

from __future__ import annotations

import struct

import pytest

from sandbox.stream import Demux


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(data)) + data


WIRE = frame(1, b"hello ") + frame(2, b"oops") + frame(1, b"") + frame(1, b"world")


@pytest.mark.parametrize("size", [1, 3, 8, 9, 1000])
def test_any_chunking_gives_the_same_streams(size: int) -> None:
    demux = Demux(cap=1000)
    for i in range(0, len(WIRE), size):
        demux.feed(WIRE[i : i + size])
    assert bytes(demux.stdout) == b"hello world"
    assert bytes(demux.stderr) == b"oops"
    assert not demux.exceeded


@pytest.mark.parametrize(
    ("cap", "stdout", "stderr", "exceeded"),
    [
        (15, b"hello world", b"oops", False),
        (14, b"hello worl", b"oops", True),
        (8, b"hello ", b"oo", True),
        (6, b"hello ", b"", True),
        (1, b"h", b"", True),
    ],
)
def test_cap_counts_both_streams_and_flags_the_excess(
    cap: int, stdout: bytes, stderr: bytes, exceeded: bool
) -> None:
    demux = Demux(cap=cap)
    demux.feed(WIRE)
    assert (bytes(demux.stdout), bytes(demux.stderr), demux.exceeded) == (stdout, stderr, exceeded)


def test_bytes_past_the_cap_are_not_kept() -> None:
    demux = Demux(cap=10)
    for _ in range(1000):
        demux.feed(frame(1, b"x" * 4096))
    assert len(demux.stdout) == 10
    assert demux.exceeded
