"""The grader's side of changed-line coverage: count what the subject says it ran (subject/tracer.py).

The subject records, the grader counts. What is recorded is an observation
of the subject, like a return value: code written against patchgate could
stop the tracer or claim lines it never ran, so the figure is shown as the
subject's word.
"""

from __future__ import annotations

from typing import Any


def counted(executed: Any, executable: dict[str, list[int]]) -> dict[str, list[int]]:
    """Return, per file, the executable changed lines that ``executed`` (the subject's word) includes."""
    out: dict[str, list[int]] = {}
    if not isinstance(executed, dict):
        return out
    for path, lines in executable.items():
        ran = executed.get(path)
        if isinstance(ran, list):
            hit = set(lines) & {n for n in ran if isinstance(n, int)}
            if hit:
                out[path] = sorted(hit)
    return out


def merge(into: dict[str, list[int]], more: dict[str, list[int]]) -> None:
    """Add ``more``'s lines to ``into``."""
    for path, lines in more.items():
        into[path] = sorted(set(into.get(path, [])) | set(lines))


def record(covered: dict[str, list[int]]) -> dict[str, Any]:
    """Return the report's lines record (a hidden suite's only: held-out runs trace nothing)."""
    return {"kind": "lines", "covered": covered}
