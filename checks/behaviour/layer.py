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
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from checks.behaviour.baseruns import BaseRuns, keepable
from checks.behaviour.changedlines import executable_changes
from checks.behaviour.errors import SuiteError
from checks.behaviour.grade import (
    TestOutcome,
    beyond_isolation,
    expected_ids,
    flaky_ids,
    grade_suite,
    subtests_as_base,
)
from checks.behaviour.outcomes import Part, RunLog, RunView, parse_log
from checks.behaviour.owners import module_names, suite_shadows, unservable_changes
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
from checks.behaviour.result import Note, SuiteOutcome, behaviour_result
from checks.behaviour.strength import PendingMutants, measure_strength
from checks.behaviour.suites import SUITE_NAMES, Suite, Suites, load_suite
from checks.behaviour.tamper import restore_infra
from checks.behaviour.tier import TierRuns, candidates, measure
from checks.behaviour.tier import outcome as tier_outcome
from checks.behaviour.views import PIDS_LIMIT, run_view
from checks.policy import Behaviour
from checks.report import BehaviourResult, SuiteKind
from checks.runner import LayerContext, Runner
from sandbox.spec import RunResult
from sandbox.trees import scratch

log = logging.getLogger(__name__)

# Runs in flight at once; the sandbox enforces its own limit as well.
PARALLEL_RUNS = 2


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


def nothing_to_run(policy: Behaviour, suites: Suites) -> BehaviourResult | None:
    """The layer's result when it has nothing to run (off, the suites unreadable, none); else None.

    The one copy of these rules: the pipeline and ``run_behaviour`` both go through
    ``start_behaviour``, which asks this first.
    """
    if not policy.enabled:
        return BehaviourResult(status="skipped", detail="disabled by policy")
    if suites.error is not None:
        return BehaviourResult(status="error", detail=suites.error)
    if suites.hidden is None and suites.held_out is None:
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
    idle = nothing_to_run(policy, suites)
    if idle is not None:
        return idle, None
    kinds: list[tuple[SuiteKind, Path | None]] = [("hidden", suites.hidden), ("held_out", suites.held_out)]
    wanted = [(kind, path) for kind, path in kinds if path is not None]
    # The head copy is the PR's tree: removed without recursion, never raising over the result.
    work = keep.enter_context(scratch("patchgate-behaviour-"))
    head_tree, restored = restore_infra(ctx.workspace, work / "head")
    trees: dict[Tree, Path] = {"base": ctx.workspace.base_dir, "head": head_tree}
    outcomes: dict[SuiteKind, SuiteOutcome] = {}
    jobs: list[tuple[Suite, list[RunPlan]]] = []
    stagings: dict[SuiteKind, Staging] = {}
    # pytest's own collection of each isolated suite on base, in-process: what isolation may not see.
    collections: dict[SuiteKind, RunPlan] = {}
    harness = write_harness(work / "harness", policy)
    executable = executable_changes(ctx.workspace, head_tree)
    for kind, path in wanted:
        try:
            suite = load_suite(path, kind)
        except SuiteError as exc:
            outcomes[kind] = _config_error(kind, str(exc))
            continue
        staging = Staging(
            suite=suite,
            image=ctx.image,
            harness=harness,
            staged=stage_suite(suite, work / f"suite-{kind}"),
            work=work,
            policy=policy,
            messages=kind == "hidden" and policy.show_hidden_failures == "ids+messages",
            modules=tuple(module_names(*trees.values())),
            lines=executable,
        )
        stagings[kind] = staging
        plans = [plan for part in parts(suite) for plan in plan_runs(staging, part, trees)]
        jobs.append((suite, plans))
        if not suite.in_process and suite.pytest_files:
            collections[kind] = plan_collection(staging, trees["base"])
    stored = _StoredBase(base_runs, ctx.image, stagings)
    jobs = [(suite, [stored.lookup(suite, plan) for plan in plans]) for suite, plans in jobs]
    collections = {kind: stored.lookup(stagings[kind].suite, plan) for kind, plan in collections.items()}
    every = [*(p for _, plans in jobs for p in plans), *collections.values()]
    results = {**_run_all(ctx.runner, [p for p in every if id(p) not in stored.found]), **stored.found}
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
                ids = candidates(outcome.pytest_ids, outcome.base_passed, outcome.head_passed)
                tier = measure(stagings[suite.kind], trees, ids, lambda runs: _run_all(ctx.runner, runs),
                               uncollectable=outcome.uncollectable)  # fmt: skip
                if tier is not None:
                    outcome = grade_runs(suite, graded, results, trees, policy,
                                         tier=tier, in_process=collected)  # fmt: skip
        except SuiteError as exc:
            outcome = _config_error(suite.kind, str(exc))
        if any(id(plan) in stored.found for plan in plans):
            outcome = dataclasses.replace(outcome, base_reused=True)
        shadowed = suite_shadows(suite.names, stagings[suite.kind].modules)
        if shadowed is not None and outcome.grade is not None:
            outcome = dataclasses.replace(outcome, notes=(*outcome.notes, shadowed))
        outcomes[suite.kind] = outcome
    ordered = [outcomes[kind] for kind, _ in wanted]
    result = behaviour_result(ordered, policy, restored)
    result.untested = unservable_changes(ctx.workspace.changed)
    hidden = stagings.get("hidden")
    strength, pending = measure_strength(
        ctx, hidden, outcomes.get("hidden"), outcomes.get("held_out"), executable, head_tree,
        mutate=result.status == "passed",
    )  # fmt: skip
    return result.model_copy(update={"strength": strength}), pending


