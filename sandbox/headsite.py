"""Where a head image keeps the change's packages, and who sees them: every process but the grader's.

A package of the change's choosing is code of its choosing: installed into
the image's site-packages, a ``.pth`` file of it runs at the start of every
Python process there, and its files may replace pytest's - the grader's
tools. So the head build installs nothing there: pip runs as the sandbox
user (it cannot write the image's own folders, nor can an sdist's
``setup.py``) with ``--target`` :data:`HEAD_SITE`, and the gate itself
writes a hook into the image's site-packages that adds that folder (its
``.pth`` files too) in front of the image's own packages for every uid but
the grader's. The subject, the loads probe and the in-process runs see the
change's dependencies; the grader never imports from there.
"""

from __future__ import annotations

import io
import tarfile
from typing import Any

from sandbox.execution import SANDBOX_UID
from sandbox.grader import GRADER_UID

HEAD_SITE = "/opt/patchgate-head-site"
# Who installs into HEAD_SITE: the sandbox user, which owns nothing else of the image.
BUILD_UID = SANDBOX_UID
HOOK_MODULE = "patchgate_head_site"
HOOK_PTH = "patchgate-head-site.pth"
# Part of the head image's tag: an image built another way is never reused for this one.
LAYOUT = f"target {HEAD_SITE}, hook {HOOK_MODULE} v1"

HOOK_SOURCE = f'''\
"""Written by patchgate into a head image: the change's packages for every process but the grader's."""

import os
import site
import sys

if os.getuid() != {GRADER_UID} and os.path.isdir({HEAD_SITE!r}):
    _before = list(sys.path)
    site.addsitedir({HEAD_SITE!r})
    _added = [p for p in sys.path if p not in _before]
    # In front of the image's own site-packages (a version the change asks for wins), after the stdlib.
    _here = os.path.dirname(os.path.abspath(__file__))
    _at = next((i for i, p in enumerate(_before) if os.path.abspath(p) == _here), len(_before))
    sys.path[:] = [*_before[:_at], *_added, *_before[_at:]]
'''

SITE_PACKAGES_CODE = "import site; print(site.getsitepackages()[0])"


def site_dir_archive() -> bytes:
    """A tar of HEAD_SITE's folder (for ``/opt``), owned by BUILD_UID: pip's only writable target."""
    info = tarfile.TarInfo(HEAD_SITE.rsplit("/", 1)[1])
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    info.uid = info.gid = BUILD_UID
    return _tar([(info, None)])


def hook_archive() -> bytes:
    """A tar of the hook (module and ``.pth``), owned by root, for the image's site-packages."""
    files = {f"{HOOK_MODULE}.py": HOOK_SOURCE.encode(), HOOK_PTH: f"import {HOOK_MODULE}\n".encode()}
    members: list[tuple[tarfile.TarInfo, bytes | None]] = []
    for name, data in files.items():
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = 0o644
        members.append((info, data))
    return _tar(members)


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def site_packages(client: Any, base: str) -> str:
    """The base image's first site-packages folder, asked of the base image (trusted) in a run of its own."""
    output = client.containers.run(
        base, ["python3", "-I", "-c", SITE_PACKAGES_CODE], network_mode="none", remove=True,
        user=f"{BUILD_UID}:{BUILD_UID}", cap_drop=["ALL"], security_opt=["no-new-privileges:true"],
    )  # fmt: skip
    lines = output.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else ""
