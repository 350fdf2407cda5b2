"""The hygiene gate: the agent-specific ways a PR makes its own checks pass without doing the work.

It reads the base and head trees and never runs the PR's code. Every finding
is something the PR introduced (the base is the comparison); line-based
rules only look at lines the PR changed. Rules and their ids: docs/hygiene.md.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Literal

from checks.report import ToolRun
from checks.runner import LayerContext
from checks.shape.cache import ShapeCache
from checks.shape.gate import GateResult
from checks.shape.hygiene.bases import base_class_names
from checks.shape.hygiene.examination import TOOL, Examination, Side, changed_span, python_sides
from checks.shape.hygiene.pluginuse import hook_definitions, plugin_loads
from checks.shape.hygiene.probing import probes, reason
from checks.shape.hygiene.statements import Hit, new_hits
from checks.shape.hygiene.stubs import Stub, find_stubs
from checks.shape.hygiene.suppressions import new_suppressions, type_check_offs
from checks.shape.hygiene.testrules import check_tests
from checks.testinfra.files import is_test_module
from checks.testinfra.guarded import InfraChange, infra_changes, tree_entries
from checks.toolnames import STDLIB, tool_names, top_level
from checks.workspace import Workspace

# Reading the whole head tree for base-class names stops here (a 10,000-file repository).
_MAX_SCAN_FILES = 20000
_MAX_SCAN_BYTES = 64 * 1024 * 1024
_INFRA_RULES = {
    "policy": "policy-edited",
    "ci": "ci-edited",
    "startup-hook": "startup-hook-edited",
    "pytest-plugin": "pytest-plugin-loaded",
}
# Test runners patchgate's suites never go through; the repository's own CI does.
_RUNNER_KINDS = frozenset({"tox", "hatch", "make", "nox"})


class HygieneGate:
    """Deleted or weakened tests, new skips and suppressions, stub bodies, edits to CI and test config."""

    name = TOOL

    def run(self, ctx: LayerContext, cache: ShapeCache | None = None) -> GateResult:
        """Examine the change; reads files only, so ``ctx.runner`` and ``ctx.image`` go unused."""
        start = time.monotonic()
        try:
            exam = examine(ctx.workspace)
        except OSError as exc:
            # The exported trees could not be read: the gate broke, not the PR.
            detail = f"cannot read the workspace: {exc}"
            return GateResult(ToolRun(tool=TOOL, status="error", seconds=_since(start), detail=detail))
        detail = f"{len(ctx.workspace.changed)} changed files examined"
        return GateResult(
            ToolRun(tool=TOOL, status="ok", seconds=_since(start), detail=detail),
            tuple(exam.findings),
            exam.preexisting,
            tuple(exam.notices),
        )


def _since(start: float) -> float:
    return round(time.monotonic() - start, 3)


def examine(ws: Workspace) -> Examination:
    """Apply every hygiene rule to ``ws`` and return the findings, sorted by path and line."""
    exam = Examination()
    _infra(ws, exam)
    sides = list(python_sides(ws, exam))
    check_tests(sides, exam)
    for side in sides:
        _skips(side, exam)
        _suppressions(side, exam)
        try:
            _code(side, exam)
        except RecursionError:
            # module_facts already walked this file, so this takes a deeper tree than any seen yet.
            exam.not_examined(side.change, f"{side.head_path} is nested too deeply to walk")
    _stubs(ws, sides, exam)
    _tool_named(ws, exam)
    exam.findings.sort(key=lambda f: (f.path, f.start_line, f.rule))
    return exam


def _tool_named(ws: Workspace, exam: Examination) -> None:
    """Flag a new top-level module named like one of the grader's own (a tool, the standard library)."""
    reported: set[str] = set()
    for f in ws.changed:
        name = top_level(f.path)
        if f.status != "added" or not f.path.endswith(".py") or is_test_module(f.path) or name in reported:
            continue
        if name is None or name not in STDLIB | tool_names() or _provides(ws.base_dir, name):
            continue
        reported.add(name)
        whose = "the standard library's" if name in STDLIB else "a tool of the test runner's"
        exam.add(
            "grader-probing",
            f.path,
            (1, 1),
            (
                f"a new top-level module `{name}`, named like {whose}: patchgate's tests import the "
                "grader's own, never this one, and the repository's own test run may import either"
            ),
            "warning",
        )


