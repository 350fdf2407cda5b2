"""parse_collect: peak memory, OOM kills and collected files from the last exec."""

from __future__ import annotations

import io
import tarfile

import pytest

from sandbox.stats import parse_collect


def tarball(members: dict[str, bytes], symlink: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if symlink:
            link = tarfile.TarInfo(symlink)
            link.type = tarfile.SYMTYPE
            link.linkname = "/etc/passwd"
            tar.addfile(link)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("stderr", "peak", "oom"),
    [
        (b"patchgate-stats peak=1234 oom_kill=0\n", 1234, False),
        (b"tar: noise\npatchgate-stats peak=99 oom_kill=2\n", 99, True),
        (b"patchgate-stats peak= oom_kill=\n", None, False),
        (b"", None, False),
    ],
)
def test_stats_line(stderr: bytes, peak: int | None, oom: bool) -> None:
    collected = parse_collect(b"", stderr)
    assert (collected.peak_memory_bytes, collected.oom_killed) == (peak, oom)


def test_regular_files_come_back_by_container_path_and_links_do_not() -> None:
    data = tarball({"work/out/a.txt": b"A", "tmp/b.json": b"{}"}, symlink="work/out/evil")
    files = parse_collect(data, b"").files
    assert files == {"/work/out/a.txt": b"A", "/tmp/b.json": b"{}"}


def test_a_truncated_tarball_keeps_the_members_before_the_cut() -> None:
    data = tarball({"work/first.txt": b"1" * 600, "work/second.txt": b"2" * 5000})
    files = parse_collect(data[:2048], b"").files
    assert files == {"/work/first.txt": b"1" * 600}
