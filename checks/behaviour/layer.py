"""The behaviour layer: run the hidden and held-out suites on base once and on head twice, then grade.

Every run is a fresh container (see ``plan.py``); its outcomes come from
the report file our plugin or case runner wrote (see ``outcomes.py``). A
suite that cannot run as written is a gate configuration problem (status
``error``), never a failure of the change; a change that makes the suite's
tests crash, vanish, skip or hang fails those tests.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Protocol, TypeVar

from checks.behaviour.baseruns import BaseRuns, keepable
from checks.behaviour.changedlines import executable_changes
from checks.behaviour.differential import DiffPlan, Where, plan_differential, read_differential, suite_seed
from checks.behaviour.diffresult import Source
from checks.behaviour.errors import NoTests, SuiteError
from checks.behaviour.graderuns import grade_runs
from checks.behaviour.outcomes import parse_log
from checks.behaviour.owners import module_names, suite_shadows, unservable_changes
from checks.behaviour.owntests import run_own_tests
from checks.behaviour.plan import (
    RunPlan,
    Staging,
    Tree,
    parts,
    plan_collection,
    plan_one,
    plan_runs,
    stage_suite,
    write_harness,
)
from checks.behaviour.refactor import refactor_seed, touched
from checks.behaviour.repotests import has_tests, rewritten, stage_tests
from checks.behaviour.result import SuiteOutcome, behaviour_result, with_differential
from checks.behaviour.strength import PendingMutants, measure_strength
from checks.behaviour.suites import Suite, Suites, load_suite
from checks.behaviour.support import edited_support, stage_support
from checks.behaviour.tamper import restore_infra
from checks.behaviour.tier import candidates, measure
from checks.behaviour.views import run_view
from checks.policy import Behaviour
from checks.report import SUITE_LABELS, BehaviourResult, DifferentialResult, SuiteKind
from checks.runner import LayerContext, Runner
from sandbox.spec import RunResult, RunSpec
from sandbox.trees import scratch

log = logging.getLogger(__name__)

# Runs in flight at once; the sandbox enforces its own limit as well.
PARALLEL_RUNS = 2
# The suites whose differential files run: the server-side ones (a repository's are its data).
_DIFF_SOURCES: dict[SuiteKind, Source] = {"hidden": "hidden", "held_out": "held_out"}


def run_behaviour(ctx: LayerContext, suites: Suites, base_runs: BaseRuns | None = None) -> BehaviourResult:
    """Run the suites against base and head in the sandbox, grade the change and measure its strength.

    Raises SandboxError when the sandbox itself fails (the pipeline reports
    that as infrastructure trouble).
    """
    with ExitStack() as keep:
        result, pending = start_behaviour(ctx, suites, keep, base_runs)
        if pending is None:
            return result
        return result.model_copy(update={"strength": pending.measure(result.strength)})


def nothing_to_run(
    policy: Behaviour, suites: Suites, *, repository_tests: bool = False
) -> BehaviourResult | None:
    """The layer's result when it has nothing to run (off, the suites unreadable, none); else None.

    ``repository_tests``: base holds tests of its own (``repotests.has_tests``). The one copy of
    these rules: the pipeline and ``run_behaviour`` both go through ``start_behaviour``, which asks
    this first.
    """
    if not policy.enabled:
        return BehaviourResult(status="skipped", detail="disabled by policy")
    if suites.error is not None:
        return BehaviourResult(status="error", detail=suites.error)
    if policy.repository_tests == "required" and not repository_tests:
        detail = "behaviour.repository_tests is required, but the base tree holds no tests"
        return BehaviourResult(status="error", detail=detail)
    ours = repository_tests and policy.repository_tests != "off"
    if suites.hidden is None and suites.held_out is None and not ours:
        return BehaviourResult(status="skipped", detail="no hidden or held-out suites in the test store")
    return None


def start_behaviour(
    ctx: LayerContext, suites: Suites, keep: ExitStack, base_runs: BaseRuns | None = None
) -> tuple[BehaviourResult, PendingMutants | None]:
    """Run the suites and grade the change; return the mutant runs still to do, if any.

    The layer's work folder (the head tree, the staged suite) lives until
    ``keep`` closes: the pipeline runs the mutants beside the judge. With
    ``base_runs``, a base run stored under the same key is reused instead of
    run, and a clean new one is stored (``baseruns.py``). Raises SandboxError
    when the sandbox itself fails.
    """
    policy = ctx.policy.behaviour
    ws = ctx.workspace
    repository = policy.repository_tests != "off" and has_tests(ws.base_dir)
    idle = nothing_to_run(policy, suites, repository_tests=repository)
    if idle is not None:
        return idle, None
    kinds: list[tuple[SuiteKind, Path | None]] = [("hidden", suites.hidden), ("held_out", suites.held_out)]
    wanted = [(kind, path) for kind, path in kinds if path is not None]
    # The head copy is the PR's tree: removed without recursion, never raising over the result.
    work = keep.enter_context(scratch("patchgate-behaviour-"))
    outcomes: dict[SuiteKind, SuiteOutcome] = {}
    if repository:
        # Base's tests, conftest and pytest settings (trusted): the change's edits to them never run here.
        try:
            wanted.append(("repository", stage_tests(ws.base_dir, work / "suite-repository").root))
        except SuiteError as exc:
            outcomes["repository"] = _config_error("repository", str(exc))
    head_tree, restored = restore_infra(ctx.workspace, work / "head")
    trees: dict[Tree, Path] = {"base": ctx.workspace.base_dir, "head": head_tree}
    # The suite whose head runs trace the change's lines and whose mutants measure its strength.
    strongest: SuiteKind = "hidden" if suites.hidden is not None else "repository"
    jobs: list[tuple[Suite, list[RunPlan]]] = []
    stagings: dict[SuiteKind, Staging] = {}
    # pytest's own collection of each isolated suite on base, in-process: what isolation may not see.
    collections: dict[SuiteKind, RunPlan] = {}
    harness = write_harness(work / "harness", policy)
    # Differential suites: one head run each, the references in the grader (differential.py).
    diff_plans: dict[Source, DiffPlan] = {}
    executable = executable_changes(ctx.workspace, head_tree)
    modules = tuple(module_names(*trees.values()))
    # Changes the tests cannot reach, for a maintainer (support modules the change edits).
    untested: list[str] = []
    for kind, path in wanted:
        try:
            suite = load_suite(path, kind, ws.base_dir, modules)
        except SuiteError as exc:
            if kind != "repository" or not isinstance(exc, NoTests):
                outcomes[kind] = _config_error(kind, str(exc))
            # else: base's test folders hold no test pytest would collect: there is no such suite
            continue
        staging = Staging(
            suite=suite,
            image=ctx.image,
            head_image=ctx.head_image,
            harness=harness,
            # The repository's tests are staged already: a snapshot of base made for this run.
            staged=path if kind == "repository" else stage_suite(suite, work / f"suite-{kind}"),
            work=work,
            policy=policy,
            # The repository's tests are the agent's to read anyway: their messages are shown.
            messages=kind == "repository"
            or (kind == "hidden" and policy.show_hidden_failures == "ids+messages"),
            modules=modules,
            # Changed-line coverage is the subject's own report: measured for the suite of the strength.
            lines=executable.lines if kind == strongest else {},
            support_dir=stage_support(suite.support, work / f"support-{kind}"),
        )
        untested += edited_support(suite.support, ws.changed)
        stagings[kind] = staging
        # The server-side suites' differential files (a repository's test folders hold none: its data).
        source = _DIFF_SOURCES.get(kind)
        if suite.diffs and policy.differential.enabled and source is not None:
            seed = suites.differential_seed or suite_seed(staging.staged, ctx.workspace.base_sha)
            where = Where.of(staging, suite.diffs, ctx.workspace.base_dir)
            diff_plans[source] = plan_differential(where, head_tree, suite.diffs, seed)
        if not parts(suite):
            continue  # differential files only: no test runs to grade
        plans = [plan for part in parts(suite) for plan in plan_runs(staging, part, trees)]
        jobs.append((suite, plans))
        if not suite.in_process and suite.pytest_files:
            collections[kind] = plan_collection(staging, trees["base"])
    # Not compared with base (a refactor's changed functions inputs cannot be drawn for): said so.
    left_out: list[DifferentialResult] = []
    if policy.differential.enabled and policy.differential.is_refactor(list(suites.labels), suites.title):
        where = Where(ctx.image_of("head"), harness, work, policy, base=ctx.workspace.base_dir)
        refactor, skipped = _refactor(ctx, where, head_tree, stagings, suites.differential_seed)
        if refactor is not None:
            diff_plans["base"] = refactor
        elif skipped is not None:
            left_out.append(skipped)
    if not jobs and not outcomes and not diff_plans:
        detail = "no hidden or held-out suites, and no test of base's that pytest would collect"
        return BehaviourResult(status="skipped", detail=detail), None
    stored = _StoredBase(base_runs, ctx.image, stagings)
    jobs = [(suite, [stored.lookup(suite, plan) for plan in plans]) for suite, plans in jobs]
    collections = {kind: stored.lookup(stagings[kind].suite, plan) for kind, plan in collections.items()}
    every = [*(p for _, plans in jobs for p in plans), *collections.values()]
    todo: list[RunPlan | DiffPlan] = [*(p for p in every if p not in stored.found), *diff_plans.values()]
    ran = _run_all(ctx.runner, todo)
    results = {**{p: r for p, r in ran.items() if isinstance(p, RunPlan)}, **stored.found}
    for suite, plans in jobs:
        stored.keep(suite, [*plans, *([collections[suite.kind]] if suite.kind in collections else [])],
                    results, policy)  # fmt: skip
        try:
            collected = _collected(suite, collections.get(suite.kind), results)
            outcome = grade_runs(suite, plans, results, trees, policy, in_process=collected)
            again = _base_again(stagings[suite.kind], outcome, trees)
            graded = [*plans, *again]
            if again:
                # Flakiness is decided by trusted runs: base again, for the parts with a flaky test.
                results.update(_run_all(ctx.runner, again))
                outcome = grade_runs(suite, graded, results, trees, policy, in_process=collected)
            if not suite.in_process and suite.pytest_files and outcome.grade is not None:
                # What the isolation cannot carry, measured in-process, decided by base (tier.py).
                ids = candidates(outcome.pytest_ids, outcome.base_passed, outcome.head_passed,
                                 outcome.slow_to_cross)  # fmt: skip
                tier = measure(stagings[suite.kind], trees, ids, lambda runs: _run_all(ctx.runner, runs),
                               uncollectable=outcome.uncollectable)  # fmt: skip
                if tier is not None:
                    outcome = grade_runs(suite, graded, results, trees, policy,
                                         tier=tier, in_process=collected)  # fmt: skip
        except SuiteError as exc:
            outcome = _config_error(suite.kind, str(exc))
        if any(plan in stored.found for plan in plans):
            outcome = dataclasses.replace(outcome, base_reused=True)
        if suite.kind == "repository" and outcome.grade is not None and outcome.grade.regressions:
            edited = rewritten(outcome.grade.regressions, trees["base"], ws.head_dir)
            outcome = dataclasses.replace(outcome, rewritten=edited)
        shadowed = suite_shadows(suite.names, stagings[suite.kind].modules)
        if shadowed is not None and outcome.grade is not None:
            outcome = dataclasses.replace(outcome, notes=(*outcome.notes, shadowed))
        outcomes[suite.kind] = outcome
    if policy.own_tests == "run":
        try:
            own = run_own_tests(ctx, stagings.get("repository"), work, harness, trees,
                                lambda runs: _run_all(ctx.runner, runs))  # fmt: skip
        except Exception as exc:  # they count for nothing: whatever they raise stays on their row
            log.exception("the change's own tests")
            own = SuiteOutcome("own", error=f"the change's tests could not be run: {type(exc).__name__}")
        if own is not None:
            outcomes["own"] = own
    ordered = [outcomes[kind] for kind in ("hidden", "held_out", "repository", "own") if kind in outcomes]
    result = behaviour_result(ordered, policy, restored)
    differential = [read_differential(plan, ran[plan], kind, policy) for kind, plan in diff_plans.items()]
    differential += left_out
    result = with_differential(result, differential)
    result.untested = [*unservable_changes(ctx.workspace.changed), *dict.fromkeys(untested)]
    strength, pending = measure_strength(
        ctx, stagings.get(strongest), outcomes.get(strongest), executable, head_tree,
        mutate=result.status == "passed",
    )  # fmt: skip
    return result.model_copy(update={"strength": strength}), pending


def _refactor(ctx: LayerContext, where: Where, head: Path, stagings: Mapping[SuiteKind, Staging],
              seed: str | None) -> tuple[DiffPlan | None, DifferentialResult | None]:  # fmt: skip
    """Plan a refactor's comparison with base on the changed functions no differential suite checks.

    With none that inputs can be drawn for, no run: a skipped entry that names them, if any.
    """
    covered = frozenset(d.function for s in stagings.values() for d in s.suite.diffs)
    found = touched(ctx.workspace, covered)
    notes = tuple(f"not compared with base: {why}" for why in found.left_out)
    if not found.specs:
        skipped = DifferentialResult(name="base", source="base", status="skipped", detail="; ".join(notes))
        return None, skipped if notes else None
    if seed is None:
        # The server-side suites' bytes are the secret the change never has (base's tests it can read).
        base = ctx.workspace.base_sha
        secrets = [suite_seed(stagings[k].staged, base) for k in _DIFF_SOURCES if k in stagings]
        seed = refactor_seed(base, secrets)
    return dataclasses.replace(plan_differential(where, head, found.specs, seed), notes=notes), None


def _config_error(kind: SuiteKind, message: str) -> SuiteOutcome:
    # The specifics always reach the server log; the report shows them for hidden suites only.
    log.error("%s suite: %s", SUITE_LABELS[kind], message)
    return SuiteOutcome(kind, error=f"gate configuration problem: {message}")


class _StoredBase:
    """The layer's side of ``base_runs``: which base runs come from the store, which to store."""

    def __init__(self, base_runs: BaseRuns | None, image: str, stagings: Mapping[SuiteKind, Staging]) -> None:
        self.base_runs = base_runs
        self.image = image
        self.stagings = stagings
        self.found: dict[RunPlan, RunResult] = {}
        self.keys: dict[RunPlan, str] = {}

    def lookup(self, suite: Suite, plan: RunPlan) -> RunPlan:
        """Return ``plan``, or the stored run's plan (its nonce and report name) when one fits."""
        if self.base_runs is None or plan.tree != "base":
            return plan
        modules = self.stagings[suite.kind].modules
        try:
            key = self.base_runs.key(image=self.image, kind=suite.kind, part=plan.part, label=plan.label,
                                     in_process=suite.in_process, modules=modules)  # fmt: skip
        except Exception as exc:  # the image's id could not be read: run it, keep nothing
            log.warning("base runs: no key for %s (%s): running it", plan.label, exc)
            return plan
        found = self.base_runs.get(key)
        if found is None:
            self.keys[plan] = key
            return plan
        reused = dataclasses.replace(plan, nonce=found.nonce, report=found.report)
        self.found[reused] = found.result
        return reused

    def keep(self, suite: Suite, plans: Sequence[RunPlan], results: Mapping[RunPlan, RunResult],
             policy: Behaviour) -> None:  # fmt: skip
        """Store the base runs of ``plans`` that ran here and came out clean."""
        if self.base_runs is None:
            return
        for plan in plans:
            key = self.keys.get(plan)
            if key is None:
                continue
            result = results[plan]
            run_log = parse_log(result.files.get(plan.report), plan.nonce, plan.part)
            if keepable(result, run_log, run_view(plan, result, run_log, suite, policy)):
                self.base_runs.put(key, plan.nonce, plan.report, plan.part, result)


