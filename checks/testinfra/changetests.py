"""Which changed files are the change's own tests: where base's runner looks for tests, and no code uses.

``files.is_test_path`` is a rule on names, and a change chooses its names: a
PR that moves its implementation into ``pkg/tests.py`` and re-exports it from
``pkg/parse.py`` would hide that code from the judge, from the changed lines
and from the mutants. So a changed file is the change's test code only when
both hold:

- base's runner would look for tests there: pytest collects its name
  (``test_*.py``, ``*_test.py``) or it is a ``conftest.py``; or it is a test
  path (``is_test_path``) and base already has it, or it lies in a test
  folder (``tests/``, ``test/``, a root ``testing/``) that base already has or
  that holds a module pytest collects in this change (a new package's own
  ``tests/``);
- no changed module that is code imports it (``import``, ``from ... import``
  with relative ones resolved, ``importlib.import_module`` and ``__import__``
  with a literal name), nor any file imported that way, step by step.

Every other changed file is code: the judge is shown it, its lines count as
changed lines, its mutants run. A file that is not Python keeps the path
rule (``test_data.json`` holds expected values; it is never run). Imports
are matched by name suffix (``shop.tests`` is ``src/shop/tests.py``), which
can only turn more files into code. A module that does not parse, or is
past ``MAX_SOURCE_BYTES``, is read for no imports: Python cannot import it
either, and the shape layer asks a maintainer about a file it could not read.
"""

from __future__ import annotations

import ast
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from checks.testinfra.files import ROOT_TEST_FOLDERS, TEST_FOLDERS, is_test_path, pytest_collects
from checks.workspace import Workspace
from sandbox.pyparse import parse_python

# A head module larger than this is not parsed for its imports (the AST of a hostile file can be huge).
MAX_SOURCE_BYTES = 2 * 1024 * 1024
_IMPORT_CALLS = frozenset({"import_module", "__import__"})

Name = tuple[str, ...]


def change_tests(ws: Workspace) -> frozenset[str]:
    """Return the head paths of the changed files that are the change's tests (see the module)."""
    collected = {folder for f in ws.changed if pytest_collects(f.path) for folder in _test_folders(f.path)}
    tests = {f.path for f in ws.changed if _test_location(f.path, ws.base_dir, collected)}
    live = {f.path for f in ws.changed if f.status != "deleted"}
    todo = sorted(p for p in live - tests if p.endswith(".py"))
    while todo and tests:
        names = imports(ws.head_dir, todo.pop())
        used = sorted(t for t in tests & live if t.endswith(".py") and _imported(t, names))
        tests.difference_update(used)
        todo += used  # what the code imports is code, and so is what that imports
    return frozenset(tests)


def _test_location(path: str, base: Path, collected: set[str]) -> bool:
    """Whether base's runner would look for tests at ``path``."""
    if not is_test_path(path):
        return False
    name = PurePosixPath(path).name
    if not path.endswith(".py") or name == "conftest.py" or pytest_collects(path):
        return True
    if _is_file(base, path):
        return True  # base's own test module or helper, edited
    return any(_is_dir(base, folder) or folder in collected for folder in _test_folders(path))


def _test_folders(path: str) -> Iterator[str]:
    """Yield each test folder on ``path`` (``pkg/tests``, a root ``testing``), as a relative path."""
    parts = PurePosixPath(path).parts[:-1]
    for i, part in enumerate(parts):
        if part in TEST_FOLDERS or (i == 0 and part in ROOT_TEST_FOLDERS):
            yield "/".join(parts[: i + 1])


def _is_file(base: Path, rel: str) -> bool:
    return (base / rel).is_file() and not (base / rel).is_symlink()


def _is_dir(base: Path, rel: str) -> bool:
    return (base / rel).is_dir() and not (base / rel).is_symlink()


def module_parts(path: str) -> Name:
    """Return the dotted name parts a module file has when its tree root is on ``sys.path``."""
    parts = PurePosixPath(path).with_suffix("").parts
    return parts[:-1] if parts and parts[-1] == "__init__" else parts


def _imported(path: str, names: set[Name]) -> bool:
    """Whether any of ``names`` is ``path``'s module under some package root (a suffix of its parts)."""
    parts = module_parts(path)
    return any(name and parts[-len(name) :] == name for name in names)


def imports(head: Path, path: str) -> set[Name]:
    """Return every module name the head module at ``path`` imports, with each parent package."""
    source = _read(head, path)
    if source is None:
        return set()
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    package = PurePosixPath(path).parts[:-1]
    found: set[Name] = set()
    for node in ast.walk(tree):
        found.update(_names(node, package))
    # Importing ``a.b.c`` imports ``a`` and ``a.b`` too.
    return {name[:i] for name in found for i in range(1, len(name) + 1)}


def _names(node: ast.AST, package: Name) -> list[Name]:
    if isinstance(node, ast.Import):
        return [_dotted(alias.name) for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level > len(package) + 1:
            return []  # climbs out of the tree: Python cannot import it from here
        prefix = package[: len(package) - node.level + 1] if node.level else ()
        module = prefix + _dotted(node.module or "")
        return [module, *((*module, a.name) for a in node.names if a.name != "*")]
    if isinstance(node, ast.Call) and node.args and _import_call(node.func):
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return [_dotted(first.value)]  # a relative name ("..tests") is matched as a suffix
    return []


def _import_call(func: ast.expr) -> bool:
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name in _IMPORT_CALLS


def _dotted(name: str) -> Name:
    return tuple(part for part in name.split(".") if part)


def _read(head: Path, rel: str) -> bytes | None:
    """Return the bytes of a regular file inside ``head`` (the change's tree: no link is followed)."""
    path = head / rel
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
            return None
        if not path.resolve().is_relative_to(head.resolve()):
            return None  # a folder on the way is a link out of the tree
        return path.read_bytes()
    except (OSError, RuntimeError):
        return None
