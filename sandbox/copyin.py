"""copy_in trees as tarballs: packed on the host, unpacked inside the container as the sandbox user."""

from __future__ import annotations

import os
import tarfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from sandbox.errors import SandboxError
from sandbox.spec import Mount
from sandbox.trees import DEFAULT_BOUNDS, Bounds, pack

# Where the host's tarballs are bind-mounted (read-only) inside the container.
INBOX = "/run/patchgate-in"
# The container's scratch tmpfs: a path inside the container, never on the host.
CONTAINER_TMP = "/tmp"  # noqa: S108


def writable_roots(copy_in: Sequence[Mount]) -> list[str]:
    """Return the container directories that need their own tmpfs for ``copy_in``.

    A target under /tmp or under another copy-in directory shares that tmpfs.
    """
    roots: list[PurePosixPath] = []
    for dest in sorted({_destination(m) for m in copy_in}, key=lambda p: (len(p.parts), str(p))):
        covered = [PurePosixPath(CONTAINER_TMP), *roots]
        if not any(dest == r or r in dest.parents for r in covered):
            roots.append(dest)
    return [str(r) for r in roots]


def pack_copy_in(
    copy_in: Sequence[Mount], scratch: Path, uid: int, bounds: Bounds = DEFAULT_BOUNDS
) -> list[str]:
    """Write one tarball per copy-in source into ``scratch``, readable by ``uid``.

    Returns the flat list [tarball in the container, directory to unpack it in, ...].
    Only directories, regular files and symlinks are packed: a device node or a
    FIFO in a PR tree is dropped, never recreated. Raises TreeBoundExceeded when
    a source breaks a bound (``sandbox.trees``): the fault of whoever wrote it.
    """
    open_inbox(scratch, uid)
    plan: list[str] = []
    for index, mount in enumerate(copy_in):
        source = mount.source
        if not source.exists():
            raise SandboxError(f"copy_in source {source} does not exist")
        archive = scratch / f"{index}.tar"
        with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
            name = "." if source.is_dir() else PurePosixPath(mount.target).name
            pack(source, tar, name, bounds)
        _share(archive, uid, 0o644)
        plan += [f"{INBOX}/{archive.name}", str(_destination(mount))]
    return plan


def open_inbox(folder: Path, uid: int) -> None:
    """Let ``uid`` read the folder a container's copy-in tarballs arrive in (bind-mounted at INBOX)."""
    _share(folder, uid, 0o755)


def _destination(mount: Mount) -> PurePosixPath:
    target = PurePosixPath(mount.target)
    if not target.is_absolute() or ".." in target.parts:
        raise ValueError(f"copy_in target must be an absolute path without '..': {mount.target!r}")
    dest = target if mount.source.is_dir() else target.parent
    if dest == PurePosixPath("/") or dest == PurePosixPath(INBOX) or PurePosixPath(INBOX) in dest.parents:
        raise ValueError(f"copy_in cannot write to {dest}")
    return dest


def _share(path: Path, uid: int, mode: int) -> None:
    """Let the sandbox uid read ``path``: own it when we may, else open its mode."""
    try:
        os.chown(path, uid, uid)
    except PermissionError:
        os.chmod(path, mode)
