"""The semgrep gate: patchgate's own rules (checks/rules/*.yml), never a registry, never the repo's.

semgrep runs once over both trees (it starts slowly; one start serves base
and head): from ``/src`` its targets are ``base/<path>`` and ``head/<path>``,
which also keeps any ``.semgrepignore`` in either tree out of play. Its JSON
hides matched lines ("requires login"); the comparison reads lines from the
files instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from checks.report import Finding
from checks.shape.config import SOURCES_MOUNT, STAGE_MOUNT
from checks.shape.container import Batch, ToolFailure
from checks.shape.static import Parsed, Plan, Targets, ToolGate, check_batches
from checks.shape.thresholds import SEMGREP_SEVERITY
from checks.workspace import Workspace
from sandbox.spec import Limits


class _Position(BaseModel):
    model_config = ConfigDict(extra="ignore")
    line: int = 0


class _Extra(BaseModel):
    model_config = ConfigDict(extra="ignore")
    message: str = ""
    severity: str = "WARNING"


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore")
    check_id: str
    path: str
    start: _Position
    end: _Position
    extra: _Extra


class _Error(BaseModel):
    model_config = ConfigDict(extra="ignore")
    level: str = "error"
    type: str | list[object] = ""
    message: str = ""
    path: str | None = None


class _Report(BaseModel):
    model_config = ConfigDict(extra="ignore")
    results: list[_Result] = []
    errors: list[_Error] = []


def rule_id(check_id: str) -> str:
    """Return the rule's own id: semgrep prefixes it with the rule file's dotted folder."""
    return check_id.rsplit(".", 1)[-1]


def parse_semgrep(text: str) -> tuple[list[Finding], list[Finding], list[str]]:
    """Parse ``semgrep --json`` over ``base/...`` and ``head/...`` targets into base and head findings.

    Returns the files semgrep could not fully parse (head side) as the third
    element. A rule or configuration error raises ToolFailure.
    """
    try:
        report = _Report.model_validate(json.loads(text))
    except (ValueError, ValidationError) as exc:
        raise ToolFailure(f"semgrep printed something that is not its JSON report: {text[:200]!r}") from exc
    fatal = [e.message for e in report.errors if e.level == "error" and not e.path]
    if fatal:
        raise ToolFailure(f"semgrep failed: {'; '.join(fatal)[:800]}")
    sides: dict[str, list[Finding]] = {"base": [], "head": []}
    for r in report.results:
        side, _, path = r.path.partition("/")
        if side not in sides:
            continue
        start = max(r.start.line, 0)
        sides[side].append(
            Finding(
                tool="semgrep",
                rule=rule_id(r.check_id),
                path=path,
                start_line=start,
                end_line=max(r.end.line, start),
                severity=SEMGREP_SEVERITY.get(r.extra.severity.lower(), "warning"),
                message=" ".join(r.extra.message.split()),
            )
        )
    unparsed = sorted({e.path[5:] for e in report.errors if e.path and e.path.startswith("head/")})
    return sides["base"], sides["head"], unparsed


class SemgrepTool:
    """semgrep with patchgate's local rules over the changed files of both trees, in one start."""

    name = "semgrep"
    limits = Limits(timeout_s=420, memory_mb=2048, output_bytes=64 * 1024 * 1024)

    def plan(self, ws: Workspace, files: Targets) -> Plan:
        argv = [
            "semgrep", "scan", "--json", "--quiet", "--metrics=off", "--disable-version-check",
            "--config", f"{STAGE_MOUNT}/rules", "--jobs", "1", "--timeout", "30",
            "--max-target-bytes", "2000000",
        ]  # fmt: skip
        targets = [f"base/{p}" for p in files.base] + [f"head/{p}" for p in files.head]
        step = {"name": "both", "argv": argv, "cwd": SOURCES_MOUNT, "files": targets, "timeout": 360}
        return Plan([step], "rules: patchgate's checks/rules")

    def parse(self, outputs: Mapping[str, list[Batch]]) -> Parsed:
        batches = outputs.get("both", [])
        check_batches("semgrep", batches, ok_codes=(0,))
        base: list[Finding] = []
        head: list[Finding] = []
        unparsed: list[str] = []
        for b in batches:
            more_base, more_head, more_unparsed = parse_semgrep(b.stdout)
            base += more_base
            head += more_head
            unparsed += more_unparsed
        detail = f"could not fully parse: {', '.join(unparsed[:5])}" if unparsed else ""
        return Parsed(base, head, detail)


gate = ToolGate(SemgrepTool())