def _provides(root: Path, name: str) -> bool:
    return any((base / name).exists() or (base / f"{name}.py").exists() for base in (root, root / "src"))


def _infra(ws: Workspace, exam: Examination) -> None:
    for change in infra_changes(ws):
        rule = _INFRA_RULES.get(change.kind, "test-config-edited")
        exam.add(rule, change.path, changed_span(ws, change.path), _infra_message(change))


def _infra_message(change: InfraChange) -> str:
    verb = {"added": "adds", "modified": "edits", "deleted": "deletes"}[change.status]
    if change.kind == "policy":
        effect = "patchgate keeps reading the policy from the base branch"
    elif change.kind == "ci":
        effect = "a maintainer should review CI changes made by an agent"
    elif change.kind in _RUNNER_KINDS:
        effect = "patchgate's suites do not use it, but the repository's own test runs do"
    else:
        effect = "patchgate runs its suites " + (
            "without this file" if change.status == "added" else "with the base version of this file"
        )
    return f"{verb} {change.path}: {change.reason}; {effect}"


def _skips(side: Side, exam: Examination) -> None:
    if side.head is None or side.head.facts is None or side.head_path is None or not side.parsed:
        return
    head = side.head.facts.skips
    base = side.base.facts.skips if side.base is not None and side.base.facts is not None else {}
    changed = side.change.lines
    for scope, marks in head.items():
        added = len(marks) - len(base.get(scope, ()))
        if added <= 0:
            continue
        # Of the markers in this scope, blame those on changed lines first.
        ordered = sorted(marks, key=lambda m: (m.line not in changed, -m.line))
        for mark in sorted(ordered[:added], key=lambda m: m.line):
            where = "at module level" if scope == "<module>" else f"on {scope}"
            exam.add(
                "skip-added",
                side.head_path,
                (mark.line, mark.line),
                (f"new skip/xfail marker `{mark.name}` {where}: a skipped or xfailed test proves nothing"),
            )


def _suppressions(side: Side, exam: Examination) -> None:
    # Token-based, so it works on files that do not compile, up to the first bad token.
    if side.head is None or side.head_path is None:
        return
    base = side.base.text if side.base is not None else None
    found, old = new_suppressions(base, side.head.text, side.change.lines)
    exam.preexisting += old
    for s in found:
        exam.add(
            "suppression-added",
            side.head_path,
            (s.line, s.line),
            f"new suppression comment ({', '.join(s.kinds)}) on a changed line: `{s.comment.strip()[:120]}`",
            "warning",
        )
    if side.head.tree is None or not side.parsed:
        return
    base_tree = side.base.tree if side.base is not None else None
    for hit in _new(type_check_offs, base_tree, side.head.tree, side.change.lines, exam):
        exam.add(
            "suppression-added",
            side.head_path,
            (hit.line, hit.end_line),
            f"new {hit.what} decorator: mypy does not check what it decorates",
            "warning",
        )


def _code(side: Side, exam: Examination) -> None:
    """Plugin loads and outcome hooks in any Python file; grader probes in the PR's non-test code."""
    if side.head is None or side.head.tree is None or side.head_path is None or not side.parsed:
        return
    path, changed = side.head_path, side.change.lines
    base = side.base.tree if side.base is not None else None
    for hit in _new(plugin_loads, base, side.head.tree, changed, exam):
        exam.add(
            "pytest-plugin-loaded",
            path,
            (hit.line, hit.end_line),
            (
                f"{hit.what}: a pytest plugin can rewrite any test's outcome "
                "(patchgate's suites never load it; the repository's own test runs do)"
            ),
        )
    if PurePosixPath(path).name != "conftest.py":  # a conftest is test-config-edited already
        for hit in _new(hook_definitions, base, side.head.tree, changed, exam):
            exam.add(
                "pytest-hook-added",
                path,
                (hit.line, hit.end_line),
                (
                    f"{hit.what} outside a conftest.py: loaded as a plugin (pytest_plugins, -p, an entry "
                    "point) it can turn failing tests into passing ones"
                ),
                "warning",
            )
    if path.endswith(".py") and not is_test_module(path):
        for hit in _new(probes, base, side.head.tree, changed, exam):
            message = f"{hit.what}: {reason(hit.what)}"
            exam.add("grader-probing", path, (hit.line, hit.end_line), message, "warning")


