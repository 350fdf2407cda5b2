"""The suites: server-side tests per repository, never read from the repository under test.

They live in the test store (``PATCHGATE_TEST_STORE``), laid out as::

    <store>/<owner>/<repo>/hidden/      pytest files and *cases.yml; failing ids may be shown
    <store>/<owner>/<repo>/held-out/    the same kinds; only counts ever leave its runs

A suite is read statically here, before anything runs: every ``.py`` file
must parse, case files must validate, and the test functions found in the
source are the trusted list of what the suite contains. A change cannot
shrink that list by breaking collection: a test it makes disappear counts
as failed.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from checks.behaviour.cases import CaseSpec, is_case_file, load_case_file
from checks.behaviour.errors import SuiteError
from checks.report import SuiteKind
from checks.testfiles import pytest_collects

SUITE_CONFIG = "patchgate-suite.yml"
HIDDEN_DIR = "hidden"
HELD_OUT_DIR = "held-out"
SUITE_NAMES: dict[SuiteKind, str] = {"hidden": "hidden", "held_out": "held-out"}
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Suites:
    """Server-side test suites for one repository; never read from the repository itself."""

    hidden: Path | None = None
    held_out: Path | None = None
    # The suites' commit when they come from a repository: the report records it for reproduction.
    commit: str | None = None
    # Why the suites could not be read (e.g. the App cannot read the suites repository):
    # behaviour is then an error (neutral), never a pass and never the PR's failure.
    error: str | None = None


def suites_for(store: Path, repository: str) -> Suites:
    """Return the suites of ``owner/name`` in the test store; a missing directory means no suite.

    Raises ValueError for a name that is not one GitHub gives a repository
    (``.``, ``..``, a third segment, any other character): nothing in it leaves the store.
    """
    owner, _, name = repository.partition("/")
    for part in (owner, name):
        if not _NAME.match(part) or part in (".", ".."):
            raise ValueError(f"not a repository name: {repository!r}")
    root = store / owner / name
    hidden, held_out = root / HIDDEN_DIR, root / HELD_OUT_DIR
    return Suites(
        hidden=hidden.resolve() if hidden.is_dir() else None,
        held_out=held_out.resolve() if held_out.is_dir() else None,
    )


@dataclass(frozen=True)
class Suite:
    """One suite directory, read statically: its files, test functions and cases."""

    kind: SuiteKind
    root: Path
    pytest_files: tuple[str, ...]
    functions: tuple[str, ...]
    cases: tuple[CaseSpec, ...]
    # The suite's own opt-in (SUITE_CONFIG): pytest and the change's code in one process, forgeable.
    in_process: bool = False
    # Top-level names the suite itself provides (its test modules, conftest and helpers where pytest
    # puts them on sys.path): the suite owns them, whatever the tree holds (see own_names).
    names: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return SUITE_NAMES[self.kind]

    @property
    def case_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cases)


def load_suite(root: Path, kind: SuiteKind) -> Suite:
    """Read a suite directory; raise SuiteError (naming the file) when it cannot run as written."""
    if not root.is_dir():
        raise SuiteError(f"{SUITE_NAMES[kind]} suite {root} is not a directory")
    pytest_files: list[str] = []
    functions: list[str] = []
    cases: list[CaseSpec] = []
    for rel in _files(root):
        name = rel.rsplit("/", 1)[-1]
        if name.endswith(".py"):
            tree = _parse(root / rel, rel)
            if pytest_collects(name):
                pytest_files.append(rel)
                functions += static_tests(tree, rel)
        elif is_case_file(name):
            cases += load_case_file(root / rel, rel)
    if not functions and not cases:
        raise SuiteError(
            f"{SUITE_NAMES[kind]} suite has no tests: expected test_*.py / *_test.py files "
            "with test functions, or *cases.yml files"
        )
    _check_module_names(root, pytest_files)
    in_process = _isolation(root, kind) == "in-process"
    names = own_names(root, [f for f in _files(root) if f.endswith(".py")])
    return Suite(kind, root, tuple(pytest_files), tuple(functions), tuple(cases), in_process, names)


class SuiteConfig(BaseModel):
    """``patchgate-suite.yml`` in a suite folder: how the suite must run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # subject: the tests run apart from the change's code (the default, and the only unforgeable way).
    # in-process: one process for both, for suites the isolation cannot carry; labelled as forgeable.
    isolation: Literal["subject", "in-process"] = "subject"


def _isolation(root: Path, kind: SuiteKind) -> str:
    path = root / SUITE_CONFIG
    if not path.is_file():
        return "subject"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return SuiteConfig.model_validate(data).isolation
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValidationError) as exc:
        raise SuiteError(f"{SUITE_NAMES[kind]} suite: {SUITE_CONFIG} is not valid: {exc}") from None


