"""The loads gate: every changed Python file compiles, every changed importable module imports.

Inside the environment image (the base branch's dependencies) the probe
compiles each changed ``.py`` file at head and imports each importable one
(see :func:`checks.shape.modules.importable` for which) in its own
``python3 -I -B`` process with the head tree first on ``sys.path`` and a
timeout: ``sys.exit``, ``os._exit``, a crash or a hang at import time is a
finding for that module and nothing else. A file that fails at head is tried
at base too, so a module that already failed the same way (a dependency the
image lacks, a setting it needs) is pre-existing, not introduced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checks.report import Finding, ToolRun
from checks.runner import LayerContext
from checks.shape.cache import ShapeCache
from checks.shape.config import BASE_MOUNT, HEAD_MOUNT
from checks.shape.container import LoadRecord, parse_loads, run_probe, stage
from checks.shape.gate import GateResult
from checks.shape.introduced import compare
from checks.shape.modules import DirTree, importable
from checks.shape.static import Lines, select, targets
from checks.workspace import Workspace
from sandbox.spec import Limits

IMPORT_TIMEOUT_S = 20.0
# After this long no further module is started; the rest are named in a notice.
DEADLINE_S = 420.0
IMPORT_JOBS = 2
RULES = {
    "syntax": "syntax-error",
    "import": "import-error",
    "exit": "import-exit",
    "crash": "import-crash",
    "timeout": "import-timeout",
}


def _entry(tree: Path, mount: str, path: str) -> dict[str, Any]:
    module = importable(DirTree(tree), path)
    root = mount if module is None or not module.root else f"{mount}/{module.root}"
    return {"path": path, "tree": mount, "module": module.name if module else None, "root": root}


def plan_items(ws: Workspace) -> list[dict[str, Any]]:
    """Return the probe's items: each changed ``.py`` file at head, with its base counterpart if any."""
    items = []
    for f in ws.changed:
        # Binary-looking .py files (NUL bytes) are still Python files to the interpreter.
        if not f.path.endswith(".py") or f.status == "deleted" or not (ws.head_dir / f.path).is_file():
            continue
        item = _entry(ws.head_dir, HEAD_MOUNT, f.path)
        old = f.old_path or f.path
        if f.status not in ("added", "copied") and (ws.base_dir / old).is_file():
            item["base"] = _entry(ws.base_dir, BASE_MOUNT, old)
        items.append(item)
    return items


def to_finding(record: LoadRecord) -> Finding:
    """Turn one failed compile or import into a finding."""
    line = max(record.line, 0)
    return Finding(
        tool="loads",
        rule=RULES.get(record.kind, "load-error"),
        path=record.path,
        start_line=line,
        end_line=line,
        severity="error",
        message=record.message[:1000] or record.kind,
    )


class LoadsGate:
    """Compile and import the changed modules in the environment image."""

    name = "loads"

    def __init__(self, *, import_timeout_s: float = IMPORT_TIMEOUT_S, deadline_s: float = DEADLINE_S) -> None:
        self.import_timeout_s = import_timeout_s
        self.deadline_s = deadline_s
        # The deadline stops new imports; the run's own limit leaves room for the last ones.
        self.limits = Limits(
            timeout_s=deadline_s + 2 * import_timeout_s + 60,
            memory_mb=2048,
            pids=512,
            output_bytes=16 * 1024 * 1024,
        )

    def run(self, ctx: LayerContext, cache: ShapeCache | None = None) -> GateResult:
        """Compile and import every changed module; compare failures with the base."""
        ws = ctx.workspace
        items = plan_items(ws)
        if not items:
            return GateResult(ToolRun(tool=self.name, status="skipped", detail="no changed Python files"))
        plan = {
            "mode": "loads",
            "items": items,
            "import_timeout": self.import_timeout_s,
            "deadline": self.deadline_s,
            "jobs": IMPORT_JOBS,
        }
        with stage() as staged:
            # Head's image when the change brought dependencies of its own: its modules import them.
            probe = run_probe(ctx, staged, plan, limits=self.limits, what="loads", image=ctx.image_of("head"))
        out = parse_loads(probe.stdout)
        failed = [r for r in out.records if r.kind != "ok" and r.side in ("base", "head")]
        comparison = compare(
            [to_finding(r) for r in failed if r.side == "base"],
            [to_finding(r) for r in failed if r.side == "head"],
            base_line=Lines(ws.base_dir),
            head_line=Lines(ws.head_dir),
            renames=targets(ws).renames,
            changed_lines=ws.changed_lines,
        )
        findings, capped = select(comparison, ws)
        notices = [f"loads: {capped}"] if capped else []
        if out.not_examined:
            shown = ", ".join(out.not_examined[:10])
            late = len(out.not_examined)
            notices.append(f"loads: {late} file(s) not examined within {self.deadline_s:g} s: {shown}")
        modules = sum(1 for i in items if i["module"])
        detail = f"{len(items)} file(s) compiled, {modules} of them importable"
        # The time in the sandbox, not the wait for a free sandbox slot.
        run = ToolRun(tool=self.name, status="ok", seconds=probe.seconds, detail=detail)
        return GateResult(run, tuple(findings), comparison.preexisting, tuple(notices))


gate = LoadsGate()
