"""Deterministic gate functions for the service tests (``patchgate serve --gate tests.bot.pipelines:...``).

They stand in for checks.pipeline.run_pipeline without Docker. What they report
is read from ``patchgate-test.json`` in the PR's head tree, so each test scenario
is a commit: e.g. ``{"findings": 120}``, ``{"hold": "/tmp/x"}`` (wait until that
file exists, after touching ``<hold>.started``), ``{"raise": "SandboxError"}`` (or ``"RecursionError"``),
``{"behaviour": "failed"}``, ``{"hidden": [2, 3]}`` (hidden 2/3), ``{"reasons": 200}`` (200 reasons of
1000 bytes), ``{"count": "/tmp/n"}`` (append a line to that file per run: how often the PR's code ran),
``{"base_runs": "/tmp/b"}`` (append the job's base-runs store and shape cache as a JSON line),
``{"tool_error": true}`` (ruff could not run: neutral), ``{"claim_head": SHA}`` (the report names
another head, as code that forged its report would).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from checks.pipeline import PipelineInputs, Progress, ShadowSink, Stopped, VerdictSink
from checks.quality import JudgeRecord
from checks.report import (
    BehaviourResult,
    Finding,
    LayerStatus,
    QualityResult,
    Report,
    ShapeResult,
    SuiteResult,
    ToolRun,
)
from sandbox.errors import SandboxError

CONFIG = "patchgate-test.json"


def scenario(inputs: PipelineInputs) -> dict[str, object]:
    path = inputs.workspace.head_dir / CONFIG
    return json.loads(path.read_text()) if path.is_file() else {}


def findings_gate(
    inputs: PipelineInputs,
    *,
    on_progress: Progress | None = None,
    on_shadow: ShadowSink | None = None,
    on_verdict: VerdictSink | None = None,
) -> Report:
    """Report N findings (and long messages when asked), after optionally waiting on a file."""
    conf = scenario(inputs)
    hold = conf.get("hold")
    if isinstance(hold, str):
        Path(hold + ".started").touch()
        deadline = time.monotonic() + 120
        while not Path(hold).exists() and time.monotonic() < deadline:
            if why := inputs.stop():  # like the real pipeline between two layers
                raise Stopped(why)
            time.sleep(0.05)
    if isinstance(count_file := conf.get("count"), str):
        with Path(count_file).open("a") as runs:
            runs.write(f"{inputs.workspace.head_sha}\n")
    if isinstance(base_file := conf.get("base_runs"), str):
        kept = inputs.base_runs
        seen = None if kept is None else {"root": str(kept.root), "salt": kept.salt, "read": kept.read}
        shape = inputs.shape_cache
        if seen is not None and shape is not None:
            seen |= {"shape_root": str(shape.root), "shape_read": shape.read}
        with Path(base_file).open("a") as out:
            out.write(json.dumps(seen) + "\n")
    if conf.get("raise") == "SandboxError":
        raise SandboxError("scripted: the sandbox is down")
    if conf.get("raise") == "RecursionError":  # a bug of patchgate's, as a hostile file provoked one
        raise RecursionError("scripted: /srv/patchgate/work/job-7 a parser recursed")
    ws = inputs.workspace
    count = int(str(conf.get("findings", 0)))
    message = "x" * int(str(conf.get("message_bytes", 20)))
    report = Report(conclusion="neutral", base_sha=ws.base_sha, head_sha=ws.head_sha)
    report.shape = ShapeResult(
        status="failed" if count else "passed",
        findings=[
            Finding(
                tool="ruff",
                rule=f"E{i:03d}",
                path="app.py",
                start_line=i + 1,
                end_line=i + 1,
                severity="warning",
                message=f"finding {i}: {message}",
            )
            for i in range(count)
        ],
    )
    if on_progress is not None:
        on_progress("shape", report)
    hidden = conf.get("hidden")
    if isinstance(hidden, list):  # {"hidden": [passed, total]}: the numbers best of k ranks by
        passed, total = int(hidden[0]), int(hidden[1])
        status: LayerStatus = "passed" if passed == total else "failed"
        report.behaviour = BehaviourResult(
            status=status,
            suites=[
                SuiteResult(name="hidden", kind="hidden", status=status, passed=passed, failed=total - passed,
                            total=total, pass_rate=passed / total)
            ],
        )  # fmt: skip
    elif conf.get("behaviour") == "failed":
        report.behaviour = BehaviourResult(
            status="failed",
            suites=[
                SuiteResult(
                    name="hidden",
                    kind="hidden",
                    status="failed",
                    passed=1,
                    failed=2,
                    total=3,
                    pass_rate=1 / 3,
                )
            ],
        )
    else:
        report.behaviour = BehaviourResult(
            status="passed",
            suites=[
                SuiteResult(name="hidden", kind="hidden", status="passed", passed=3, total=3, pass_rate=1.0)
            ],
        )
    if on_progress is not None:
        on_progress("behaviour", report)
    report.quality = QualityResult(status="skipped", detail="no judge model configured")
    if on_shadow is not None and conf.get("shadow"):
        on_shadow(JudgeRecord(False, True, "fake/judge", "default", 1000, 20, 0.0025))
    failed = bool(count) or report.behaviour.status == "failed"
    report.conclusion = "failure" if failed else "success"
    if conf.get("tool_error"):
        report.shape.tools = [ToolRun(tool="ruff", status="error", detail="scripted: ruff crashed")]
        report.conclusion = "neutral"
    if isinstance(claimed := conf.get("claim_head"), str):
        report.head_sha = claimed
    report.reasons = [f"{count} new findings"] if count else []
    # Long reasons make even the summary's head too big for GitHub.
    report.reasons += [f"reason {i}: " + "r" * 990 for i in range(int(str(conf.get("reasons", 0))))]
    report.timings = {"shape": 0.1, "behaviour": 0.2}
    if on_progress is not None:
        on_progress("done", report)
    return report


def sandbox_gate(
    inputs: PipelineInputs,
    *,
    on_progress: Progress | None = None,
    on_shadow: ShadowSink | None = None,
    on_verdict: VerdictSink | None = None,
) -> Report:
    """Run four sandbox commands at once through the worker's runner, then report success."""
    from concurrent.futures import ThreadPoolExecutor

    from sandbox.spec import RunSpec

    spec = RunSpec(image="patchgate-base:latest", argv=("true",))
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(inputs.runner.run, [spec] * 4))
    ws = inputs.workspace
    report = Report(conclusion="success", base_sha=ws.base_sha, head_sha=ws.head_sha)
    report.reasons = [f"{sum(r.ok for r in results)} sandbox runs"]
    return report