def _files(root: Path) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        for name in sorted(filenames):
            out.append(name if rel_dir == "." else f"{rel_dir}/{name}")
    return out


def _parse(path: Path, rel: str) -> ast.Module:
    try:
        return ast.parse(path.read_bytes(), filename=rel)
    except SyntaxError as exc:
        raise SuiteError(f"{rel}: line {exc.lineno}: {exc.msg} (fix the suite file)") from None
    except ValueError as exc:  # null bytes
        raise SuiteError(f"{rel}: {exc}") from None


def static_tests(tree: ast.Module, rel: str) -> list[str]:
    """List ``file::test`` and ``file::Class::test`` ids in a test module, the way pytest names them.

    Methods a class inherits from another class of the same file count too;
    a name defined twice in one scope is an error (the first would never run).
    """
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    return _scope(tree.body, rel, classes)


def _scope(body: list[ast.stmt], prefix: str, classes: dict[str, ast.ClassDef]) -> list[str]:
    out: list[str] = []
    defined: dict[str, int] = {}
    for node in body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if node.name in defined and (node.name.startswith("test") or node.name.startswith("Test")):
            where = prefix.partition("::")[0]
            raise SuiteError(
                f"{where}: {node.name!r} is defined twice (lines {defined[node.name]} "
                f"and {node.lineno}); the first would never run"
            )
        defined[node.name] = node.lineno
        if isinstance(node, ast.ClassDef):
            if node.name.startswith("Test") and not _uncollectable(node):
                out += _class_tests(node, f"{prefix}::{node.name}", classes, set())
        elif node.name.startswith("test") and not _is_fixture(node):
            out.append(f"{prefix}::{node.name}")
    return out


def _is_fixture(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Return True for ``@pytest.fixture``-style functions: pytest never collects those as tests."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("fixture", "yield_fixture"):
            return True
    return False


def _class_tests(
    node: ast.ClassDef, prefix: str, classes: dict[str, ast.ClassDef], seen: set[str]
) -> list[str]:
    own = _scope(node.body, prefix, classes)
    names = {t.rsplit("::", 1)[-1] for t in own}
    seen = seen | {node.name}
    for base in node.bases:
        parent = classes.get(base.id) if isinstance(base, ast.Name) else None
        if parent is None or parent.name in seen:
            continue
        for inherited in _class_tests(parent, prefix, classes, seen):
            if inherited.rsplit("::", 1)[-1] not in names:
                own.append(inherited)
                names.add(inherited.rsplit("::", 1)[-1])
    return own


def _uncollectable(node: ast.ClassDef) -> bool:
    """Return True for a class pytest will not collect: a constructor of its own, or ``__test__ = False``."""
    for n in node.body:
        if isinstance(n, ast.FunctionDef) and n.name in ("__init__", "__new__"):
            return True
        if (
            isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__test__" for t in n.targets)
            and isinstance(n.value, ast.Constant)
            and not n.value.value
        ):
            return True
    return False


def own_names(root: Path, python_files: list[str]) -> tuple[str, ...]:
    """Return the top-level names importable from the folders pytest puts on ``sys.path`` for the suite.

    pytest's default import mode inserts, for each module it imports (test
    modules and conftest.py), the first folder above it that holds no
    ``__init__.py``; every module and package in such a folder can then be
    imported by name (a helper next to the tests). Those names are the
    suite's: a module of the same name in the tree never replaces them.
    """
    basedirs: set[Path] = set()
    for rel in python_files:
        name = rel.rsplit("/", 1)[-1]
        if not (pytest_collects(name) or name == "conftest.py"):
            continue
        folder = (root / rel).parent
        while folder != root and (folder / "__init__.py").is_file():
            folder = folder.parent
        basedirs.add(folder)
    names: set[str] = set()
    for folder in basedirs:
        for entry in os.scandir(folder):
            stem = entry.name[:-3] if entry.name.endswith(".py") and entry.is_file() else entry.name
            if (entry.is_dir(follow_symlinks=False) or entry.name.endswith(".py")) and stem.isidentifier():
                names.add(stem)
    return tuple(sorted(names - {"__pycache__"}))


def _check_module_names(root: Path, files: list[str]) -> None:
    """Refuse two test modules that pytest would import under the same name (import file mismatch)."""
    seen: dict[str, str] = {}
    for rel in files:
        parts = rel.split("/")
        # pytest's default import mode names a module by its package path: the
        # directories above it that hold an __init__.py.
        package: list[str] = []
        for i in range(len(parts) - 1, 0, -1):
            if not (root / "/".join(parts[:i]) / "__init__.py").is_file():
                break
            package.insert(0, parts[i - 1])
        module = ".".join([*package, parts[-1][:-3]])
        if module in seen:
            raise SuiteError(
                f"{seen[module]} and {rel} would both be imported as module {module!r}; "
                "rename one or add __init__.py files"
            )
        seen[module] = rel
