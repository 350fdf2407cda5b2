"""Grading one suite from its runs: each run's report read, believed or not, and turned into outcomes.

A run whose harness never started on head while the same harness started on
base had its report destroyed by the change: nothing of it is believed. A
suite base cannot run (a missing dependency, nothing collected) is the
suite's fault (SuiteError), never the change's. The numbers themselves are
``grade.py``'s (pure); this module reads the runs ``layer.py`` ran.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from checks.behaviour.errors import SuiteError
from checks.behaviour.grade import (
    TestOutcome,
    beyond_isolation,
    expected_ids,
    flaky_ids,
    grade_suite,
    subtests_as_base,
    with_their_cases,
)
from checks.behaviour.outcomes import Part, RunLog, RunView, parse_log
from checks.behaviour.plan import RunPlan, Tree, test_timeout
from checks.behaviour.result import Note, SuiteOutcome
from checks.behaviour.suites import Suite
from checks.behaviour.tier import TierRuns
from checks.behaviour.tier import outcome as tier_outcome
from checks.behaviour.views import PIDS_LIMIT, run_view
from checks.policy import Behaviour
from sandbox.spec import RunResult

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Read:
    """One run as grading sees it: what was planned, what the sandbox returned, the report read."""

    plan: RunPlan
    result: RunResult
    log: RunLog


def grade_runs(
    suite: Suite,
    plans: Sequence[RunPlan],
    results: Mapping[RunPlan, RunResult],
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
        result = results[plan]
        logs.append(Read(plan, result, parse_log(result.files.get(plan.report), plan.nonce, plan.part)))
    base_started = {x.plan.part for x in logs if x.plan.tree == "base" and x.log.started}
    for index, read in enumerate(logs):
        plan, result = read.plan, read.result
        if read.log.started:
            continue
        # Our scripts write the first line before any code under test runs.
        if plan.tree == "head" and plan.part in base_started:
            # The same harness started on base: the change's code destroyed its report (or its tree
            # did not fit the sandbox). Nothing of that run is believed.
            unreadable = RunLog(plan.part, started=True, problems=("its report is missing or unreadable",))
            logs[index] = Read(plan, result, unreadable)
            continue
        # What the sandbox saw too: a report lost to the engine reads differently from one never written.
        log.error("%s %s %s run: no report; exit %s; wall %.1f s; timed out %s; limit hit %s; files %s; "
                  "stderr: %s", suite.name, plan.label, plan.part, result.exit_code, result.wall_s,
                  result.timed_out, result.limit_hit, sorted(result.files),
                  result.stderr[-2000:].decode("utf-8", "replace"))  # fmt: skip
        raise SuiteError(
            f"the {plan.label} run of the {plan.part} part produced no report "
            f"(exit code {result.exit_code}); see the server log"
        )
    _check_base(suite, logs, trees)
    base = [x for x in logs if x.plan.tree == "base"]
    heads = [x for x in logs if x.plan.tree == "head"]
    labels = list(dict.fromkeys(x.plan.label for x in heads))
    base_labels = list(dict.fromkeys(x.plan.label for x in base))
    isolated = _reported(base, "pytest")
    expected = expected_ids(
        suite.functions,
        suite.case_ids,
        isolated,
        [_reported([x for x in heads if x.plan.label == label], "pytest") for label in labels],
        _base_broken(base),
        beyond=in_process,
    )
    case_ids = set(suite.case_ids)
    base_maps = []
    for label in base_labels:
        # A part base ran again (a head test was flaky) stands in for itself; the others are the first run's.
        views = {x.plan.part: _view(x, suite, policy) for x in base if x.plan.label == base_labels[0]}
        views |= {x.plan.part: _view(x, suite, policy) for x in base if x.plan.label == label}
        base_maps.append({i: _outcome(views, i, i in case_ids) for i in expected})
    base_map = base_maps[0]
    head_maps: list[dict[str, TestOutcome]] = []
    notes: list[Note] = []
    for label in labels:
        runs = [x for x in heads if x.plan.label == label]
        views = {x.plan.part: _view(x, suite, policy) for x in runs}
        head_maps.append({i: _outcome(views, i, i in case_ids) for i in expected})
        for x in runs:
            notes += _notes(x.plan, x.result, x.log, policy)
    head_maps = [subtests_as_base(base_map, m) for m in head_maps]
    base_passed = frozenset(i for i, o in base_map.items() if o.passed)
    isolated_passed = frozenset(i for i in expected if all(m[i].passed for m in head_maps))
    slow = slow_to_cross(base_map, head_maps, test_timeout(policy)) - case_ids
    measured = frozenset(tier.ids & set(expected)) if tier is not None else frozenset()
    # Flaky on base: the isolated base runs' disagreements, but the tier's tests by the tier's own base
    # runs (their isolated outcomes are not theirs).
    unstable = flaky_ids(base_maps) - measured
    if tier is not None:
        unstable |= tier.unstable_on_base() & measured
        base_map.update({i: tier_outcome(tier.base, i) for i in measured})
        for outcomes, view in zip(head_maps, tier.heads, strict=False):
            # The code under test could read the tier's files in that process: no text of its is shown.
            outcomes.update({i: _wordless(tier_outcome(view, i)) for i in measured})
        head_maps = [subtests_as_base(base_map, m) for m in head_maps]
    unstable = with_their_cases(unstable, expected)
    head_results = [x.result for x in heads]
    head_logs = [x.log for x in heads if not x.log.problems]
    covered: dict[str, frozenset[int]] | None = None
    if any(lg.lines is not None for lg in head_logs):
        covered = {}
        for lg in head_logs:
            for path, lines in (lg.lines or {}).items():
                covered[path] = covered.get(path, frozenset()) | lines
    wall = max((r.wall_s for r in head_results), default=0.0)
    return SuiteOutcome(
        suite.kind,
        # The repository's own tests: base's failures are base's (a hidden test failing there is the task).
        grade=grade_suite(base_map, head_maps, unstable, excuse_base_failures=suite.kind == "repository"),
        notes=tuple(notes),
        wall_s=wall,
        peak_memory_bytes=max((r.peak_memory_bytes or 0 for r in head_results), default=0) or None,
        in_process=suite.in_process,
        # What a mutant's isolated run must pass to survive: the tier's tests are not measured there.
        head_passed=isolated_passed - measured,
        pytest_ids=frozenset(i for i in expected if i not in case_ids),
        base_passed=base_passed,
        slow_to_cross=slow,
        uncollectable=frozenset(beyond_isolation(in_process, isolated)),
        in_process_tier=measured,
        covered=covered,
        head_wall_s=wall,
    )


# A test whose trusted isolated base run took more than this share of its time budget is slow to cross.
SLOW_SHARE = 0.5


def slow_to_cross(
    base: Mapping[str, TestOutcome], heads: Sequence[Mapping[str, TestOutcome]], budget: float
) -> frozenset[str]:
    """The tests that passed isolated on base in more than half their time budget and ran out of it
    isolated on head: the bridge's round trips, not the change, took it there (cachetools'
    500,000-request LFU test on a busy host).

    Which tests may be is base's word alone (trusted, no code of the change in it): the change can
    make one of those time out and so have it measured in the in-process tier (tier.py), labelled
    forgeable and counted in its share, never a test base ran quickly.
    """
    found = set()
    for test_id, outcome in base.items():
        took = outcome.seconds
        if not outcome.passed or took is None or took <= budget * SLOW_SHARE:
            continue
        runs = [h[test_id] for h in heads if test_id in h]
        if any(r.timed_out or r.kind == "timeout" for r in runs):
            found.add(test_id)
    return frozenset(found)


def _wordless(outcome: TestOutcome) -> TestOutcome:
    if outcome.passed:
        return outcome
    return dataclasses.replace(outcome, message="measured in-process: its message is not shown")


def _view(read: Read, suite: Suite, policy: Behaviour) -> RunView:
    return run_view(read.plan, read.result, read.log, suite, policy)


def _base_broken(base: Sequence[Read]) -> frozenset[str] | None:
    """The collectors (modules, folders) base's pytest runs could not collect; None when base is not read."""
    logs = [x.log for x in base if x.plan.part == "pytest"]
    if not logs or any(lg.problems or not lg.collection_done for lg in logs):
        return None
    return frozenset(p.path for lg in logs for p in lg.collect_problems)


