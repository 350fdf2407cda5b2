from __future__ import annotations

import pytest

from checks.behaviour.grade import (
    MISSING,
    TestOutcome,
    expected_ids,
    flaky_ids,
    grade_suite,
    resolve,
    subtests_as_base,
    with_their_cases,
    worse,
)

P = TestOutcome("passed")
F = TestOutcome("failed", "assert 1 == 2")
E = TestOutcome("error")
S = TestOutcome("skipped")
X = TestOutcome("xfailed")
T = TestOutcome("timeout", timed_out=True)
FT = TestOutcome("failed", "Timeout", timed_out=True)


@pytest.mark.parametrize(
    ("functions", "exact", "base", "heads", "expected"),
    [
        # Base collected parametrized ids: those are what is expected, whatever head reports.
        (["t.py::test_a"], [], ["t.py::test_a[1]", "t.py::test_a[2]"], [["t.py::test_a[1]"], []],
         ["t.py::test_a[1]", "t.py::test_a[2]"]),
        # The module does not import on base (new feature): head's ids under the function count.
        (["t.py::test_a"], [], [], [["t.py::test_a[1]"], ["t.py::test_a[2]"]],
         ["t.py::test_a[1]", "t.py::test_a[2]"]),
        # Nobody collected it: the function itself is expected (and will be missing).
        (["t.py::test_a"], [], [], [[], []], ["t.py::test_a"]),
        # A prefix is not a parent: test_ab is not under test_a.
        (["t.py::test_a"], [], [], [["t.py::test_ab"]], ["t.py::test_a"]),
        # A test only head reports (e.g. star-imported from the change) is never expected.
        (["t.py::test_a"], [], ["t.py::test_a"], [["t.py::test_a", "t.py::test_fake"]], ["t.py::test_a"]),
        # Whatever base collected beyond the static list (generated tests) is expected.
        (["t.py::test_a"], [], ["t.py::test_a", "t.py::TestGen::test_x"], [[]],
         ["t.py::TestGen::test_x", "t.py::test_a"]),
        # Cases are exact ids.
        ([], ["c.cases.yml::one"], [], [[]], ["c.cases.yml::one"]),
    ],
)  # fmt: skip
def test_expected_ids(
    functions: list[str], exact: list[str], base: list[str], heads: list[list[str]], expected: list[str]
) -> None:
    assert list(expected_ids(functions, exact, base, heads)) == expected


def test_resolve_fills_unreported_ids() -> None:
    assert resolve(["a", "b"], {"a": P}) == {"a": P, "b": MISSING}
    assert resolve(["b"], {}, T) == {"b": T}


def test_worse() -> None:
    assert worse(P, F) is F
    assert worse(S, F) is F
    assert worse(E, F) is E
    assert worse(MISSING, E) is MISSING


