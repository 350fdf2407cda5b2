"""The ruff gate: lint findings the change introduces, with the base branch's ruff configuration."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from checks.report import Finding
from checks.shape.config import BASE_MOUNT, HEAD_MOUNT, ruff_config
from checks.shape.container import Batch, ToolFailure
from checks.shape.static import Parsed, Plan, Targets, ToolGate, check_batches, per_side, plain_path
from checks.workspace import Workspace
from sandbox.spec import Limits


class _Location(BaseModel):
    model_config = ConfigDict(extra="ignore")
    row: int = 1
    column: int = 1


class _Diagnostic(BaseModel):
    model_config = ConfigDict(extra="ignore")
    code: str | None = None
    message: str = ""
    filename: str
    location: _Location | None = None
    end_location: _Location | None = None


_REPORT = TypeAdapter(list[_Diagnostic])


def parse_ruff(text: str, tree: str) -> list[Finding]:
    """Parse ``ruff check --output-format json`` into findings with paths relative to ``tree``."""
    try:
        items = _REPORT.validate_json(text or "[]")
    except ValidationError as exc:
        raise ToolFailure(f"ruff printed something that is not its JSON report: {str(exc)[:300]}") from exc
    findings = []
    for d in items:
        start = d.location.row if d.location else 1
        end = d.end_location.row if d.end_location else start
        # ruff reports syntax errors without a rule code (older) or as `invalid-syntax`.
        rule = d.code or "invalid-syntax"
        findings.append(
            Finding(
                tool="ruff",
                rule=rule,
                path=plain_path(d.filename.replace(f"{tree}/", "", 1)),
                start_line=max(start, 0),
                end_line=max(end, start, 0),
                severity="error" if rule in ("invalid-syntax", "E902") else "warning",
                message=d.message,
            )
        )
    return findings


class RuffTool:
    """ruff check over the changed files, configured from the base tree (``--config``)."""

    name = "ruff"
    limits = Limits(timeout_s=300, memory_mb=1024, output_bytes=64 * 1024 * 1024)

    def plan(self, ws: Workspace, files: Targets) -> Plan:
        config = ruff_config(ws.base_dir)
        argv = [
            "ruff", "check", "--no-cache", "--output-format", "json", "--exit-zero", "--no-fix",
            *config.args,
            # Explicit paths are still excluded by the base configuration's `exclude`.
            "--force-exclude",
        ]  # fmt: skip
        return Plan(per_side(argv, files, timeout=240), f"config: {config.origin}")

    def parse(self, outputs: Mapping[str, list[Batch]]) -> Parsed:
        found: dict[str, list[Finding]] = {"base": [], "head": []}
        for side, tree in (("base", BASE_MOUNT), ("head", HEAD_MOUNT)):
            batches = outputs.get(side, [])
            check_batches("ruff", batches, ok_codes=(0,))
            for b in batches:
                found[side] += parse_ruff(b.stdout, tree)
        return Parsed(found["base"], found["head"])


gate = ToolGate(RuffTool())
