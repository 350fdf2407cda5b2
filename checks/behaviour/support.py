"""Test support in the tree: base's modules that run in the grader, with the tests (docs/behaviour.md).

A repository often ships its test infrastructure inside the package:
Python-Markdown's ``markdown/test_tools.py`` holds the ``unittest.TestCase``
every one of its test classes derives from; Django's ``django/test/``, a
library's ``pkg/testing.py`` with its own TestCase. Served as the subject's
like the rest of the tree, such a class is a proxy in the grader: a test
class deriving from it is not a ``unittest.TestCase`` there, so pytest
cannot collect it, and the suite's tests leave the isolated runs.

The owner of such a module is the tests, not the change. A module of the
base tree is **test support** when a suite imports it (directly, or
through another support module) and either

- its path is a test path (``is_test_path``: ``test_tools.py``, anything
  under a ``tests/`` folder), which the change cannot edit anyway: head
  runs carry base's copy of every test path (``tamper.restore_infra``); or
- it defines a ``unittest.TestCase`` subclass: only a real TestCase in the
  grader can be collected as one.

Base's copy of each is staged for the grader (base is trusted, like the
suite) and imported there in place of the subject's proxy; everything it
imports from the tree is still the subject's. A change that edits such a
module outside the test paths is named for a maintainer: its edits are not
what the tests run.

Pure: files in, names out; the layer stages and mounts.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from checks.behaviour.refactor import module_name
from checks.testinfra.files import is_test_path
from checks.workspace import ChangedFile
from sandbox.pyparse import parse_python
from sandbox.trees import walk

# A module larger than this is not read for its imports or classes (nothing we look for is that big).
MAX_SOURCE_BYTES = 2 << 20
# The classes of unittest a test class may derive from to be collected as a TestCase, and the modules
# that define them (collection.py reads a suite's classes by the same two).
TEST_CASES = frozenset({"TestCase", "IsolatedAsyncioTestCase"})
UNITTEST_MODULES = frozenset({"unittest", "unittest.case", "unittest.async_case"})


def tree_modules(base: Path, names: Collection[str]) -> dict[str, str]:
    """Return every module of base's packages ``names`` (dotted name -> path in base): root or ``src/``."""
    found: dict[str, str] = {}
    for prefix in ("", "src/"):
        root = base / prefix if prefix else base
        for name in sorted(names):
            single = root / f"{name}.py"
            if single.is_file() and not single.is_symlink():
                found.setdefault(name, f"{prefix}{name}.py")
            package = root / name
            if not package.is_dir() or package.is_symlink():
                continue
            for rel, entry in walk(package):
                path = f"{prefix}{name}/{rel}"
                dotted = module_name(path) if entry.is_file(follow_symlinks=False) else None
                if dotted is not None:
                    found.setdefault(dotted, path)
    return found


def _read(path: Path) -> bytes | None:
    """A module's source, None past MAX_SOURCE_BYTES or unreadable (nothing we look for is that big)."""
    try:
        return path.read_bytes() if path.stat().st_size <= MAX_SOURCE_BYTES else None
    except OSError:
        return None


def _parse(source: bytes | None, name: str) -> ast.Module | None:
    try:
        return parse_python(source, name) if source is not None else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def defines_test_case(tree: ast.Module) -> bool:
    """Whether a module defines, at its top level, a class deriving from unittest's TestCase."""
    unittest_names: set[str] = set()  # names bound to the unittest module
    cases: set[str] = set()  # names bound to a TestCase class (unittest's, or one defined here)
    for node in tree.body:
        if isinstance(node, ast.Import):
            unittest_names |= {a.asname or a.name for a in node.names if a.name == "unittest"}
        elif isinstance(node, ast.ImportFrom) and node.module in UNITTEST_MODULES and not node.level:
            cases |= {a.asname or a.name for a in node.names if a.name in TEST_CASES}
        elif isinstance(node, ast.ClassDef):
            for b in node.bases:
                named = isinstance(b, ast.Name) and b.id in cases
                dotted = (isinstance(b, ast.Attribute) and b.attr in TEST_CASES
                          and isinstance(b.value, ast.Name) and b.value.id in unittest_names)  # fmt: skip
                if named or dotted:
                    cases.add(node.name)
                    break
    return bool(cases - TEST_CASES)


