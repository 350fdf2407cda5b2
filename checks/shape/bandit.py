"""The bandit gate: security findings the change introduces, with the base branch's bandit configuration.

bandit's findings in a file depend on that file alone: they are kept per file
across jobs (checks.shape.byfile).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from checks.report import Finding
from checks.shape.byfile import FileCachedGate
from checks.shape.config import bandit_config
from checks.shape.container import Batch, ToolFailure
from checks.shape.static import Parsed, Plan, Side, Targets, check_batches, per_side, plain_path
from checks.shape.thresholds import BANDIT_SEVERITY
from checks.workspace import Workspace
from sandbox.spec import Limits


class _Issue(BaseModel):
    model_config = ConfigDict(extra="ignore")
    filename: str
    line_number: int = 0
    line_range: list[int] = []
    test_id: str = ""
    test_name: str = ""
    issue_severity: str = "LOW"
    issue_confidence: str = "LOW"
    issue_text: str = ""


class _Error(BaseModel):
    model_config = ConfigDict(extra="ignore")
    filename: str = ""
    reason: str = ""


class _Report(BaseModel):
    model_config = ConfigDict(extra="ignore")
    results: list[_Issue] = []
    errors: list[_Error] = []
    # Per file examined (and "_totals"): which files bandit read through.
    metrics: dict[str, object] = {}


def parse_bandit(text: str) -> tuple[list[Finding], list[str], set[str]]:
    """Parse ``bandit -f json`` into findings, the files it could not parse, and those it examined whole."""
    try:
        report = _Report.model_validate(json.loads(text))
    except (ValueError, ValidationError) as exc:
        raise ToolFailure(f"bandit printed something that is not its JSON report: {text[:200]!r}") from exc
    findings = []
    for issue in report.results:
        start = max(issue.line_number, 0)
        end = max([start, *issue.line_range])
        severity = BANDIT_SEVERITY.get(issue.issue_severity.lower(), "warning")
        confidence = issue.issue_confidence.lower()
        findings.append(
            Finding(
                tool="bandit",
                rule=issue.test_id or "bandit",
                path=plain_path(issue.filename),
                start_line=start,
                end_line=end,
                severity=severity,
                message=f"{issue.issue_text} ({issue.test_name}, confidence {confidence})",
            )
        )
    errors = [plain_path(e.filename) for e in report.errors]
    examined = {plain_path(name) for name in report.metrics if name != "_totals"} - set(errors)
    return findings, errors, examined


class BanditTool:
    """bandit over the changed files, configured from the base tree (``--ini`` / ``-c``)."""

    name = "bandit"
    limits = Limits(timeout_s=300, memory_mb=1024, output_bytes=64 * 1024 * 1024)

    def plan(self, ws: Workspace, files: Targets) -> Plan:
        config = bandit_config(ws.base_dir)
        argv = ["bandit", "-f", "json", "-q", *config.args]
        return Plan(per_side(argv, files, timeout=240), f"config: {config.origin}")

    def parse(self, outputs: Mapping[str, list[Batch]]) -> Parsed:
        found: dict[str, list[Finding]] = {"base": [], "head": []}
        unparsed: list[str] = []
        settled: set[tuple[Side, str]] = set()
        sides: tuple[Side, ...] = ("base", "head")
        for side in sides:
            batches = outputs.get(side, [])
            # bandit exits 1 when it found something.
            check_batches("bandit", batches, ok_codes=(0, 1))
            for b in batches:
                findings, errors, examined = parse_bandit(b.stdout)
                found[side] += findings
                settled |= {(side, path) for path in examined}
                if side == "head":
                    unparsed += errors
        detail = f"could not parse {len(unparsed)} file(s): {', '.join(unparsed[:5])}" if unparsed else ""
        return Parsed(found["base"], found["head"], detail, frozenset(settled))


gate = FileCachedGate(BanditTool())
