"""One run's outcomes per test id, from its parsed log and how the run ended (pure)."""

from __future__ import annotations

from checks.behaviour.cases import judge
from checks.behaviour.grade import TestOutcome
from checks.behaviour.outcomes import RunLog, RunView
from checks.behaviour.plan import RunPlan
from checks.behaviour.suites import Suite
from checks.policy import Behaviour
from sandbox.spec import Limits, RunResult

PIDS_LIMIT = Limits().pids


def run_view(plan: RunPlan, result: RunResult, run_log: RunLog, suite: Suite, policy: Behaviour) -> RunView:
    """Return every test's outcome in this run, and what to assume for the tests it did not report."""
    ended: TestOutcome | None = None
    if result.limit_hit == "pids":
        ended = TestOutcome("error", f"the run hit its process limit ({PIDS_LIMIT} processes) and was ended")
    elif result.limit_hit == "memory":
        ended = TestOutcome("error", f"the run hit its memory limit ({policy.memory_mb} MiB) and was ended")
    elif result.timed_out:
        budget = f"the run used up its time budget of {plan.spec.limits.timeout_s:g}s"
        ended = TestOutcome("timeout", budget, timed_out=True)
    elif result.oom_killed:
        ended = TestOutcome("error", f"the run ran out of memory ({policy.memory_mb} MiB)")
    elif result.output_limit_exceeded:
        ended = TestOutcome("error", "the run exceeded the sandbox's output limit")
    if ended is not None:
        default = ended
    elif run_log.finished:
        default = TestOutcome("missing", "not collected or not reported")
    else:
        default = TestOutcome("missing", f"not run: the process ended early (exit code {result.exit_code})")
    died = ended or TestOutcome("error", "the process running the tests died during this one")
    if plan.part == "cases":
        specs = {c.id: c for c in suite.cases}
        outcomes = {i: judge(specs[i], rec) for i, rec in run_log.cases.items() if i in specs}
    else:
        outcomes = dict(run_log.tests)
    broken = {
        p.path: TestOutcome("skipped" if p.skipped else "error",
                            f"the module {'was skipped' if p.skipped else 'failed to import'}: {p.message}")
        for p in run_log.collect_problems
    }  # fmt: skip
    distrust = None
    if run_log.problems:
        distrust = TestOutcome("error", f"the run's report was not believed: {run_log.problems[0]}")
    return RunView(
        label=plan.label,
        outcomes=outcomes,
        reported=run_log.reported,
        broken_modules=broken,
        unfinished={i: died for i in run_log.unfinished},
        default=default,
        distrust=distrust,
    )
