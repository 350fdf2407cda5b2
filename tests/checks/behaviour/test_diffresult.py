# ruff: noqa: E501 - tables of records read best one a line
"""A differential suite's report entry from its records, under the visibility rules: pure, tables."""

from __future__ import annotations

from typing import Any

import pytest

from checks.behaviour.diffresult import differential_result, function_check
from checks.behaviour.diffsuite import DiffSpec, Efficiency
from checks.behaviour.incontainer.channel import codec
from checks.policy import Behaviour

SPEC = DiffSpec("p.diff.yml::durations.parse_duration", "durations.parse_duration", "ref.parse_duration")
TIMED = DiffSpec(
    SPEC.id, SPEC.function, SPEC.reference, efficiency=Efficiency((10_000, 100_000), "ref.spaced")
)
POLICY = Behaviour()
RAISED = {"status": "raised", "exception": codec.describe(ValueError("x"))}
ZERO = {"status": "returned", "value": {"__type__": "timedelta", "seconds": 0, "microseconds": 0}}
FOUND = {"args": [""], "kwargs": {}, "reference": RAISED, "head": ZERO}
LINEAR = {str(n): {"reference": [n * 1e-7] * 3, "head": [n * 1e-7] * 3} for n in (10_000, 100_000)}
QUADRATIC = {str(n): {"reference": [n * 1e-7] * 3, "head": [n * n * 1e-11] * 3} for n in (10_000, 100_000)}
TINY = {str(n): {"reference": [n * 1e-9] * 3, "head": [n * 1e-9] * 3} for n in (10_000, 100_000)}


def check(
    spec: DiffSpec, record: dict[str, Any] | None, efficiency: dict[str, Any] | None = None, gone: str = ""
) -> Any:
    return function_check(spec, record, efficiency, gone=gone, clock="cpu", quota=1.0, policy=POLICY)


@pytest.mark.parametrize(
    ("record", "status", "words"),
    [
        ({"status": "agreed", "inputs": 2000}, "agreed", ""),
        ({"status": "disagreed", "inputs": 1, "found": FOUND}, "disagreed",
         "head returned datetime.timedelta(0) for parse_duration(''); reference raised ValueError"),
        # The host decides again: a "disagreement" its own rule calls agreement is not believed.
        ({"status": "disagreed", "inputs": 1, "found": {**FOUND, "head": RAISED}}, "error", "the grader's record is inconsistent"),
        ({"status": "error", "detail": "the strategy for 'text' does not evaluate"}, "error", "the strategy for 'text' does not evaluate"),
        ({"status": "forged"}, "error", "the grader's record is inconsistent"),
        (None, "not_run", "the code under test stopped answering"),
    ],
)  # fmt: skip
def test_a_function_s_status_and_words(record: dict[str, Any] | None, status: str, words: str) -> None:
    found = check(SPEC, record, gone="the code under test stopped answering")
    assert found.status == status
    assert (found.counterexample or found.detail) == words


@pytest.mark.parametrize(
    ("timed", "status", "detail"),
    [
        ({"status": "measured", "samples": LINEAR}, "passed", ""),
        ({"status": "measured", "samples": QUADRATIC}, "failed", "10x slower than the reference"),
        ({"status": "time", "samples": LINEAR}, "passed", "stopped at its time limit"),
        ({"status": "measured", "samples": TINY}, "error", "the sizes are too small to time"),
        # Cut short by its time limit before a size the reference takes long enough at: whose time?
        ({"status": "time", "samples": {"10000": {"reference": [1e-4], "head": [90.0]}}}, "failed", "used up its time limit"),
        ({"status": "time", "samples": {"10000": {"reference": [90.0e-5], "head": [1e-5]}}}, "error", "too small to time"),
        ({"status": "timeout", "size": 100_000}, "failed", "did not return within 30s at n = 100000"),
        ({"status": "gone", "detail": "x"}, "failed", "the code under test stopped answering"),
        (None, "failed", "the code under test stopped answering"),
        ({"status": "error", "detail": "the input generator failed at n = 10: KeyError"}, "error", "the input generator failed"),
    ],
)  # fmt: skip
def test_an_efficiency_check_s_verdict(timed: dict[str, Any] | None, status: str, detail: str) -> None:
    found = check(
        TIMED, {"status": "agreed", "inputs": 10}, timed, gone="the code under test stopped answering"
    )
    assert found.efficiency is not None
    assert found.efficiency.status == status and detail in found.efficiency.detail


def test_a_disagreement_on_a_timed_input_is_a_disagreement_too() -> None:
    timed = {
        "status": "disagreed",
        "size": 100_000,
        "found": {**FOUND, "args": ["1h" + " " * 100_000 + "2m"]},
    }
    found = check(TIMED, {"status": "agreed", "inputs": 10}, timed)
    assert (found.status, found.efficiency.status) == ("disagreed", "failed")
    assert found.counterexample.startswith("head returned datetime.timedelta(0) for parse_duration('1h   ")
    assert len(found.counterexample) <= 300


def test_a_function_that_disagrees_is_not_timed() -> None:
    found = check(TIMED, {"status": "disagreed", "inputs": 1, "found": FOUND})
    assert found.efficiency is not None and found.efficiency.status == "not_run"


def results(n_agreed: int, n: int, **more: Any) -> list[Any]:
    return [
        check(SPEC, {"status": "agreed" if i < n_agreed else "disagreed", "inputs": 5, "found": FOUND})
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("checks", "min_rate", "status"),
    [
        (results(2, 2), 1.0, "passed"),
        (results(1, 2), 1.0, "failed"),
        (results(1, 2), 0.5, "passed"),  # partial credit: functions agreeing / functions checked
        ([*results(2, 2), check(SPEC, {"status": "error", "detail": "x"})], 0.0, "error"),
        ([check(TIMED, {"status": "agreed", "inputs": 1}, {"status": "timeout", "size": 10})], 0.0, "failed"),
    ],
)
def test_a_suite_s_status(checks: list[Any], min_rate: float, status: str) -> None:
    policy = Behaviour.model_validate({"differential": {"min_pass_rate": min_rate}})
    assert differential_result("hidden", (SPEC,), checks, seed="s", policy=policy).status == status


def test_a_held_out_suite_keeps_its_counts_only() -> None:
    checks = [*results(1, 2), check(SPEC, {"status": "error", "detail": "ref.py: SECRET"})]
    held_out = differential_result("held_out", (SPEC,), checks, seed="s", policy=POLICY)
    assert (held_out.checked, held_out.agreed, held_out.inputs, held_out.functions) == (3, 1, None, [])
    assert "SECRET" not in held_out.model_dump_json()
    hidden = differential_result("hidden", (SPEC,), checks, seed="s", policy=POLICY)
    assert (hidden.inputs, len(hidden.functions)) == (10, 3) and "SECRET" in hidden.detail
