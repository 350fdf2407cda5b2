from __future__ import annotations

import pytest

from checks.behaviour.grade import SuiteGrade, TestOutcome
from checks.behaviour.result import (
    HELD_OUT_ERROR,
    Note,
    SuiteOutcome,
    behaviour_result,
    overfitting,
    suite_result,
)
from checks.policy import Behaviour
from checks.report import SuiteResult
from checks.testinfra.guarded import InfraChange

SECRET = "held_out_secret_marker"
FAIL = TestOutcome("failed", f"AssertionError: {SECRET}")


def grade(passed: int, failed: int, **extra: object) -> SuiteGrade:
    failures = tuple((f"t.py::test_{SECRET}_{i}", FAIL) for i in range(failed))
    fields: dict[str, object] = {"passed": passed, "failed": failed, "failures": failures}
    fields.update(extra)
    return SuiteGrade(**fields)  # type: ignore[arg-type]


HIDDEN = SuiteOutcome(
    "hidden",
    grade(8, 2, flaky=("t.py::test_flaky",), timed_out=("t.py::test_slow",), regressions=("t.py::test_x",),
          fail_to_pass=3, fail_to_pass_total=5, pass_to_pass=5),
    notes=(Note("head 1 (pytest): ended before the suite finished (exit code 0)", "a head run ended early"),),
    wall_s=1.23456,
    peak_memory_bytes=1000,
)  # fmt: skip
HELD_OUT = SuiteOutcome(
    "held_out",
    grade(
        1, 1, flaky=(f"h.py::{SECRET}",), timed_out=(f"h.py::{SECRET}",), fail_to_pass=1, fail_to_pass_total=2
    ),
    notes=(Note(f"head 1: {SECRET}", "a head run ended early"),),
)


@pytest.mark.parametrize(
    ("show", "ids", "message"),
    [("counts", False, False), ("ids", True, False), ("ids+messages", True, True)],
)
def test_hidden_failures_follow_policy(show: str, ids: bool, message: bool) -> None:
    result = suite_result(HIDDEN, Behaviour(show_hidden_failures=show))  # type: ignore[arg-type]
    assert (result.passed, result.failed, result.total, result.flaky, result.timed_out) == (8, 2, 10, 1, 1)
    assert result.pass_rate == 0.8
    assert result.wall_s == 1.235 and result.peak_memory_bytes == 1000
    assert bool(result.failures) is ids
    assert bool(result.flaky_ids) is ids and bool(result.timed_out_ids) is ids
    assert all(bool(f.message) is message for f in result.failures)
    assert result.detail == (
        "head 1 (pytest): ended before the suite finished (exit code 0); "
        "1 flaky test (the head runs disagreed): counted as failed"
    )


@pytest.mark.parametrize("show", ["counts", "ids", "ids+messages"])
def test_held_out_shows_counts_only(show: str) -> None:
    result = suite_result(HELD_OUT, Behaviour(show_hidden_failures=show))  # type: ignore[arg-type]
    assert (result.name, result.passed, result.failed, result.total, result.flaky, result.timed_out) == (
        "held-out", 1, 1, 2, 1, 1,
    )  # fmt: skip
    assert SECRET not in result.model_dump_json()
    assert (
        result.detail == "a head run ended early; 1 flaky test (the head runs disagreed): counted as failed"
    )


def test_held_out_configuration_errors_stay_in_the_log() -> None:
    outcome = SuiteOutcome("held_out", error=f"gate configuration problem: test_{SECRET}.py: line 3")
    result = suite_result(outcome, Behaviour())
    assert result.status == "error"
    assert result.detail == HELD_OUT_ERROR
    hidden = suite_result(
        SuiteOutcome("hidden", error="gate configuration problem: test_a.py: line 3"), Behaviour()
    )
    assert hidden.detail == "gate configuration problem: test_a.py: line 3"


def test_behaviour_result_sums_transitions_and_never_leaks_held_out() -> None:
    restored = [InfraChange("conftest.py", "conftest", "why", "added")]
    result = behaviour_result([HIDDEN, HELD_OUT], Behaviour(show_hidden_failures="ids+messages"), restored)
    assert (result.regressions, result.fail_to_pass, result.fail_to_pass_total, result.pass_to_pass) == (
        1,
        4,
        7,
        5,
    )
    assert result.status == "failed"
    assert "test infrastructure restored from base before the runs: conftest.py" in result.detail
    held_out = result.suites[1].model_dump_json()
    assert SECRET not in held_out
    # The hidden suite's ids may carry the word; the held-out suite's never reach the result.
    assert f"h.py::{SECRET}" not in result.model_dump_json()


