"""Trees a PR controls, walked, packed and removed on the host: iteratively, within bounds.

A PR's author chooses its tree's shape knowing patchgate's source: a file a
thousand directories deep, a million empty files, a name longer than the
file system allows. Python 3.11's ``os.walk``, ``shutil.rmtree``,
``shutil.copytree`` and ``tarfile.add`` recurse once per directory level,
so every host-side walk of such a tree goes through here: an explicit stack,
and a :class:`Tally` that raises :class:`TreeBoundExceeded` (naming the path
and the bound) as soon as the tree breaks one. Breaking a bound is the fault
of whoever wrote the tree, never an infrastructure failure: it is not a
SandboxError.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

Bound = Literal["depth", "entries", "bytes", "name", "path", "link", "changes", "export"]


@dataclass(frozen=True)
class Bounds:
    """The most a tree may hold; a real repository stays far below every one of them."""

    # Path components of the deepest entry ("a/b.py" is 2 deep); it also keeps recursive code
    # elsewhere (pathlib's rglob, ast walkers of paths) far from the recursion limit.
    depth: int = 100
    entries: int = 200_000
    # Bytes of regular files (a compressed archive of zeros unpacks a thousand times larger).
    bytes: int = 4 * 2**30
    # One path component, in bytes: NAME_MAX on Linux; a longer name cannot be created anyway.
    name: int = 255
    # A whole relative path, in bytes: well inside PATH_MAX (4096) once a host prefix is added.
    path: int = 1024


DEFAULT_BOUNDS = Bounds()

_SHOWN = 100  # characters of an offending path a message shows


class TreeBoundExceeded(Exception):
    """A tree breaks a bound on depth, entries, bytes, name or path length.

    ``path`` is the offending entry relative to the tree's root (POSIX
    separators), ``bound`` which bound it broke and ``limit`` that bound's value.
    """

    def __init__(self, path: str, bound: Bound, limit: int) -> None:
        self.path = path
        self.bound: Bound = bound
        self.limit = limit
        super().__init__(f"{shown(path)}: {self.broken}")

    @property
    def broken(self) -> str:
        """Say which bound the path broke, e.g. ``nested more than 100 levels deep``."""
        size = f"{self.limit // 2**20} MiB" if self.limit >= 2**20 else f"{self.limit} bytes"
        return _BROKEN[self.bound].format(limit=self.limit, size=size)


_BROKEN: dict[Bound, str] = {
    "depth": "nested more than {limit} levels deep",
    "entries": "the tree holds more than {limit} entries",
    "bytes": "the tree holds more than {size}",
    "name": "a name longer than {limit} bytes",
    "path": "a path longer than {limit} bytes",
    "link": "a link target longer than {limit} bytes",
    # Of the change rather than of one tree (checks/workspace.py): files changed between base and head.
    "changes": "the change touches more than {limit} files",
    # An archive of the tree (git archive, a GitHub tarball) that its .gitattributes made unlike the
    # commit in more files than are read back one by one (checks/workspace.py tree_differences).
    "export": "its archive leaves out or rewrites more than {limit} files (export-ignore, export-subst)",
}


def shown(path: str) -> str:
    """Return ``path`` fit for a message: control characters escaped, the middle of a long one cut."""
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    if len(text) > _SHOWN:
        text = f"{text[: _SHOWN - 41]}…{text[-40:]}"
    return text


class Tally:
    """Count one tree's entries and bytes against ``bounds``, checking each path as it comes."""

    def __init__(self, bounds: Bounds = DEFAULT_BOUNDS) -> None:
        self.bounds = bounds
        self.entries = 0
        self.bytes = 0

    def add(self, rel: str, size: int = 0, link: str = "") -> None:
        """Count the entry at ``rel`` (relative, POSIX separators) holding ``size`` bytes.

        ``link`` is a symlink's target, bounded like a path. Raises
        TreeBoundExceeded for the first bound the entry breaks.
        """
        b = self.bounds
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if len(parts) > b.depth:
            raise TreeBoundExceeded(rel, "depth", b.depth)
        if len(os.fsencode(rel)) > b.path:
            raise TreeBoundExceeded(rel, "path", b.path)
        if any(len(os.fsencode(p)) > b.name for p in parts):
            raise TreeBoundExceeded(rel, "name", b.name)
        if len(os.fsencode(link)) > b.path:
            raise TreeBoundExceeded(rel, "link", b.path)
        self.entries += 1
        if self.entries > b.entries:
            raise TreeBoundExceeded(rel, "entries", b.entries)
        self.bytes += size
        if self.bytes > b.bytes:
            raise TreeBoundExceeded(rel, "bytes", b.bytes)


