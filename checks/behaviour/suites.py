"""The suites: server-side tests per repository, never read from the repository under test.

They live in the test store (``PATCHGATE_TEST_STORE``), laid out as::

    <store>/<owner>/<repo>/hidden/      pytest files, *cases.yml and *.diff.yml; failing ids may be shown
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
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from checks.behaviour.cases import CaseSpec, is_case_file, load_case_file
from checks.behaviour.collection import Modules, static_tests
from checks.behaviour.diffsuite import DiffSpec, is_diff_file, load_diff_file
from checks.behaviour.errors import NoTests, SuiteError
from checks.behaviour.owners import served_names
from checks.behaviour.pytestconfig import PytestOptions, read_options
from checks.behaviour.support import SupportModule, find_support
from checks.report import SUITE_LABELS, SuiteKind
from sandbox.pyparse import parse_python

SUITE_CONFIG = "patchgate-suite.yml"
HIDDEN_DIR = "hidden"
HELD_OUT_DIR = "held-out"
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
# Suites made of a repository's own test folders (repotests.py), not of the test store.
REPOSITORY_KINDS = frozenset({"repository", "own"})
# A module of theirs larger than this is not read for its tests (the change's are hostile input).
MAX_REPOSITORY_SOURCE_BYTES = 2 * 1024 * 1024


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
    # A differential seed recorded in an earlier report, to draw the same inputs again
    # (None: derived from the suites and the base sha, differential.suite_seed).
    differential_seed: str | None = None
    # The change's labels and title: a refactor (policy behaviour.differential) is compared with base.
    labels: tuple[str, ...] = ()
    title: str = ""


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
    # The suite's own pytest configuration, as far as patchgate honours it (pytestconfig.py).
    options: PytestOptions = field(default_factory=PytestOptions)
    # Functions checked against a reference of the suite's (``*.diff.yml``: diffsuite.py).
    diffs: tuple[DiffSpec, ...] = ()
    # Base's test-support modules the suite imports: they run in the grader, with it (support.py).
    support: tuple[SupportModule, ...] = ()

    @property
    def name(self) -> str:
        return SUITE_LABELS[self.kind]

    @property
    def case_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cases)


def load_suite(
    root: Path, kind: SuiteKind, base: Path | None = None, tree_names: Collection[str] = ()
) -> Suite:
    """Read a suite directory; raise SuiteError (naming the file) when it cannot run as written.

    With ``base`` (the trusted tree) and the trees' top-level ``tree_names``: the suite's tests may
    derive from base's test support too (``support.py``), which runs with them.
    """
    if not root.is_dir():
        raise SuiteError(f"{SUITE_LABELS[kind]} suite {root} is not a directory")
    options = read_options(root)
    trees: dict[str, ast.Module] = {}
    cases: list[CaseSpec] = []
    # A repository's test folders (base's, or the change's own) are its tests and their data: a file
    # there named like a case or differential file is data; one of base's that does not parse is
    # pytest's to report.
    repository = kind in REPOSITORY_KINDS
    diffs: list[DiffSpec] = []
    for rel in _files(root):
        name = rel.rsplit("/", 1)[-1]
        if name.endswith(".py"):
            if repository and (root / rel).stat().st_size > MAX_REPOSITORY_SOURCE_BYTES:
                continue  # the syntax tree of a large module is many times its size, on the host
            try:
                trees[rel] = _parse(root / rel, rel)
            except SuiteError:
                if kind != "repository":
                    raise
        elif is_case_file(name) and not repository:
            cases += load_case_file(root / rel, rel)
        elif is_diff_file(name) and not repository:
            diffs += load_diff_file(root / rel, rel, root)
    names = own_names(root, list(trees), options)
    support = find_support(base, root, served_names(tree_names, names)) if base is not None else ()
    modules = Modules(trees, support)
    pytest_files = [rel for rel in trees if options.collects_file(rel)]
    functions = [test for rel in pytest_files for test in static_tests(modules, rel, options)]
    if not functions and not cases and not diffs:
        raise NoTests(
            f"{SUITE_LABELS[kind]} suite has no tests: expected {' / '.join(options.python_files)} files "
            "with test functions or unittest.TestCase classes, *cases.yml or *.diff.yml files"
        )
    if kind != "repository":
        # Base's own: a module pytest cannot import beside another of its name fails on base, left out.
        _check_module_names(root, pytest_files)
    in_process = _isolation(root, kind) == "in-process"
    return Suite(kind, root, tuple(pytest_files), tuple(functions), tuple(cases), in_process, names, options,
                 diffs=tuple(diffs), support=support)  # fmt: skip


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
        raise SuiteError(f"{SUITE_LABELS[kind]} suite: {SUITE_CONFIG} is not valid: {exc}") from None


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
        return parse_python(path.read_bytes(), filename=rel)
    except SyntaxError as exc:
        raise SuiteError(f"{rel}: line {exc.lineno}: {exc.msg} (fix the suite file)") from None
    except ValueError as exc:  # null bytes
        raise SuiteError(f"{rel}: {exc}") from None
    except (RecursionError, MemoryError):  # nested past the parser's stack (``1 + 1 + ...``, ``- - ... 1``)
        raise SuiteError(f"{rel}: nested too deeply to be read") from None


def own_names(root: Path, python_files: list[str], options: PytestOptions | None = None) -> tuple[str, ...]:
    """Return the top-level names importable from the folders pytest puts on ``sys.path`` for the suite.

    pytest's default import mode inserts, for each module it imports (test
    modules and conftest.py), the first folder above it that holds no
    ``__init__.py``; every module and package in such a folder can then be
    imported by name (a helper next to the tests). Those names are the
    suite's: a module of the same name in the tree never replaces them.
    """
    options = options or PytestOptions()
    basedirs: set[Path] = {root / p for p in options.pythonpath}
    for rel in python_files:
        name = rel.rsplit("/", 1)[-1]
        if not (options.collects_file(rel) or name == "conftest.py"):
            continue
        folder = (root / rel).parent
        while folder != root and (folder / "__init__.py").is_file():
            folder = folder.parent
        basedirs.add(folder)
    names: set[str] = set()
    for folder in basedirs:
        if not folder.is_dir():
            continue  # a pythonpath entry naming what the suite does not hold (a repository's src/)
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
