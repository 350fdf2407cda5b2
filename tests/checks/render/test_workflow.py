"""Workflow commands for GitHub Actions annotations (pure)."""

from __future__ import annotations

from checks.render.workflow import render_workflow_commands
from checks.report import Finding, Report, ShapeResult


def report(*findings: Finding) -> Report:
    return Report(conclusion="failure", shape=ShapeResult(status="failed", findings=list(findings)))


def finding(message: str, path: str = "pkg/mod.py", **extra: object) -> Finding:
    return Finding(tool="ruff", rule="F401", path=path, start_line=3, end_line=4, severity="error",
                   message=message, **extra)  # type: ignore[arg-type]  # fmt: skip


def test_one_line_per_annotation_with_level_and_place() -> None:
    out = render_workflow_commands(report(finding("unused import"), finding("old", introduced=False)))
    assert out.count("\n") == 1
    assert out.startswith("::error file=pkg/mod.py,line=3,endLine=4,title=")
    assert out.rstrip().endswith("::unused import")


def test_a_message_cannot_start_a_command_of_its_own() -> None:
    hostile = "boom\n::add-mask::x\r\n::error file=evil.py::forged 100%"
    out = render_workflow_commands(report(finding(hostile, path="a,b:c.py")))
    assert out.count("\n") == 1  # one command, whatever the message holds
    assert "%0A::add-mask::x%0D%0A::error" in out and "100%25" in out
    assert "file=a%2Cb%3Ac.py," in out
