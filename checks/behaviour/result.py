"""The behaviour layer's report entry, built from graded suites under the visibility rules.

Hidden suites: ids of failing, flaky and timed-out tests unless policy says
``counts``; the first message line only with ``ids+messages``. Held-out
suites: counts, always. Nothing that came from a held-out run (an id, a
message, a module name, an exit status) is copied into the result; its
problems are described in fixed words and the specifics go to the server log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from checks.behaviour.grade import SuiteGrade
from checks.policy import Behaviour
from checks.report import (
    COUNTED_KINDS,
    SUITE_LABELS,
    BehaviourResult,
    DifferentialResult,
    LayerStatus,
    SuiteKind,
    SuiteResult,
    TestFailure,
)
from checks.testinfra.guarded import InfraChange

# Beyond this many ids per list the report says how many more there were.
MAX_LISTED = 500
HELD_OUT_ERROR = "the held-out suite could not run: a gate configuration problem (details in the server log)"


@dataclass(frozen=True)
class Note:
    """Something that went wrong in a run: full words for a hidden suite, fixed words for held-out."""

    hidden: str
    held_out: str


@dataclass(frozen=True)
class SuiteOutcome:
    """One suite after its runs: a grade, or the configuration/infrastructure error that prevented one."""

    kind: SuiteKind
    grade: SuiteGrade | None = None
    error: str = ""
    notes: tuple[Note, ...] = ()
    wall_s: float = 0.0
    peak_memory_bytes: int | None = None
    in_process: bool = False
    # Tests that passed in every head run (a mutant that fails one of them is killed).
    head_passed: frozenset[str] = frozenset()
    # Changed lines the head runs ran, per file, as the code under test reports them (hidden suites only).
    covered: Mapping[str, frozenset[int]] | None = None
    head_wall_s: float = 0.0
    # Its base runs came from an earlier job with the same base, suites, policy and patchgate.
    base_reused: bool = False
    # The pytest part's expected ids and those that passed on base (isolated): the tier's candidates.
    pytest_ids: frozenset[str] = frozenset()
    base_passed: frozenset[str] = frozenset()
    # Passed on base in more than half their budget, ran out of it on head: the tier's candidates too.
    slow_to_cross: frozenset[str] = frozenset()
    # Expected ids base's isolated run could not collect (base in-process did): the tier takes them all.
    uncollectable: frozenset[str] = frozenset()
    # Tests measured in-process (the isolation cannot carry them): the code under test could forge them.
    in_process_tier: frozenset[str] = frozenset()
    # Repository tests that fail on head and that the change edited or removed: where the edit is.
    rewritten: Mapping[str, str] = field(default_factory=dict)


FORGEABLE = "in-process: the code under test can forge this"
BASE_REUSED = "base runs reused from an earlier job (same base sha, suites, policy and patchgate)"


def _capped(ids: Sequence[str]) -> tuple[list[str], int]:
    return list(ids[:MAX_LISTED]), max(0, len(ids) - MAX_LISTED)


def suite_result(outcome: SuiteOutcome, policy: Behaviour) -> SuiteResult:
    """Return the report's entry for one suite, showing only what its kind allows."""
    kind = outcome.kind
    name = SUITE_LABELS[kind]
    private = kind == "held_out"
    if outcome.grade is None:
        detail = HELD_OUT_ERROR if private else outcome.error
        return SuiteResult(name=name, kind=kind, status="error", detail=detail)
    grade = outcome.grade
    notes = list(dict.fromkeys(n.held_out if private else n.hidden for n in outcome.notes))
    counted = len(grade.flaky) - len(grade.excused)
    if counted:
        notes.append(
            f"{counted} flaky test{'s' if counted != 1 else ''} (the head runs disagreed): counted as failed"
        )
    if grade.excused:
        n = len(grade.excused)
        notes.append(f"{n} test{'s' if n != 1 else ''} flaky on base too: left out of the counts")
    if grade.total == 0 and grade.excused:
        notes.append("every test was flaky on base too: nothing left to score")
    if grade.skipped_on_base:
        n = len(grade.skipped_on_base)
        notes.append(
            f"{n} test{'s' if n != 1 else ''} skipped on base (skipped or xfailed there and on head): "
            "not counted"
        )
    if grade.failing_on_base:
        n = len(grade.failing_on_base)
        notes.append(f"{n} test{'s' if n != 1 else ''} failing on base too: the base's own, not counted")
    # A repository test the change rewrote that fails on head asks a maintainer instead (decide.py).
    rewritten = [(i, o) for i, o in grade.failures if i in outcome.rewritten]
    failing = len(grade.failures) - len(rewritten)
    status: LayerStatus
    if kind == "repository":
        status = "passed" if failing == 0 else "failed"
        if grade.total == 0:
            status = "skipped"
            notes.append("every test fails or is skipped on base: nothing to measure")
    else:
        reached = grade.total > 0 and grade.pass_rate >= policy.min_pass_rate(kind)
        status = "passed" if reached else "failed"
    result = SuiteResult(
        name=name,
        kind=kind,
        status=status,
        passed=grade.passed,
        failed=grade.failed,
        errors=grade.errors,
        total=grade.total,
        flaky=len(grade.flaky),
        flaky_on_base=len(grade.excused),
        skipped_on_base=len(grade.skipped_on_base),
        pass_rate=round(grade.pass_rate, 4),
        # A held-out run's time and memory would carry what the code under test chose to encode.
        wall_s=None if private else round(outcome.wall_s, 3),
        peak_memory_bytes=None if private else outcome.peak_memory_bytes,
        timed_out=len(grade.timed_out),
        isolation="in-process" if outcome.in_process else "subject",
        base_reused=outcome.base_reused,
        in_process_tier=len(outcome.in_process_tier),
        slow_in_process=len(outcome.in_process_tier & outcome.slow_to_cross),
        failing_on_base=len(grade.failing_on_base),
        fail_to_pass=grade.fail_to_pass,
    )
    if outcome.in_process:
        notes.insert(0, FORGEABLE)
    if outcome.in_process_tier:
        n = len(outcome.in_process_tier)
        these = "these" if n != 1 else "this"
        notes.insert(
            0, f"{n} test{'s' if n != 1 else ''} measured in-process: the code under test could forge {these}"
        )
    if outcome.base_reused:
        notes.append(BASE_REUSED)
    # The repository's tests and the change's own are the agent's to read: their ids and messages show.
    public = kind in ("repository", "own")
    if not private and (public or policy.show_hidden_failures != "counts"):
        with_messages = public or policy.show_hidden_failures == "ids+messages"
        result.rewritten = [
            TestFailure(id=i, message=o.message, edit=outcome.rewritten[i]) for i, o in rewritten[:MAX_LISTED]
        ]
        failures = [
            TestFailure(id=i, message=o.message if with_messages else "")
            for i, o in grade.failures
            if i not in outcome.rewritten
        ]
        result.failures = failures[:MAX_LISTED]
        result.flaky_ids, more_flaky = _capped(grade.flaky)
        result.flaky_on_base_ids, _ = _capped(grade.excused)
        result.timed_out_ids, more_timed_out = _capped(grade.timed_out)
        more = max(0, len(failures) - MAX_LISTED) + more_flaky + more_timed_out
        if more:
            notes.append(f"{more} more ids not listed")
    result.detail = "; ".join(notes)
    return result


