"""Test infrastructure and gate configuration: the files a PR must not change to pass its own tests.

The behaviour layer restores every path `infra_changes` returns to its base
version before it runs a suite, and the hygiene gate reports each one. Both
depend on this list being exact, so it is computed by walking both trees
rather than from the (capped) list of changed files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from checks.policy import POLICY_PATH
from checks.testinfra.config import ConfigKind, config_changes, has_sections, plugin_changes
from checks.workspace import Workspace
from sandbox.trees import walk

InfraKind = Literal["policy", "ci", "conftest", "nox", "startup-hook"] | ConfigKind
# What happened to the path between base and head; tells the restorer what to undo:
# added -> remove it from head, modified or deleted -> copy it back from base.
InfraStatus = Literal["added", "modified", "deleted"]

# Files pytest reads its configuration from, unconditionally.
_PYTEST_FILES = frozenset({"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml"})
# tox's own files (tox.ini configures pytest too).
_TOX_FILES = frozenset({"tox.ini", "tox.toml"})
# Interpreter start-up hooks: they run code in every Python process, tests included.
_STARTUP_FILES = frozenset({"sitecustomize.py", "usercustomize.py"})
# CI systems other than GitHub Actions, at the repository root.
_OTHER_CI = frozenset({".gitlab-ci.yml", ".travis.yml", "azure-pipelines.yml", "Jenkinsfile", ".circleci"})


@dataclass(frozen=True)
class InfraChange:
    """One test-infrastructure or gate-configuration path that differs between base and head."""

    path: str
    kind: InfraKind
    reason: str
    status: InfraStatus


def classify(path: str) -> tuple[InfraKind, str] | None:
    """Return the kind of infrastructure ``path`` is by its name alone, or None.

    setup.cfg, pyproject.toml, hatch.toml, setup.py and Makefiles are not
    classified here: they count only when their test parts differ
    (`checks.testinfra.config`).
    """
    p = PurePosixPath(path)
    name = p.name
    if path == POLICY_PATH:
        return "policy", "the gate's own policy file; a PR cannot change its gate"
    if p.parts[0] == ".github":
        return "ci", "CI configuration under .github/"
    if p.parts[0] in _OTHER_CI:
        return "ci", f"CI configuration ({p.parts[0]})"
    if name == "conftest.py":
        return "conftest", "conftest.py runs inside pytest and can change any test's outcome"
    if name in _PYTEST_FILES:
        return "pytest-config", f"{name} configures pytest"
    if name in _TOX_FILES:
        also = " and configures pytest" if name == "tox.ini" else ""
        return "tox", f"{name} defines the tox test environments{also}"
    if name == "noxfile.py":
        return "nox", "noxfile.py defines how the test sessions run"
    if name == ".coveragerc":
        return "coverage-config", ".coveragerc configures coverage measurement"
    if name in _STARTUP_FILES:
        return "startup-hook", f"{name} runs at interpreter start-up, before any test"
    if name.endswith(".pth"):
        return "startup-hook", ".pth files can run code at interpreter start-up"
    return None


def infra_changes(ws: Workspace) -> list[InfraChange]:
    """List every test-infrastructure or gate-configuration path that differs between base and head.

    Renames appear as the old path deleted and the new path added. The
    result is sorted by path and does not depend on the changed-file cap.
    """
    base = _candidates(ws.base_dir)
    head = _candidates(ws.head_dir)
    out: list[InfraChange] = []
    for path in sorted(base | head):
        base_print = _fingerprint(ws.base_dir, path) if path in base else None
        head_print = _fingerprint(ws.head_dir, path) if path in head else None
        if base_print == head_print:
            continue
        status: InfraStatus = (
            "added" if base_print is None else "deleted" if head_print is None else "modified"
        )
        named = classify(path)
        # Plugin loads come first: the change is named by its most telling part.
        parts = _config_changes(ws, path, named is not None) + ([named] if named else [])
        if parts:
            out.append(InfraChange(path, parts[0][0], "; ".join(r for _, r in parts), status))
    return out


def tree_entries(root: Path) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Yield (relative posix path, entry) for every non-directory under ``root``, links not followed.

    Iterative and bounded (sandbox.trees.walk): a hostile tree nested a
    thousand directories deep cannot exhaust the recursion limit, and one
    beyond the bounds raises TreeBoundExceeded naming the path. A symlink to
    a directory is yielded like a file: what its name says still counts.
    """
    for rel, entry in walk(root):
        if not entry.is_dir(follow_symlinks=False):
            yield rel, entry


def _candidates(root: Path) -> set[str]:
    """Relative paths under ``root`` whose names make them possible infrastructure."""
    found: set[str] = set()
    if root.is_dir():
        for rel, _ in tree_entries(root):
            if classify(rel) is not None or has_sections(PurePosixPath(rel).name):
                found.add(rel)
    return found


def _fingerprint(root: Path, rel: str) -> tuple[str, str, str]:
    """Identify a file's effective content: its type, link target and resolved bytes' hash."""
    path = root / rel
    target = os.readlink(path) if path.is_symlink() else ""
    digest = ""
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        resolved = path
    # A link is judged by what it points at too: an unchanged link to changed code changed.
    if resolved.is_relative_to(root.resolve()) and resolved.is_file():
        digest = hashlib.sha256(resolved.read_bytes()).hexdigest()
    kind = "link" if target else "file" if path.is_file() else "other"
    return kind, target, digest


def _config_changes(ws: Workspace, path: str, named: bool) -> list[tuple[InfraKind, str]]:
    """What changed in the test parts of ``path``; for a file counted by name, only its plugins."""
    name = PurePosixPath(path).name
    base, head = _read(ws.base_dir / path), _read(ws.head_dir / path)
    if named:
        plugins = plugin_changes(name, base, head)
        return [] if plugins is None else [("pytest-plugin", plugins)]
    return list(config_changes(name, base, head))


def _read(path: Path) -> bytes | None:
    if not path.is_file():
        return None
    return path.read_bytes()