@pytest.mark.parametrize(
    ("outcomes", "policy", "status"),
    [
        ([SuiteOutcome("hidden", grade(10, 0))], Behaviour(), "passed"),
        ([SuiteOutcome("hidden", grade(9, 1))], Behaviour(), "failed"),
        ([SuiteOutcome("hidden", grade(9, 1))], Behaviour(min_hidden_pass_rate=0.9), "passed"),
        ([SuiteOutcome("hidden", grade(10, 0)), SuiteOutcome("held_out", grade(4, 1))],
         Behaviour(min_held_out_pass_rate=0.8), "passed"),
        ([SuiteOutcome("hidden", grade(10, 0)), SuiteOutcome("held_out", grade(3, 1))],
         Behaviour(min_held_out_pass_rate=0.8), "failed"),
        ([SuiteOutcome("hidden", grade(10, 0, regressions=("a",)))], Behaviour(), "failed"),
        ([SuiteOutcome("hidden", grade(10, 0, regressions=("a",)))], Behaviour(max_regressions=1), "passed"),
        ([SuiteOutcome("hidden", grade(0, 0, flaky=("a",)))], Behaviour(), "failed"),
        ([SuiteOutcome("hidden", grade(10, 0)), SuiteOutcome("held_out", error="x")], Behaviour(), "error"),
        ([SuiteOutcome("hidden", grade(0, 10)), SuiteOutcome("held_out", error="x")], Behaviour(), "error"),
    ],
)  # fmt: skip
def test_status(outcomes: list[SuiteOutcome], policy: Behaviour, status: str) -> None:
    assert behaviour_result(outcomes, policy).status == status


def test_flaky_tests_are_said_to_count_as_failed_unless_base_was_flaky_too() -> None:
    result = suite_result(SuiteOutcome("hidden", grade(0, 1, flaky=("a",))), Behaviour())
    assert (
        result.status == "failed"
        and "1 flaky test (the head runs disagreed): counted as failed" in result.detail
    )
    excused = suite_result(SuiteOutcome("hidden", grade(0, 0, flaky=("a",), excused=("a",))), Behaviour())
    assert excused.status == "failed" and "every test was flaky on base too" in excused.detail
    assert (excused.flaky, excused.flaky_on_base, excused.flaky_on_base_ids) == (1, 1, ["a"])


@pytest.mark.parametrize(
    ("hidden", "held_out", "gap", "overfit"),
    [(1.0, 0.7, 0.2, True), (1.0, 0.8, 0.2, False), (0.5, 1.0, 0.2, False), (1.0, 0.0, 0.99, True)],
)
def test_overfitting_is_hidden_ahead_of_held_out(
    hidden: float, held_out: float, gap: float, overfit: bool
) -> None:
    suites = [
        SuiteResult(name="hidden", kind="hidden", total=10, pass_rate=hidden),
        SuiteResult(name="held-out", kind="held_out", total=10, pass_rate=held_out),
    ]
    assert overfitting(suites, gap) is overfit
    assert overfitting(suites[:1], gap) is False


REWRITTEN = SuiteOutcome(
    "repository",
    SuiteGrade(passed=5, failed=2, failures=(("t.py::test_edited", FAIL), ("t.py::test_kept", FAIL)),
               regressions=("t.py::test_edited", "t.py::test_kept"), failing_on_base=("t.py::test_old",)),
    rewritten={"t.py::test_edited": "t.py:12"},
)  # fmt: skip


@pytest.mark.parametrize(
    ("outcome", "status", "regressions", "rewritten"),
    [
        # One failing test the change rewrote, one it did not: a regression, failed.
        (REWRITTEN, "failed", 1, ["t.py::test_edited"]),
        # Only the rewritten one fails: the suite passes, and a maintainer is asked (decide).
        (SuiteOutcome("repository", SuiteGrade(passed=6, failed=1, failures=(("t.py::test_edited", FAIL),),
                                               regressions=("t.py::test_edited",)),
                      rewritten={"t.py::test_edited": "deleted"}), "passed", 0, ["t.py::test_edited"]),
        # Every test fails on base: nothing measured, never a pass.
        (SuiteOutcome("repository", SuiteGrade(failing_on_base=("a", "b"))), "skipped", 0, []),
    ],
)  # fmt: skip
def test_a_repository_suite_keeps_rewritten_tests_apart(
    outcome: SuiteOutcome, status: str, regressions: int, rewritten: list[str]
) -> None:
    result = behaviour_result([outcome], Behaviour())
    (suite,) = result.suites
    assert (suite.name, suite.status, result.regressions) == (
        "repository tests (from base)",
        status,
        regressions,
    )
    assert [t.id for t in suite.rewritten] == rewritten
    assert all(t.message for t in suite.rewritten)  # the repository's tests are public: messages show
    assert not {t.id for t in suite.failures} & set(rewritten)
    if outcome.grade is not None and outcome.grade.failing_on_base:
        assert "failing on base too" in suite.detail


def test_the_change_s_own_tests_never_touch_the_status() -> None:
    failing_own = SuiteOutcome("own", grade(0, 3, regressions=("t.py::a",)), in_process=True)
    broken_own = SuiteOutcome("own", error="the change's tests could not be read: t.py: line 1")
    for own in (failing_own, broken_own):
        result = behaviour_result([HIDDEN_PASSING, own], Behaviour())
        assert result.status == "passed", own
        assert (result.regressions, result.forgeable) == (0, False)
        assert result.suites[1].name == "the change's own tests (written by its author)"


HIDDEN_PASSING = SuiteOutcome("hidden", grade(4, 0))
