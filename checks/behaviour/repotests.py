"""The repository's own tests as suites: base's (trusted, run against head) and those the change adds.

Which files are tests is the one rule of ``checks.testinfra.files``
(``is_test_path``): test modules, ``conftest.py`` files, and what lies in a
test folder (helpers, data). ``stage_tests`` copies them out of a tree into a
suite folder, keeping their paths (a test id is then the repository's own,
``tests/test_x.py::test_y``), with the tree's root pytest configuration
(``pytest.ini``, ``pyproject.toml``, ``tox.ini``, ``setup.cfg``: only their
pytest settings are read, ``checks/behaviour/pytestconfig.py``). Regular
files only: a symlink is never followed, and the copy is bounded.

From **base** (the maintainers' tree) that folder is the *repository* suite:
the change's edits to its tests, its conftest.py and its pytest settings
never run there. ``rewritten`` tells which of base's tests the change edited
or removed: one of those whose base version fails on head asks a maintainer
(the change may mean to change that behaviour); any other that fails on head
is a regression.

From **head** (the change's) it holds the tests the change adds (``added``):
run in-process, shown, counted for nothing.
"""

from __future__ import annotations

import ast
import copy
import os
import shutil
from collections import defaultdict, deque
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from checks.behaviour.errors import SuiteError
from checks.testinfra.files import is_test_path
from sandbox.pyparse import parse_python

# The repository's pytest configuration files at its root (pytest looks for them in this order).
CONFIG_FILES = ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
MAX_FILES = 20_000
MAX_BYTES = 256 * 1024 * 1024
# A test module larger than this is not read for its definitions (rewritten: "not readable").
MAX_SOURCE_BYTES = 2 * 1024 * 1024
_SKIPPED_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".tox", ".nox", "node_modules", ".venv"})


@dataclass(frozen=True)
class Staged:
    """A suite folder made from a tree's tests: where, and how many test modules it holds."""

    root: Path
    files: int
    modules: int


def test_files(tree: Path) -> Iterator[str]:
    """Yield the tree's test paths (relative, POSIX), regular files only, in a stable order."""
    for dirpath, dirnames, filenames in os.walk(tree, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
        rel_dir = Path(dirpath).relative_to(tree).as_posix()
        for name in sorted(filenames):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if (
                is_test_path(rel)
                and (Path(dirpath) / name).is_file()
                and not (Path(dirpath) / name).is_symlink()
            ):
                yield rel


def has_tests(tree: Path) -> bool:
    """Whether ``tree`` holds a Python test module (by the one rule)."""
    return any(rel.endswith(".py") and PurePosixPath(rel).name != "conftest.py" for rel in test_files(tree))


def stage_tests(tree: Path, dest: Path) -> Staged:
    """Copy ``tree``'s tests and root pytest configuration to ``dest``; raise SuiteError past the bounds."""
    dest.mkdir(parents=True)
    files = size = modules = 0
    for rel in [*test_files(tree), *(c for c in CONFIG_FILES if _regular(tree / c))]:
        source = tree / rel
        size += source.stat().st_size
        files += 1
        if files > MAX_FILES or size > MAX_BYTES:
            raise SuiteError(
                f"the repository's tests are too large to stage (more than {MAX_FILES} files or "
                f"{MAX_BYTES // 2**20} MiB)"
            )
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target, follow_symlinks=False)
        modules += rel.endswith(".py")
    return Staged(dest, files, modules)


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def rewritten(ids: Collection[str], base: Path, head: Path) -> dict[str, str]:
    """The ids of base's tests the change edited or removed, each with where its edit is at head.

    A test is its definition: the function (or method) with its decorators, as Python binds it
    (the later of two definitions of a name), compared as code - a comment, a blank line or
    another layout is no edit; ``file:line`` at head when it differs there, ``deleted`` when head
    has no such definition (or no such file). A head file that cannot be read (a syntax error,
    larger than ``MAX_SOURCE_BYTES``) shows no rewrite: its failing tests stay regressions.
    """
    by_file: dict[str, list[str]] = defaultdict(list)
    for test_id in ids:
        by_file[test_id.partition("::")[0]].append(test_id)
    found: dict[str, str] = {}
    for rel, in_file in by_file.items():
        before = _definitions(base / rel)
        present = _inside(head, rel)
        after = _definitions(head / rel) if present else {}
        for test_id in in_file:
            qualname = _qualname(test_id)
            if qualname is None or before is None or qualname not in before:
                continue  # not a definition base's file holds (generated, inherited): not the change's
            if after is None:
                continue  # nothing a maintainer could be shown: the failure is a regression
            if qualname not in after:
                found[test_id] = "deleted"
            elif after[qualname][1] != before[qualname][1]:
                found[test_id] = f"{rel}:{after[qualname][0]}"
    return found


def added(base_functions: Collection[str], head_functions: Collection[str]) -> tuple[str, ...]:
    """The test functions head holds and base does not (``file::Class::test``), in head's order."""
    known = set(base_functions)
    return tuple(f for f in dict.fromkeys(head_functions) if f not in known)


def _inside(tree: Path, rel: str) -> bool:
    """A regular file at ``rel`` in ``tree`` reached through no symlink (head is the change's)."""
    here = tree
    for part in PurePosixPath(rel).parts:
        if part in ("..", "") or (here := here / part).is_symlink():
            return False
    return here.is_file()


def _qualname(test_id: str) -> tuple[str, ...] | None:
    # The parameter id first: it may hold "::" itself (``test_x[a::b]``).
    parts = test_id.partition("[")[0].split("::")[1:]
    return tuple(parts) if parts else None


def _definitions(path: Path) -> dict[tuple[str, ...], tuple[int, str]] | None:
    """Each function and class of ``path`` by qualified name: first line and code (None: unreadable).

    The code is the definition's syntax tree without positions: comments and layout are not in it.
    A name defined twice in one scope is the later definition, as Python binds it.
    """
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        tree = parse_python(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: dict[tuple[str, ...], tuple[int, str]] = {}
    queue: deque[tuple[tuple[str, ...], list[ast.stmt]]] = deque([((), tree.body)])
    while queue:
        prefix, body = queue.popleft()
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = (*prefix, node.name)
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                try:
                    found[name] = (first, ast.dump(_as_it_runs(node)))
                except RecursionError:
                    return None
                if isinstance(node, ast.ClassDef):
                    queue.append((name, node.body))
    return found


def _as_it_runs(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> ast.AST:
    """``node`` without its docstring: a test's docstring is no part of what it asserts."""
    body = node.body
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        bare = copy.copy(node)
        bare.body = body[1:]
        return bare
    return node