def _config_error(kind: SuiteKind, message: str) -> SuiteOutcome:
    # The specifics always reach the server log; the report shows them for hidden suites only.
    log.error("%s suite: %s", SUITE_NAMES[kind], message)
    return SuiteOutcome(kind, error=f"gate configuration problem: {message}")


class _StoredBase:
    """The layer's side of ``base_runs``: which base runs come from the store, which to store."""

    def __init__(self, base_runs: BaseRuns | None, image: str, stagings: Mapping[SuiteKind, Staging]) -> None:
        self.base_runs = base_runs
        self.image = image
        self.stagings = stagings
        self.found: dict[int, RunResult] = {}
        self.keys: dict[int, str] = {}

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
            self.keys[id(plan)] = key
            return plan
        reused = dataclasses.replace(plan, nonce=found.nonce, report=found.report)
        self.found[id(reused)] = found.result
        return reused

    def keep(self, suite: Suite, plans: Sequence[RunPlan], results: Mapping[int, RunResult],
             policy: Behaviour) -> None:  # fmt: skip
        """Store the base runs of ``plans`` that ran here and came out clean."""
        if self.base_runs is None:
            return
        for plan in plans:
            key = self.keys.get(id(plan))
            if key is None:
                continue
            result = results[id(plan)]
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


def _collected(suite: Suite, plan: RunPlan | None, results: Mapping[int, RunResult]) -> frozenset[str]:
    """The ids pytest collected of an isolated suite on base in its own process (none: not known)."""
    if plan is None:
        return frozenset()
    result = results[id(plan)]
    run_log = parse_log(result.files.get(plan.report), plan.nonce, plan.part)
    if not run_log.collection_done or run_log.problems:
        # Base is trusted, so this is a fault of the suite's or ours: the isolated collection stands.
        log.warning("%s: base's in-process collection left no list (exit %s): the isolated one stands",
                    suite.name, result.exit_code)  # fmt: skip
        return frozenset()
    return run_log.collected


def _run_all(runner: Runner, plans: Sequence[RunPlan]) -> dict[int, RunResult]:
    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS, thread_name_prefix="behaviour") as pool:
        futures = {id(plan): pool.submit(runner.run, plan.spec) for plan in plans}
        return {key: future.result() for key, future in futures.items()}