def _base_again(staging: Staging, outcome: SuiteOutcome, trees: Mapping[Tree, Path]) -> list[RunPlan]:
    """Plan a second base run of each part with a test whose head runs disagreed (none: nothing to plan)."""
    if outcome.grade is None or not outcome.grade.flaky:
        return []
    case_ids = set(staging.suite.case_ids)
    wanted = {"cases" if i in case_ids else "pytest" for i in outcome.grade.flaky}
    return [
        plan_one(staging, part, "base 2", "base", trees["base"])
        for part in parts(staging.suite)
        if part in wanted
    ]


def _collected(suite: Suite, plan: RunPlan | None, results: Mapping[RunPlan, RunResult]) -> frozenset[str]:
    """The ids pytest collected of an isolated suite on base in its own process (none: not known)."""
    if plan is None:
        return frozenset()
    result = results[plan]
    run_log = parse_log(result.files.get(plan.report), plan.nonce, plan.part)
    if not run_log.collection_done or run_log.problems:
        # Base is trusted, so this is a fault of the suite's or ours: the isolated collection stands.
        log.warning("%s: base's in-process collection left no list (exit %s): the isolated one stands",
                    suite.name, result.exit_code)  # fmt: skip
        return frozenset()
    return run_log.collected


class _Planned(Protocol):
    @property
    def spec(self) -> RunSpec: ...


_P = TypeVar("_P", bound=_Planned)


def _run_all(runner: Runner, plans: Sequence[_P]) -> dict[_P, RunResult]:
    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS, thread_name_prefix="behaviour") as pool:
        futures = {plan: pool.submit(runner.run, plan.spec) for plan in plans}
        return {key: future.result() for key, future in futures.items()}
