"""The dependencies gate: what the change adds to or changes in the repository's dependency files.

Both trees' dependency files are read as the environment image reads them
(``sandbox.depfiles``: requirements files, ``pyproject.toml``, ``setup.cfg``,
a literal ``setup.py``; parsed, never run; in the head tree no symlink and
nothing outside it). Per project name (PEP 503):

- ``dependency-added`` - a project base does not ask for;
- ``dependency-changed`` - the same project with another specifier or marker;
- ``dependency-removed`` - one base asks for and head does not (information);
- ``dependency-refused`` - a requirement the change adds that names a URL, a VCS
  or a local path instead of a release on the index, or a requirements-file
  option naming another package source (``--extra-index-url``, ``--find-links``,
  ``--trusted-host``): it would run code of the change's choosing at build time
  from wherever it points, so it is refused whatever the policy says.

Added and changed ones are warnings (they are shown, and block nothing) unless
the policy's ``dependencies`` says otherwise: ``allow_changes: false`` makes
each an error, and a non-empty ``allow`` list makes an error of each project
not on it. Errors fail the PR (checks.shape.thresholds).

What the change's dependencies are installed into, for its head runs, is
``checks/environment.py``'s (the head environment): a project the policy
refuses here is not installed there either.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from checks.policy import DependencyPolicy
from checks.report import Finding, Severity, ToolRun
from checks.runner import LayerContext
from checks.shape.cache import ShapeCache
from checks.shape.gate import GateResult
from sandbox.depfiles import Dependencies, Requirement, line_of, name_of, read_dependencies

TOOL = "dependencies"
MESSAGE_CHARS = 200


class DependenciesGate:
    """Compare base's and head's dependency files, project by project."""

    name = TOOL

    def run(self, ctx: LayerContext, cache: ShapeCache | None = None) -> GateResult:
        """Read both trees' dependency files; ``ctx.runner`` and ``ctx.image`` go unused."""
        start = time.monotonic()
        ws = ctx.workspace
        try:
            base, head = read_dependencies(ws.base_dir), read_dependencies(ws.head_dir)
        except (OSError, ValueError) as exc:
            detail = f"cannot read the dependency files: {exc}"
            return GateResult(ToolRun(tool=TOOL, status="error", seconds=_since(start), detail=detail))
        findings = compare(base, head, ctx.policy.dependencies, ws.head_dir)
        detail = f"{len(head.files)} dependency files read at head, {len(base.files)} at base"
        run = ToolRun(tool=TOOL, status="ok", seconds=_since(start), detail=detail)
        return GateResult(run, tuple(findings))


gate = DependenciesGate()


def compare(
    base: Dependencies, head: Dependencies, policy: DependencyPolicy, head_dir: Path
) -> list[Finding]:
    """The findings for head's dependencies against base's, in head's order then base's."""
    before = _by_name(base.requirements)
    after = _by_name(head.requirements)
    refused_before = {r.text for r in base.direct}
    findings: list[Finding] = []
    for req in head.direct:
        if req.text in refused_before:
            continue  # base asks for it already: the maintainers' choice, not the change's
        why = "names a URL, a VCS, a local path or another package source instead of a release on the index"
        findings.append(_finding(head_dir, req, "dependency-refused", "error", f"{_shown(req.text)} {why}"))
    direct_names = {name_of(r.text) for r in head.direct}
    for name, req in after.items():
        if name in direct_names:
            continue  # refused above
        old = before.get(name)
        if old is not None and old.text == req.text:
            continue
        rule = "dependency-added" if old is None else "dependency-changed"
        what = f"{_shown(req.text)} (from {req.origin})" if old is None else (
            f"{_shown(old.text)} -> {_shown(req.text)} (from {req.origin})"
        )  # fmt: skip
        severity: Severity = "warning"
        if refused := policy.refusal(name):
            severity, what = "error", f"{what}: {refused}"
        findings.append(_finding(head_dir, req, rule, severity, what))
    for name, req in before.items():
        if name not in after:
            findings.append(
                _finding(None, req, "dependency-removed", "info", f"{_shown(req.text)} (was in {req.origin})")
            )
    return findings


def _by_name(requirements: Iterable[Requirement]) -> dict[str, Requirement]:
    found: dict[str, Requirement] = {}
    for req in requirements:
        found.setdefault(name_of(req.text), req)
    return found


def _shown(text: str) -> str:
    # A requirement is the change's text: bounded, one line, in code quotes that it cannot close.
    flat = " ".join(text.split()).replace("`", "'")
    return f"`{flat[:MESSAGE_CHARS]}`"


def _finding(tree: Path | None, req: Requirement, rule: str, severity: Severity, message: str) -> Finding:
    line = line_of(tree, req) if tree is not None else 0
    return Finding(
        tool=TOOL, rule=rule, path=req.origin, start_line=line, end_line=line, severity=severity,
        message=f"{rule}: {message}",
    )  # fmt: skip


def _since(start: float) -> float:
    return round(time.monotonic() - start, 3)
