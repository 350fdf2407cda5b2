"""The hygiene gate: the agent-specific ways a PR makes its own checks pass without doing the work.

It reads the base and head trees and never runs the PR's code. Every finding
is something the PR introduced (the base is the comparison); line-based
rules only look at lines the PR changed. Rules and their ids: docs/hygiene.md.
"""

from __future__ import annotations

import ast
import difflib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from checks.gate import GateContext, GateResult, register
from checks.report import Finding, Severity, ToolRun
from checks.shape.pysource import SourceTooLarge, decode_source, parse_module, read_source
from checks.shape.stubs import Stub, base_class_names, find_stubs
from checks.shape.suppressions import new_suppressions
from checks.shape.testcode import ChangedTestModule, ModuleFacts, match_tests, module_facts
from checks.testfiles import is_test_module
from checks.testinfra import InfraChange, infra_changes, tree_entries
from checks.workspace import ChangedFile, Workspace

TOOL = "hygiene"
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


@dataclass
class Examination:
    """Everything the hygiene rules found in one change."""

    findings: list[Finding] = field(default_factory=list)
    # Suppressions and stubs on changed lines that the base already had.
    preexisting: int = 0
    notices: list[str] = field(default_factory=list)

    def add(
        self, rule: str, path: str, lines: tuple[int, int], message: str,
        severity: Severity = "error", *, needs_maintainer: bool = True,
    ) -> None:
        self.findings.append(Finding(
            tool=TOOL, rule=rule, path=path, start_line=lines[0], end_line=lines[1],
            severity=severity, message=message, introduced=True, needs_maintainer=needs_maintainer,
        ))


class HygieneGate:
    """Deleted or weakened tests, new skips and suppressions, stub bodies, edits to CI and test config."""

    name = TOOL

    def run(self, ctx: GateContext) -> GateResult:
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
    sides = list(_python_sides(ws, exam))
    _tests(sides, exam)
    for side in sides:
        _skips(side, exam)
        _suppressions(side, exam)
    _stubs(ws, sides, exam)
    exam.findings.sort(key=lambda f: (f.path, f.start_line, f.rule))
    return exam


@dataclass(frozen=True)
class _Source:
    """One side of a Python file; ``tree`` and ``facts`` are None when it does not compile."""

    text: str
    tree: ast.Module | None
    facts: ModuleFacts | None


@dataclass(frozen=True)
class _Side:
    """One changed Python file at base and head; a side is None when the file is absent there."""

    change: ChangedFile
    base_path: str | None
    head_path: str | None
    base: _Source | None
    head: _Source | None

    @property
    def parsed(self) -> bool:
        """Return True when every side that exists compiled, so AST rules can compare them."""
        return all(src.tree is not None for src in (self.base, self.head) if src is not None)


def _base_path(f: ChangedFile) -> str | None:
    if f.status in ("added", "copied"):
        return None
    return f.old_path if f.status == "renamed" and f.old_path else f.path


def _source(raw: bytes | None, path: str | None, exam: Examination) -> _Source | None:
    if raw is None:
        return None
    text, tree = decode_source(raw), parse_module(raw)
    if tree is None:
        return _Source(text, None, None)
    try:
        return _Source(text, tree, module_facts(tree))
    except RecursionError:
        exam.notices.append(f"hygiene: {path} is nested too deeply to examine")
        return _Source(text, None, None)


def _python_sides(ws: Workspace, exam: Examination) -> Iterator[_Side]:
    for f in ws.changed:
        if f.binary:
            continue
        base_path = _base_path(f)
        head_path = None if f.status == "deleted" else f.path
        if not any(p is not None and p.endswith((".py", ".pyi")) for p in (base_path, head_path)):
            continue
        try:
            base_raw = read_source(ws.base_dir, base_path)
            head_raw = read_source(ws.head_dir, head_path)
        except SourceTooLarge as exc:
            exam.notices.append(f"hygiene: {exc} is too large to examine")
            continue
        base, head = _source(base_raw, base_path, exam), _source(head_raw, head_path, exam)
        yield _Side(f, base_path, head_path, base, head)


def line_after_removal(base: str, head: str, base_line: int, *, max_middle: int = 400) -> int:
    """Return the head line that stands where ``base_line`` of ``base`` was.

    A removed line maps to the first head line after the removal (what replaced
    it, or what followed it), so an annotation lands on the spot of the deletion.
    The lines both sides share at the start and the end are matched in linear
    time; only a changed middle of at most ``max_middle`` lines a side is diffed
    (difflib is superlinear, and the PR's author writes both files), a longer one
    maps to its first line.
    """
    a, b = base.split("\n"), head.split("\n")
    if b and b[-1] == "":
        b.pop()
    if a and a[-1] == "":
        a.pop()
    last = max(len(b), 1)
    index = base_line - 1
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    if index < prefix:
        return min(index + 1, last)
    if index >= len(a) - suffix:
        return min(index - (len(a) - len(b)) + 1, last)
    middle_a, middle_b = a[prefix : len(a) - suffix], b[prefix : len(b) - suffix]
    if len(middle_a) > max_middle or len(middle_b) > max_middle:
        return min(prefix + 1, last)
    for tag, i1, i2, j1, _j2 in difflib.SequenceMatcher(None, middle_a, middle_b).get_opcodes():
        if i1 <= index - prefix < i2:
            offset = index - prefix - i1 if tag == "equal" else 0
            return min(prefix + j1 + offset + 1, last)
    return min(prefix + 1, last)


