"""What a Python module says about its tests: test functions, their checks, helpers, and skip markers."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from checks.shape.hygiene.assertions import Expectation, expectations, parametrize_values
from checks.shape.hygiene.pysource import STATEMENT_FIELDS, dotted, import_aliases, resolve

MODULE_SCOPE = "<module>"

# Canonical names whose presence skips or xfails a test; `pytest.skip.Exception` and
# `pytest.mark.skip.with_args` count through their prefix.
SKIP_NAMES = frozenset(
    {
        "pytest.mark.skip",
        "pytest.mark.skipif",
        "pytest.mark.xfail",
        "pytest.skip",
        "pytest.xfail",
        "pytest.importorskip",
        "unittest.skip",
        "unittest.skipIf",
        "unittest.skipUnless",
        "unittest.expectedFailure",
        "unittest.SkipTest",
        "unittest.case.skip",
        "unittest.case.skipIf",
        "unittest.case.skipUnless",
        "unittest.case.expectedFailure",
        "unittest.case.SkipTest",
    }
)
# unittest's TestCase.skipTest, on whatever the instance is called.
_SKIP_METHODS = frozenset({"skipTest"})
# Context managers and helpers that assert on their own.
_CHECKING_CALLS = frozenset({"pytest.raises", "pytest.warns", "pytest.deprecated_call", "pytest.fail"})


@dataclass(frozen=True)
class CollectedTest:
    """One test function as collected by pytest's default rules."""

    qualname: str
    line: int
    end_line: int
    # The definition with its name blanked out: equal keys mean a renamed, unchanged test.
    body_key: str
    asserts: int
    # Parametrized cases, when every parametrize decorator lists them literally.
    cases: int | None
    # What it checks, by content (checks.shape.hygiene.assertions).
    expectations: tuple[Expectation, ...] = ()


@dataclass(frozen=True)
class CollectedHelper:
    """A function of a test module that is not a test: a helper, fixture or fake, and how much it checks."""

    qualname: str
    line: int
    end_line: int
    asserts: int
    expectations: tuple[Expectation, ...] = ()


@dataclass(frozen=True)
class SkipMark:
    line: int
    name: str


@dataclass(frozen=True)
class ModuleFacts:
    tests: dict[str, CollectedTest] = field(default_factory=dict)
    # Skip markers per scope (a function/class qualname, or MODULE_SCOPE).
    skips: dict[str, tuple[SkipMark, ...]] = field(default_factory=dict)
    # Functions at module or class level that pytest does not collect.
    helpers: dict[str, CollectedHelper] = field(default_factory=dict)


def module_facts(
    tree: ast.Module, *, tests: bool = True, aliases: dict[str, str] | None = None
) -> ModuleFacts:
    """Collect the skip markers of one parsed module, and its tests and helpers unless ``tests`` is False.

    ``aliases`` are the module's import aliases when the caller has them already.
    """
    aliases = import_aliases(tree) if aliases is None else aliases
    found: dict[str, CollectedTest] = {}
    helpers: dict[str, CollectedHelper] = {}
    if tests:
        _collect_tests(tree.body, "", aliases, found, helpers)
    finder = _SkipFinder(aliases)
    finder.visit(tree)
    return ModuleFacts(found, {scope: tuple(marks) for scope, marks in finder.found.items()}, helpers)


def _collect_tests(
    body: list[ast.stmt],
    prefix: str,
    aliases: dict[str, str],
    out: dict[str, CollectedTest],
    helpers: dict[str, CollectedHelper],
) -> None:
    # pytest collects `test*` functions at module level and in (nested) classes;
    # a later definition of the same name replaces the earlier one, as in Python.
    for node in body:
        if isinstance(node, ast.ClassDef):
            _collect_tests(node.body, f"{prefix}{node.name}.", aliases, out, helpers)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            end = node.end_lineno or node.lineno
            if not node.name.startswith("test"):
                checks = count_assertions(node, aliases)
                helpers[prefix + node.name] = CollectedHelper(
                    prefix + node.name, start, end, checks, expectations(node, aliases)
                )
                continue
            out[prefix + node.name] = CollectedTest(
                qualname=prefix + node.name,
                line=start,
                end_line=end,
                body_key=_body_key(node),
                asserts=count_assertions(node, aliases),
                cases=_cases(node, aliases),
                expectations=expectations(node, aliases),
            )


