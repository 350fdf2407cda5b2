"""One gate run: shape and behaviour side by side, then quality with the mutants, then the decision.

A later layer never hides an earlier one, and trouble inside a layer (the
sandbox broke, a tool crashed, the judge is down) makes that layer `error`,
which the decision turns into `neutral`, never into `failure`. A tree of the
PR's that breaks a bound (TreeBoundExceeded) is the opposite: that layer
`failed`, with the path named (see checks.refusal).

The mutants of the changed lines (suite strength) run after the verdict's
own runs, while the judge reads; their figures may lower the conclusion
(a floor breached: action_required), never raise it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TypeVar

from checks import quality
from checks.behaviour.baseruns import BaseRuns
from checks.behaviour.layer import start_behaviour
from checks.behaviour.strength import PendingMutants
from checks.behaviour.suites import Suites
from checks.decide import decide, settle
from checks.environment import HeadEnvironment, head_environment, with_head_environment
from checks.policy import Policy
from checks.quality.inputs import JudgeSettings, QualityInputs, Task
from checks.refusal import tree_finding
from checks.report import (
    BehaviourResult,
    Conclusion,
    Finding,
    QualityResult,
    Report,
    ShapeResult,
    StrengthResult,
)
from checks.runner import ChangeContext, LayerContext, Runner
from checks.shape import ShapeCache, run_shape
from checks.workspace import Workspace
from sandbox.errors import SandboxError
from sandbox.spec import RunResult, RunSpec
from sandbox.trees import TreeBoundExceeded

log = logging.getLogger(__name__)

Progress = Callable[[str, Report], None]
# Receives each shadow verdict paired with execution's, tokens and cost included.
ShadowSink = Callable[[quality.JudgeRecord], None]
# Receives the verdict before the mutants run (policy strength.report_first); its conclusion may
# still be lowered by them.
VerdictSink = Callable[[Report], None]
_R = TypeVar("_R", ShapeResult, BehaviourResult, QualityResult)
_T = TypeVar("_T")


@dataclass(frozen=True)
class Given:
    """What the layers are given beyond the change: the suites (behaviour), the task and the judge (quality).

    The same record whoever runs the pipeline: the service reads it from the PR and the suites
    repository, ``patchgate run`` from its arguments (``bot.cli.local.LocalRun``).
    """

    suites: Suites = field(default_factory=Suites)
    task: Task = field(default_factory=Task)
    # None: no judge configured, quality is reported as skipped.
    judge: JudgeSettings | None = None


@dataclass(frozen=True)
class PipelineInputs:
    """What one gate run is given: the change, the policy, the sandbox, and each layer's inputs."""

    workspace: Workspace
    policy: Policy
    runner: Runner
    given: Given = field(default_factory=Given)
    # Clean base runs of the suites kept across jobs (checks.behaviour.baseruns); None: run every one.
    base_runs: BaseRuns | None = None
    # Shape results kept across jobs by content (checks.shape.cache); None: examine everything afresh.
    shape_cache: ShapeCache | None = None
    # Stable id of this run (delivery/PR/sha); used for deterministic shadow sampling.
    run_key: str = ""
    # Judge verdicts cached by (rubric hash, model, content hash), and the stored shadow
    # verdicts that give the judge its measured false-acceptance rate.
    verdict_cache: quality.VerdictCache | None = None
    judge_records: Sequence[quality.JudgeRecord] = ()
    # Who wrote the change: the PR's author, commit authors and Co-authored-by trailers
    # (checks.quality.provenance). Never shown to the judge; it sets the self-preference note.
    provenance: tuple[str, ...] = ()
    # Asked before every sandbox run and layer: a reason (superseded, PR closed) makes the pipeline
    # raise checks.pipeline.Stopped instead of going on (and paying the judge).
    stop: Callable[[], str | None] = field(default=lambda: None, repr=False)


class Stopped(Exception):
    """The caller asked the run to stop; there is no report."""


@dataclass(frozen=True)
class _Stoppable:
    """The sandbox, asking before every run whether the caller wants the pipeline to stop.

    A layer's remaining runs then fail at once (the layer reports an error that
    nobody sees) and the next layer boundary raises Stopped.
    """

    inner: Runner
    stop: Callable[[], str | None]

    def run(self, spec: RunSpec) -> RunResult:
        if why := self.stop():
            raise Stopped(why)
        return self.inner.run(spec)


def _checkpoint(inputs: PipelineInputs, before: str) -> None:
    reason = inputs.stop()
    if reason:
        log.info("stopping before %s: %s", before, reason)
        raise Stopped(reason)


def error_report(
    reason: str, conclusion: Conclusion = "neutral", *, base_sha: str = "", head_sha: str = ""
) -> Report:
    """Return a report for a run that could not gate the change at all (bad policy, no sandbox)."""
    return Report(conclusion=conclusion, reasons=[reason], base_sha=base_sha, head_sha=head_sha)


