"""The host's keyed files: whole writes, key checks, least recently used out."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from checks.hostfiles import evict, keyed, wal_mode, write_whole


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


def at_once(work: Callable[[], object], threads: int = 8) -> list[BaseException]:
    """Run ``work`` on ``threads`` threads released together; return what they raised."""
    go = threading.Barrier(threads)
    raised: list[BaseException] = []

    def one() -> None:
        go.wait()
        try:
            work()
        except BaseException as exc:
            raised.append(exc)

    running = [threading.Thread(target=one) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    return raised


def test_connections_opening_a_new_file_at_once_all_get_wal(tmp_path: Path) -> None:
    # A bare PRAGMA journal_mode=WAL fails about one start in ten here: the busy handler does not
    # cover the journal-mode change.
    for trial in range(40):
        path = tmp_path / f"{trial}.sqlite"

        def open_and_write(path: Path = path) -> None:
            db = sqlite3.connect(path, timeout=30, isolation_level=None)
            try:
                wal_mode(db)
                db.execute("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY)")
                db.execute("BEGIN IMMEDIATE")
                db.execute("COMMIT")
            finally:
                db.close()

        assert at_once(open_and_write) == []
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        db.close()


def test_other_errors_are_not_waited_out(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.sqlite")
    db.close()
    with pytest.raises(sqlite3.ProgrammingError):
        wal_mode(db)
