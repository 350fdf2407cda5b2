"""The semgrep gate: its JSON parser, and real runs on a passing and a failing PR."""

from __future__ import annotations

import json

import pytest

from checks.report import ShapeResult
from checks.shape.container import ToolFailure
from checks.shape.semgrep import parse_semgrep, rule_id
from tests.checks.shape.conftest import of, rules_at


def result(path: str, line: int, check_id: str = "patchgate.rules.swallowed-exception") -> dict[str, object]:
    return {
        "check_id": check_id,
        "path": path,
        "start": {"line": line, "col": 1, "offset": 0},
        "end": {"line": line + 3, "col": 9, "offset": 40},
        "extra": {"message": "A broad\n  `except`", "severity": "WARNING", "lines": "requires login"},
    }


def test_parse_semgrep_splits_base_and_head() -> None:
    report = {
        "results": [result("base/pkg/a.py", 5), result("head/pkg/a.py", 9), result("elsewhere/x.py", 1)],
        "errors": [
            {"level": "warn", "type": "Syntax error", "message": "bad", "path": "head/pkg/s.py"},
            {"level": "warn", "type": "Syntax error", "message": "bad", "path": "base/pkg/s.py"},
        ],
        "paths": {"scanned": ["base/pkg/a.py", "./head/pkg/a.py", "head/pkg/s.py", "head/pkg/b.py"]},
    }
    base, head, unparsed, settled = parse_semgrep(json.dumps(report))
    assert [(f.path, f.start_line, f.end_line) for f in base] == [("pkg/a.py", 5, 8)]
    assert [(f.path, f.rule, f.severity, f.message) for f in head] == [
        ("pkg/a.py", "swallowed-exception", "warning", "A broad `except`")
    ]
    assert unparsed == ["pkg/s.py"]
    # Scanned with no error of their own: the files whose findings may be kept across jobs.
    assert settled == {("base", "pkg/a.py"), ("head", "pkg/a.py"), ("head", "pkg/b.py")}


def test_a_rule_error_is_a_tool_failure() -> None:
    report = {
        "results": [],
        "errors": [{"level": "error", "type": "Rule parse error", "message": "bad rule"}],
    }
    with pytest.raises(ToolFailure, match="bad rule"):
        parse_semgrep(json.dumps(report))


@pytest.mark.parametrize("text", ["", "Login required", "[]"])
def test_parse_semgrep_rejects_what_is_not_its_report(text: str) -> None:
    with pytest.raises(ToolFailure):
        parse_semgrep(text)


@pytest.mark.parametrize(
    ("check_id", "expected"),
    [("patchgate.rules.sql-format", "sql-format"), ("sql-format", "sql-format")],
)
def test_rule_id_drops_the_folder_prefix(check_id: str, expected: str) -> None:
    assert rule_id(check_id) == expected


@pytest.mark.docker
def test_semgrep_passes_a_clean_pr_and_keeps_moved_findings_preexisting(
    scenario: dict[str, ShapeResult],
) -> None:
    good = scenario["good"]
    run = next(t for t in good.tools if t.tool == "semgrep")
    assert run.status == "ok", run.detail
    # The base's `except Exception: pass` moved down by three lines: not new.
    assert of(good, "semgrep") == []


@pytest.mark.docker
def test_semgrep_fails_a_pr_despite_its_semgrepignore(scenario: dict[str, ShapeResult]) -> None:
    bad = scenario["bad"]
    run = next(t for t in bad.tools if t.tool == "semgrep")
    assert run.status == "ok", run.detail
    # The PR adds a .semgrepignore of "*"; semgrep still sees every changed file.
    assert rules_at(bad, "semgrep") == {
        ("pkg/core.py", "shell-format"),
        ("pkg/core.py", "sql-format"),
        ("pkg/core.py", "swallowed-exception"),
        ("pkg/duration.py", "optional-regex-guard"),
    }
    # The pre-existing `except Exception: pass` in pkg/core.py is not among the new ones.
    swallowed = [f for f in of(bad, "semgrep") if f.rule == "swallowed-exception"]
    assert [f.start_line for f in swallowed] == [33]
