"""The one small Protocol every shape gate satisfies, and what a gate returns.

The gates themselves are listed in :data:`checks.shape.GATES`; repository
policy (``gates.<name>``) and rubric YAML refer to them by those names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from checks.report import NOT_EXAMINED, Finding, ToolRun
from checks.runner import LayerContext
from checks.shape.cache import ShapeCache


@dataclass(frozen=True)
class GateResult:
    tool: ToolRun
    findings: tuple[Finding, ...] = field(default=())
    preexisting: int = 0
    # Things the maintainer should know that are not findings (e.g. a capped list).
    notices: tuple[str, ...] = field(default=())


class Gate(Protocol):
    """A shape gate: examines the workspace and reports findings the PR introduced.

    ``cache`` holds results kept across jobs (checks.shape.cache); a gate that keeps none ignores it.
    """

    name: str

    def run(self, ctx: LayerContext, cache: ShapeCache | None = None) -> GateResult: ...


def not_examined(tool: str, path: str, lines: frozenset[int], why: str) -> Finding:
    """Return the finding that ``tool`` did not examine changed file ``path`` whole, and why.

    Whatever a gate cannot see, the change could have hidden there: it asks a
    maintainer, never passes with a notice. It spans the file's changed ``lines``.
    """
    start, end = (min(lines), max(lines)) if lines else (0, 0)
    return Finding(
        tool=tool,
        rule=NOT_EXAMINED,
        path=path,
        start_line=start,
        end_line=end,
        severity="error",
        message=f"{tool} did not examine this changed file whole: {why}; a maintainer must read it",
        needs_maintainer=True,
    )