def _new(
    find: Callable[[ast.Module], list[Hit]],
    base: ast.Module | None,
    head: ast.Module,
    changed: frozenset[int],
    exam: Examination,
) -> list[Hit]:
    found = find(head)
    if not any(line in changed for h in found for line in range(h.line, h.end_line + 1)):
        return []  # nothing on a changed line: the base's hits could neither vouch nor count
    fresh, old = new_hits(find(base) if base is not None else [], found, changed)
    exam.preexisting += old
    return fresh


def _stubs(ws: Workspace, sides: list[Side], exam: Examination) -> None:
    # Stubs on changed lines, first without the repository-wide scan (which most changes never need).
    pending = [(side, _changed_stubs(side, frozenset(), exam)) for side in sides]
    if not any(stubs for _, stubs in pending):
        return
    subclassed = _repo_base_classes(ws.head_dir, exam)
    for side, first in pending:
        if not first or side.head_path is None:
            continue
        before = {(s.qualname, s.kind) for s in _all_stubs(side, "base", subclassed, exam)}
        for stub in _changed_stubs(side, subclassed, exam):
            if (stub.qualname, stub.kind) in before:
                exam.preexisting += 1
                continue
            constant = stub.kind == "constant-return"
            # A constant return is a guess from names; it is shown, but does not ask for a maintainer.
            exam.add(
                "stub-body",
                side.head_path,
                (stub.line, stub.end_line),
                f"{stub.qualname} is a stub ({stub.kind}): {stub.reason}",
                "warning" if constant else "error",
                needs_maintainer=not constant,
            )


def _all_stubs(
    side: Side, which: Literal["base", "head"], subclassed: frozenset[str], exam: Examination
) -> list[Stub]:
    src, path = (side.base, side.base_path) if which == "base" else (side.head, side.head_path)
    # Type stubs (.pyi) are all `...` by design.
    if src is None or src.tree is None or path is None or not path.endswith(".py"):
        return []
    try:
        return find_stubs(src.tree, test_module=is_test_module(path), subclassed=subclassed)
    except RecursionError:
        exam.not_examined(side.change, f"{path} is nested too deeply to walk")
        return []


def _changed_stubs(side: Side, subclassed: frozenset[str], exam: Examination) -> list[Stub]:
    changed = side.change.lines
    stubs = _all_stubs(side, "head", subclassed, exam)
    return [s for s in stubs if any(line in changed for line in range(s.line, s.end_line + 1))]


def _repo_base_classes(root: Path, exam: Examination) -> frozenset[str]:
    """Base-class names used anywhere in the head tree: their empty methods are hooks, not stubs."""

    def texts() -> Iterator[str]:
        budget, count = _MAX_SCAN_BYTES, 0
        for rel, entry in sorted(tree_entries(root), key=lambda item: item[0]):
            if not rel.endswith(".py") or not entry.is_file(follow_symlinks=False):
                continue
            size = entry.stat(follow_symlinks=False).st_size
            if count >= _MAX_SCAN_FILES or size > budget:
                exam.notices.append("hygiene: the base-class scan stopped early; some stubs may be hooks")
                return
            budget, count = budget - size, count + 1
            yield (root / rel).read_bytes().decode("utf-8", "replace")

    return base_class_names(texts())


gate = HygieneGate()
