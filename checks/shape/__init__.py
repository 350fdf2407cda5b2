"""The shape layer: does the change load, and is it clean? Only what the PR introduces counts.

Gates (each a module of this package, listed in :data:`GATES`): ``loads``,
``ruff``, ``mypy``, ``bandit``, ``semgrep``, ``hygiene`` and ``dependencies``; each satisfies
the protocol of :mod:`checks.shape.gate`. :func:`run_shape` runs the enabled ones
concurrently (the sandbox bounds how many containers run at once) and turns
their findings into one :class:`~checks.report.ShapeResult`. A gate that
breaks is an ``error`` for that tool, an infrastructure problem, never a
failure of the PR. See docs/shape.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from types import MappingProxyType

from checks.policy import Policy
from checks.report import ShapeResult, ToolRun
from checks.runner import LayerContext
from checks.shape import bandit, dependencies, loads, mypy, ruff, semgrep
from checks.shape.cache import ShapeCache
from checks.shape.container import ToolFailure
from checks.shape.gate import Gate, GateResult
from checks.shape.hygiene.gate import gate as hygiene_gate
from checks.shape.thresholds import failure_reason
from sandbox.errors import SandboxError
from sandbox.trees import TreeBoundExceeded

__all__ = ["GATES", "ShapeCache", "run_shape"]

log = logging.getLogger(__name__)

# Every shape gate, by the name policy (`gates.<name>`) and rubrics use, in the order they are
# reported: cheapest and most basic first. A new gate is one module and one line here.
GATES: Mapping[str, Gate] = MappingProxyType(
    {
        "loads": loads.gate,
        "ruff": ruff.gate,
        "mypy": mypy.gate,
        "bandit": bandit.gate,
        "semgrep": semgrep.gate,
        "hygiene": hygiene_gate,
        "dependencies": dependencies.gate,
    }
)


def _enabled(policy: Policy, name: str) -> bool:
    switch = getattr(policy.gates, name, None)
    return bool(getattr(switch, "enabled", True))


def _names(gates: Sequence[str] | None) -> list[str]:
    if gates is None:
        return list(GATES)
    unknown = sorted(set(gates) - set(GATES))
    if unknown:
        raise ValueError(f"unknown shape gate(s): {', '.join(unknown)}")
    return [n for n in GATES if n in gates]


def _run_one(name: str, ctx: LayerContext, cache: ShapeCache | None) -> GateResult:
    start = time.monotonic()
    try:
        result = GATES[name].run(ctx, cache)
    except TreeBoundExceeded:
        # The PR's tree broke a bound: its failure, decided by the pipeline, never a tool error.
        raise
    except SandboxError as exc:  # infrastructure
        result = GateResult(ToolRun(tool=name, status="error", detail=str(exc)[:2000]))
    except ToolFailure as exc:  # a timeout, an out-of-memory, a crash: perhaps the change's doing
        result = GateResult(ToolRun(tool=name, status="error", detail=str(exc)[:2000], internal=True))
    except Exception as exc:  # a bug in one gate must not take the others down, nor fail the PR
        log.exception("shape gate %s crashed", name)
        detail = f"internal error: {type(exc).__name__}: {exc}"[:2000]
        result = GateResult(ToolRun(tool=name, status="error", detail=detail, internal=True))
    if result.tool.seconds <= 0:
        seconds = round(time.monotonic() - start, 3)
        result = replace(result, tool=result.tool.model_copy(update={"seconds": seconds}))
    return result


def run_shape(
    ctx: LayerContext, *, gates: Sequence[str] | None = None, cache: ShapeCache | None = None
) -> ShapeResult:
    """Run the enabled shape gates (all registered, or just ``gates``) and judge their findings.

    ``cache`` keeps results across jobs (checks.shape.cache): semgrep's and bandit's per
    base file, mypy's incremental cache per base; None examines everything afresh.

    ``status`` is ``failed`` when a gate's introduced findings cross the
    policy's threshold, else ``error`` when a gate could not run, else
    ``passed`` (``skipped`` when policy disabled every gate).
    """
    names = _names(gates)
    runs = [n for n in names if _enabled(ctx.policy, n)]
    results: dict[str, GateResult] = {}
    if runs:
        with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="shape") as pool:
            futures = {n: pool.submit(_run_one, n, ctx, cache) for n in runs}
            results = {n: f.result() for n, f in futures.items()}

    shape = ShapeResult(status="passed")
    failed = errored = False
    for name in names:
        if name not in results:
            shape.tools.append(ToolRun(tool=name, status="skipped", detail="disabled by policy"))
            continue
        result = results[name]
        tool = result.tool
        reason = failure_reason(name, result.findings, ctx.policy.gates) if tool.status == "ok" else None
        if reason is not None:
            failed = True
            tool = tool.model_copy(update={"detail": "; ".join(d for d in (tool.detail, reason) if d)})
        errored = errored or tool.status == "error"
        shape.tools.append(tool)
        shape.findings.extend(result.findings)
        shape.preexisting += result.preexisting
        shape.notices.extend(result.notices)
    shape.internal = any(t.internal for t in shape.tools)
    if failed:
        shape.status = "failed"
    elif errored:
        shape.status = "error"
    elif not runs:
        shape.status = "skipped"
    return shape
