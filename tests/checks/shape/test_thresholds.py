"""Policy thresholds per gate: what makes introduced findings fail the PR."""

from __future__ import annotations

import pytest

from checks.policy import Gates
from checks.policyfile import load_policy
from checks.report import Finding, Severity
from checks.shape.thresholds import failure_reason


def f(tool: str, severity: Severity = "warning", introduced: bool = True) -> Finding:
    return Finding(
        tool=tool, rule="r", path="a.py", start_line=1, end_line=1, severity=severity, message="m",
        introduced=introduced,
    )  # fmt: skip


def gates(yaml: str = "") -> Gates:
    return load_policy(yaml or None).gates


@pytest.mark.parametrize(
    ("gate", "findings", "policy", "fails"),
    [
        # loads: any introduced failure
        ("loads", [f("loads", "error")], "", True),
        ("loads", [f("loads", "error", introduced=False)], "", False),
        ("loads", [], "", False),
        # ruff gate: more than max_new_findings
        ("ruff", [f("ruff")], "", True),
        ("ruff", [f("ruff")], "gates: {ruff: {max_new_findings: 1}}", False),
        ("ruff", [f("ruff"), f("ruff")], "gates: {ruff: {max_new_findings: 1}}", True),
        ("ruff", [f("ruff", introduced=False)] * 5, "", False),
        # mypy: new errors over max_new_errors; notes/warnings never count
        ("mypy", [f("mypy", "error")], "", True),
        ("mypy", [f("mypy", "info")], "", False),
        ("mypy", [f("mypy", "error")] * 2, "gates: {mypy: {max_new_errors: 2}}", False),
        # bandit: severity at or above block_severity (low=info, medium=warning, high=error)
        ("bandit", [f("bandit", "info")], "", False),
        ("bandit", [f("bandit", "warning")], "", True),
        ("bandit", [f("bandit", "warning")], "gates: {bandit: {block_severity: high}}", False),
        ("bandit", [f("bandit", "error")], "gates: {bandit: {block_severity: high}}", True),
        ("bandit", [f("bandit", "info")], "gates: {bandit: {block_severity: low}}", True),
        # semgrep: same on semgrep's scale
        ("semgrep", [f("semgrep", "warning")], "", True),
        ("semgrep", [f("semgrep", "info")], "", False),
        ("semgrep", [f("semgrep", "warning")], "gates: {semgrep: {block_severity: ERROR}}", False),
        ("semgrep", [f("semgrep", "error")], "gates: {semgrep: {block_severity: ERROR}}", True),
        # hygiene: only when the policy says failure
        ("hygiene", [f("hygiene")], "", False),
        ("hygiene", [f("hygiene")], "gates: {hygiene: {on_finding: warn}}", False),
        ("hygiene", [f("hygiene")], "gates: {hygiene: {on_finding: failure}}", True),
        # a gate the policy has no thresholds for: new errors only
        ("other", [f("other", "warning")], "", False),
        ("other", [f("other", "error")], "", True),
    ],
)
def test_failure_reason(gate: str, findings: list[Finding], policy: str, fails: bool) -> None:
    reason = failure_reason(gate, findings, gates(policy))
    assert (reason is not None) == fails


def test_reason_names_the_count_and_the_allowance() -> None:
    assert failure_reason("ruff", [f("ruff")] * 3, gates()) == "3 new ruff findings, 0 allowed"
    assert failure_reason("mypy", [f("mypy", "error")], gates()) == "1 new mypy error, 0 allowed"
