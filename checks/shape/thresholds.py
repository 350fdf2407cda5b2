"""When a shape gate's introduced findings fail the PR, per the repository policy's thresholds."""

from __future__ import annotations

from collections.abc import Sequence

from checks.policy import Gates
from checks.report import NOT_EXAMINED, Finding, Severity

SEVERITY_RANK: dict[Severity, int] = {"info": 0, "warning": 1, "error": 2}
# Tool severities are mapped onto the report's three levels, order preserved,
# so a policy threshold in the tool's own words compares on the report's scale.
BANDIT_SEVERITY: dict[str, Severity] = {"low": "info", "medium": "warning", "high": "error"}
SEMGREP_SEVERITY: dict[str, Severity] = {"info": "info", "warning": "warning", "error": "error"}


def _at_least(findings: Sequence[Finding], floor: Severity) -> list[Finding]:
    return [f for f in findings if SEVERITY_RANK[f.severity] >= SEVERITY_RANK[floor]]


def _count(n: int, what: str) -> str:
    return f"{n} new {what}{'' if n == 1 else 's'}"


def failure_reason(gate: str, findings: Sequence[Finding], gates: Gates) -> str | None:
    """Return why ``gate``'s introduced findings fail the PR, or None when they do not.

    Pre-existing findings (``introduced`` false) never count, nor do not-examined
    ones (the decision always asks a maintainer about those). Hygiene findings
    fail only when the policy says ``on_finding: failure``; otherwise the
    decision turns them into a request for a maintainer (or a warning).
    """
    new = [f for f in findings if f.introduced and f.rule != NOT_EXAMINED]
    if not new:
        return None
    if gate == "loads":
        return f"{_count(len(new), 'load failure')}"
    if gate == "ruff":
        allowed = gates.ruff.max_new_findings
        return f"{_count(len(new), 'ruff finding')}, {allowed} allowed" if len(new) > allowed else None
    if gate == "mypy":
        errors = _at_least(new, "error")
        allowed = gates.mypy.max_new_errors
        return f"{_count(len(errors), 'mypy error')}, {allowed} allowed" if len(errors) > allowed else None
    if gate == "bandit":
        level = gates.bandit.block_severity
        blocking = _at_least(new, BANDIT_SEVERITY[level])
        return f"{_count(len(blocking), 'bandit finding')} of severity {level} or above" if blocking else None
    if gate == "semgrep":
        floor = gates.semgrep.block_severity
        blocking = _at_least(new, SEMGREP_SEVERITY[floor.lower()])
        if not blocking:
            return None
        return f"{_count(len(blocking), 'semgrep finding')} of severity {floor} or above"
    if gate == "hygiene":
        return _count(len(new), "hygiene finding") if gates.hygiene.on_finding == "failure" else None
    # A gate the policy has no thresholds for fails on new errors only.
    errors = _at_least(new, "error")
    return f"{_count(len(errors), f'{gate} error')}" if errors else None
