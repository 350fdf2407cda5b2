"""What pytest will collect from a suite, read statically: its test ids (its options: pytestconfig.py).

The test ids are found the way pytest names them: module functions and
methods of classes matching the configured names (nested classes too,
inherited methods of classes of the same module), and every
``unittest.TestCase`` subclass whatever its name, with its ``test*``
methods including those its bases in the suite's other modules give it
(mixins in a package's ``__init__.py``). ``__test__ = False`` leaves a
function or class out; a class with ``__init__`` or ``__new__`` of its own
is not a pytest test class. A base the suite does not define is not
followed: those tests are known from base's own collection instead.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from checks.behaviour.errors import SuiteError
from checks.behaviour.pytestconfig import PytestOptions
from checks.behaviour.support import TEST_CASES, UNITTEST_MODULES, SupportModule

# The suite's classes a class derives from that are read for its tests; a real hierarchy is a few.
MAX_ANCESTORS = 64


# -- test ids ---------------------------------------------------------------------------------------


@dataclass
class _Class:
    node: ast.ClassDef
    module: str
    bases: list[tuple[str, str]]  # (module, name) of each base the suite may define, or ("", dotted)


class Modules:
    """Every Python file of the suite, parsed, with the classes each defines and what its names import."""

    def __init__(self, trees: Mapping[str, ast.Module], support: Iterable[SupportModule] = ()) -> None:
        """``support``: base's test-support modules the suite imports, whose classes its tests derive from."""
        self.trees = trees
        self.names = {rel: _module_name(rel, trees) for rel in trees}
        by_name = {name: rel for rel, name in self.names.items()}
        self.classes: dict[tuple[str, str], _Class] = {}
        self.functions: dict[tuple[str, str], ast.FunctionDef | ast.AsyncFunctionDef] = {}
        # Support first: a later definition of a name replaces an earlier one, as in Python.
        every = [(m.name, m.package, parsed) for m in support if (parsed := m.parsed()) is not None]
        every += [(self.names[rel], rel.endswith("__init__.py"), tree) for rel, tree in trees.items()]
        for name, package, tree in every:
            imports = _imports(tree, name, package)
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    bases = [_resolve(b, imports, name) for b in node.bases]
                    self.classes[(name, node.name)] = _Class(node, name, bases)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    self.functions[(name, node.name)] = node
        self._by_name = by_name

    def is_testcase(self, cls: _Class) -> bool:
        """Whether ``cls`` derives from unittest's TestCase through the suite's classes."""
        return any(
            module in UNITTEST_MODULES and name in TEST_CASES
            for klass in self.ancestry(cls)
            for module, name in klass.bases
        )

    def inherited(self, cls: _Class) -> list[ast.ClassDef]:
        """The class and the suite's classes it derives from, nearest first (a simple MRO)."""
        return [klass.node for klass in self.ancestry(cls)]

    def ancestry(self, cls: _Class) -> list[_Class]:
        """The class and the suite's classes it derives from, each once, nearest first."""
        # Each class once, depth first, bases in order, MAX_ANCESTORS at most; no recursion. The
        # change's test files are read here: a lattice of bases has 2**n paths, a chain of them is
        # deeper than the stack, and thousands of classes each walking the chain are n**2 steps.
        out: list[_Class] = []
        seen: set[int] = set()
        stack = [cls]
        while stack and len(out) < MAX_ANCESTORS:
            klass = stack.pop()
            if id(klass) in seen:
                continue
            seen.add(id(klass))
            out.append(klass)
            parents = [self.classes.get(key) for key in klass.bases]
            stack += reversed([p for p in parents if p is not None])
        return out


def _module_name(rel: str, trees: Mapping[str, ast.Module]) -> str:
    """The dotted name pytest imports ``rel`` as (its package path: the folders with __init__.py above it)."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    start = len(parts) - 1
    while start > 0 and "/".join(rel.split("/")[:start]) + "/__init__.py" in trees:
        start -= 1
    return ".".join(parts[start:]) if parts else ""


def _imports(tree: ast.Module, module: str, package: bool) -> dict[str, tuple[str, str]]:
    """Map each local name the module's top-level imports bind to (module, name) - name "" for a module."""
    found: dict[str, tuple[str, str]] = {}
    here = module if package else module.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0],
                    "",
                )
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".") if here else []
                anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                found[alias.asname or alias.name] = (base, alias.name)
    return found


def _resolve(expr: ast.expr, imports: Mapping[str, tuple[str, str]], module: str) -> tuple[str, str]:
    if isinstance(expr, ast.Name):
        return imports.get(expr.id, (module, expr.id))
    if isinstance(expr, ast.Attribute):
        dotted: list[str] = [expr.attr]
        inner: ast.expr = expr.value
        while isinstance(inner, ast.Attribute):
            dotted.insert(0, inner.attr)
            inner = inner.value
        if isinstance(inner, ast.Name):
            head, name = imports.get(inner.id, (inner.id, ""))
            parts = [*(head.split(".") if head else []), *([name] if name else []), *dotted]
            return ".".join(parts[:-1]), parts[-1]
    return "", ""


