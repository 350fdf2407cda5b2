"""Python module names of files in a tree, and which changed files the loads gate imports.

A file's module name is found the way mypy and Python's own packages do: walk up
while the folder holds an ``__init__.py``; the first folder without one is the
``sys.path`` root. ``src/pkg/mod.py`` (no ``src/__init__.py``) is ``pkg.mod``
with root ``src``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from checks.testinfra.files import is_test_module

# Files that do something when run, not modules to import: setup scripts, task
# runners, pytest's conftest (only pytest knows how to import it), __main__.
SCRIPT_NAMES = frozenset(
    {"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "manage.py", "__main__.py", "dodo.py"}
)


class Tree(Protocol):
    """What naming needs to know about a tree: whether a relative path is a regular file."""

    def is_file(self, rel: str) -> bool: ...


class DirTree:
    """A tree on the host's disk."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def is_file(self, rel: str) -> bool:
        return (self.root / rel).is_file()


@dataclass(frozen=True)
class ModuleName:
    """A module and the ``sys.path`` entry (relative to the tree root, "" for the root) it imports from."""

    root: str
    name: str


def module_name(tree: Tree, path: str) -> ModuleName | None:
    """Return the module ``path`` is when imported, or None if its name is not a Python identifier."""
    parts = list(PurePosixPath(path).parts)
    if not parts or not parts[-1].endswith(".py"):
        return None
    stem = parts[-1][:-3]
    names = [] if stem == "__init__" else [stem]
    folders = parts[:-1]
    while folders and tree.is_file("/".join([*folders, "__init__.py"])):
        names.insert(0, folders.pop())
    if not names or not all(n.isidentifier() for n in names):
        return None
    return ModuleName("/".join(folders), ".".join(names))


def importable(tree: Tree, path: str) -> ModuleName | None:
    """Return the module the loads gate imports for ``path``, or None when it only compiles it.

    Imported: modules of regular packages (their folder has ``__init__.py``),
    and top-level modules at the tree root or directly in ``src/``. Compiled
    only: tests (pytest imports them, with its own rootdir and conftest
    rules; the behaviour layer runs them), scripts (``setup.py``,
    ``conftest.py``, ``__main__.py``, ...) and files in folders that are not
    packages (``scripts/``, ``examples/``, ``docs/``), which are usually run,
    not imported, and may act at import time.
    """
    if is_test_module(path) or PurePosixPath(path).name in SCRIPT_NAMES:
        return None
    found = module_name(tree, path)
    if found is None:
        return None
    in_package = "." in found.name or PurePosixPath(path).name == "__init__.py"
    if in_package or found.root in ("", "src"):
        return found
    return None
