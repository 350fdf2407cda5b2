"""Who owns each importable name in the grader: its tools, the suite or the subject (docs/behaviour.md).

Every top-level name a run can import has exactly one owner:

- the **grader's tools**: the standard library and everything importable
  from the grader's own ``sys.path`` when it starts (pytest and its
  dependencies, pytest-timeout, coverage.py, this harness, the packages of
  the environment image). They load from the image, which the subject
  cannot write, and the tools' own imports always get them;
- the **suite**: the names its folders provide where pytest puts them on
  ``sys.path`` (computed on the host from the suite's files:
  ``checks.behaviour.suites.own_names``); a tree module of the same name
  never replaces one of them;
- the **subject**: the tree's top-level names (computed on the host from
  the base and head trees).

A test's import of a subject name is served by the subject as a proxy
module. When the name is also one of the tools (the change is a library
that pytest itself uses, such as pluggy), only the suite's own code gets
the subject's module (``SuiteImports``): the tools keep theirs, so no name
the change provides can take the test runner apart, and the library is
still tested as the change's version. Two kinds of names are never the
subject's (``Owners.reserved``): the standard library's (the subject's own
process runs on it too, so a tree module named like one cannot be imported
apart from it) and the test runner's own (pytest executes imports of its
own inside the suite's modules). The host asks a maintainer to look at a
change to a tree module of such a name (``checks.behaviour.owners``).
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys
import threading
import types
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from . import handles
from .bridge import Bridge
from .errors import SubjectGone, SubjectTimeout
from .handles import RemoteModule

STDLIB = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)
_SUFFIXES = tuple(importlib.machinery.all_suffixes())
# What runs the suite: pytest executes code of its own inside the suite's modules (the assertion
# rewriter's imports), so its names are never the subject's, nor is the harness's.
RUNNER_DISTRIBUTIONS = ("pytest", "pytest-timeout")
HARNESS = "patchgate_harness"


def runner_names() -> frozenset[str]:
    """Return the top-level names of the test runner itself (its distributions' files) and the harness."""
    found = {HARNESS}
    for dist in RUNNER_DISTRIBUTIONS:
        try:
            files = importlib.metadata.distribution(dist).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for path in files:
            top = path.parts[0] if path.parts else ""
            stem = top[:-3] if top.endswith(".py") else top
            if stem.isidentifier() and stem != "__pycache__":
                found.add(stem)
    return frozenset(found)


def importable(entries: Iterable[str]) -> frozenset[str]:
    """Return every top-level name importable from the ``sys.path`` entries given (modules and packages)."""
    found: set[str] = set()
    for entry in entries:
        try:
            scan = list(os.scandir(entry or "."))
        except OSError:  # a zip that is not there, a file
            continue
        for item in scan:
            name = item.name
            if item.is_dir():
                stem = name
            else:
                suffix = next((s for s in _SUFFIXES if name.endswith(s)), None)
                if suffix is None:
                    continue
                # extension modules: name.cpython-311-x86_64-linux-gnu.so
                stem = name[: -len(suffix)].partition(".")[0]
            if stem.isidentifier():
                found.add(stem)
    return frozenset(found)


@dataclass(frozen=True)
class Owners:
    """The owner of every top-level name in one run (pure: see the module's docstring)."""

    subject: frozenset[str]
    suite: frozenset[str]
    tools: frozenset[str]
    # Never the subject's, even to the suite's own code: the standard library and the runner itself.
    reserved: frozenset[str] = STDLIB

    @classmethod
    def of(
        cls, subject: Collection[str], suite: Collection[str], tools: Collection[str],
        runner: Collection[str] = (),
    ) -> Owners:  # fmt: skip
        reserved = STDLIB | frozenset(runner)
        return cls(frozenset(subject), frozenset(suite), frozenset(tools) | reserved, reserved)

    def owner(self, name: str) -> str:
        """Return who serves a *test's* import of top-level ``name``: "suite", "subject" or "tools"."""
        if name in self.suite:
            return "suite"
        if name in self.subject and name not in self.reserved:
            return "subject"
        return "tools"

    @property
    def served(self) -> frozenset[str]:
        """Subject names served to any importer (``sys.modules``): no tool can want one of them."""
        return frozenset(n for n in self.subject - self.tools if self.owner(n) == "subject")

    @property
    def suite_only(self) -> frozenset[str]:
        """Subject names that are also tools: served to the suite's own code only (``SuiteImports``)."""
        return frozenset(n for n in self.subject & self.tools if self.owner(n) == "subject")


def _top(name: str) -> str:
    return name.partition(".")[0]


def _remote_import(bridge: Bridge, fullname: str) -> RemoteModule:
    try:
        module = bridge.request("import", name=fullname)
    except (SubjectGone, SubjectTimeout) as exc:
        raise ImportError(f"{fullname}: {exc}", name=fullname) from None
    except Exception:
        raise
    except BaseException as exc:  # SystemExit at import: that module fails to import, nothing more
        why = f"importing {fullname} raised {type(exc).__name__}: {exc}"
        raise ImportError(why, name=fullname) from None
    if type(module) is not RemoteModule:
        raise ImportError(f"{fullname}: the subject did not import a module", name=fullname)
    return module


def _executed(bridge: Bridge, module: types.ModuleType) -> None:
    number = handles.number(module)
    if vars(types.ModuleType)["__dict__"].__get__(module).get("_pg_executed"):
        # importlib.reload: the subject runs the module again.
        bridge.request("reload", obj=number)
    object.__setattr__(module, "_pg_executed", True)
    # The import system called every module of ours a package; the subject's says what it is.
    package = bridge.request("getattr", obj=number, name="__package__")
    object.__setattr__(module, "__package__", package if isinstance(package, str) else None)


class Importer(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolve imports of the subject's names (``Owners.served``) to the subject's modules."""

    def __init__(self, bridge: Bridge, names: Collection[str] | Owners) -> None:
        self.bridge = bridge
        owners = names if isinstance(names, Owners) else Owners.of(names, (), ())
        self.names = owners.served

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> Any:
        if _top(fullname) not in self.names:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        return _remote_import(self.bridge, spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        _executed(self.bridge, module)


class Support(importlib.abc.MetaPathFinder):
    """Import base's test-support modules from their private copies, here with the tests.

    ``modules``: dotted name -> file under /grader (``checks.behaviour.support`` decides which, on the
    host, from base and the suite). Base is trusted: its module runs in the grader like a suite
    helper, and whatever it imports from the tree is still the subject's (``Importer``).
    """

    def __init__(self, modules: dict[str, str], owners: Owners) -> None:
        # Only names the grader would serve from the subject: never the tools', never the suite's own.
        self.modules = {name: path for name, path in modules.items() if _top(name) in owners.served}

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> Any:
        found = self.modules.get(fullname)
        if found is None:
            return None
        package = found.endswith("/__init__.py")
        # A package's other modules are the subject's: nothing is searched beside this copy.
        return importlib.util.spec_from_file_location(
            fullname, found, submodule_search_locations=[] if package else None
        )


class SuiteImports:
    """Serve the subject's modules of names the grader's tools also use (``Owners.suite_only``) to suite code.

    An ``import`` statement, ``__import__`` or ``importlib.import_module``
    whose caller is a module of the suite (its ``__file__`` under the
    suite's folder) gets the subject's module, kept in a table of its own:
    ``sys.modules`` keeps the tool's, which every other importer gets.
    """

    def __init__(self, bridge: Bridge, names: Collection[str], suite_root: str) -> None:
        self.bridge = bridge
        self.names = frozenset(names)
        self.prefix = suite_root.rstrip("/") + "/"
        self.modules: dict[str, RemoteModule] = {}
        self._lock = threading.RLock()
        self._import: Callable[..., Any] = builtins.__import__
        self._import_module: Callable[..., Any] = importlib.import_module

    def install(self) -> None:
        if not self.names:
            return
        builtins.__import__ = self.dunder_import
        importlib.import_module = self.import_module

    def uninstall(self) -> None:
        if builtins.__import__ == self.dunder_import:
            builtins.__import__ = self._import
            importlib.import_module = self._import_module

    def suite_code(self, module_globals: object) -> bool:
        found = module_globals.get("__file__") if isinstance(module_globals, dict) else None
        return isinstance(found, str) and found.startswith(self.prefix)

    def dunder_import(
        self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        caller = sys._getframe(1).f_globals if globals is None else globals  # __import__("x") called by hand
        if level == 0 and _top(name) in self.names and self.suite_code(caller):
            leaf = self.load(name)
            for item in fromlist or ():
                if item != "*" and not hasattr(leaf, item):
                    self.load(f"{name}.{item}", required=False)
            return leaf if fromlist else self.modules[_top(name)]
        return self._import(name, globals, locals, fromlist, level)

    def import_module(self, name: str, package: str | None = None) -> Any:
        caller = sys._getframe(1).f_globals
        if not name.startswith(".") and _top(name) in self.names and self.suite_code(caller):
            return self.load(name)
        return self._import_module(name, package)

    def load(self, fullname: str, *, required: bool = True) -> RemoteModule | None:
        """Return the subject's module ``fullname``, importing it (and its parents) there once."""
        with self._lock:
            parts = fullname.split(".")
            for i in range(1, len(parts) + 1):
                name = ".".join(parts[:i])
                if name in self.modules:
                    continue
                try:
                    module = _remote_import(self.bridge, name)
                except ImportError:
                    if required:
                        raise
                    return None
                _executed(self.bridge, module)
                self.modules[name] = module
            return self.modules[fullname]