def imported(tree: ast.Module, package: str = "") -> Iterator[str]:
    """Yield every dotted name an import in ``tree`` may load (its parents too): anywhere in the module.

    ``package`` resolves relative imports (a module of the suite has none we follow: "").
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _parents(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                if not parts or node.level - 1 > len(parts) - 1:
                    continue
                anchor = ".".join(parts[: len(parts) - (node.level - 1)])
                module = f"{anchor}.{node.module}" if node.module else anchor
            elif node.module:
                module = node.module
            else:
                continue
            yield from _parents(module)
            for alias in node.names:
                if alias.name != "*":
                    yield f"{module}.{alias.name}"  # `from pkg import module`: a module, maybe


def _parents(dotted: str) -> Iterator[str]:
    parts = dotted.split(".")
    for i in range(1, len(parts) + 1):
        yield ".".join(parts[:i])


@dataclass(frozen=True)
class SupportModule:
    """One of base's test-support modules: its dotted name, its path in base and its source."""

    name: str
    path: str
    source: bytes

    @property
    def package(self) -> bool:
        return self.path.endswith("/__init__.py")

    @property
    def staged(self) -> str:
        """Where the grader's copy lives under its support folder: by its dotted name."""
        return self.name.replace(".", "/") + ("/__init__.py" if self.package else ".py")

    def parsed(self) -> ast.Module | None:
        return _parse(self.source, self.path)


def find_support(base: Path, suite_root: Path, names: Collection[str]) -> tuple[SupportModule, ...]:
    """Return base's test-support modules a suite uses, by name; see the module.

    ``names``: the top-level names the grader would serve from the subject (the tree's, less the
    suite's own and the reserved ones).
    """
    modules = tree_modules(base, names)
    # A test path's source is read when the suite uses it; a TestCase module's now (None: not read yet).
    candidates: dict[str, bytes | None] = {}
    parsed: dict[str, ast.Module] = {}
    for dotted, rel in modules.items():
        if is_test_path(rel):
            candidates[dotted] = None
            continue
        source = _read(base / rel)
        # Cheap first: a module that never names a TestCase cannot define one.
        if source is not None and b"TestCase" in source:
            tree = _parse(source, rel)
            if tree is not None and defines_test_case(tree):
                candidates[dotted], parsed[dotted] = source, tree
    if not candidates:
        return ()
    wanted: set[str] = set()
    for rel, entry in walk(suite_root):
        if rel.endswith(".py") and entry.is_file(follow_symlinks=False):
            tree = _parse(_read(suite_root / rel), rel)
            if tree is not None:
                wanted.update(imported(tree))
    found: dict[str, SupportModule] = {}
    todo = sorted(wanted & candidates.keys())
    while todo:
        dotted = todo.pop()
        if dotted in found:
            continue
        source = candidates[dotted]
        try:
            module = SupportModule(dotted, modules[dotted], source or (base / modules[dotted]).read_bytes())
        except OSError:
            continue
        found[dotted] = module
        # What it imports of the candidates is support too (a module past MAX_SOURCE_BYTES imports none).
        small = len(module.source) <= MAX_SOURCE_BYTES
        tree = parsed.get(dotted) or (_parse(module.source, module.path) if small else None)
        if tree is not None:
            package = dotted if module.package else dotted.rpartition(".")[0]
            todo += sorted(set(imported(tree, package)) & candidates.keys() - found.keys())
    return tuple(found[d] for d in sorted(found))


def stage_support(found: Iterable[SupportModule], dest: Path) -> Path | None:
    """Write base's support modules under ``dest`` (``SupportModule.staged``); None when there are none."""
    wrote = False
    for module in found:
        (dest / module.staged).parent.mkdir(parents=True, exist_ok=True)
        (dest / module.staged).write_bytes(module.source)
        wrote = True
    return dest if wrote else None


def edited_support(found: Iterable[SupportModule], changed: Iterable[ChangedFile]) -> list[str]:
    """Name each support module the change edits outside the test paths (head runs keep those as head's)."""
    # By module name, not path: the grader imports base's copy by its name, so a change that moves the
    # module (a package of it, under src/) or adds another file of that name is untested all the same.
    names = {m.name for m in found}
    reasons = []
    for f in changed:
        dotted = next((d for d in map(module_name, filter(None, (f.path, f.old_path))) if d in names), None)
        if dotted is not None and not is_test_path(f.path):
            reasons.append(
                f"the change edits {f.path}, test support the suite's classes derive from: the tests "
                f"run base's {dotted}, so the change's edits to it are not tested"
            )
    return reasons
