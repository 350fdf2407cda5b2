"""Stub bodies: functions that look written but compute nothing.

A body is a stub when, after its docstring, it is only `pass` / `...`, a
`raise NotImplementedError`, nothing at all, or a single constant `return`
where the name or docstring promises a computation on the arguments it
ignores. Deliberately empty functions are exempt (see docs/hygiene.md):
abstract methods, `@overload`s, Protocol members and the hooks of base
classes, dunder methods, functions named or documented as no-ops, code under
`if TYPE_CHECKING:`, and helpers inside test modules (fakes are meant to be
empty); an empty *test* is always a stub, since it cannot fail.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from checks.shape.hygiene.bases import base_names, subclassed_in
from checks.shape.hygiene.pysource import dotted, import_aliases, resolve

StubKind = Literal["pass", "ellipsis", "not-implemented", "docstring-only", "constant-return"]

_EXEMPT_DECORATORS = frozenset(
    {
        "abstractmethod",
        "abstractproperty",
        "abstractclassmethod",
        "abstractstaticmethod",
        "overload",
    }
)
_ABSTRACT = _EXEMPT_DECORATORS - {"overload"}
_PROTOCOL_BASES = frozenset({"Protocol", "ABC", "ABCMeta"})
# Base/Abstract as a CamelCase word anywhere (AsyncBaseTransport), or a mixin/interface suffix.
_ABSTRACT_NAME = re.compile(
    r"(?:^|(?<=[a-z0-9_]))(?:Base|Abstract)(?=[A-Z_0-9]|$)|(?:Mixin|Interface|Protocol|ABC)$"
)
_NOOP_NAME = re.compile(
    r"(^|_)(noop|no_op|nop|dummy|do_nothing|nothing|null|ignore|ignored|identity)(_|$)", re.I
)
# Docstrings that say the emptiness is intended.
_NOOP_DOC = re.compile(
    r"no-?op|nothing|intentional|overrid|subclass|\bhook\b|by default|not supported|n't|\bdo not\b"
    r"|\bstop|\bskip|\bignor|unused|not needed|typing purposes",
    re.I,
)
# Leading words of names and docstrings that promise work on the arguments.
_COMPUTE_VERBS = frozenset(
    {
        "aggregate",
        "analyse",
        "analyze",
        "apply",
        "average",
        "calc",
        "calculate",
        "classify",
        "compare",
        "compute",
        "convert",
        "count",
        "decode",
        "deserialize",
        "detect",
        "diff",
        "distance",
        "encode",
        "estimate",
        "evaluate",
        "extract",
        "hash",
        "infer",
        "interpolate",
        "mean",
        "measure",
        "median",
        "merge",
        "normalise",
        "normalize",
        "parse",
        "predict",
        "process",
        "rank",
        "reduce",
        "score",
        "serialize",
        "solve",
        "sort",
        "sum",
        "tokenize",
        "total",
        "transform",
        "validate",
        "verify",
        # predicates that take an argument promise to look at it
        "is",
        "has",
        "can",
        "should",
        "check",
        "find",
        "get",
        "lookup",
        "search",
        "load",
        "fetch",
        "read",
        "build",
        "render",
        "format",
        "generate",
        "make",
        "create",
    }
)


_NOT_IMPLEMENTED = frozenset({"NotImplementedError", "builtins.NotImplementedError", "NotImplemented"})
# Words of a NotImplementedError message that admit the work is simply not done.
_UNDONE = re.compile(r"todo|fixme|tbd|implement|yet|stub|placeholder|later|coming soon|not done|\?\?\?", re.I)


@dataclass(frozen=True)
class Stub:
    """A function whose body is a stub, at the lines of its definition (decorators included)."""

    qualname: str
    line: int
    end_line: int
    kind: StubKind
    reason: str


def find_stubs(
    tree: ast.Module, *, test_module: bool = False, subclassed: frozenset[str] = frozenset()
) -> list[Stub]:
    """Return every non-exempt function in ``tree`` whose body is a stub.

    ``subclassed`` names classes that other modules of the project subclass
    (see `base_class_names`): their empty methods are hooks, not stubs.
    """
    finder = _StubFinder(import_aliases(tree), subclassed_in(tree) | subclassed, test_module)
    finder.visit(tree)
    return finder.found


def stub_kind(node: ast.FunctionDef | ast.AsyncFunctionDef) -> StubKind | None:
    """Classify a function body as a stub kind, ignoring whether it is exempt."""
    body = node.body
    has_doc = ast.get_docstring(node, clean=False) is not None
    rest = body[1:] if has_doc else body
    if not rest:
        return "docstring-only"
    if all(isinstance(s, ast.Pass) for s in rest):
        return "pass"
    if all(_is_ellipsis(s) or isinstance(s, ast.Pass) for s in rest):
        return "ellipsis"
    if len(rest) != 1:
        return None
    only = rest[0]
    if isinstance(only, ast.Raise) and only.exc is not None:
        exc = only.exc.func if isinstance(only.exc, ast.Call) else only.exc
        if dotted(exc) in _NOT_IMPLEMENTED:
            return "not-implemented"
    if isinstance(only, ast.Return) and (only.value is None or _is_literal(only.value)):
        return "constant-return"
    return None


def _explains(stmt: ast.stmt) -> bool:
    """Return True when a raise says why the operation is refused ("not supported on HTTP/2")."""
    if not (isinstance(stmt, ast.Raise) and isinstance(stmt.exc, ast.Call) and stmt.exc.args):
        return False
    message = stmt.exc.args[0]
    if isinstance(message, ast.Constant) and isinstance(message.value, str):
        text = message.value
    elif isinstance(message, ast.JoinedStr):
        text = "".join(
            v.value for v in message.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
        )
    else:
        return False
    return len(text.split()) >= 3 and not _UNDONE.search(text)


def _is_ellipsis(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is ...


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is not ...
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        keys_ok = all(k is not None and _is_literal(k) for k in node.keys)
        return keys_ok and all(_is_literal(v) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _is_literal(node.operand)
    return False


def _first_word(text: str) -> str:
    match = re.match(r"\s*([A-Za-z]+)", text)
    return match.group(1).lower() if match else ""


def _promises_computation(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    # The leading word of snake_case and camelCase names alike.
    lead = re.match(r"[A-Za-z][a-z]*", node.name.lstrip("_"))
    words = {lead.group(0).lower()} if lead else set()
    doc = ast.get_docstring(node)
    if doc:
        first = _first_word(doc)
        # "Computes ..." and "Compute ..." promise the same thing.
        words |= {first, first.removesuffix("s"), first.removesuffix("es")}
    return bool(words & _COMPUTE_VERBS)


def _ignored_params(node: ast.FunctionDef | ast.AsyncFunctionDef, in_class: bool) -> list[str]:
    args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
    names = [a.arg for a in args]
    if in_class and names and names[0] in ("self", "cls"):
        names = names[1:]
    return [n for n in names if not n.startswith("_")]


def _defs(stmts: list[ast.stmt]) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """Definitions made by ``stmts``, looking through nested if/try branches but not into bodies."""
    for stmt in stmts:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield stmt
        elif isinstance(stmt, ast.If):
            yield from _defs(stmt.body)
            yield from _defs(stmt.orelse)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            for branch in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                yield from _defs(branch)


def _imported(stmts: list[ast.stmt]) -> set[str]:
    return {
        (alias.asname or alias.name).split(".")[0]
        for stmt in stmts
        if isinstance(stmt, ast.Import | ast.ImportFrom)
        for alias in stmt.names
    }


class _StubFinder(ast.NodeVisitor):
    def __init__(self, aliases: dict[str, str], subclassed: set[str], test_module: bool) -> None:
        self.aliases = aliases
        self.subclassed = subclassed
        self.test_module = test_module
        self.scope: list[str] = []
        # The innermost enclosing class, when the innermost enclosing definition is a class.
        self.classes: list[ast.ClassDef | None] = []
        # Inside `if TYPE_CHECKING:` or a fallback definition: empty bodies are deliberate there.
        self.exempt = 0
        self.fallbacks: set[int] = set()
        self.found: list[Stub] = []

    def visit_If(self, node: ast.If) -> None:
        guard = dotted(node.test)
        typing_only = guard is not None and guard.endswith("TYPE_CHECKING")
        self._branches([node.body, node.orelse], typing_only=typing_only)

    def visit_Try(self, node: ast.Try | ast.TryStar) -> None:
        self._branches([node.body, *(h.body for h in node.handlers), node.orelse])
        for stmt in node.finalbody:
            self.visit(stmt)

    visit_TryStar = visit_Try

    def _branches(self, branches: list[list[ast.stmt]], *, typing_only: bool = False) -> None:
        # A name defined in two branches (`if WINDOWS: def f(x): ... else: def f(x): return None`)
        # is a platform or version fallback, not a stub.
        names = [{d.name for d in _defs(branch)} | _imported(branch) for branch in branches]
        for i, branch in enumerate(branches):
            elsewhere = set().union(*(n for j, n in enumerate(names) if j != i))
            self.fallbacks.update(id(d) for d in _defs(branch) if d.name in elsewhere)
            guarded = typing_only and i == 0
            self.exempt += guarded
            for stmt in branch:
                self.visit(stmt)
            self.exempt -= guarded

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        fallback = id(node) in self.fallbacks
        self.exempt += fallback
        self.scope.append(node.name)
        self.classes.append(node)
        self.generic_visit(node)
        self.classes.pop()
        self.scope.pop()
        self.exempt -= fallback

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        fallback = id(node) in self.fallbacks
        self.exempt += fallback
        cls = self.classes[-1] if self.classes else None
        kind = stub_kind(node)
        if kind is not None:
            reason = self._judge(node, kind, cls)
            if reason is not None:
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                qualname = ".".join([*self.scope, node.name])
                self.found.append(Stub(qualname, start, node.end_lineno or node.lineno, kind, reason))
        self.scope.append(node.name)
        self.classes.append(None)
        self.generic_visit(node)
        self.classes.pop()
        self.scope.pop()
        self.exempt -= fallback

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def _judge(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, kind: StubKind, cls: ast.ClassDef | None
    ) -> str | None:
        """Return why this stub body is a finding, or None when it is exempt."""
        if self.test_module:
            if not node.name.startswith("test") or kind == "constant-return":
                return None
            return "this test has no body, so it cannot fail"
        if self.exempt or self._decorated_exempt(node, _EXEMPT_DECORATORS) or self._abstract_class(cls):
            return None
        if _NOOP_NAME.search(node.name) or _NOOP_DOC.search(ast.get_docstring(node) or ""):
            return None
        dunder = node.name.startswith("__") and node.name.endswith("__")
        if kind == "constant-return":
            return self._judge_constant(node, cls, dunder)
        if dunder and kind != "not-implemented":
            return None
        if kind == "not-implemented" and _explains(node.body[-1]):
            return None
        # Empty overrides in subclasses and empty local callbacks switch behaviour off on
        # purpose; they are stubs only when their name promises work.
        nested = cls is None and len(self.scope) > 0
        overriding = cls is not None and bool(base_names(cls))
        if (nested or overriding) and not _promises_computation(node):
            return None
        return {
            "pass": "the body is only `pass`",
            "ellipsis": "the body is only `...`",
            "not-implemented": "the body only raises NotImplementedError",
            "docstring-only": "the body is only a docstring",
        }[kind]

    def _judge_constant(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None, dunder: bool
    ) -> str | None:
        # A subclass returning a constant is usually overriding a policy hook on purpose.
        if dunder or (cls is not None and base_names(cls)):
            return None
        ignored = _ignored_params(node, cls is not None)
        if not ignored or not _promises_computation(node):
            return None
        last = node.body[-1]
        value = last.value if isinstance(last, ast.Return) else None
        shown = "None" if value is None else ast.unparse(value)[:40]
        return (
            f"returns the constant {shown} and ignores {', '.join(ignored[:3])}, "
            "though its name promises a computation"
        )

    def _decorated_exempt(self, node: ast.FunctionDef | ast.AsyncFunctionDef, names: frozenset[str]) -> bool:
        for deco in node.decorator_list:
            name = dotted(deco.func if isinstance(deco, ast.Call) else deco)
            if name is not None and resolve(name, self.aliases).rsplit(".", 1)[-1] in names:
                return True
        return False

    def _abstract_class(self, cls: ast.ClassDef | None) -> bool:
        """Return True for classes meant to be subclassed, whose empty methods are hooks."""
        if cls is None:
            return False
        if cls.name in self.subclassed or _ABSTRACT_NAME.search(cls.name):
            return True
        if any(name in _PROTOCOL_BASES for name in base_names(cls, metaclass=True)):
            return True
        return any(
            self._decorated_exempt(item, _ABSTRACT)
            for item in cls.body
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
        )
