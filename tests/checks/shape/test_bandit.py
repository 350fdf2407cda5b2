"""The bandit gate: its JSON parser, and real runs on a passing and a failing PR."""

from __future__ import annotations

import json

import pytest

from checks.report import ShapeResult
from checks.shape.bandit import parse_bandit
from checks.shape.container import ToolFailure
from tests.checks.shape.conftest import of, rules_at

# Trimmed from bandit 1.9 `-f json`.
BANDIT_OUTPUT = {
    "errors": [{"filename": "./s.py", "reason": "syntax error while parsing AST from file"}],
    "metrics": {"./s.py": {}, "./pkg/core.py": {"loc": 30}, "./pkg/util.py": {"loc": 9}, "_totals": {}},
    "results": [
        {
            "code": "24     subprocess.run(cmd, shell=True)\n",
            "filename": "pkg/core.py",
            "issue_confidence": "HIGH",
            "issue_severity": "HIGH",
            "issue_text": "subprocess call with shell=True identified, security issue.",
            "line_number": 24,
            "line_range": [24, 25],
            "test_id": "B602",
            "test_name": "subprocess_popen_with_shell_equals_true",
        },
        {
            "filename": "./pkg/util.py",
            "issue_confidence": "HIGH",
            "issue_severity": "LOW",
            "issue_text": "Try, Except, Pass detected.",
            "line_number": 7,
            "line_range": [7, 8],
            "test_id": "B110",
            "test_name": "try_except_pass",
        },
    ],
}


def test_parse_bandit() -> None:
    findings, unparsed, examined = parse_bandit(json.dumps(BANDIT_OUTPUT))
    assert [(f.path, f.rule, f.start_line, f.end_line, f.severity) for f in findings] == [
        ("pkg/core.py", "B602", 24, 25, "error"),
        ("pkg/util.py", "B110", 7, 8, "info"),
    ]
    assert "confidence high" in findings[0].message
    assert unparsed == ["s.py"]
    # Only files bandit read through may have their findings kept across jobs.
    assert examined == {"pkg/core.py", "pkg/util.py"}


@pytest.mark.parametrize("text", ["", "[main] ERROR something", "[]"])
def test_parse_bandit_rejects_what_is_not_its_report(text: str) -> None:
    with pytest.raises(ToolFailure):
        parse_bandit(text)


@pytest.mark.docker
def test_bandit_passes_a_clean_pr_and_keeps_moved_findings_preexisting(
    scenario: dict[str, ShapeResult],
) -> None:
    good = scenario["good"]
    run = next(t for t in good.tools if t.tool == "bandit")
    assert run.status == "ok", run.detail
    assert of(good, "bandit") == []
    # `except Exception: pass` (B110) was moved down by the PR's new lines: it is
    # counted as pre-existing, and not listed (its lines are not changed lines).
    assert good.preexisting >= 1
    assert of(good, "bandit", introduced=False) == []


@pytest.mark.docker
def test_bandit_fails_a_pr_and_its_own_config_has_no_effect(scenario: dict[str, ShapeResult]) -> None:
    bad = scenario["bad"]
    run = next(t for t in bad.tools if t.tool == "bandit")
    assert run.status == "ok", run.detail
    # The PR's .bandit and [tool.bandit] skip B602/B608; the base has no bandit config.
    assert "patchgate default" in run.detail
    found = rules_at(bad, "bandit")
    assert ("pkg/core.py", "B602") in found
    assert ("pkg/core.py", "B608") in found
    # Files bandit cannot parse are named, not a crash.
    assert "pkg/syntax.py" in run.detail