def static_tests(modules: Modules, rel: str, options: PytestOptions) -> list[str]:
    """List ``file::test`` and ``file::Class::test`` ids in one test module, the way pytest names them.

    pytest collects what the module's namespace holds: its own definitions,
    and the suite's classes and functions it imports (``from .helpers import
    BaseTest`` collects ``BaseTest``'s tests there too). Raises SuiteError for
    a name a scope defines twice (the first would never run).
    """
    tree = modules.trees[rel]
    name = modules.names[rel]
    namespace: dict[str, _Class | ast.FunctionDef | ast.AsyncFunctionDef] = {}
    defined: dict[str, int] = {}
    imports = _imports(tree, name, rel.endswith("__init__.py"))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                local = alias.asname or alias.name
                target = imports.get(local, ("", ""))
                found = modules.classes.get(target) or modules.functions.get(target)
                if found is not None:
                    namespace[local] = found
            continue
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        _once(defined, node, rel, options)
        namespace[node.name] = modules.classes[(name, node.name)] if isinstance(node, ast.ClassDef) else node
    out: list[str] = []
    for local, found in namespace.items():
        if isinstance(found, _Class):
            if modules.is_testcase(found):
                out += _unittest_methods(modules, found, f"{rel}::{local}")
            elif (options.class_name(local) or _says_test(found.node)) and not _uncollectable(found.node):
                out += _class_tests(modules, found, f"{rel}::{local}", options)
        elif options.function_name(local) and not _is_fixture(found):
            out.append(f"{rel}::{local}")
    return out


def _once(defined: dict[str, int], node: ast.stmt, rel: str, options: PytestOptions) -> None:
    name = getattr(node, "name", "")
    if name in defined and (options.function_name(name) or options.class_name(name)):
        lines = f"lines {defined[name]} and {node.lineno}"
        raise SuiteError(f"{rel}: {name!r} is defined twice ({lines}); the first would never run")
    defined[name] = node.lineno


def _unittest_methods(modules: Modules, cls: _Class, prefix: str) -> list[str]:
    """A TestCase's tests: ``test*`` methods (unittest's rule), its own and those its suite bases give it."""
    if not _collectable(cls.node):
        return []
    names: list[str] = []
    for klass in modules.inherited(cls):
        for n in klass.body:
            method = isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
            if method and n.name not in names:  # type: ignore[attr-defined]
                names.append(n.name)  # type: ignore[attr-defined]
    if not names and any(
        isinstance(n, ast.FunctionDef) and n.name == "runTest" for k in modules.inherited(cls) for n in k.body
    ):
        names = ["runTest"]
    return [f"{prefix}::{n}" for n in names]


def _class_tests(modules: Modules, cls: _Class, prefix: str, options: PytestOptions) -> list[str]:
    own: list[str] = []
    names: set[str] = set()
    for klass in modules.inherited(cls):
        defined: dict[str, int] = {}
        for node in klass.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            if klass is cls.node:
                _once(defined, node, prefix.partition("::")[0], options)
            if node.name in names:
                continue
            if isinstance(node, ast.ClassDef):
                # A nested test class is an attribute like any other: a subclass collects it too.
                if options.class_name(node.name) and not _uncollectable(node):
                    inner = _Class(node, cls.module, [])
                    own += _class_tests(modules, inner, f"{prefix}::{node.name}", options)
                    names.add(node.name)
            elif options.function_name(node.name) and not _is_fixture(node) and _collectable(node):
                own.append(f"{prefix}::{node.name}")
                names.add(node.name)
    return own


def _is_fixture(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Return True for ``@pytest.fixture``-style functions: pytest never collects those as tests."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("fixture", "yield_fixture"):
            return True
    return False


def _collectable(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    """False when the definition (or, for a class, its body) says ``__test__ = False``."""
    body = node.body if isinstance(node, ast.ClassDef) else []
    return not any(_sets_test_false(n) for n in body)


def _says_test(node: ast.ClassDef) -> bool:
    """``__test__ = True`` in a class body: pytest collects it whatever its name."""
    return any(
        isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__test__" for t in n.targets)
        and isinstance(n.value, ast.Constant)
        and n.value.value is True
        for n in node.body
    )


def _sets_test_false(n: ast.stmt) -> bool:
    return (
        isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__test__" for t in n.targets)
        and isinstance(n.value, ast.Constant)
        and not n.value.value
    )


def _uncollectable(node: ast.ClassDef) -> bool:
    """Return True for a class pytest will not collect: a constructor of its own, or ``__test__ = False``."""
    for n in node.body:
        if isinstance(n, ast.FunctionDef) and n.name in ("__init__", "__new__"):
            return True
    return not _collectable(node)
