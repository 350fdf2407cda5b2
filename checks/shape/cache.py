"""Shape results kept across jobs on the host, keyed by content: never one PR's say over another's verdict.

Two kinds of entry (docs/shape.md, "Caches"):

- **per file** (semgrep, bandit): the findings of one file, keyed by the
  tool, what runs it (the image's content id), its configuration (every
  configuration file and rule it reads, by content), the file's path and the
  sha256 of its bytes. An entry is written only from a run that held trusted
  inputs alone (base files, never the PR's), and only for a file the tool
  examined whole; it is read for any file with the same key, base or head.
- **mypy seeds**: mypy's incremental cache for one base (the base sha, the
  image, the configuration), as a tarball the base run's container wrote;
  only a container holding nothing but the base tree ever writes one. A head
  run gets a copy in its own tmpfs, which dies with it. Beside each seed the
  base findings of each set of targets a base run checked.

Entries live in one SQLite file (findings) and one tarball per seed under
``root``; both are bounded, the least recently used going first.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from checks.hostfiles import evict, keyed, wal_mode, write_whole
from checks.report import Finding
from checks.shape.config import BASE_MOUNT, DEFAULTS_DIR, RULES_DIR, STAGE_MOUNT

log = logging.getLogger(__name__)

_VERSION = 1
DEFAULT_MAX_FINDINGS = 200_000
DEFAULT_MAX_SEEDS = 64
DEFAULT_MAX_SEED_BYTES = 2 * 1024 * 1024 * 1024
# A larger file is examined every time: hashing it costs what scanning it does.
MAX_HASHED_BYTES = 8 * 1024 * 1024
_FINDINGS = TypeAdapter(list[Finding])


def digest(*parts: object) -> str:
    """Return the sha256 of ``parts`` as canonical JSON."""
    return hashlib.sha256(json.dumps([_VERSION, *parts], separators=(",", ":")).encode()).hexdigest()


def file_digest(root: Path, path: str) -> str | None:
    """Return the sha256 of regular file ``path`` of tree ``root``; None for a link, a large file, none.

    No component of ``path`` may be a link: the digest is of what the tool reads
    inside the sandbox, where the tree is mounted as it is.
    """
    base = root.resolve()
    target = base / path
    try:
        if target.resolve() != target or not target.is_relative_to(base):
            return None
        with open(target, "rb", opener=_nofollow) as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_HASHED_BYTES:
                return None
            data = fh.read(MAX_HASHED_BYTES + 1)
    except (OSError, ValueError):
        return None
    return hashlib.sha256(data).hexdigest() if len(data) <= MAX_HASHED_BYTES else None


@functools.cache
def source_digest(*paths: str) -> str:
    """Return a digest of patchgate's own source files: a parser that changes keys its results anew."""
    return digest(*(Path(path).read_text(encoding="utf-8") for path in paths))


def _nofollow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def config_digest(argv: Sequence[str], base_dir: Path) -> str:
    """Return a digest of ``argv`` and of every file or folder of the base tree or the stage it names."""
    contents: list[object] = []
    for arg in argv:
        for prefix, root in ((f"{BASE_MOUNT}/", base_dir), (f"{STAGE_MOUNT}/rules", RULES_DIR),
                             (f"{STAGE_MOUNT}/defaults/", DEFAULTS_DIR)):  # fmt: skip
            if arg.startswith(prefix):
                contents.append([arg, _tree_digest(root, arg[len(prefix) :].lstrip("/"))])
    return digest(list(argv), contents)


def _tree_digest(root: Path, rel: str) -> str | None:
    target = root / rel if rel else root
    if target.is_symlink():
        return None  # the tools are never pointed at a linked configuration (checks.shape.config)
    if target.is_dir():
        return digest([[p.name, _tree_digest(target, p.name)] for p in sorted(target.iterdir())])
    return file_digest(root, rel) if rel else None


@dataclass(frozen=True)
class ShapeCache:
    """The host's store of shape results (the service's work folder, or a folder a maintainer names).

    ``identify`` turns an image tag into its content id (sandbox.images.image_id);
    None keys by the tag, for tests without an engine. ``read`` False stores
    results but never reuses them (an explicit rerun).
    """

    root: Path
    identify: Callable[[str], str] | None = None
    read: bool = True
    max_findings: int = DEFAULT_MAX_FINDINGS
    max_seeds: int = DEFAULT_MAX_SEEDS
    max_seed_bytes: int = DEFAULT_MAX_SEED_BYTES

    def image(self, image: str) -> str:
        """Return what keys ``image``: its content id, or its tag without ``identify``."""
        return self.identify(image) if self.identify is not None else image

    def findings(self, keys: Iterable[str]) -> dict[str, list[Finding]]:
        """Return the stored findings of each key that has them."""
        wanted = sorted(set(keys))
        if not self.read or not wanted:
            return {}
        found: dict[str, list[Finding]] = {}
        with self._db() as db:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))  # placeholders only: the keys are parameters
                query = f"SELECT key, value FROM findings WHERE key IN ({marks})"  # noqa: S608
                rows = db.execute(query, chunk).fetchall()
                for key, value in rows:
                    with contextlib.suppress(ValidationError, ValueError):
                        found[key] = _FINDINGS.validate_json(value)
            now = time.time()
            db.executemany("UPDATE findings SET used = ? WHERE key = ?", [(now, k) for k in found])
        return found

    def put_findings(self, entries: Mapping[str, Sequence[Finding]]) -> None:
        """Store findings by key; the caller vouches that each came from a run of trusted inputs alone."""
        if not entries:
            return
        now = time.time()
        rows = [(k, _FINDINGS.dump_json(list(v)).decode(), now) for k, v in entries.items()]
        with self._db() as db:
            db.executemany("INSERT OR REPLACE INTO findings (key, value, used) VALUES (?, ?, ?)", rows)
            db.execute(
                "DELETE FROM findings WHERE key IN "
                "(SELECT key FROM findings ORDER BY used DESC LIMIT -1 OFFSET ?)",
                (self.max_findings,),
            )

    def seed(self, key: str) -> Path | None:
        """Return the stored mypy seed (a tarball) under ``key``, or None."""
        path = self._seed_path(key)
        if not self.read or not path.is_file():
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # last use, for eviction
        return path

    def put_seed(self, key: str, tarball: bytes) -> None:
        """Store a mypy seed that a container holding only the base tree wrote (renamed into place).

        The caller vouches for that: no container that held a byte of a PR ever writes one.
        """
        path = self._seed_path(key)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            write_whole(path, tarball, mode=0o644)
        except OSError as exc:
            log.warning("mypy seed %s not stored: %s", key[:12], exc)
            return
        evict(self.root / "mypy", "*.tar", self.max_seeds, self.max_seed_bytes)

    def _seed_path(self, key: str) -> Path:
        return keyed(self.root / "mypy", key, ".tar")

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        db = sqlite3.connect(self.root / "findings.sqlite", timeout=30, isolation_level=None)
        try:
            wal_mode(db)
            db.execute("CREATE TABLE IF NOT EXISTS findings (key TEXT PRIMARY KEY, value TEXT, used REAL)")
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()