@pytest.mark.parametrize(
    ("base", "head1", "head2", "numbers"),
    [
        # fail→pass, pass→pass, pass→fail (regression), fail→fail
        ({"a": F, "b": P, "c": P, "d": F}, {"a": P, "b": P, "c": F, "d": F}, {"a": P, "b": P, "c": F, "d": F},
         dict(passed=2, failed=2, errors=0, total=4, regressions=("c",), fail_to_pass=1, fail_to_pass_total=2,
              pass_to_pass=1, flaky=())),
        # Two head runs disagree: flaky, listed, and counted as its worse outcome (the change cannot claim it)
        ({"a": F, "b": P}, {"a": P, "b": P}, {"a": F, "b": P},
         dict(passed=1, failed=1, total=2, flaky=("a",), excused=(), fail_to_pass_total=1, pass_to_pass=1)),
        ({"a": P}, {"a": E}, {"a": P}, dict(passed=0, errors=1, flaky=("a",), regressions=("a",))),
        # Skipped, xfailed, timed out count as failed; error and missing as errors.
        ({"s": F, "x": F, "t": F, "e": F, "m": F}, {"s": S, "x": X, "t": T, "e": E, "m": MISSING},
         {"s": S, "x": X, "t": T, "e": E, "m": MISSING},
         dict(passed=0, failed=3, errors=2, total=5, timed_out=("t",), pass_rate=0.0)),
        # Both head runs fail, differently: not flaky; the worse outcome is kept.
        ({"a": P}, {"a": F}, {"a": E}, dict(errors=1, failed=0, regressions=("a",), flaky=())),
        # A timed-out failure is listed as timed out.
        ({"a": F}, {"a": FT}, {"a": FT}, dict(failed=1, timed_out=("a",))),
        # A test that passes on base and is missing on head is a regression.
        ({"a": P}, {}, {}, dict(errors=1, regressions=("a",))),
        # Nothing expected: nothing passes.
        ({}, {}, {}, dict(total=0, pass_rate=0.0)),
        # Expectations come from base: skipped (or xfailed) there and on head is not counted...
        ({"s": S, "x": X, "a": P}, {"s": S, "x": S, "a": P}, {"s": S, "x": X, "a": P},
         dict(passed=1, total=1, skipped_on_base=("s", "x"))),
        # ...but passing on base and skipped on head is a regression, and skipped in one head run fails.
        ({"a": P, "b": S}, {"a": S, "b": S}, {"a": S, "b": F},
         dict(failed=2, total=2, regressions=("a",), skipped_on_base=())),
    ],
)  # fmt: skip
def test_grade_suite(
    base: dict[str, TestOutcome],
    head1: dict[str, TestOutcome],
    head2: dict[str, TestOutcome],
    numbers: dict[str, object],
) -> None:
    grade = grade_suite(base, [head1, head2])
    for name, value in numbers.items():
        assert getattr(grade, name) == value, name


@pytest.mark.parametrize(
    ("base_ids", "broken", "expected"),
    [
        # Base collected t.py: its collection is the truth (test_b was deselected or ignored there).
        (["t.py::test_a[1]"], set(), ["t.py::test_a[1]"]),
        # Base could not import t.py (a new feature): the static functions stand in, through head.
        ([], {"t.py"}, ["t.py::test_a[1]", "t.py::test_a[2]", "t.py::test_b"]),
        # A folder (or the root conftest) that failed takes every module under it; another does not.
        ([], {""}, ["t.py::test_a[1]", "t.py::test_a[2]", "t.py::test_b"]),
        (["t.py::test_a[1]"], {"sub"}, ["t.py::test_a[1]"]),
        # Base unread: every static function counts.
        (["t.py::test_a[1]"], None, ["t.py::test_a[1]", "t.py::test_b"]),
    ],
)
def test_static_functions_fill_in_only_where_base_could_not_collect(
    base_ids: list[str], broken: set[str] | None, expected: list[str]
) -> None:
    heads = [["t.py::test_a[1]", "t.py::test_a[2]"]]
    assert list(expected_ids(["t.py::test_a", "t.py::test_b"], [], base_ids, heads, broken)) == expected


def test_only_base_s_own_instability_excuses_a_flaky_test() -> None:
    heads = [{"a": P, "b": P}, {"a": F, "b": F}]
    counted = grade_suite({"a": P, "b": P}, heads, unstable_on_base=())
    assert (counted.passed, counted.failed, counted.total, counted.flaky, counted.excused) == (
        0,
        2,
        2,
        ("a", "b"),
        (),
    )
    excused = grade_suite({"a": P, "b": P}, heads, unstable_on_base={"a"})
    assert (excused.passed, excused.failed, excused.total, excused.excused) == (0, 1, 1, ("a",))
    # Instability on base excuses nothing that head did not show as flaky.
    steady = grade_suite({"a": P}, [{"a": F}, {"a": F}], unstable_on_base={"a"})
    assert (steady.failed, steady.excused) == (1, ())
    assert flaky_ids([{"a": P, "b": F}, {"a": F, "b": F}, {"c": P}]) == {"a", "c"}


def test_failures_keep_the_outcome_for_messages() -> None:
    grade = grade_suite({"a": F}, [{"a": F}, {"a": F}])
    assert grade.failures == (("a", F),)
    assert grade.pass_rate == 0.0