def grade_runs(
    suite: Suite,
    plans: Sequence[RunPlan],
    results: Mapping[int, RunResult],
    trees: Mapping[Tree, Path],
    policy: Behaviour,
    *,
    tier: TierRuns | None = None,
    in_process: Collection[str] = (),
) -> SuiteOutcome:
    """Grade one suite from its runs; raise SuiteError when the suite itself is at fault.

    With ``tier``, its tests' outcomes are its in-process runs' (base and head), and nothing else of
    those runs is read. ``in_process``: the ids base's in-process collection found (``plan_collection``);
    those under a test function the isolated base run collected nothing of are expected too.
    """
    logs = []
    for plan in plans:
        result = results[id(plan)]
        logs.append((plan, result, parse_log(result.files.get(plan.report), plan.nonce, plan.part)))
    base_started = {plan.part for plan, _, run_log in logs if plan.tree == "base" and run_log.started}
    for index, (plan, result, run_log) in enumerate(logs):
        if run_log.started:
            continue
        # Our scripts write the first line before any code under test runs.
        if plan.tree == "head" and plan.part in base_started:
            # The same harness started on base: the change's code destroyed its report (or its tree
            # did not fit the sandbox). Nothing of that run is believed.
            unreadable = RunLog(plan.part, started=True, problems=("its report is missing or unreadable",))
            logs[index] = (plan, result, unreadable)
            continue
        log.error("%s %s %s run: no report; exit %s; stderr: %s", suite.name, plan.label, plan.part,
                  result.exit_code, result.stderr[-2000:].decode("utf-8", "replace"))  # fmt: skip
        raise SuiteError(
            f"the {plan.label} run of the {plan.part} part produced no report "
            f"(exit code {result.exit_code}); see the server log"
        )
    _check_base(suite, logs, trees)
    base = [x for x in logs if x[0].tree == "base"]
    heads = [x for x in logs if x[0].tree == "head"]
    labels = list(dict.fromkeys(plan.label for plan, _, _ in heads))
    base_labels = list(dict.fromkeys(plan.label for plan, _, _ in base))
    isolated = _reported(base, "pytest")
    expected = expected_ids(
        suite.functions,
        suite.case_ids,
        isolated,
        [_reported([x for x in heads if x[0].label == label], "pytest") for label in labels],
        _base_broken(base),
        beyond=in_process,
    )
    case_ids = set(suite.case_ids)
    base_maps = []
    for label in base_labels:
        # A part base ran again (a head test was flaky) stands in for itself; the others are the first run's.
        views = {p.part: run_view(p, r, lg, suite, policy) for p, r, lg in base if p.label == base_labels[0]}
        views |= {p.part: run_view(p, r, lg, suite, policy) for p, r, lg in base if p.label == label}
        base_maps.append({i: _outcome(views, i, i in case_ids) for i in expected})
    base_map = base_maps[0]
    head_maps: list[dict[str, TestOutcome]] = []
    notes: list[Note] = []
    for label in labels:
        runs = [x for x in heads if x[0].label == label]
        views = {p.part: run_view(p, r, lg, suite, policy) for p, r, lg in runs}
        head_maps.append({i: _outcome(views, i, i in case_ids) for i in expected})
        for plan, result, run_log in runs:
            notes += _notes(plan, result, run_log, policy)
    head_maps = [subtests_as_base(base_map, m) for m in head_maps]
    base_passed = frozenset(i for i, o in base_map.items() if o.passed)
    isolated_passed = frozenset(i for i in expected if all(m[i].passed for m in head_maps))
    measured = frozenset(tier.ids & set(expected)) if tier is not None else frozenset()
    if tier is not None:
        base_map.update({i: tier_outcome(tier.base, i) for i in measured})
        for outcomes, view in zip(head_maps, tier.heads, strict=False):
            # The code under test could read the tier's files in that process: no text of its is shown.
            outcomes.update({i: _wordless(tier_outcome(view, i)) for i in measured})
        head_maps = [subtests_as_base(base_map, m) for m in head_maps]
    head_results = [r for _, r, _ in heads]
    head_logs = [lg for _, _, lg in heads if not lg.problems]
    covered: dict[str, frozenset[int]] | None = None
    if any(lg.lines is not None for lg in head_logs):
        covered = {}
        for lg in head_logs:
            for path, lines in (lg.lines or {}).items():
                covered[path] = covered.get(path, frozenset()) | lines
    wall = max((r.wall_s for r in head_results), default=0.0)
    return SuiteOutcome(
        suite.kind,
        grade=grade_suite(base_map, head_maps, flaky_ids(base_maps)),
        notes=tuple(notes),
        wall_s=wall,
        peak_memory_bytes=max((r.peak_memory_bytes or 0 for r in head_results), default=0) or None,
        in_process=suite.in_process,
        # What a mutant's isolated run must pass to survive: the tier's tests are not measured there.
        head_passed=isolated_passed - measured,
        pytest_ids=frozenset(i for i in expected if i not in case_ids),
        base_passed=base_passed,
        uncollectable=frozenset(beyond_isolation(in_process, isolated)),
        in_process_tier=measured,
        covered=covered,
        head_wall_s=wall,
    )


def _wordless(outcome: TestOutcome) -> TestOutcome:
    if outcome.passed:
        return outcome
    return dataclasses.replace(outcome, message="measured in-process: its message is not shown")


def _base_broken(base: Sequence[tuple[RunPlan, RunResult, RunLog]]) -> frozenset[str] | None:
    """The collectors (modules, folders) base's pytest runs could not collect; None when base is not read."""
    logs = [lg for p, _, lg in base if p.part == "pytest"]
    if not logs or any(lg.problems or not lg.collection_done for lg in logs):
        return None
    return frozenset(p.path for lg in logs for p in lg.collect_problems)


