"""The tests the change adds: run on head and on base, shown, counted for nothing.

They are its author's word. The change's test files (from head: the
change's, so staged with ``repotests.stage_tests``' bounds, no symlink
followed) run in-process - pytest, those tests and the change's code in one
process, in a container of their own that holds nothing else (no suite, no
other test's outcome) - so the code under test could forge what they
report. Only the ids of the tests the change added (test functions head's
files hold and base's do not) are read from those runs: on head (do they
pass?) and on base (do they fail there: do they tell the change apart?).
Whatever happens to them - a syntax error, a crash, nothing collected - is
shown on their own row and never touches the conclusion.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from checks.behaviour.errors import SuiteError
from checks.behaviour.grade import grade_suite
from checks.behaviour.outcomes import parse_log
from checks.behaviour.plan import RunPlan, Staging, Tree, plan_in_process
from checks.behaviour.repotests import added, stage_tests
from checks.behaviour.result import Note, SuiteOutcome
from checks.behaviour.suites import load_suite
from checks.behaviour.tier import outcome
from checks.behaviour.views import run_view
from checks.runner import LayerContext
from sandbox.spec import RunResult

log = logging.getLogger(__name__)

RunAll = Callable[[Sequence[RunPlan]], Mapping[RunPlan, RunResult]]
# The change's tests read from its runs at most; the rest are named in a note.
MAX_OWN_TESTS = 500


def run_own_tests(  # noqa: PLR0917 - the layer's facts, passed once
    ctx: LayerContext,
    repository: Staging | None,
    work: Path,
    harness: Path,
    trees: Mapping[Tree, Path],
    run_all: RunAll,
) -> SuiteOutcome | None:
    """Run the tests the change adds on head and base; None when it adds none (or base has no suite)."""
    if repository is None:
        return None
    try:
        staged = stage_tests(ctx.workspace.head_dir, work / "suite-own").root
        suite = load_suite(staged, "own")
    except SuiteError as exc:
        # The change's own files: what is wrong with them is shown on their row and decides nothing.
        return SuiteOutcome("own", error=f"the change's tests could not be read: {exc}")
    new = added(repository.suite.functions, suite.functions)
    if not new:
        return None
    shown = new[:MAX_OWN_TESTS]
    for path in [staged, *staged.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # read by the sandbox user in the container
    staging = Staging(suite=suite, image=ctx.image, head_image=ctx.head_image, harness=harness, staged=staged,
                      work=work, policy=ctx.policy.behaviour, messages=True)  # fmt: skip
    modules = sorted({i.partition("::")[0] for i in shown})
    plans = {
        tree: plan_in_process(
            staging, f"{tree} (the change's own tests)", tree, trees[tree], staged=staged, select=modules
        )
        for tree in ("base", "head")
    }
    results = run_all(list(plans.values()))
    views = {}
    for tree, plan in plans.items():
        result = results[plan]
        views[tree] = run_view(plan, result, parse_log(result.files.get(plan.report), plan.nonce, "pytest"),
                               suite, ctx.policy.behaviour)  # fmt: skip
    base = {i: outcome(views["base"], i) for i in shown}
    head = {i: outcome(views["head"], i) for i in shown}
    grade = grade_suite(base, [head])
    notes: tuple[Note, ...] = ()
    if len(new) > len(shown):
        more = f"{len(new) - len(shown)} more tests the change adds were not run"
        notes = (Note(more, more),)
    return SuiteOutcome("own", grade=grade, notes=notes, in_process=True,
                        wall_s=results[plans["head"]].wall_s)  # fmt: skip