def mark_changed_lines(findings: list[Finding], ws: Workspace) -> list[Finding]:
    """Set ``on_changed_line`` from the workspace: only those findings may become annotations."""
    marked = []
    for f in findings:
        lines = ws.changed_lines(f.path)
        hit = any(line in lines for line in range(f.start_line, max(f.end_line, f.start_line) + 1))
        marked.append(f.model_copy(update={"on_changed_line": hit}))
    return marked


def _guard(
    layer: str,
    make_error: Callable[[str], _R],
    refuse: Callable[[TreeBoundExceeded], _R],
    fn: Callable[[], _R],
) -> _R:
    try:
        return fn()
    except Stopped:
        raise
    except TreeBoundExceeded as exc:
        # The PR's tree, not the gate: its failure, with the path named.
        log.info("%s: the tree breaks a bound: %s", layer, exc)
        return refuse(exc)
    except SandboxError as exc:
        log.warning("%s: sandbox failure: %s", layer, exc)
        return make_error(f"sandbox failure: {exc}")
    except Exception as exc:
        # A bug in a gate never fails the PR, and never passes it: the change's content may be what
        # provoked it (a 1,200-deep TOML array raised RecursionError), so a maintainer decides.
        log.exception("%s: internal error", layer)
        result = make_error(f"internal error: {type(exc).__name__}")
        result.internal = True
        return result


def run_pipeline(
    inputs: PipelineInputs,
    *,
    on_progress: Progress | None = None,
    on_shadow: ShadowSink | None = None,
    on_verdict: VerdictSink | None = None,
    image: str | None = None,
) -> Report:
    """Gate one change and return the report; ``image`` skips building the environment image.

    ``on_shadow(record)`` receives the
    judge's shadow verdict on a sampled PR that failed behaviour (calibration).
    ``on_verdict(report)`` receives a copy of the report before the mutants
    run, its strength marked pending, when policy ``strength.report_first``
    is true and there are mutants to run.
    Raises Stopped when ``inputs.stop()`` gives a reason between two layers.
    """
    # The behaviour layer's work folder (head tree, staged suite) lives until the mutants have run.
    with ExitStack() as keep:
        return _gate(
            inputs, keep, on_progress=on_progress, on_shadow=on_shadow, on_verdict=on_verdict, image=image
        )


def _gate(
    inputs: PipelineInputs,
    keep: ExitStack,
    *,
    on_progress: Progress | None,
    on_shadow: ShadowSink | None,
    on_verdict: VerdictSink | None,
    image: str | None,
) -> Report:
    ws, policy = inputs.workspace, inputs.policy
    report = Report(
        conclusion="neutral",
        base_sha=ws.base_sha,
        head_sha=ws.head_sha,
        suites_commit=inputs.given.suites.commit,
    )
    timings = report.timings

    def progress(stage: str) -> None:
        if on_progress is not None:
            on_progress(stage, report)

    if not ws.changed:
        report.reasons = ["the change is empty: base and head have the same files"]
        return report

    if image is None:
        start = time.monotonic()
        try:
            from sandbox.envimage import ensure_env_image

            image = ensure_env_image(ws.base_dir)
        except SandboxError as exc:
            return error_report(
                f"environment image: {exc}", "neutral", base_sha=ws.base_sha, head_sha=ws.head_sha
            )
        timings["environment image"] = time.monotonic() - start
    start = time.monotonic()
    try:
        head_env = head_environment(ws, policy.dependencies, image)
    except SandboxError as exc:
        reason = f"environment image for the change's dependencies: {exc}"
        return error_report(reason, "neutral", base_sha=ws.base_sha, head_sha=ws.head_sha)
    if head_env.image or head_env.failed:
        timings["head environment image"] = time.monotonic() - start
    ctx = LayerContext(ws, policy, _Stoppable(inputs.runner, inputs.stop), image, head_env.image)

    _checkpoint(inputs, "shape")
    pending: list[PendingMutants] = []
    # Behaviour does not wait for shape: neither reads the other's result, the two share the
    # sandbox's slots (so neither sits idle while the other's last run finishes), and a stop
    # request ends both at their next sandbox run. Leaving the block waits for behaviour (its
    # runs read the trees), whatever shape raised.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="behaviour-layer") as alongside:
        behaviour = alongside.submit(
            _timed,
            lambda: _guard(
                "behaviour",
                lambda d: BehaviourResult(status="error", detail=d),
                _refused_behaviour,
                lambda: _behaviour(inputs, ctx, keep, pending, head_env),
            ),
        )
        report.shape, timings["shape"] = _timed(
            lambda: _guard(
                "shape",
                lambda d: ShapeResult(status="error", notices=[d]),
                lambda exc: ShapeResult(status="failed", findings=[tree_finding(exc)]),
                lambda: _shape(ctx, inputs.shape_cache),
            )
        )
        report.shape = with_head_environment(report.shape, head_env)
        report.shape.findings = mark_changed_lines(report.shape.findings, ws)
        report.shape.notices = [*ws.notices, *head_env.notices, *report.shape.notices]
        for tool in report.shape.tools:
            timings[f"shape: {tool.tool}"] = tool.seconds
        progress("shape")
        report.behaviour, behaviour_s = behaviour.result()  # raises Stopped
    if inputs.given.suites.held_out is not None:
        # The layer's time includes the held-out runs', which the code under test chooses.
        report.private_timings["behaviour"] = behaviour_s
    else:
        timings["behaviour"] = behaviour_s
    progress("behaviour")

    _checkpoint(inputs, "quality")
    # The mutants (only after behaviour passed, as the judge) run while the judge reads: neither
    # needs the other, and the judge waits on the network, not on the sandbox. Leaving the block
    # waits for them (their runs read the head tree), whatever raised.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mutants") as alongside:
        measured = report.behaviour.strength
        mutants = alongside.submit(_timed, lambda: _measure(pending[0], measured)) if pending else None
        report.quality, timings["quality"] = _timed(
            lambda: _guard(
                "quality",
                lambda d: QualityResult(status="unavailable", detail=f"unavailable: {d}"),
                lambda exc: QualityResult(status="failed", detail=f"the change's tree breaks a bound: {exc}"),
                lambda: _quality(inputs, report.behaviour, on_shadow),
            )
        )
        decision = decide(report.shape, report.behaviour, report.quality, policy)
        report.conclusion = decision.conclusion
        report.reasons = list(decision.reasons)
        if mutants is not None:
            if policy.strength.report_first and on_verdict is not None:
                on_verdict(report.model_copy(deep=True))
            _checkpoint(inputs, "strength")
            strength, timings["strength"] = mutants.result()  # raises Stopped
            # The figures may lower the first conclusion, never raise it.
            report.behaviour = report.behaviour.model_copy(update={"strength": strength})
            later = decide(report.shape, report.behaviour, report.quality, policy)
            settled = settle(decision, later)
            report.conclusion = settled.conclusion
            report.reasons = list(settled.reasons)
            progress("strength")
    progress("done")
    return report