def _reported(runs: Sequence[Read], part: str) -> frozenset[str]:
    return frozenset().union(*(x.log.reported for x in runs if x.plan.part == part and not x.log.problems))


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


def _check_base(suite: Suite, logs: Sequence[Read], trees: Mapping[Tree, Path]) -> None:
    """Raise SuiteError when the base run shows the suite itself is broken, not the change.

    A module the suite imports that neither the environment image, the
    repository (at base or head) nor the suite provides is a missing
    dependency. A pytest suite no run managed to collect at all is broken.
    """
    missing: set[str] = set()
    for read in logs:
        # The repository's own tests: a module base cannot import fails on base, and is left out.
        if read.plan.tree != "base" or read.log.problems or suite.kind == "repository":
            continue
        missing |= {p.missing_module for p in read.log.collect_problems if p.missing_module}
        for record in read.log.cases.values():
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
    pytest_logs = [x for x in logs if x.plan.part == "pytest"]
    if pytest_logs and not any(x.log.collection_done for x in pytest_logs):
        status = next((x.log.exit_status for x in pytest_logs if x.log.exit_status is not None), None)
        # Base's own word first: it ran no code of the change's.
        ordered = sorted(pytest_logs, key=lambda x: x.plan.tree != "base")
        first = next((pr for x in ordered for pr in x.log.collect_problems if not pr.skipped), None)
        why = ""
        if first is not None:
            where = first.where or first.path or "the suite folder"
            why = f": {where}: {first.message or 'did not import'}"
        raise SuiteError(f"pytest never collected the suite, on base or on head (exit status {status}){why}")


def _provides(root: Path, module: str) -> bool:
    return any((base / module).is_dir() or (base / f"{module}.py").is_file() for base in (root, root / "src"))
