from __future__ import annotations

import json

import pytest

from checks.behaviour.grade import MISSING, TestOutcome
from checks.behaviour.outcomes import MAX_LOG_BYTES, RunView, parse_log


def collected(*ids: str) -> dict[str, object]:
    return {"kind": "collected", "ids": list(ids)}


def lines(*records: dict[str, object], nonce: str = "n0", runner: str = "pytest") -> bytes:
    start = {"kind": "start", "runner": runner, "nonce": nonce, "version": 1}
    return b"".join(json.dumps(r).encode() + b"\n" for r in (start, *records))


def ran(test_id: str, outcome: str, **extra: object) -> list[dict[str, object]]:
    return [{"kind": "begin", "id": test_id}, {"kind": "test", "id": test_id, "outcome": outcome, **extra}]


def test_parses_a_complete_pytest_log() -> None:
    data = lines(
        {
            "kind": "collect_error",
            "path": "t_b.py",
            "skipped": False,
            "missing_module": "hyp",
            "message": "E x",
        },
        {"kind": "collected", "ids": ["t.py::a", "t.py::b", "t.py::c"]},
        *ran("t.py::a", "passed"),
        *ran("t.py::b", "failed", message="AssertionError: no", timed_out=True),
        {"kind": "begin", "id": "t.py::c"},
        {"kind": "finish", "exit_status": 1},
        {"kind": "exit", "code": 1},
    )
    log = parse_log(data, "n0", "pytest")
    assert log.started and log.finished and log.collection_done and not log.problems
    assert log.exit_status == 1
    assert log.tests == {
        "t.py::a": TestOutcome("passed"),
        "t.py::b": TestOutcome("failed", "AssertionError: no", True),
    }
    assert log.unfinished == {"t.py::c"}
    assert log.reported == {"t.py::a", "t.py::b", "t.py::c"}
    assert log.collect_problems[0].missing_module == "hyp"


@pytest.mark.parametrize(
    ("data", "started", "problem"),
    [
        (None, False, None),
        (b"", False, "does not start"),
        (lines(nonce="planted"), False, "does not start"),
        (lines(runner="cases"), False, "does not start"),
        (b'{"kind": "start"}\n', False, "does not start"),
        (lines() + b"PASSED\n", True, "line 2 is not a JSON object"),
        (
            lines(collected("a"), {"kind": "test", "id": "a", "outcome": "passed"}),
            True,
            "without its begin record",
        ),
        (lines(collected("a"), *ran("a", "glorious")), True, "unknown outcome"),
        (lines(collected("a"), {"kind": "exit", "code": 0}, *ran("a", "passed")), True, "after the end"),
        (
            lines(collected("a"), {"kind": "begin", "id": "a"}, {"kind": "case", "id": "a"}),
            True,
            "a case record in a pytest log",
        ),
        (lines({"kind": "who"}), True, "unexpected"),
        (b"x" * (MAX_LOG_BYTES + 1), True, "larger than"),
        # Forged records written at import time, before collection ended.
        (lines(*ran("a", "passed"), collected("a")), True, "began out of the collected order"),
        # Forged records for tests that were never collected, or out of order, or twice.
        (lines(collected("a"), *ran("b", "passed")), True, "began out of the collected order"),
        (
            lines(collected("a", "b"), *ran("b", "passed"), *ran("a", "passed")),
            True,
            "out of the collected order",
        ),
        (
            lines(collected("a", "b"), *ran("a", "failed"), *ran("a", "passed")),
            True,
            "out of the collected order",
        ),
        # A forged begin while the real test is still running.
        (
            lines(collected("a", "b"), {"kind": "begin", "id": "a"}, *ran("b", "passed")),
            True,
            "still running",
        ),
        (lines(collected("a"), collected("a", "b"), *ran("b", "passed")), True, "unexpected 'collected'"),
    ],
)
def test_a_log_that_breaks_the_protocol_is_not_believed(
    data: bytes | None, started: bool, problem: str | None
) -> None:
    log = parse_log(data, "n0", "pytest")
    assert log.started is started
    if problem is None:
        assert not log.problems
    else:
        assert problem in log.problems[0]


def test_a_partial_last_line_is_dropped_quietly() -> None:
    log = parse_log(lines(collected("a"), *ran("a", "passed")) + b'{"kind": "beg', "n0", "pytest")
    assert not log.problems and log.tests == {"a": TestOutcome("passed")}


def test_case_logs_keep_raw_records() -> None:
    case: list[dict[str, object]] = [
        {"kind": "begin", "id": "c::a"},
        {"kind": "case", "id": "c::a", "status": "returned", "value": 1},
    ]
    data = lines(*case, {"kind": "finish"}, runner="cases")
    log = parse_log(data, "n0", "cases")
    assert log.finished and not log.problems
    assert log.cases["c::a"]["value"] == 1
    assert parse_log(data + b'{"kind": "finish"}\n', "n0", "cases").problems
    assert "ran twice" in parse_log(lines(*case, *case, runner="cases"), "n0", "cases").problems[0]


def test_run_view_never_invents_a_pass() -> None:
    broken = TestOutcome("error", "the module failed to import")
    view = RunView(
        label="head 1",
        outcomes={"t.py::a": TestOutcome("passed")},
        reported=frozenset({"t.py::a"}),
        broken_modules={"u.py": broken},
        unfinished={"t.py::b": TestOutcome("timeout", timed_out=True)},
    )
    assert view.outcome("t.py::a").passed
    assert view.outcome("t.py::b").kind == "timeout"
    assert view.outcome("u.py::c") is broken
    assert view.outcome("v.py::d") is MISSING
    distrusted = RunView("head 1", view.outcomes, view.reported, distrust=TestOutcome("error", "altered"))
    assert distrusted.outcome("t.py::a").kind == "error"


def test_a_test_s_reported_seconds_are_kept_when_they_are_a_duration() -> None:
    data = lines(
        collected("t.py::a", "t.py::b", "t.py::c", "t.py::d"),
        *ran("t.py::a", "passed", seconds=41.5),
        *ran("t.py::b", "passed", seconds=True),
        *ran("t.py::c", "passed", seconds=-1),
        *ran("t.py::d", "passed", seconds="41"),
    )
    tests = parse_log(data, "n0", "pytest").tests
    assert [tests[f"t.py::{n}"].seconds for n in "abcd"] == [41.5, None, None, None]
    # Never part of what an outcome is: two passes are the same pass however long they took.
    assert tests["t.py::a"] == TestOutcome("passed")


def test_a_test_s_message_count_is_kept_only_when_it_is_a_count() -> None:
    data = lines(
        collected("t.py::a", "t.py::b", "t.py::c", "t.py::d"),
        *ran("t.py::a", "passed", messages=1200),
        *ran("t.py::b", "passed", messages=True),
        *ran("t.py::c", "passed", messages=-3),
        *ran("t.py::d", "passed"),
    )
    tests = parse_log(data, "n0", "pytest").tests
    assert [tests[f"t.py::{n}"].messages for n in "abcd"] == [1200, None, None, None]
    assert tests["t.py::a"] == TestOutcome("passed")  # a bench figure, never part of the outcome
