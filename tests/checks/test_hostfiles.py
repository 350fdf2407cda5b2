"""The host's keyed files: whole writes, key checks, least recently used out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from checks.hostfiles import evict, keyed, write_whole


def test_only_a_sha256_hex_key_names_a_file(tmp_path: Path) -> None:
    assert keyed(tmp_path, "a" * 64, ".json") == tmp_path / f"{'a' * 64}.json"
    for bad in ("../" + "a" * 61, "A" * 64, "a" * 63, "a" * 63 + "/"):
        with pytest.raises(ValueError, match="not a base run key"):
            keyed(tmp_path, bad, ".json", "base run key")


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "x.tar"
    write_whole(target, b"one", mode=0o644)
    assert target.read_bytes() == b"one" and target.stat().st_mode & 0o777 == 0o644
    # The rename fails (a folder holds the name): the written copy is removed, the error raised.
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "inside").write_bytes(b"")
    with pytest.raises(IsADirectoryError):
        write_whole(tmp_path / "taken", b"two")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken", "x.tar"]


def test_the_least_recently_used_go_first(tmp_path: Path) -> None:
    for age, name in enumerate(["new", "mid", "old"]):
        path = tmp_path / f"{name}.json"
        path.write_bytes(b"x" * 10)
        os.utime(path, (1_000_000 - age * 100, 1_000_000 - age * 100))
    (tmp_path / "other.tar").write_bytes(b"y" * 100)
    evict(tmp_path, "*.json", max_entries=2, max_bytes=1_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mid.json", "new.json", "other.tar"]
    evict(tmp_path, "*.json", max_entries=5, max_bytes=15)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.json", "other.tar"]
