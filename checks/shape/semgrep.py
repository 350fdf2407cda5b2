"""The semgrep gate: patchgate's own rules (checks/rules/*.yml), never a registry, never the repo's.

semgrep runs as its OCaml command line (``--experimental``): the default one
execs back into a Python wrapper that imports some 1,800 modules and starts
semgrep-core five more times (once per rule file to validate it, then the
scan), 4-8 s of CPU before the first file is read, against 0.3 s here, with
the same results (tests/checks/shape/test_semgrep.py compares the two). From
``/src`` its targets are ``base/<path>`` and ``head/<path>``, which also
keeps any ``.semgrepignore`` in either tree out of play. Its JSON hides
matched lines ("requires login"); the comparison reads lines from the files
instead. A file's findings depend on that file alone: they are kept per
file across jobs (checks.shape.byfile).

semgrep leaves a target out of ``paths.scanned`` without an error when it
will not scan it (over ``--max-target-bytes``; ``paths.skipped`` says so only
with ``--verbose``), and a file with an error of its own was not scanned
whole: every changed file outside the settled ones is a not-examined finding.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from checks.report import Finding
from checks.shape.byfile import FileCachedGate
from checks.shape.config import SOURCES_MOUNT, STAGE_MOUNT
from checks.shape.container import Batch, ToolFailure
from checks.shape.static import Parsed, Plan, Side, Targets, check_batches
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


class _Paths(BaseModel):
    model_config = ConfigDict(extra="ignore")
    scanned: list[str] = []


class _Report(BaseModel):
    model_config = ConfigDict(extra="ignore")
    results: list[_Result] = []
    errors: list[_Error] = []
    paths: _Paths = _Paths()


def rule_id(check_id: str) -> str:
    """Return the rule's own id: semgrep prefixes it with the rule file's dotted folder."""
    return check_id.rsplit(".", 1)[-1]


def _side(path: str) -> tuple[str, str]:
    """Split ``base/<path>`` (or ``./base/<path>``) into its side and the path in that tree."""
    side, _, rest = posixpath.normpath(path).partition("/")
    return side, rest


def parse_semgrep(text: str) -> tuple[list[Finding], list[Finding], list[str], set[tuple[Side, str]]]:
    """Parse ``semgrep --json`` over ``base/...`` and ``head/...`` targets into base and head findings.

    Also returns the head files semgrep could not fully parse, and the files
    (side, path) it scanned with no error of their own. A rule or
    configuration error raises ToolFailure.
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
        side, path = _side(r.path)
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
    troubled = {_side(e.path) for e in report.errors if e.path}
    unparsed = sorted(path for side, path in troubled if side == "head")
    settled: set[tuple[Side, str]] = set()
    for scanned in report.paths.scanned:
        side, path = _side(scanned)
        if side in ("base", "head") and (side, path) not in troubled:
            settled.add(("base" if side == "base" else "head", path))
    return sides["base"], sides["head"], unparsed, settled


class SemgrepTool:
    """semgrep with patchgate's local rules over the changed files of both trees, in one start."""

    name = "semgrep"
    limits = Limits(timeout_s=420, memory_mb=2048, output_bytes=64 * 1024 * 1024)

    def plan(self, ws: Workspace, files: Targets) -> Plan:
        argv = [
            "semgrep", "scan", "--experimental", "--json", "--quiet", "--metrics=off",
            "--disable-version-check", "--config", f"{STAGE_MOUNT}/rules", "--jobs", "1", "--timeout", "30",
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
        settled: set[tuple[Side, str]] = set()
        for b in batches:
            more_base, more_head, more_unparsed, more_settled = parse_semgrep(b.stdout)
            base += more_base
            head += more_head
            unparsed += more_unparsed
            settled |= more_settled
        detail = f"could not fully parse: {', '.join(unparsed[:5])}" if unparsed else ""
        trouble = dict.fromkeys(unparsed, "semgrep reported an error on it (not parsed whole, out of time)")
        return Parsed(base, head, detail, frozenset(settled), trouble)


gate = FileCachedGate(SemgrepTool(), settles_all=True)
