"""Running the shape probe in the sandbox: stage its plan, mount the trees, parse what it prints.

Inside the container the base and head trees are read-only at ``/src/base``
and ``/src/head``; patchgate's probe, plan, default configurations and
semgrep rules are read-only at ``/patchgate``; only ``/tmp`` is writable.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from checks.runner import LayerContext
from checks.shape.config import BASE_MOUNT, CONTAINER_TMP, DEFAULTS_DIR, HEAD_MOUNT, RULES_DIR, STAGE_MOUNT
from sandbox.spec import Limits, Mount, RunSpec

PROBE = Path(__file__).resolve().parent / "incontainer" / "probe.py"
# semgrep must not phone home (no network anyway: this keeps it from waiting for one).
QUIET_ENV: Mapping[str, str] = {
    "SEMGREP_ENABLE_VERSION_CHECK": "0",
    "SEMGREP_SEND_METRICS": "off",
    "PYTHONDONTWRITEBYTECODE": "1",
}


class ToolFailure(Exception):
    """A tool, or the sandbox around it, failed: an infrastructure error for that tool, not a PR failure."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Batch(_Strict):
    """One invocation of a tool over one batch of files."""

    exit_code: int | None
    timed_out: bool = False
    truncated: bool = False
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0


class BatchOutput(_Strict):
    steps: dict[str, list[Batch]]


class LoadRecord(_Strict):
    side: str
    path: str
    kind: str
    line: int = Field(default=0, ge=0)
    message: str = ""


class LoadsOutput(_Strict):
    records: list[LoadRecord]
    not_examined: list[str] = Field(default_factory=list)


@contextmanager
def stage() -> Iterator[Path]:
    """Yield a fresh host folder holding the probe, the defaults and the rules, mounted at /patchgate."""
    with tempfile.TemporaryDirectory(prefix="patchgate-shape-") as tmp:
        root = Path(tmp)
        shutil.copy2(PROBE, root / "probe.py")
        shutil.copytree(DEFAULTS_DIR, root / "defaults")
        rules = root / "rules"
        rules.mkdir()
        for rule in sorted(RULES_DIR.glob("*.yml")):
            shutil.copy2(rule, rules / rule.name)
        # The sandbox user (uid 10001) reads these through a read-only bind mount.
        for path in (root, *root.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield root


@dataclass(frozen=True)
class ProbeRun:
    """What the probe printed, and how long it ran in the sandbox (not counting waiting for a slot)."""

    stdout: str
    seconds: float
    # The collected files, by container path.
    files: Mapping[str, bytes] = field(default_factory=dict)


def both_trees(ctx: LayerContext) -> tuple[Mount, ...]:
    """Return the usual mounts of a probe run: the base tree at /src/base, the head tree at /src/head."""
    return (Mount(ctx.workspace.base_dir, BASE_MOUNT), Mount(ctx.workspace.head_dir, HEAD_MOUNT))


def run_probe(
    ctx: LayerContext,
    staged: Path,
    plan: Mapping[str, Any],
    *,
    limits: Limits,
    what: str,
    trees: Sequence[Mount] | None = None,
    copy_in: Sequence[Mount] = (),
    collect: Sequence[str] = (),
    image: str | None = None,
) -> ProbeRun:
    """Run the probe with ``plan`` and return its output; raise ToolFailure when the run broke.

    ``trees`` are the read-only mounts of the trees (default: both, :func:`both_trees`); a run
    whose output is kept for other jobs mounts the base alone. ``copy_in`` and ``collect`` go to
    the RunSpec as they are; ``image`` replaces ``ctx.image``.
    """
    plan_path = staged / "plan.json"
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    plan_path.chmod(0o644)
    spec = RunSpec(
        image=image or ctx.image,
        argv=("python3", "-I", f"{STAGE_MOUNT}/probe.py", f"{STAGE_MOUNT}/plan.json"),
        mounts=(*(both_trees(ctx) if trees is None else trees), Mount(staged, STAGE_MOUNT)),
        copy_in=tuple(copy_in),
        workdir=CONTAINER_TMP,
        env=dict(QUIET_ENV),
        limits=limits,
        collect=tuple(collect),
    )
    result = ctx.runner.run(spec)
    if result.timed_out:
        raise ToolFailure(f"{what} did not finish within {limits.timeout_s:g} s")
    if result.oom_killed:
        raise ToolFailure(f"{what} ran out of memory ({limits.memory_mb} MiB)")
    if result.output_limit_exceeded:
        raise ToolFailure(f"{what} printed more than {limits.output_bytes} bytes")
    if result.exit_code != 0:
        tail = result.stderr.decode("utf-8", "replace").strip()[-1500:]
        raise ToolFailure(f"{what} failed (exit code {result.exit_code}): {tail}")
    return ProbeRun(result.stdout.decode("utf-8", "replace"), round(result.wall_s, 3), result.files)


def parse_batches(text: str, what: str) -> BatchOutput:
    """Parse the probe's report of a batch plan; raise ToolFailure when it is not one."""
    try:
        return BatchOutput.model_validate_json(text)
    except ValidationError as exc:
        raise ToolFailure(f"{what}: the probe's output is not a batch report: {_first(exc)}") from exc


def parse_loads(text: str) -> LoadsOutput:
    """Parse the probe's report of a loads plan; raise ToolFailure when it is not one."""
    try:
        return LoadsOutput.model_validate_json(text)
    except ValidationError as exc:
        raise ToolFailure(f"loads: the probe's output is not a loads report: {_first(exc)}") from exc


def _first(exc: ValidationError) -> str:
    err = exc.errors()[0]
    return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
