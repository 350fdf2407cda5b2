"""Check-run annotations for findings on lines the PR changed, and verified judge FAILs.

Field rules: https://docs.github.com/en/rest/checks/runs#update-a-check-run
(`annotation_level` is notice | warning | failure; `start_column`/`end_column`
only on single-line annotations; at most 50 per request - batching is the
caller's job, see `batches`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from checks.report import Report, Severity

_T = TypeVar("_T")

Level = Literal["notice", "warning", "failure"]
BATCH_SIZE = 50
MAX_MESSAGE = 60_000

_LEVEL: dict[Severity, Level] = {"info": "notice", "warning": "warning", "error": "failure"}


@dataclass(frozen=True)
class Annotation:
    path: str
    start_line: int
    end_line: int
    level: Level
    title: str
    message: str


def render_annotations(report: Report) -> list[Annotation]:
    """Return every annotation the report carries, findings first, in a stable order."""
    out: list[Annotation] = []
    for f in sorted(report.shape.findings, key=lambda f: (f.path, f.start_line, f.tool, f.rule)):
        if not (f.introduced and f.on_changed_line) or f.start_line < 1:
            continue
        level = _LEVEL[f.shown_severity]
        out.append(
            Annotation(
                f.path,
                f.start_line,
                max(f.end_line, f.start_line),
                level,
                f"{f.tool}: {f.rule}",
                f.message,
            )
        )
    for c in report.quality.criteria:
        if c.verdict != "fail":
            continue
        for e in c.evidence:
            if e.verified and e.start_line >= 1:
                out.append(
                    Annotation(
                        e.path,
                        e.start_line,
                        max(e.end_line, e.start_line),
                        "warning" if c.severity == "advisory" else "failure",
                        f"judged: {c.id}",
                        f"{c.question}\n\n{c.reason}\n\n(judged by a model, not executed)",
                    )
                )
    return out


def batches(annotations: Sequence[_T], size: int = BATCH_SIZE) -> Iterator[list[_T]]:
    """Split annotations into GitHub-sized batches (at most 50 per request)."""
    for i in range(0, len(annotations), size):
        yield list(annotations[i : i + size])