def _measure(pending: PendingMutants, measured: StrengthResult) -> StrengthResult:
    """Run the mutants; a sandbox failure or a bug leaves the figures measured so far, never a verdict."""
    try:
        return pending.measure(measured)
    except Stopped:
        raise
    except SandboxError as exc:
        log.warning("strength: sandbox failure: %s", exc)
        return measured.model_copy(
            update={"pending": False, "detail": f"mutants not run: sandbox failure: {exc}"}
        )
    except Exception as exc:  # a bug in a gate must never fail the PR
        log.exception("strength: internal error")
        detail = f"mutants not run: internal error: {type(exc).__name__}: {exc}"
        return measured.model_copy(update={"pending": False, "detail": detail})


def _refused_behaviour(exc: TreeBoundExceeded) -> BehaviourResult:
    return BehaviourResult(status="failed", detail=f"the change's tree breaks a bound: {exc}")


def _timed(fn: Callable[[], _T]) -> tuple[_T, float]:
    """Return what ``fn`` returns and the seconds it took."""
    start = time.monotonic()
    result = fn()
    return result, time.monotonic() - start


def _shape(ctx: LayerContext, cache: ShapeCache | None) -> ShapeResult:
    return run_shape(ctx, cache=cache)


def _behaviour(
    inputs: PipelineInputs,
    ctx: LayerContext,
    keep: ExitStack,
    pending: list[PendingMutants],
    head_env: HeadEnvironment,
) -> BehaviourResult:
    if head_env.failed is not None:
        # Head without its dependencies would fail for want of them: no numbers, the shape says why.
        return BehaviourResult(
            status="skipped", detail="not run: the change's dependencies could not be installed"
        )
    # start_behaviour answers "skipped" or "error" itself when there is nothing to run.
    result, mutants = start_behaviour(ctx, inputs.given.suites, keep, inputs.base_runs)
    if mutants is not None:
        pending.append(mutants)
    return result


def _quality(
    inputs: PipelineInputs, behaviour: BehaviourResult, on_shadow: ShadowSink | None
) -> QualityResult:
    policy = inputs.policy.quality
    if not policy.enabled:
        return QualityResult(status="skipped", detail="disabled by policy")
    if inputs.given.judge is None:
        return QualityResult(status="skipped", detail="no judge model configured")
    passed = behaviour.status == "passed"
    # Quality and the shadow verdict share one judge time budget; the shown result goes first.
    judge = inputs.given.judge.started()
    result = QualityResult(status="skipped", detail="runs only when behaviour passes")
    if passed:
        result = quality.run_quality(
            ChangeContext(inputs.workspace, inputs.policy),
            QualityInputs(
                inputs.given.task,
                judge,
                inputs.verdict_cache,
                records=inputs.judge_records,
                provenance=inputs.provenance,
            ),
        )
    # Shadow the judge on a sample of PRs whose execution verdict is known, failing and passing
    # alike: its agreement with execution (false acceptance and false rejection) is measured,
    # never shown on the PR.
    if (
        behaviour.status in ("passed", "failed")
        and on_shadow is not None
        and quality.should_shadow(inputs.run_key or inputs.workspace.head_sha, policy.shadow_sample_rate)
    ):
        record = quality.run_shadow(inputs.workspace, inputs.policy, inputs.given.task, judge).record(passed)
        if record is not None:
            on_shadow(record)
    return result
