"""GitHub tarballs kept on disk by (repository, sha): a commit's tree never changes.

Every job of a repository needs its base branch's tree, and a synchronize
needs the same base again: without a cache each job downloaded it anew (12
downloads for 6 jobs of one repository). Entries are files named by a hash
of the key, written atomically, and the least recently used go first once
the cache is over its size; two jobs asking for the same missing tree at
once download it once.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import tempfile
from pathlib import Path
from typing import Protocol


class TarballSource(Protocol):
    """Where tarballs come from (bot.github.client.Installation)."""

    async def tarball(self, repository: str, ref: str) -> bytes: ...


class TarballCache:
    """A size-bounded directory of tarballs; ``max_bytes`` 0 turns it off."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._pending: dict[str, asyncio.Lock] = {}
        # File times may have a resolution of a second: this process's own order of use
        # breaks their ties.
        self._used: dict[str, int] = {}
        self._clock = itertools.count()

    def _path(self, repository: str, sha: str) -> Path:
        # A hash, not the names: nothing a payload says becomes a path.
        return self.root / (hashlib.sha256(f"{repository}@{sha}".encode()).hexdigest() + ".tar.gz")

    async def get(self, source: TarballSource, repository: str, sha: str) -> bytes:
        """Return the tarball of ``repository`` at ``sha``, from disk when it was fetched before."""
        if self.max_bytes <= 0:
            return await source.tarball(repository, sha)
        path = self._path(repository, sha)
        lock = self._pending.setdefault(path.name, asyncio.Lock())
        async with lock:
            data = await asyncio.to_thread(_read, path)
            self._used[path.name] = next(self._clock)
            if data is None:
                data = await source.tarball(repository, sha)
                await asyncio.to_thread(self._store, path, data)
        self._pending.pop(path.name, None)
        return data

    def _store(self, path: Path, data: bytes) -> None:
        if len(data) > self.max_bytes:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".incoming-")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
        self._evict()

    def _evict(self) -> None:
        entries = []
        for entry in self.root.glob("*.tar.gz"):
            try:
                stat = entry.stat()
            except FileNotFoundError:  # another process evicted it meanwhile
                continue
            entries.append((stat.st_mtime, self._used.get(entry.name, -1), stat.st_size, entry))
        total = sum(size for _, _, size, _ in entries)
        for _, _, size, entry in sorted(entries):
            if total <= self.max_bytes:
                return
            entry.unlink(missing_ok=True)
            self._used.pop(entry.name, None)
            total -= size


def _read(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    os.utime(path)  # recently used: evicted last
    return data