def test_a_pass_that_skipped_more_subtests_than_base_did_is_a_skip() -> None:
    base = {
        "backends": TestOutcome("passed", skipped_subtests=2),  # two optional backends missing on base too
        "plain": TestOutcome("passed"),
        "new": TestOutcome("failed"),
    }
    head = {
        "backends": TestOutcome("passed", skipped_subtests=2),
        "plain": TestOutcome("passed", skipped_subtests=1),  # the change raised SkipTest in a subTest
        "new": TestOutcome("passed", skipped_subtests=1),  # base ran none of it: no skip is base's
    }
    judged = subtests_as_base(base, head)
    assert judged["backends"] == head["backends"]
    assert (judged["plain"].kind, judged["new"].kind) == ("skipped", "skipped")
    assert judged["plain"].message == "1 subtests skipped, base skipped 0"
    # Graded, the skip of a test base passed is a regression, never left out as "skipped on base".
    grade = grade_suite(base, [judged, judged])
    assert (grade.passed, len(grade.regressions)) == (1, 1)


def test_fewer_skipped_subtests_than_base_is_a_pass() -> None:
    base = {"backends": TestOutcome("passed", skipped_subtests=3)}
    head = {"backends": TestOutcome("passed", skipped_subtests=1)}
    assert subtests_as_base(base, head) == head


@pytest.mark.parametrize(
    ("base", "head", "counted", "failing_on_base", "fail_to_pass"),
    [
        # base fails, head fails: base's own failure, left out of the repository's counts
        (TestOutcome("failed"), TestOutcome("failed"), (0, 0), 1, 0),
        (TestOutcome("error"), TestOutcome("missing"), (0, 0), 1, 0),
        # base fails, head passes: a fix, counted as passed and fail->pass
        (TestOutcome("failed"), TestOutcome("passed"), (1, 1), 0, 1),
        # base passes, head fails: a regression, whatever the flag
        (TestOutcome("passed"), TestOutcome("failed"), (0, 1), 0, 0),
    ],
)
def test_a_repository_suite_leaves_base_s_own_failures_out(
    base: TestOutcome, head: TestOutcome, counted: tuple[int, int], failing_on_base: int, fail_to_pass: int
) -> None:
    grade = grade_suite({"t": base}, [{"t": head}, {"t": head}], excuse_base_failures=True)
    assert (grade.passed, grade.total) == counted
    assert len(grade.failing_on_base) == failing_on_base
    assert grade.fail_to_pass == fail_to_pass
    # A hidden suite (no flag): a test failing on base is the task, and counts.
    hidden = grade_suite({"t": base}, [{"t": head}, {"t": head}])
    assert hidden.total == 1 and hidden.failing_on_base == ()


def test_a_parametrized_test_base_shows_flaky_excuses_its_other_cases_only_when_head_is_flaky() -> None:
    ids = [*(f"t.py::test_pager[{n}]" for n in (1, 2, 3)), "t.py::test_other", "t.py::test_pagers"]
    # Base's two runs disagreed on case 1 only; head's on case 2 (click's pager: a different case each run).
    unstable = with_their_cases({"t.py::test_pager[1]"}, ids)
    assert unstable == {"t.py::test_pager[1]", "t.py::test_pager[2]", "t.py::test_pager[3]"}
    base = dict.fromkeys(ids, P)
    heads = [{**base, "t.py::test_pager[2]": F, "t.py::test_pager[3]": F}, {**base, "t.py::test_pager[3]": F}]
    grade = grade_suite(base, heads, unstable_on_base=unstable)
    # Case 2 flaked on head as the function does on base: left out. Case 3 failed in every head run: counted.
    assert grade.excused == ("t.py::test_pager[2]",) and grade.regressions == ("t.py::test_pager[3]",)
    assert grade.passed == 3
    # An unparametrized test widens nothing.
    assert with_their_cases({"t.py::test_other"}, ids) == {"t.py::test_other"}
