"""What a test checks, compared by content: tautologies, and expected values a change rewrote.

Counting assertions misses the two cheapest ways to make a failing test
pass: rewrite its check so it cannot fail (``assert f(x) == f(x)``), or
change the value it expects (``== [4]`` becomes ``== [5]``). Both keep the
count. Everything here reads the AST, so parentheses, spacing and line
breaks do not hide either.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

from checks.shape.hygiene.pysource import dotted, resolve

_TEXT_CHARS = 100
# Comparisons that hold when both sides are the same value.
_REFLEXIVE = (ast.Eq, ast.Is, ast.GtE, ast.LtE)
# Stands in for a literal when two checks are compared by shape.
_LITERAL = "__literal__"


@dataclass(frozen=True)
class Expectation:
    """One check in a test: an assert, an assert* call, a parametrize case, or a value a check reads."""

    line: int
    # The check's AST, dumped: equal keys are the same check.
    key: str
    # The same with every literal blanked: equal shapes with different keys differ only in literals.
    shape: str
    text: str
    tautology: bool


Function = ast.FunctionDef | ast.AsyncFunctionDef


def expectations(fn: Function, aliases: dict[str, str]) -> tuple[Expectation, ...]:
    """Return the checks of one test function, in source order."""
    found: list[tuple[ast.AST, bool]] = []
    read: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert) and not isinstance(node.test, ast.Constant):
            # `assert True` checks nothing, so there is no expectation in it to change.
            found.append((node.test, tautological(node.test)))
            read |= _names(node.test)
        elif isinstance(node, ast.Call) and _is_assert_call(node):
            found.append((node, _tautological_call(node)))
            read |= {n for arg in node.args for n in _names(arg)}
    for node in ast.walk(fn):
        # The value an assert compares with is often bound first: `expected = [5]`.
        if isinstance(node, ast.Assign) and any(_names(t) & read for t in node.targets):
            found.append((node, False))
    for case in _parametrize_cases(fn, aliases):
        found.append((case, False))
    out = [_expectation(node, taut) for node, taut in found]
    return tuple(sorted(out, key=lambda e: e.line))


def tautological(test: ast.expr) -> bool:
    """Return True when an assert of ``test`` cannot fail: both sides identical, or always truthy.

    A bare constant (``assert True``) is left out: it is no check at all, and
    counting checks already catches it (``assert-weakened``, empty tests).
    """
    if _truthy_literal(test) and not isinstance(test, ast.Constant):
        return True
    if isinstance(test, ast.Compare):
        left = test.left
        for op, right in zip(test.ops, test.comparators, strict=False):
            if isinstance(op, _REFLEXIVE) and _same(left, right):
                return True
            if (
                isinstance(op, ast.In)
                and isinstance(right, ast.List | ast.Tuple | ast.Set)
                and any(_same(left, elt) for elt in right.elts)
            ):
                return True
            left = right
        return False
    negated = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else None
    if isinstance(negated, ast.Compare):
        # `not (a != a)`
        inner = negated
        return (
            len(inner.ops) == 1
            and isinstance(inner.ops[0], ast.NotEq | ast.IsNot)
            and _same(inner.left, inner.comparators[0])
        )
    if isinstance(test, ast.BoolOp):
        # `check or True` never fails; `a == a and b == b` neither.
        verdicts = [_truthy_literal(v) or tautological(v) for v in test.values]
        return any(verdicts) if isinstance(test.op, ast.Or) else all(verdicts)
    return False


def _tautological_call(call: ast.Call) -> bool:
    name = (dotted(call.func) or "").rsplit(".", 1)[-1].lower()
    args = call.args
    if name in ("asserttrue", "assert_") and args:
        return tautological(args[0])
    if ("equal" in name or name in ("assertis", "assert_is")) and "not" not in name and len(args) >= 2:
        return _same(args[0], args[1])
    if name == "assertin" and len(args) >= 2 and isinstance(args[1], ast.List | ast.Tuple | ast.Set):
        return any(_same(args[0], elt) for elt in args[1].elts)
    return False


def _is_assert_call(call: ast.Call) -> bool:
    name = dotted(call.func)
    return name is not None and name.rsplit(".", 1)[-1].lower().startswith("assert")


def _same(a: ast.expr, b: ast.expr) -> bool:
    # `(r := f(x)) == r` compares a value with itself under a new name.
    if isinstance(a, ast.NamedExpr):
        return (isinstance(b, ast.Name) and b.id == a.target.id) or _same(a.value, b)
    if isinstance(b, ast.NamedExpr):
        return _same(b, a)
    return ast.dump(a) == ast.dump(b)


def _truthy_literal(node: ast.expr) -> bool:
    # `assert (x == 1, "message")` asserts a non-empty tuple: always true.
    if isinstance(node, ast.Constant):
        return bool(node.value)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return bool(node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.keys)
    return False


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def parametrize_values(fn: Function, aliases: dict[str, str]) -> list[ast.List | ast.Tuple | None]:
    """Return each ``@pytest.mark.parametrize``'s argvalues node, None where it is not a literal list."""
    found: list[ast.List | ast.Tuple | None] = []
    for deco in fn.decorator_list:
        if not isinstance(deco, ast.Call):
            continue
        name = dotted(deco.func)
        if name is None or resolve(name, aliases) != "pytest.mark.parametrize":
            continue
        values = deco.args[1] if len(deco.args) > 1 else None
        for kw in deco.keywords:
            if kw.arg == "argvalues":
                values = kw.value
        found.append(values if isinstance(values, ast.List | ast.Tuple) else None)
    return found


def _parametrize_cases(fn: Function, aliases: dict[str, str]) -> list[ast.expr]:
    return [case for values in parametrize_values(fn, aliases) if values is not None for case in values.elts]


def _expectation(node: ast.AST, tautology: bool) -> Expectation:
    text = ast.unparse(node)
    if len(text) > _TEXT_CHARS:
        text = text[: _TEXT_CHARS - 3] + "..."
    return Expectation(
        line=getattr(node, "lineno", 0),
        key=ast.dump(node),
        shape=ast.dump(_Blank().visit(copy.deepcopy(node))),
        text=text,
        tautology=tautology,
    )


def _literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _literal(node.operand)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _literal(k) for k in node.keys) and all(_literal(v) for v in node.values)
    return False


class _Blank(ast.NodeTransformer):
    """Replace every literal (``4``, ``-1``, ``[4, 5]``, ``{"a": 1}``) with one placeholder name."""

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and _literal(node):
            return ast.Name(id=_LITERAL, ctx=ast.Load())
        visited: ast.AST = super().visit(node)
        return visited


@dataclass(frozen=True)
class ChangedExpectation:
    """A check of a kept test that differs from one at base only in its literals."""

    line: int
    before: str
    after: str


def compare(
    base: tuple[Expectation, ...], head: tuple[Expectation, ...]
) -> tuple[list[ChangedExpectation], list[Expectation]]:
    """Return the checks whose literals changed, and the new tautologies, of one kept test."""
    unmatched = list(base)
    added: list[Expectation] = []
    for e in head:
        twin = next((i for i, b in enumerate(unmatched) if b.key == e.key), None)
        if twin is None:
            added.append(e)
        else:
            del unmatched[twin]
    changed: list[ChangedExpectation] = []
    tautologies: list[Expectation] = []
    for e in added:
        if e.tautology:
            tautologies.append(e)
            continue
        twin = next((i for i, b in enumerate(unmatched) if b.shape == e.shape), None)
        if twin is not None:
            changed.append(ChangedExpectation(e.line, unmatched[twin].text, e.text))
            del unmatched[twin]
    return changed, tautologies