def _body_key(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    parts: list[ast.AST] = [*node.decorator_list, node.args, *node.body]
    return "\n".join(ast.dump(part) for part in parts)


def count_assertions(node: ast.AST, aliases: dict[str, str]) -> int:
    """Count the checks in a test that can run: non-trivial asserts, pytest.raises/warns, and assert* calls.

    Code after a ``return`` or ``raise`` in the same block, and under
    ``if False:`` / ``while 0:``, never runs, so its checks do not count.
    """
    count = 0
    for sub in _reachable(node):
        if isinstance(sub, ast.Assert):
            # `assert True` / `assert 1` checks nothing and is how a check gets hollowed out.
            if not (isinstance(sub.test, ast.Constant) and sub.test.value):
                count += 1
        elif isinstance(sub, ast.Call):
            name = dotted(sub.func)
            if name is None:
                continue
            last = name.rsplit(".", 1)[-1]
            if resolve(name, aliases) in _CHECKING_CALLS or last.lower().startswith("assert"):
                count += 1
    return count


def _reachable(node: ast.AST) -> list[ast.AST]:
    """Every node under ``node`` that can run: dead statements and their subtrees are left out."""
    out: list[ast.AST] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        for name, value in ast.iter_fields(current):
            if name in STATEMENT_FIELDS and isinstance(value, list):
                stack.extend(_live(current, name, value))
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return out


def _live(owner: ast.AST, field_name: str, statements: list[ast.AST]) -> list[ast.AST]:
    if isinstance(owner, ast.If | ast.While) and isinstance(owner.test, ast.Constant):
        taken = "body" if owner.test.value else "orelse"
        if field_name != taken:
            return []
    live: list[ast.AST] = []
    for stmt in statements:
        live.append(stmt)
        if isinstance(stmt, ast.Return | ast.Raise | ast.Continue | ast.Break):
            break
    return live


def _cases(node: ast.FunctionDef | ast.AsyncFunctionDef, aliases: dict[str, str]) -> int | None:
    found = parametrize_values(node, aliases)
    if any(values is None for values in found):
        return None
    return sum(len(values.elts) for values in found if values is not None)


class _SkipFinder(ast.NodeVisitor):
    """Find skip/xfail markers and calls, attributed to the function or class they apply to."""

    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases
        self.scope: list[str] = []
        self.found: dict[str, list[SkipMark]] = {}

    def _enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        # Decorators belong to the thing they decorate, so they are visited in its scope.
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = _enter
    visit_AsyncFunctionDef = _enter
    visit_ClassDef = _enter

    def _record(self, line: int, name: str) -> None:
        scope = ".".join(self.scope) or MODULE_SCOPE
        self.found.setdefault(scope, []).append(SkipMark(line, name))

    def _check(self, node: ast.Name | ast.Attribute) -> None:
        name = dotted(node)
        if name is not None:
            full = resolve(name, self.aliases)
            if any(full == s or full.startswith(s + ".") for s in SKIP_NAMES):
                # The outermost matching chain counts once; its inner parts are not revisited.
                self._record(node.lineno, full)
                return
            if isinstance(node, ast.Attribute) and node.attr in _SKIP_METHODS:
                self._record(node.lineno, name)
                return
        self.generic_visit(node)

    visit_Name = _check
    visit_Attribute = _check


@dataclass(frozen=True)
class ChangedTestModule:
    """One changed test file seen from both sides; a side that is absent or not a test file is empty."""

    base_path: str | None
    head_path: str | None
    base: dict[str, CollectedTest]
    head: dict[str, CollectedTest]


@dataclass(frozen=True)
class LostTest:
    """A test at base that no longer exists at head under any name, in any changed test file."""

    base_path: str
    test: CollectedTest
    # Where its file went (None when the file itself was deleted).
    head_path: str | None


@dataclass(frozen=True)
class KeptTest:
    base: CollectedTest
    head: CollectedTest
    head_path: str


def match_tests(files: list[ChangedTestModule]) -> tuple[list[KeptTest], list[LostTest]]:
    """Pair each base test with its head version: same file and name, moved, or renamed unchanged.

    A test counts as kept when its file still defines it; else when some
    changed test file newly defines a test of the same name (a move); else
    when a newly named test has exactly its decorators, signature and body
    (a rename). Anything else is lost.
    """
    kept: list[KeptTest] = []
    missing: list[tuple[ChangedTestModule, CollectedTest]] = []
    # Tests each head file defines that its base did not: the only candidates for moves and renames.
    fresh: list[tuple[str, str, CollectedTest]] = []
    for f in files:
        for name, test in f.base.items():
            if name in f.head and f.head_path is not None:
                kept.append(KeptTest(test, f.head[name], f.head_path))
            else:
                missing.append((f, test))
        if f.head_path is not None:
            fresh.extend((f.head_path, name, t) for name, t in f.head.items() if name not in f.base)

    def claim(key: Callable[[CollectedTest], str], wanted: str) -> tuple[str, CollectedTest] | None:
        for i, (path, _, candidate) in enumerate(fresh):
            if key(candidate) == wanted:
                del fresh[i]
                return path, candidate
        return None

    lost: list[LostTest] = []
    unmoved: list[tuple[ChangedTestModule, CollectedTest]] = []
    for f, test in missing:
        moved = claim(lambda c: _short(c.qualname), _short(test.qualname))
        if moved is not None:
            kept.append(KeptTest(test, moved[1], moved[0]))
        else:
            unmoved.append((f, test))
    for f, test in unmoved:
        renamed = claim(lambda c: c.body_key, test.body_key)
        if renamed is not None:
            kept.append(KeptTest(test, renamed[1], renamed[0]))
        elif f.base_path is not None:
            lost.append(LostTest(f.base_path, test, f.head_path))
    return kept, lost


def _short(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]
