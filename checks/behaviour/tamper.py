"""Undo a change's edits to test infrastructure before its code meets a suite.

Every path `checks.testinfra.guarded.infra_changes` reports (conftest.py anywhere,
pytest.ini, tox.ini / tox.toml, setup.cfg / pyproject.toml test and tox
sections, hatch.toml, Makefile test targets, setup.py pytest11 entry points,
sitecustomize.py, usercustomize.py, *.pth, CI and the gate's policy; the
full list is that function's) gets its base version back in a copy of the
head tree; a path the change added is removed. The hygiene gate reports the
same paths to a maintainer.

This is one layer of several: the runs also ignore the repository's pytest
configuration and conftest files altogether (see ``plan.py``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path, PurePosixPath

from checks.testinfra.guarded import InfraChange, infra_changes
from checks.workspace import Workspace
from sandbox.host import run_process
from sandbox.trees import remove


def restore_infra(ws: Workspace, dest: Path) -> tuple[Path, tuple[InfraChange, ...]]:
    """Return the head tree to run and the changes undone in it.

    With nothing to undo that is ``ws.head_dir`` itself (the sandbox copies
    it, so it is never modified); otherwise a copy at ``dest``.
    """
    changes = tuple(infra_changes(ws))
    if not changes:
        return ws.head_dir, ()
    dest.mkdir(parents=True)
    # cp, not shutil.copytree: a hostile tree may be nested deeper than Python's recursion limit.
    copy = ("cp", "-a", "--", f"{ws.head_dir}/.", str(dest))
    run_process(copy, timeout=600, check=True, what="copy the head tree")
    for change in changes:
        restore_path(ws.base_dir, dest, change.path)
    return dest, changes


def restore_path(base: Path, tree: Path, rel: str) -> None:
    """Make ``tree/rel`` what ``base/rel`` is: a copy of it, or nothing when base has none."""
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise ValueError(f"not a relative path inside the tree: {rel!r}")
    source = base / rel
    wanted = source.is_symlink() or source.exists()
    parent = _real_parent(tree, parts[:-1], create=wanted)
    if parent is None:
        return  # an ancestor is not a real directory in the tree: nothing lives at rel
    target = parent / parts[-1]
    _remove(target)
    if not wanted:
        return
    if source.is_symlink():
        os.symlink(os.readlink(source), target)
    elif source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target)


def _real_parent(tree: Path, parents: tuple[str, ...], *, create: bool) -> Path | None:
    """Walk to the parent directory without following links the change may have planted.

    With ``create`` a link or file in the way is replaced by a real directory
    (so restoring never writes through a link out of the tree); without it,
    such an ancestor means the path does not exist in the tree.
    """
    current = tree
    for name in parents:
        current = current / name
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            if not create:
                return None
            _remove(current)
        if not current.exists():
            if not create:
                return None
            current.mkdir()
    return current


def _remove(path: Path) -> None:
    # The PR may have planted a deep tree where a conftest.py belongs: never rmtree (it recurses).
    remove(path)