def inputs_gate(
    inputs: PipelineInputs,
    *,
    on_progress: Progress | None = None,
    on_shadow: ShadowSink | None = None,
    on_verdict: VerdictSink | None = None,
) -> Report:
    """Report what the worker gave the pipeline for the judge: the task and the provenance, as JSON.

    Also hands one shadow verdict (with its tokens and cost) to ``on_shadow``.
    """
    if on_shadow is not None:
        on_shadow(JudgeRecord(False, True, "fake/judge", "default", 1000, 20, 0.0025))
    ws = inputs.workspace
    seen = {
        "title": inputs.given.task.title,
        "body": inputs.given.task.body,
        "issue": inputs.given.task.issue,
        "provenance": list(inputs.provenance),
        "judge": inputs.given.judge is not None,
    }
    return Report(
        conclusion="success", base_sha=ws.base_sha, head_sha=ws.head_sha, reasons=[json.dumps(seen)]
    )


def suites_gate(
    inputs: PipelineInputs,
    *,
    on_progress: Progress | None = None,
    on_shadow: ShadowSink | None = None,
    on_verdict: VerdictSink | None = None,
) -> Report:
    """Report the suites the worker resolved: their commit, their test files (as hidden n/n), or why not.

    The conclusion is the real decision's (checks.decide) on a behaviour result
    made from the suites alone, so an unreadable suites repository shows as it would.
    """
    from checks.decide import decide

    ws, suites = inputs.workspace, inputs.given.suites
    report = Report(conclusion="neutral", base_sha=ws.base_sha, head_sha=ws.head_sha)
    report.suites_commit = suites.commit
    if suites.error is not None:
        report.behaviour = BehaviourResult(status="error", detail=suites.error)
    else:
        files = sorted(p.name for p in suites.hidden.iterdir()) if suites.hidden else []
        report.behaviour = BehaviourResult(
            status="passed",
            detail="hidden files: " + ", ".join(files),
            suites=[SuiteResult(name="hidden", kind="hidden", status="passed", passed=len(files),
                                total=len(files), pass_rate=1.0)],
        )  # fmt: skip
    report.quality = QualityResult(status="skipped", detail="no judge model configured")
    decision = decide(report.shape, report.behaviour, report.quality, inputs.policy)
    report.conclusion, report.reasons = decision.conclusion, [*decision.reasons, report.behaviour.detail]
    return report