def _reported(runs: Sequence[tuple[RunPlan, RunResult, RunLog]], part: str) -> frozenset[str]:
    return frozenset().union(*(lg.reported for p, _, lg in runs if p.part == part and not lg.problems))


def _outcome(views: Mapping[Part, RunView], test_id: str, is_case: bool) -> TestOutcome:
    return views["cases" if is_case else "pytest"].outcome(test_id)


def _notes(plan: RunPlan, result: RunResult, run_log: RunLog, policy: Behaviour) -> list[Note]:
    where = f"{plan.label} ({plan.part})"
    notes = []
    if run_log.problems:
        notes.append(Note(f"{where}: its report was not believed ({run_log.problems[0]})",
                          "a head run's report was not believed"))  # fmt: skip
    if run_log.subject_errors:
        gone = "the code under test did not start, or stopped answering, in a head run"
        notes.append(Note(f"{where}: {run_log.subject_errors[0]}", gone))
    if result.limit_hit == "pids":
        notes.append(Note(f"{where}: hit its process limit ({PIDS_LIMIT}) and was ended at once",
                          "a head run hit its process limit"))  # fmt: skip
    elif result.limit_hit == "memory":
        notes.append(Note(f"{where}: hit its memory limit ({policy.memory_mb} MiB) and was ended at once",
                          "a head run hit its memory limit"))  # fmt: skip
    elif result.timed_out:
        notes.append(Note(f"{where}: used up its time budget of {policy.timeout_s:g}s",
                          "a head run used up its time budget"))  # fmt: skip
    elif result.oom_killed:
        notes.append(Note(f"{where}: ran out of memory", "a head run ran out of memory"))
    elif result.output_limit_exceeded:
        notes.append(Note(f"{where}: exceeded the output limit", "a head run exceeded the output limit"))
    elif not run_log.finished:
        notes.append(Note(f"{where}: ended before the suite finished (exit code {result.exit_code})",
                          "a head run ended before the suite finished"))  # fmt: skip
    elif plan.part == "pytest" and run_log.exit_status not in (0, 1):
        notes.append(Note(f"{where}: pytest ended with exit status {run_log.exit_status}",
                          "a head run did not complete normally"))  # fmt: skip
    if run_log.collect_problems:
        n = len(run_log.collect_problems)
        notes.append(Note(f"{where}: {n} test module{'s' if n != 1 else ''} did not import",
                          "test modules did not import in a head run"))  # fmt: skip
    return notes


def _check_base(
    suite: Suite, logs: Sequence[tuple[RunPlan, RunResult, RunLog]], trees: Mapping[Tree, Path]
) -> None:
    """Raise SuiteError when the base run shows the suite itself is broken, not the change.

    A module the suite imports that neither the environment image, the
    repository (at base or head) nor the suite provides is a missing
    dependency. A pytest suite no run managed to collect at all is broken.
    """
    missing: set[str] = set()
    for plan, _, run_log in logs:
        if plan.tree != "base" or run_log.problems:
            continue
        missing |= {p.missing_module for p in run_log.collect_problems if p.missing_module}
        for record in run_log.cases.values():
            name = record.get("missing_module")
            if record.get("status") == "import_error" and isinstance(name, str):
                missing.add(name)
    roots = (*trees.values(), suite.root)
    for name in sorted(missing):
        top = name.split(".")[0]
        if not any(_provides(root, top) for root in roots):
            raise SuiteError(
                f"the suite needs module {name!r}, which neither the environment image nor the "
                "repository (at base or head) provides: add it to the base branch's dependency files "
                "(or, if the change was meant to add it, it did not)"
            )
    pytest_logs = [(p, lg) for p, _, lg in logs if p.part == "pytest"]
    if pytest_logs and not any(lg.collection_done for _, lg in pytest_logs):
        status = next((lg.exit_status for _, lg in pytest_logs if lg.exit_status is not None), None)
        # Base's own word first: it ran no code of the change's.
        ordered = sorted(pytest_logs, key=lambda x: x[0].tree != "base")
        first = next((pr for _, lg in ordered for pr in lg.collect_problems if not pr.skipped), None)
        why = ""
        if first is not None:
            where = first.where or first.path or "the suite folder"
            why = f": {where}: {first.message or 'did not import'}"
        raise SuiteError(f"pytest never collected the suite, on base or on head (exit status {status}){why}")


def _provides(root: Path, module: str) -> bool:
    return any((base / module).is_dir() or (base / f"{module}.py").is_file() for base in (root, root / "src"))
