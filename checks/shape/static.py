"""What ruff, mypy, bandit and semgrep share: run on base and head, compare, keep what the PR introduced.

Each tool module supplies a :class:`Tool` (its sandbox steps and its output
parser); :class:`ToolGate` does the rest. A tool runs on the changed Python
files at head and on the same files at base (a renamed file under its old
name, an added file nowhere), so a finding that was already there is
recognised as pre-existing even if the change moved it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from checks.policy import ToolSwitch
from checks.report import Finding, ToolRun
from checks.runner import LayerContext
from checks.shape.cache import ShapeCache
from checks.shape.config import BASE_MOUNT, HEAD_MOUNT, TREE_MOUNT
from checks.shape.container import Batch, ToolFailure, parse_batches, run_probe, stage
from checks.shape.gate import GateResult, not_examined
from checks.shape.introduced import Comparison, compare
from checks.workspace import Workspace
from sandbox.spec import Limits, Mount

Side = Literal["base", "head"]
# Beyond this many findings per gate the rest are counted in a notice, not listed.
MAX_FINDINGS = 500
# Characters of a source line used for the comparison; longer lines are cut.
MAX_LINE_CHARS = 2000
# Larger files compare as if empty: their findings are matched on rule and message only.
MAX_SOURCE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Targets:
    """The changed Python files at head, their counterparts at base, and base -> head renames.

    ``unsafe`` are changed files left out because their names hold control
    characters (a newline would split an argument file into two arguments).
    """

    head: tuple[str, ...]
    base: tuple[str, ...]
    renames: Mapping[str, str]
    unsafe: tuple[str, ...] = ()


def safe_name(path: str) -> bool:
    """Return True when ``path`` has no control characters."""
    return not any(ord(c) < 32 or c == "\x7f" for c in path)


def targets(ws: Workspace) -> Targets:
    """Return the files a static tool examines on each side of the change."""
    files = [f for f in ws.python_files if safe_name(f.path) and safe_name(f.old_path or "")]
    unsafe = tuple(f.path for f in ws.python_files if f not in files)
    head = tuple(f.path for f in files)
    base: list[str] = []
    renames: dict[str, str] = {}
    for f in files:
        if f.status in ("added", "copied"):
            continue
        old = f.old_path or f.path
        if (ws.base_dir / old).is_file():
            base.append(old)
            if old != f.path:
                renames[old] = f.path
    return Targets(head, tuple(base), renames, unsafe)


def argument(path: str) -> str:
    """Return ``path`` as a tool argument: ``./`` first, so a file named ``-c.py`` is never an option."""
    return f"./{path}"


def plain_path(path: str) -> str:
    """Return a tool's path relative to its tree: without the mount prefix or a leading ``./``."""
    path = posixpath.normpath(path)
    for prefix in (f"{HEAD_MOUNT}/", f"{BASE_MOUNT}/", f"{TREE_MOUNT}/"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


class Lines:
    """Reads single source lines of one tree, for the comparison; never follows a link out of it."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._files: dict[str, tuple[str, ...]] = {}

    def __call__(self, path: str, line: int) -> str:
        if path not in self._files:
            self._files[path] = self._read(path)
        lines = self._files[path]
        return lines[line - 1][:MAX_LINE_CHARS] if 0 < line <= len(lines) else ""

    def _read(self, path: str) -> tuple[str, ...]:
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root) or not target.is_file():
            return ()
        try:
            if target.stat().st_size > MAX_SOURCE_BYTES:
                return ()
            data = target.read_bytes()
        except OSError:
            return ()
        return tuple(data.decode("utf-8", "replace").splitlines())


@dataclass(frozen=True)
class Plan:
    """The probe's batch steps for one tool, and a line saying how it was configured."""

    steps: list[dict[str, object]]
    detail: str


@dataclass(frozen=True)
class Parsed:
    """One tool's findings on each side (paths relative to their trees) and anything worth saying.

    ``settled`` names the files (side, path) the tool examined whole - read, parsed, no
    error or timeout of its own: only their findings may be kept for other jobs.
    """

    base: list[Finding]
    head: list[Finding]
    detail: str = ""
    settled: frozenset[tuple[Side, str]] = frozenset()
    # Head files the tool reported trouble with (path -> what it said): why one is not settled.
    trouble: Mapping[str, str] = field(default_factory=dict)


class Tool(Protocol):
    """One static tool: the probe steps that run it, and the parser of their output. Stateless."""

    name: str
    limits: Limits

    def plan(self, ws: Workspace, files: Targets) -> Plan:
        """Return the probe's batch steps; each step's ``name`` tells the parser its side."""
        ...

    def parse(self, outputs: Mapping[str, list[Batch]]) -> Parsed:
        """Turn the steps' outputs into findings; raise ToolFailure when the tool broke."""
        ...


def select(comparison: Comparison, ws: Workspace, limit: int = MAX_FINDINGS) -> tuple[list[Finding], str]:
    """Keep the introduced findings and the pre-existing ones on changed lines; cap the list.

    Pre-existing findings on lines the change touched (code it moved or
    rewrote identically) are listed with ``introduced=False`` for context; they
    never count toward a verdict.
    """
    kept = [
        f
        for f in comparison.findings
        if f.introduced or any(n in ws.changed_lines(f.path) for n in range(f.start_line, f.end_line + 1))
    ]
    kept.sort(key=lambda f: (not f.introduced, f.path, f.start_line, f.rule))
    if len(kept) <= limit:
        return kept, ""
    return kept[:limit], f"{len(kept) - limit} more findings not listed"


@dataclass(frozen=True)
class Examined:
    """What the tool found on both sides, how long it ran in the sandbox, and how it was configured."""

    parsed: Parsed
    seconds: float
    detail: str
    # Files the run collected, by container path.
    files: Mapping[str, bytes] = field(default_factory=dict)


class ToolGate:
    """A shape gate that runs one static tool on base and head and keeps what the PR introduced.

    With ``settles_all`` the tool's ``settled`` names every head file it examined whole, so a
    changed file outside it was dropped or broken off (semgrep leaves out a file over its size
    limit without an error): each is a not-examined finding, never a silent pass.
    """

    def __init__(self, tool: Tool, *, settles_all: bool = False) -> None:
        self.tool = tool
        self.name = tool.name
        self.settles_all = settles_all

    def run(self, ctx: LayerContext, cache: ShapeCache | None = None) -> GateResult:
        """Run the tool on both trees and compare the findings; ``cache`` keeps base files' results."""
        ws = ctx.workspace
        files = targets(ws)
        if not files.head:
            return GateResult(ToolRun(tool=self.name, status="skipped", detail="no changed Python files"))
        examined = self.examine_all(ctx, files, cache)
        parsed = examined.parsed
        comparison = compare(
            parsed.base,
            parsed.head,
            base_line=Lines(ws.base_dir),
            head_line=Lines(ws.head_dir),
            renames=files.renames,
            changed_lines=ws.changed_lines,
        )
        findings, capped = select(comparison, ws)
        if self.settles_all:
            findings += unsettled(self.name, ws, files.head, parsed)
        notices = [f"{self.name}: {capped}"] if capped else []
        if files.unsafe:
            shown = ", ".join(repr(p) for p in files.unsafe[:5])
            notices.append(f"{self.name}: skipped file(s) with control characters in the name: {shown}")
        detail = "; ".join(d for d in (examined.detail, parsed.detail) if d)
        # The tool's time in the sandbox, not the wait for a free sandbox slot.
        run = ToolRun(tool=self.name, status="ok", seconds=examined.seconds, detail=detail)
        return GateResult(run, tuple(findings), comparison.preexisting, tuple(notices))

    def examine_all(self, ctx: LayerContext, files: Targets, cache: ShapeCache | None) -> Examined:
        """Examine both sides: here in one sandbox run; a gate that keeps results across jobs says how."""
        return self.examine(ctx, files)

    def examine(
        self,
        ctx: LayerContext,
        files: Targets,
        *,
        trees: Sequence[Mount] | None = None,
        tool: Tool | None = None,
        probe: Mapping[str, object] | None = None,
        copy_in: Sequence[Mount] = (),
        collect: Sequence[str] = (),
    ) -> Examined:
        """Run ``tool`` (default: the gate's) over ``files`` in one sandbox run and parse its output.

        ``trees``, ``copy_in`` and ``collect`` go to run_probe; ``probe`` adds to the batch plan.
        """
        tool = tool or self.tool
        plan = tool.plan(ctx.workspace, files)
        limits, steps = budget(tool.limits, plan.steps, getattr(ctx.policy.gates, self.name, None))
        with stage() as staged:
            ran = run_probe(
                ctx, staged, {**(probe or {}), "mode": "batch", "steps": steps}, limits=limits,
                what=self.name, trees=trees, copy_in=copy_in, collect=collect,
            )  # fmt: skip
        outputs = parse_batches(ran.stdout, self.name).steps
        missing = sorted({str(step["name"]) for step in plan.steps} - set(outputs))
        if missing:
            raise ToolFailure(f"{self.name}: the probe reported nothing for {', '.join(missing)}")
        return Examined(tool.parse(outputs), ran.seconds, plan.detail, ran.files)


def unsettled(tool: str, ws: Workspace, head: Sequence[str], parsed: Parsed) -> list[Finding]:
    """Return a not-examined finding for each ``head`` file the tool did not examine whole."""
    why = f"{tool} left it out of its scan"
    return [
        not_examined(tool, path, ws.changed_lines(path), parsed.trouble.get(path, why))
        for path in head
        if ("head", path) not in parsed.settled
    ]


def budget(
    limits: Limits, steps: Sequence[dict[str, object]], switch: object
) -> tuple[Limits, list[dict[str, object]]]:
    """Apply the policy's ``timeout_s`` / ``memory_mb`` for a tool to its limits and its steps.

    ``switch`` is the tool's policy section; only a ToolSwitch carries a budget.
    The container's deadline becomes ``timeout_s`` and every step's timeout is
    scaled by the same factor, so the probe still has time to report a step
    that ran out.
    """
    update: dict[str, object] = {}
    scaled = [dict(step) for step in steps]
    if not isinstance(switch, ToolSwitch):
        return limits, scaled
    if switch.memory_mb is not None:
        update["memory_mb"] = switch.memory_mb
    if switch.timeout_s is not None:
        timeout = switch.timeout_s
        factor = timeout / limits.timeout_s
        for step in scaled:
            if "timeout" in step:
                step["timeout"] = round(float(str(step["timeout"])) * factor, 3)
        update["timeout_s"] = timeout
    return limits.model_copy(update=update), scaled


def per_side(argv: Sequence[str], files: Targets, *, timeout: float) -> list[dict[str, object]]:
    """Return one batch step per side with files, run from that tree's root."""
    sides = (("base", BASE_MOUNT, files.base), ("head", HEAD_MOUNT, files.head))
    steps: list[dict[str, object]] = []
    for side, tree, paths in sides:
        if paths:
            steps.append({"name": side, "argv": list(argv), "cwd": tree, "timeout": timeout})
            steps[-1]["files"] = [argument(p) for p in paths]
    return steps


def check_batches(tool: str, batches: Sequence[Batch], ok_codes: Sequence[int]) -> None:
    """Raise ToolFailure when a batch timed out, overflowed, or exited with an unexpected code."""
    for b in batches:
        if b.timed_out:
            raise ToolFailure(f"{tool} did not finish within its time limit")
        if b.truncated:
            raise ToolFailure(f"{tool} printed more output than patchgate reads")
        if b.exit_code == 127:
            raise ToolFailure(f"{tool} is not installed in the sandbox image: {b.stderr.strip()[-300:]}")
        if b.exit_code not in ok_codes:
            raise ToolFailure(f"{tool} failed (exit code {b.exit_code}): {b.stderr.strip()[-800:]}")
