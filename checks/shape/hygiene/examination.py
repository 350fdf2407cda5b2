"""The hygiene gate's view of a change: each changed Python file, read and parsed once, and the findings.

Every rule reads the same `Side` of a file (base and head, parsed when they
compile) and adds to the same `Examination`. Reads files only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from checks.report import NOT_EXAMINED, Finding, Severity
from checks.shape.gate import not_examined
from checks.shape.hygiene.pysource import (
    MAX_SOURCE_BYTES,
    SourceTooLarge,
    decode_source,
    import_aliases,
    parse_module,
    read_source,
)
from checks.shape.hygiene.testcode import ModuleFacts, module_facts
from checks.testinfra.files import is_test_module
from checks.workspace import ChangedFile, Workspace

TOOL = "hygiene"


@dataclass
class Examination:
    """Everything the hygiene rules found in one change."""

    findings: list[Finding] = field(default_factory=list)
    # Suppressions and stubs on changed lines that the base already had.
    preexisting: int = 0
    notices: list[str] = field(default_factory=list)

    def add(
        self,
        rule: str,
        path: str,
        lines: tuple[int, int],
        message: str,
        severity: Severity = "error",
        *,
        needs_maintainer: bool = True,
    ) -> None:
        self.findings.append(
            Finding(
                tool=TOOL,
                rule=rule,
                path=path,
                start_line=lines[0],
                end_line=lines[1],
                severity=severity,
                message=message,
                introduced=True,
                needs_maintainer=needs_maintainer,
            )
        )

    def not_examined(self, change: ChangedFile, why: str) -> None:
        """Record that the rules could not examine ``change`` whole: a maintainer's finding, once a file."""
        if not any(f.rule == NOT_EXAMINED and f.path == change.path for f in self.findings):
            self.findings.append(not_examined(TOOL, change.path, change.lines, why))


@dataclass(frozen=True)
class Source:
    """One side of a Python file; ``tree`` and ``facts`` are None when it does not compile."""

    text: str
    tree: ast.Module | None
    facts: ModuleFacts | None
    # Local names and the dotted names they were imported as.
    aliases: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Side:
    """One changed Python file at base and head; a side is None when the file is absent there."""

    change: ChangedFile
    base_path: str | None
    head_path: str | None
    base: Source | None
    head: Source | None

    @property
    def parsed(self) -> bool:
        """Return True when every side that exists compiled, so AST rules can compare them."""
        return all(src.tree is not None for src in (self.base, self.head) if src is not None)


def _base_path(f: ChangedFile) -> str | None:
    if f.status in ("added", "copied"):
        return None
    return f.old_path if f.status == "renamed" and f.old_path else f.path


def _source(raw: bytes | None, path: str | None, change: ChangedFile, exam: Examination) -> Source | None:
    if raw is None:
        return None
    text, tree = decode_source(raw), parse_module(raw)
    if tree is None:
        return Source(text, None, None)
    try:
        aliases = import_aliases(tree)
        # Only a test module's tests and helpers are ever compared (checks.shape.hygiene.testrules).
        tests = path is not None and is_test_module(path)
        return Source(text, tree, module_facts(tree, tests=tests, aliases=aliases), aliases)
    except RecursionError:
        # The AST rules skip a file unless both sides parsed: neither side is examined.
        exam.not_examined(change, f"{path} is nested too deeply to walk")
        return Source(text, None, None)


def python_sides(ws: Workspace, exam: Examination) -> Iterator[Side]:
    """Read and parse both sides of every changed Python file; one it cannot examine is a finding."""
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
            # Padding a file past the bound would otherwise hide whatever it holds from every rule.
            exam.not_examined(f, f"{exc} is over {MAX_SOURCE_BYTES // 2**20} MiB, too large to read")
            continue
        base, head = _source(base_raw, base_path, f, exam), _source(head_raw, head_path, f, exam)
        yield Side(f, base_path, head_path, base, head)


def changed_span(ws: Workspace, path: str) -> tuple[int, int]:
    """Return the first and last changed line of ``path``, or (0, 0) when none (a deleted file)."""
    lines = ws.changed_lines(path)
    return (min(lines), max(lines)) if lines else (0, 0)