def behaviour_result(
    outcomes: Sequence[SuiteOutcome], policy: Behaviour, restored: Sequence[InfraChange] = ()
) -> BehaviourResult:
    """Combine the suites: status, transitions across suites, the overfitting signal.

    The change's own tests are shown and counted for nothing: they never touch the status, the
    transitions or the forgeable flag, whatever happened to them.
    """
    suites = [suite_result(o, policy) for o in outcomes]
    counted = [(o, s) for o, s in zip(outcomes, suites, strict=True) if o.kind in COUNTED_KINDS]
    graded = [(o, o.grade) for o, _ in counted if o.grade is not None]
    # A rewritten repository test failing on head is the maintainer's call, not a regression.
    regressions = sum(len([i for i in g.regressions if i not in o.rewritten]) for o, g in graded)
    details = [f"{s.name}: {s.detail}" for s in suites if s.detail]
    if restored:
        paths = ", ".join(c.path for c in restored[:5]) + (" …" if len(restored) > 5 else "")
        details.append(f"test infrastructure restored from base before the runs: {paths}")
    measured = [s for _, s in counted if s.status != "skipped"]
    status: LayerStatus
    if any(s.status == "error" for s in measured):
        status = "error"
    elif not measured:
        status = "skipped"
    elif all(s.status == "passed" for s in measured) and regressions <= policy.max_regressions:
        status = "passed"
    else:
        status = "failed"
    return BehaviourResult(
        status=status,
        suites=suites,
        regressions=regressions,
        fail_to_pass=sum(g.fail_to_pass for _, g in graded),
        fail_to_pass_total=sum(g.fail_to_pass_total for _, g in graded),
        pass_to_pass=sum(g.pass_to_pass for _, g in graded),
        overfitting=overfitting(suites, policy.overfitting_gap),
        forgeable=any(s.isolation == "in-process" for _, s in counted),
        detail=" · ".join(details),
    )


def overfitting(suites: Sequence[SuiteResult], gap: float) -> bool:
    """Return True when the hidden pass rate exceeds the held-out one by more than ``gap``.

    Only that direction is the signal: a change tuned to what its author
    could learn about (hidden failures may be shown) but not to what it
    could not (held-out is never shown).
    """
    hidden = [s for s in suites if s.kind == "hidden" and s.status != "error" and s.total]
    held_out = [s for s in suites if s.kind == "held_out" and s.status != "error" and s.total]
    if not hidden or not held_out:
        return False
    return hidden[0].pass_rate - held_out[0].pass_rate > gap


def with_differential(result: BehaviourResult, differential: Sequence[DifferentialResult]) -> BehaviourResult:
    """Add the differential suites to the layer's result, and their verdicts to its status.

    One that could not run makes it an error, one that failed fails it; a skipped one (a refactor
    with nothing to compare) only says why. The suites' own numbers stay as they are.
    """
    if not differential:
        return result
    # With differential suites only, the layer's own "passed" (no test suite at all) is not a verdict.
    statuses = [result.status] if result.suites else []
    statuses += [d.status for d in differential if d.status != "skipped"]
    status: LayerStatus = result.status
    if "error" in statuses:
        status = "error"
    elif "failed" in statuses:
        status = "failed"
    elif statuses:
        status = "passed"
    details = [result.detail] if result.detail else []
    details += [f"differential ({d.name}): {d.detail}" for d in differential if d.detail]
    update = {"status": status, "differential": list(differential), "detail": " · ".join(details)}
    return result.model_copy(update=update)
