# ruff: noqa: E501 - tables of cases read best one case a line
from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from checks.behaviour.cases import CaseSpec, judge, load_case_file, runner_plan
from checks.behaviour.errors import SuiteError

GOOD = """\
module: durations
timeout_s: 5
cases:
  - id: hours_and_minutes
    call: parse_duration("1h30m")
    equals: {__type__: timedelta, hours: 1, minutes: 30}
  - id: garbage
    call: parse_duration("garbage")
    raises: ValueError
  - id: ratio
    module: durations.maths
    call: ratio(1, 3)
    approx: 0.3333
    tolerance: 0.001
    timeout_s: 1
  - id: none
    call: nothing()
    equals: null
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "parse.cases.yml"
    path.write_text(text)
    return path


def test_load_case_file(tmp_path: Path) -> None:
    cases = load_case_file(write(tmp_path, GOOD), "parse.cases.yml")
    assert [c.id for c in cases] == [
        "parse.cases.yml::hours_and_minutes",
        "parse.cases.yml::garbage",
        "parse.cases.yml::ratio",
        "parse.cases.yml::none",
    ]
    first, garbage, ratio, none = cases
    assert (first.module, first.expect, first.value, first.timeout_s) == (
        "durations", "equals", datetime.timedelta(seconds=5400), 5.0,
    )  # fmt: skip
    assert (garbage.expect, garbage.raises) == ("raises", "ValueError")
    assert (ratio.module, ratio.expect, ratio.value, ratio.tolerance, ratio.timeout_s) == (
        "durations.maths", "approx", 0.3333, 0.001, 1.0,
    )  # fmt: skip
    # `equals: null` expects None; it is not a missing expectation.
    assert (none.expect, none.value) == ("equals", None)


def test_runner_plan_never_carries_expectations(tmp_path: Path) -> None:
    cases = load_case_file(write(tmp_path, GOOD), "parse.cases.yml")
    plan = json.dumps(runner_plan(cases))
    for secret in (
        "5400",
        "timedelta",
        "ValueError",
        "0.3333",
        "0.001",
        "equals",
        "raises",
        "approx",
        "tolerance",
    ):
        assert secret not in plan
    assert json.loads(plan)["cases"][0] == {
        "id": "parse.cases.yml::hours_and_minutes",
        "module": "durations",
        "call": 'parse_duration("1h30m")',
        "timeout_s": 5.0,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cases: [\n", r"parse.cases.yml: invalid YAML at line 2"),
        ("module: m\ncases: []\n", r"parse.cases.yml: cases: List should have at least 1 item"),
        ("module: m\ncases:\n  - id: a\n    call: f()\n", r"cases\.0 \(id a\).*exactly one of equals, raises, approx"),
        ("module: m\ncases:\n  - id: a\n    call: f()\n    equals: 1\n    raises: E\n", "got equals, raises"),
        ("module: m\ncases:\n  - id: a\n    call: f(\n    equals: 1\n", "call is not a Python expression"),
        ("module: m\ncases:\n  - id: a\n    call: f()\n    raises: '1x'\n", "raises names an exception type"),
        ("module: m\ncases:\n  - id: a\n    call: f()\n    equals: 1\n    tolerance: 1\n", "tolerance goes with approx"),
        ("module: m\ncases:\n  - id: a b\n    call: f()\n    equals: 1\n", "String should match pattern"),
        ("module: m\ncases:\n  - id: a\n    call: f()\n    equals: 1\n    colour: red\n", "Extra inputs"),
        ("cases:\n  - id: a\n    call: f()\n    equals: 1\n", "case 'a' names no module"),
        ("module: m\ncases:\n  - {id: a, call: f(), equals: 1}\n  - {id: a, call: g(), equals: 2}\n",
         "case id 'a' appears twice"),
        ("module: m\ncases:\n  - {id: a, call: f(), equals: {__type__: timedelta, fortnights: 1}}\n",
         "case 'a': equals: a timedelta takes"),
        ("module: m\ncases:\n  - {id: a, call: f(), approx: hello}\n", "approx takes a number"),
        ("module: 'bad module'\ncases:\n  - {id: a, call: f(), equals: 1}\n", "not a dotted module name"),
    ],
)  # fmt: skip
def test_invalid_case_files_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SuiteError, match=message) as info:
        load_case_file(write(tmp_path, text), "parse.cases.yml")
    assert str(info.value).startswith("parse.cases.yml")


TD_5400 = {"__type__": "timedelta", "seconds": 5400, "microseconds": 0}
EQ = CaseSpec("f::a", "m", "f()", 10.0, "equals", value=datetime.timedelta(seconds=5400))
RAISES = CaseSpec("f::b", "m", "f()", 10.0, "raises", raises="ValueError")
APPROX = CaseSpec("f::c", "m", "f()", 10.0, "approx", value=0.5, tolerance=0.01)


def exc(name: str, *mro: str, message: str = "boom") -> dict[str, object]:
    return {"type": name, "mro": [name, *mro], "message": message}


@pytest.mark.parametrize(
    ("case", "record", "kind", "message"),
    [
        (EQ, {"status": "returned", "value": TD_5400}, "passed", ""),
        (EQ, {"status": "returned", "value": {**TD_5400, "seconds": 0}}, "failed",
         "expected datetime.timedelta(seconds=5400), got datetime.timedelta(0)"),
        (EQ, {"status": "returned", "value": 5400}, "failed", "got 5400"),
        (EQ, {"status": "raised", "exception": exc("KeyError", "LookupError")}, "failed", "raised KeyError: boom"),
        (EQ, {"status": "returned", "value": {"__type__": "weird"}}, "error", "malformed value"),
        (EQ, {"status": "returned"}, "error", "malformed record"),
        (EQ, {"status": "unserializable", "detail": "a result of type m.Always has no JSON encoding"}, "failed",
         "cannot be compared: a result of type m.Always"),
        (EQ, {"status": "timeout"}, "timeout", "no result within 10s"),
        (EQ, {"status": "crashed", "detail": "the case ended without a result (exit code 0)"}, "error",
         "exit code 0"),
        (EQ, {"status": "import_error", "exception": exc("ModuleNotFoundError", "ImportError")}, "error",
         "cannot import m: ModuleNotFoundError: boom"),
        (EQ, None, "missing", "did not run"),
        (RAISES, {"status": "raised", "exception": exc("ValueError", "Exception")}, "passed", ""),
        (RAISES, {"status": "raised", "exception": exc("DurationError", "ValueError")}, "passed", ""),
        (RAISES, {"status": "raised", "exception": exc("TypeError", "Exception")}, "failed",
         "expected ValueError, raised TypeError: boom"),
        (RAISES, {"status": "returned", "value": TD_5400}, "failed",
         "expected ValueError to be raised, got datetime.timedelta(seconds=5400)"),
        (RAISES, {"status": "raised", "exception": "nonsense"}, "failed", "raised an exception"),
        (APPROX, {"status": "returned", "value": 0.505}, "passed", ""),
        (APPROX, {"status": "returned", "value": 0.52}, "failed", "expected 0.5, got 0.52"),
        (APPROX, {"status": "returned", "value": "0.5"}, "failed", "got '0.5'"),
    ],
)  # fmt: skip
def test_judge(case: CaseSpec, record: dict[str, object] | None, kind: str, message: str) -> None:
    outcome = judge(case, record)
    assert outcome.kind == kind
    assert message in outcome.message
    assert outcome.timed_out is (kind == "timeout")


def test_judge_cleans_sandbox_text() -> None:
    record = {"status": "raised", "exception": exc("E\x1b[31m", message="line\rnext" + "x" * 1000)}
    outcome = judge(EQ, record)
    assert "\x1b" not in outcome.message and "\r" not in outcome.message
    assert len(outcome.message) < 700
