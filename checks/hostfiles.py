"""Files the host keeps across jobs (base runs, mypy seeds): named by key, written whole, oldest out."""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
import time
from pathlib import Path

_HEX = frozenset("0123456789abcdef")


def keyed(folder: Path, key: str, suffix: str, what: str = "cache key") -> Path:
    """The path of ``key``'s file in ``folder``; a key that is not a sha256 hex digest never names one."""
    if len(key) != 64 or not set(key) <= _HEX:
        raise ValueError(f"not a {what}: {key!r}")
    return folder / f"{key}{suffix}"


def write_whole(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` beside ``path`` and rename it into place: a reader sees all of it or nothing.

    Raises OSError (what was written is removed).
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        tmp.write_bytes(data)
        if mode is not None:
            tmp.chmod(mode)
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def evict(folder: Path, pattern: str, max_entries: int, max_bytes: int) -> None:
    """Remove the least recently used files matching ``pattern`` past ``max_entries`` or ``max_bytes``."""
    try:
        found = sorted(((st.st_mtime, st.st_size, p) for p in folder.glob(pattern)
                        for st in (p.stat(),)), reverse=True)  # fmt: skip
    except OSError:
        return
    total = 0
    for count, (_, size, path) in enumerate(found, 1):
        total += size
        if count > max_entries or total > max_bytes:
            with contextlib.suppress(OSError):
                path.unlink()


def wal_mode(db: sqlite3.Connection, timeout_s: float = 30.0) -> None:
    """Put a SQLite file in WAL mode, waiting out other connections doing the same.

    SQLite's busy handler does not cover the journal-mode change: connections opening a new file
    at once get "database is locked" straight away (about one start in ten with eight threads,
    as the shape gate's tool threads do), which would fail whichever job came second.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
