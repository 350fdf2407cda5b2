"""The shape layer: does the change load, and is it clean? Only what the PR introduces counts.

Gates (each a module registered in :data:`checks.gate.GATES`): ``loads``,
``ruff``, ``mypy``, ``bandit``, ``semgrep`` (this package) and ``hygiene``
(:mod:`checks.shape.hygiene`). :func:`run_shape` runs the enabled ones
concurrently (the sandbox bounds how many containers run at once) and turns
their findings into one :class:`~checks.report.ShapeResult`. A gate that
breaks is an ``error`` for that tool, an infrastructure problem, never a
failure of the PR. See docs/shape.md.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from checks.gate import GATES, GateContext, GateResult
from checks.policy import Policy
from checks.report import ShapeResult, ToolRun
from checks.shape import bandit, loads, mypy, ruff, semgrep
from checks.shape.container import ToolFailure
from checks.shape.thresholds import failure_reason
from sandbox.errors import SandboxError
from sandbox.trees import TreeBoundExceeded

__all__ = ["ORDER", "bandit", "loads", "mypy", "ruff", "run_shape", "semgrep"]

log = logging.getLogger(__name__)

# The order gates are reported in: cheapest and most basic first.
ORDER = ("loads", "ruff", "mypy", "bandit", "semgrep", "hygiene")


def _register_hygiene() -> None:
    # The hygiene gate lives in its own module; importing it registers it.
    try:
        importlib.import_module("checks.shape.hygiene")
    except ModuleNotFoundError as exc:
        if exc.name != "checks.shape.hygiene":
            raise


def _enabled(policy: Policy, name: str) -> bool:
    switch = getattr(policy.gates, name, None)
    return bool(getattr(switch, "enabled", True))


def _names(policy: Policy, gates: Sequence[str] | None) -> list[str]:
    known = set(GATES) | set(type(policy.gates).model_fields)
    if gates is None:
        wanted = known
    else:
        unknown = sorted(set(gates) - known)
        if unknown:
            raise ValueError(f"unknown shape gate(s): {', '.join(unknown)}")
        wanted = set(gates)
    return sorted(wanted, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def _run_one(name: str, ctx: GateContext) -> GateResult:
    start = time.monotonic()
    gate = GATES.get(name)
    try:
        if gate is None:
            raise ToolFailure(f"no {name} gate is installed")
        result = gate.run(ctx)
    except TreeBoundExceeded:
        # The PR's tree broke a bound: its failure, decided by the pipeline, never a tool error.
        raise
    except (ToolFailure, SandboxError) as exc:
        result = GateResult(ToolRun(tool=name, status="error", detail=str(exc)[:2000]))
    except Exception as exc:  # a bug in one gate must not take the others down, nor fail the PR
        log.exception("shape gate %s crashed", name)
        detail = f"internal error: {type(exc).__name__}: {exc}"[:2000]
        result = GateResult(ToolRun(tool=name, status="error", detail=detail))
    if result.tool.seconds <= 0:
        seconds = round(time.monotonic() - start, 3)
        result = replace(result, tool=result.tool.model_copy(update={"seconds": seconds}))
    return result


def run_shape(ctx: GateContext, *, gates: Sequence[str] | None = None) -> ShapeResult:
    """Run the enabled shape gates (all registered, or just ``gates``) and judge their findings.

    ``status`` is ``failed`` when a gate's introduced findings cross the
    policy's threshold, else ``error`` when a gate could not run, else
    ``passed`` (``skipped`` when policy disabled every gate).
    """
    _register_hygiene()
    names = _names(ctx.policy, gates)
    runs = [n for n in names if _enabled(ctx.policy, n)]
    results: dict[str, GateResult] = {}
    if runs:
        with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="shape") as pool:
            futures = {n: pool.submit(_run_one, n, ctx) for n in runs}
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
    if failed:
        shape.status = "failed"
    elif errored:
        shape.status = "error"
    elif not runs:
        shape.status = "skipped"
    return shape