def walk(root: Path, bounds: Bounds = DEFAULT_BOUNDS) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Yield (relative POSIX path, entry) for everything under ``root``, depth first, in name order.

    A directory comes right before what it holds; links are never followed (a
    link to a directory is yielded like a file). Raises TreeBoundExceeded as
    soon as the tree breaks a bound, and OSError when a directory cannot be listed.
    """
    tally = Tally(bounds)
    stack = _listing("", root, tally)
    while stack:
        rel, entry = stack.pop()
        yield rel, entry
        if entry.is_dir(follow_symlinks=False):
            stack += _listing(rel + "/", Path(entry.path), tally)


def _listing(prefix: str, folder: Path, tally: Tally) -> list[tuple[str, os.DirEntry[str]]]:
    """Count ``folder``'s entries and return them in reverse name order (a stack pops them in order).

    A directory with more entries than the tree has room for is named itself,
    before the rest of its listing is read: memory stays within the bound.
    """
    room = tally.bounds.entries - tally.entries
    with os.scandir(folder) as listing:
        entries = list(itertools.islice(listing, room + 1))
    if len(entries) > room:
        raise TreeBoundExceeded(prefix.rstrip("/") or ".", "entries", tally.bounds.entries)
    entries.sort(key=lambda e: e.name)
    for e in entries:
        tally.add(
            prefix + e.name, e.stat(follow_symlinks=False).st_size if e.is_file(follow_symlinks=False) else 0
        )
    return [(prefix + e.name, e) for e in reversed(entries)]


def pack(source: Path, tar: tarfile.TarFile, arcname: str, bounds: Bounds = DEFAULT_BOUNDS) -> None:
    """Add ``source`` (a directory and everything under it, or one file) to ``tar`` as ``arcname``.

    Only directories, regular files and symlinks are packed: a device node or
    a FIFO is dropped, never recreated. Host owners mean nothing elsewhere,
    so every member belongs to uid 0 with no names. Raises TreeBoundExceeded.
    """
    _add(tar, source, arcname)
    if not source.is_dir() or source.is_symlink():
        return
    for rel, entry in walk(source, bounds):
        _add(tar, Path(entry.path), f"{arcname}/{rel}")


def _add(tar: tarfile.TarFile, path: Path, name: str) -> None:
    st = os.lstat(path)
    info = tarfile.TarInfo(name)
    info.mode, info.mtime = stat.S_IMODE(st.st_mode), int(st.st_mtime)
    if stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    elif stat.S_ISLNK(st.st_mode):
        info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
        tar.addfile(info)
    elif stat.S_ISREG(st.st_mode):
        # Every file is written in full (no hard-link members): the unpacking side needs no order.
        info.size = st.st_size
        with path.open("rb") as handle:
            tar.addfile(info, handle)


def remove(path: Path) -> None:
    """Delete ``path`` and everything under it, children before parents, never following a link.

    Unbounded on purpose: a tree left behind is worse than a long removal,
    and whatever made the tree was bounded. A directory the tree made
    unwritable or unreadable is opened up first. Raises OSError.
    """
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
        return
    # (directory, listed already?): a directory is removed when it comes up the second time.
    stack: list[tuple[str, bool]] = [(str(path), False)]
    while stack:
        folder, listed = stack.pop()
        if listed:
            os.rmdir(folder)
            continue
        stack.append((folder, True))
        _open_up(folder)
        with os.scandir(folder) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, False))
                else:
                    os.unlink(entry.path)


def _open_up(folder: str) -> None:
    mode = os.lstat(folder).st_mode
    if mode & 0o700 != 0o700:
        os.chmod(folder, mode | 0o700)


@contextlib.contextmanager
def scratch(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """Yield a fresh temporary directory for trees a PR controls, removed with :func:`remove`.

    Unlike TemporaryDirectory's cleanup, the removal never recurses, and its
    failure is logged, never raised: it must not hide the report, or the
    error, that the body produced.
    """
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield folder
    finally:
        try:
            remove(folder)
        except OSError as exc:
            log.warning("could not remove the temporary tree %s: %s", folder, exc)
