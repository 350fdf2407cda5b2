"""A tree beyond the bounds of ``sandbox.trees``, in the report: the PR's failure, never infrastructure.

Depth, entries, bytes, name and path lengths of a PR's tree are the PR's
choice; when one breaks a bound the tree is not examined further and the
change fails with the offending path named. Only the base branch breaking a
bound is different: maintainers merged it, so it asks for one of them.
No I/O here.
"""

from __future__ import annotations

from checks.report import BehaviourResult, Finding, QualityResult, Report, ShapeResult
from checks.workspace import TreeRefused
from sandbox.trees import TreeBoundExceeded, shown

# The shape "tool" whose findings are trees beyond bounds.
TREE_TOOL = "tree"


def tree_finding(exc: TreeBoundExceeded) -> Finding:
    """Return the shape finding that says which path broke which bound."""
    return Finding(
        tool=TREE_TOOL,
        rule=f"tree-{exc.bound}",
        path=shown(exc.path),
        start_line=0,
        end_line=0,
        severity="error",
        message=exc.broken,
        on_changed_line=False,
    )


def tree_reason(finding: Finding) -> str:
    """Return the line a maintainer reads first for a tree finding."""
    return f"shape: the change's tree breaks a bound: {finding.path}: {finding.message}"


def refused_report(exc: TreeRefused) -> Report:
    """Return the report on a change whose base or head tree could not be unpacked within bounds."""
    if exc.side == "base":
        reason = (
            f"the base tree breaks a bound: {exc.cause}; patchgate cannot gate changes to this "
            "branch until a maintainer brings it within bounds"
        )
        return Report(
            conclusion="action_required", reasons=[reason], base_sha=exc.base_sha, head_sha=exc.head_sha
        )
    finding = tree_finding(exc.cause)
    moot = "not run: the head tree is beyond patchgate's bounds"
    return Report(
        conclusion="failure",
        reasons=[tree_reason(finding)],
        base_sha=exc.base_sha,
        head_sha=exc.head_sha,
        shape=ShapeResult(status="failed", findings=[finding]),
        behaviour=BehaviourResult(status="skipped", detail=moot),
        quality=QualityResult(status="skipped", detail=moot),
    )