def _changed_span(ws: Workspace, path: str) -> tuple[int, int]:
    lines = ws.changed_lines(path)
    return (min(lines), max(lines)) if lines else (0, 0)


def _infra(ws: Workspace, exam: Examination) -> None:
    for change in infra_changes(ws):
        rule = _INFRA_RULES.get(change.kind, "test-config-edited")
        exam.add(rule, change.path, _changed_span(ws, change.path), _infra_message(change))


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


def _tests(sides: list[_Side], exam: Examination) -> None:
    files = []
    for side in sides:
        if not side.parsed:
            continue  # a file that does not compile is the loads gate's finding
        base_is_test = side.base_path is not None and is_test_module(side.base_path)
        head_is_test = side.head_path is not None and is_test_module(side.head_path)
        if not (base_is_test or head_is_test):
            continue
        base = side.base.facts.tests if base_is_test and side.base and side.base.facts else {}
        head = side.head.facts.tests if head_is_test and side.head and side.head.facts else {}
        files.append(ChangedTestModule(side.base_path, side.head_path, base, head))
    kept, lost = match_tests(files)
    texts = {(side.base_path, side.head_path): side for side in sides}
    for gone in lost:
        where = f"{gone.base_path}:{gone.test.line}"
        pair = texts.get((gone.base_path, gone.head_path))
        if gone.head_path is None or pair is None or pair.base is None or pair.head is None:
            # Nothing at head to point at: the summary lists it, no annotation.
            message = f"deletes test {gone.test.qualname} ({where}) along with its file"
            exam.add("test-deleted", gone.head_path or gone.base_path, (0, 0), message)
            continue
        line = line_after_removal(pair.base.text, pair.head.text, gone.test.line)
        message = f"deletes test {gone.test.qualname} (was {where})"
        exam.add("test-deleted", gone.head_path, (line, line), message)
    for k in kept:
        span = (k.head.line, k.head.end_line)
        if k.head.asserts < k.base.asserts:
            exam.add("assert-weakened", k.head_path, span, (
                f"test {k.head.qualname} checks less: {k.base.asserts} assertion(s) at base, "
                f"{k.head.asserts} now (assert, pytest.raises/warns, assert* calls)"
            ))
        if k.base.cases is not None and k.head.cases is not None and k.head.cases < k.base.cases:
            exam.add("cases-removed", k.head_path, span, (
                f"test {k.head.qualname} runs fewer parametrized cases: "
                f"{k.base.cases} at base, {k.head.cases} now"
            ))


def _skips(side: _Side, exam: Examination) -> None:
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
            exam.add("skip-added", side.head_path, (mark.line, mark.line), (
                f"new skip/xfail marker `{mark.name}` {where}: a skipped or xfailed test proves nothing"
            ))


def _suppressions(side: _Side, exam: Examination) -> None:
    # Token-based, so it works on files that do not compile, up to the first bad token.
    if side.head is None or side.head_path is None:
        return
    base = side.base.text if side.base is not None else None
    found, old = new_suppressions(base, side.head.text, side.change.lines)
    exam.preexisting += old
    for s in found:
        exam.add("suppression-added", side.head_path, (s.line, s.line), (
            f"new suppression comment ({', '.join(s.kinds)}) on a changed line: `{s.comment.strip()[:120]}`"
        ), "warning")


def _stubs(ws: Workspace, sides: list[_Side], exam: Examination) -> None:
    # Stubs on changed lines, first without the repository-wide scan (which most changes never need).
    pending = [(side, _changed_stubs(side, frozenset(), exam)) for side in sides]
    if not any(stubs for _, stubs in pending):
        return
    subclassed = _repo_base_classes(ws.head_dir, exam)
    for side, first in pending:
        if not first or side.head_path is None:
            continue
        before = {(s.qualname, s.kind) for s in _all_stubs(side.base, side.base_path, subclassed, exam)}
        for stub in _changed_stubs(side, subclassed, exam):
            if (stub.qualname, stub.kind) in before:
                exam.preexisting += 1
                continue
            constant = stub.kind == "constant-return"
            # A constant return is a guess from names; it is shown, but does not ask for a maintainer.
            exam.add(
                "stub-body", side.head_path, (stub.line, stub.end_line),
                f"{stub.qualname} is a stub ({stub.kind}): {stub.reason}",
                "warning" if constant else "error", needs_maintainer=not constant,
            )


def _all_stubs(
    src: _Source | None, path: str | None, subclassed: frozenset[str], exam: Examination
) -> list[Stub]:
    # Type stubs (.pyi) are all `...` by design.
    if src is None or src.tree is None or path is None or not path.endswith(".py"):
        return []
    try:
        return find_stubs(src.tree, test_module=is_test_module(path), subclassed=subclassed)
    except RecursionError:
        exam.notices.append(f"hygiene: {path} is nested too deeply to examine")
        return []


def _changed_stubs(side: _Side, subclassed: frozenset[str], exam: Examination) -> list[Stub]:
    changed = side.change.lines
    stubs = _all_stubs(side.head, side.head_path, subclassed, exam)
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


register(HygieneGate())
