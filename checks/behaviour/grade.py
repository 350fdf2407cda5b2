"""Grading, pure: per-test outcomes on base and on head (twice) become a suite's numbers.

Per test: fail→pass, pass→pass, pass→fail (a regression), fail→fail. A test
whose two head runs disagree is flaky, and flakiness is decided by trusted
runs only: it counts as its worse head outcome (failed) unless base, run
again, shows the same instability (in that test, or in another case of the
same parametrized test function) - then it is excluded from every count.
Either way it is listed. The change can never turn a failure into an
exclusion: a flaky head test never raises a pass rate.
Only ``passed`` is a pass: skipped, xfailed, timed out, errored, uncollected
and missing tests all count against the change - except that expectations
come from base: a test base skips or xfails, and every head run skips or
xfails too, is left out of the counts ("skipped on base"). A test that
passes on base and is skipped on head stays a regression.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

OutcomeKind = Literal["passed", "failed", "error", "skipped", "xfailed", "timeout", "missing"]
# Which count a non-passing outcome lands in: `errors` is "never got to assert anything".
_ERROR_KINDS: frozenset[OutcomeKind] = frozenset({"error", "missing"})
# What a test does when its own code decides not to run it (a skip marker, an optional dependency).
_NOT_RUN: frozenset[OutcomeKind] = frozenset({"skipped", "xfailed"})
_RANK: dict[OutcomeKind, int] = {
    "passed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "timeout": 3, "error": 4, "missing": 5,
}  # fmt: skip


@dataclass(frozen=True)
class TestOutcome:
    """What happened to one test in one run; ``message`` is empty unless messages were asked for."""

    __test__ = False  # not a pytest test class, whatever its name says

    kind: OutcomeKind
    message: str = ""
    timed_out: bool = False
    # Subtests it skipped (``subTest``, ``subtests``): a pass with more of them than base had is a skip.
    skipped_subtests: int = 0
    # How long it took, as its run reported it (None: not reported); never part of what it is.
    seconds: float | None = field(default=None, compare=False)
    # Isolated: the messages the grader sent the subject during it (its round trips); a bench figure.
    messages: int | None = field(default=None, compare=False)

    @property
    def passed(self) -> bool:
        return self.kind == "passed"


MISSING = TestOutcome("missing", "the test did not run or was not reported")


def subtests_as_base(
    base: Mapping[str, TestOutcome], head: Mapping[str, TestOutcome]
) -> dict[str, TestOutcome]:
    """``head`` with a pass that skipped more subtests than base's run of it did made a skip.

    pytest passes a test whose subtests skipped (an optional backend missing, as pathspec's hyperscan):
    base is trusted to say how many; a change whose code raises ``SkipTest`` in one more would
    otherwise pass a test without running its assertions.
    """
    out = dict(head)
    for test_id, outcome in head.items():
        before = base.get(test_id)
        allowed = before.skipped_subtests if before is not None and before.passed else 0
        if outcome.passed and outcome.skipped_subtests > allowed:
            why = f"{outcome.skipped_subtests} subtests skipped, base skipped {allowed}"
            out[test_id] = TestOutcome("skipped", why, skipped_subtests=outcome.skipped_subtests)
    return out


def worse(a: TestOutcome, b: TestOutcome) -> TestOutcome:
    """Return the outcome that counts more against the change (for a test reported twice)."""
    return a if _RANK[a.kind] >= _RANK[b.kind] else b


def expected_ids(
    functions: Collection[str],
    exact: Collection[str],
    base_ids: Collection[str],
    head_ids: Sequence[Collection[str]],
    base_broken: Collection[str] | None = None,
    *,
    beyond: Collection[str] = (),
) -> tuple[str, ...]:
    """Return the ids a suite must report, from trusted sources only.

    ``exact`` ids (declarative cases) and every id base collected are
    expected as they are. ``functions`` are the test functions found
    statically in the suite's files (``file::Class::test``): they fill in
    only for a module base could not collect (``base_broken``: it failed to
    import, or skipped itself - a new feature's module), standing for the
    ids any head run collected under them, else for themselves. Where base
    collected a module, base's collection is the truth (a conftest's
    ``collect_ignore`` or deselection, a parametrization that yields
    nothing). ``base_broken`` None: base's collection is unknown, every
    static function counts. An id only head reports, under no known test
    function, is not expected: a change cannot add tests to the suite.

    ``beyond`` holds the ids base's own process collected (trusted, like
    ``base_ids``): those under a test function base's isolated collection
    found nothing of are expected too (a class deriving from a library's
    ``TestCase``, which isolation sees as a plain class, and pytest skips).
    """
    out: set[str] = set(exact) | set(base_ids) | beyond_isolation(beyond, base_ids)
    for fn in functions:
        under_base = _under(fn, base_ids)
        if under_base:
            continue
        if base_broken is not None and not _within(fn.partition("::")[0], base_broken):
            continue
        under_head = set().union(*(_under(fn, ids) for ids in head_ids)) if head_ids else set()
        out |= under_head or {fn}
    return tuple(sorted(out))


def beyond_isolation(in_process: Collection[str], isolated: Collection[str]) -> set[str]:
    """The ids of ``in_process`` (base's own process collected them) under a test function of which
    ``isolated`` (base's isolated collection) has no id: tests the isolation cannot even collect."""
    functions = {i.partition("[")[0] for i in isolated}
    return {i for i in in_process if i.partition("[")[0] not in functions}


def _within(module: str, broken: Collection[str]) -> bool:
    """Whether ``module`` is, or lies in a folder that is, one of the collectors that failed (``""``: all)."""
    return any(b in ("", ".") or module == b or module.startswith(b.rstrip("/") + "/") for b in broken)


def _under(function: str, ids: Iterable[str]) -> set[str]:
    return {i for i in ids if i == function or i.startswith(function + "[")}


def resolve(
    expected: Iterable[str], outcomes: Mapping[str, TestOutcome], default: TestOutcome = MISSING
) -> dict[str, TestOutcome]:
    """Give every expected id an outcome, ``default`` for those the run did not report."""
    return {i: outcomes.get(i, default) for i in expected}


@dataclass(frozen=True)
class SuiteGrade:
    """A suite's numbers; ``flaky`` lists the tests whose head runs disagreed.

    A flaky test is counted as failed, except those in ``excused``: flaky on
    base too, so left out of every count.
    """

    passed: int = 0
    failed: int = 0
    errors: int = 0
    flaky: tuple[str, ...] = ()
    excused: tuple[str, ...] = ()
    # Skipped or xfailed on base (trusted) and on every head run: the expectation comes from base.
    skipped_on_base: tuple[str, ...] = ()
    # Failing on base and on head, left out (grade_suite's ``excuse_base_failures``: repository tests).
    failing_on_base: tuple[str, ...] = ()
    failures: tuple[tuple[str, TestOutcome], ...] = ()
    timed_out: tuple[str, ...] = ()
    regressions: tuple[str, ...] = ()
    fail_to_pass: int = 0
    fail_to_pass_total: int = 0
    pass_to_pass: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.errors

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


def flaky_ids(runs: Sequence[Mapping[str, TestOutcome]]) -> frozenset[str]:
    """Return the ids whose outcome (passed or not) differs between ``runs``."""
    ids = set().union(*(set(r) for r in runs)) if runs else set()
    return frozenset(i for i in ids if len({r.get(i, MISSING).passed for r in runs}) > 1)


def with_their_cases(unstable: Collection[str], ids: Iterable[str]) -> frozenset[str]:
    """``unstable`` and every other case of a parametrized test function one of them is a case of.

    A parametrized test that is flaky on base fails different cases each run (click's pager test:
    4 of its 60, a different four each time): base's runs rarely catch the very case a head run did.
    Its instability is the function's, as base shows it; a case that fails in every head run is
    still a regression.
    """
    functions = {u.partition("[")[0] for u in unstable if "[" in u}
    return frozenset(unstable) | frozenset(i for i in ids if "[" in i and i.partition("[")[0] in functions)


def grade_suite(
    base: Mapping[str, TestOutcome],
    heads: Sequence[Mapping[str, TestOutcome]],
    unstable_on_base: Collection[str] = (),
    *,
    excuse_base_failures: bool = False,
) -> SuiteGrade:
    """Grade every test of ``base`` (the expected ids, resolved) against the head runs.

    ``unstable_on_base``: ids whose trusted base runs disagreed with each other.
    ``excuse_base_failures``: a test failing on base that head does not pass either is left out
    (the repository's own tests: base's failures are not the change's; a hidden test failing on
    base is the task the change must do, and counts).
    """
    passed = failed = errors = f2p = f2p_total = p2p = 0
    flaky: list[str] = []
    excused: list[str] = []
    skipped: list[str] = []
    failing_on_base: list[str] = []
    failures: list[tuple[str, TestOutcome]] = []
    timed_out: list[str] = []
    regressions: list[str] = []
    for test_id in sorted(base):
        runs = [h.get(test_id, MISSING) for h in heads]
        if any(r.timed_out or r.kind == "timeout" for r in runs):
            timed_out.append(test_id)
        if base[test_id].kind in _NOT_RUN and all(r.kind in _NOT_RUN for r in runs):
            skipped.append(test_id)
            continue
        if len({r.passed for r in runs}) > 1:
            flaky.append(test_id)
            if test_id in unstable_on_base:
                excused.append(test_id)
                continue
        head = runs[0]
        for other in runs[1:]:
            head = worse(head, other)
        base_passed = base[test_id].passed
        if excuse_base_failures and not base_passed and not head.passed:
            failing_on_base.append(test_id)
            continue
        if not base_passed:
            f2p_total += 1
        if head.passed:
            passed += 1
            if base_passed:
                p2p += 1
            else:
                f2p += 1
            continue
        if head.kind in _ERROR_KINDS:
            errors += 1
        else:
            failed += 1
        failures.append((test_id, head))
        if base_passed:
            regressions.append(test_id)
    return SuiteGrade(
        passed=passed,
        failed=failed,
        errors=errors,
        flaky=tuple(flaky),
        excused=tuple(excused),
        skipped_on_base=tuple(skipped),
        failing_on_base=tuple(failing_on_base),
        failures=tuple(failures),
        timed_out=tuple(timed_out),
        regressions=tuple(regressions),
        fail_to_pass=f2p,
        fail_to_pass_total=f2p_total,
        pass_to_pass=p2p,
    )
