# ruff: noqa: E501 - tables of rendered lines read best one a line
"""The rows a differential suite adds: what a maintainer reads for each function, and for the suite."""

from __future__ import annotations

import pytest

from checks.render.numbers import differential_numbers, efficiency_line, function_line, power, times
from checks.report import DifferentialResult, EfficiencyResult, FunctionCheck


@pytest.mark.parametrize(
    ("n", "shown"), [(100_000, "10^5"), (30_000, "3·10^4"), (1_500, "1,500"), (12_345, "12,345"), (10, "10")]
)
def test_power_writes_round_sizes_as_powers_of_ten(n: int, shown: str) -> None:
    assert power(n) == shown


@pytest.mark.parametrize(("ratio", "shown"), [(0.1834, "0.18x"), (1.13, "1.1x"), (21.86, "22x")])
def test_times_writes_a_ratio_of_two_times(ratio: float, shown: str) -> None:
    assert times(ratio) == shown


@pytest.mark.parametrize(
    ("check", "line"),
    [
        (FunctionCheck(id="x", function="d.parse", reference="ref.parse", status="agreed", inputs=2000),
         "differential: 0 disagreements in 2,000 inputs (reference `ref.parse`)"),
        (FunctionCheck(id="x", function="d.parse", reference="ref.parse", status="disagreed", inputs=1),
         "differential: disagrees with reference `ref.parse` after 1 input"),
        (FunctionCheck(id="x", function="d.parse", reference="base", status="disagreed", inputs=7),
         "differential: disagrees with reference base after 7 inputs"),
        (FunctionCheck(id="x", function="d.parse", reference="ref.parse", status="error"),
         "differential: could not run (reference `ref.parse`)"),
        (FunctionCheck(id="x", function="d.parse", reference="ref.parse", status="not_run"),
         "differential: not checked (reference `ref.parse`)"),
    ],
)  # fmt: skip
def test_a_function_s_row(check: FunctionCheck, line: str) -> None:
    assert function_line(check) == line


@pytest.mark.parametrize(
    ("efficiency", "line"),
    [
        (EfficiencyResult(status="passed", head_exponent=1.02, reference_exponent=0.98, ratio=1.1, largest=100_000),
         "efficiency: n^1.02 vs reference n^0.98 at n = 10^5 (1.1x)"),
        (EfficiencyResult(status="failed", head_exponent=1.81, reference_exponent=0.97, ratio=21.9, largest=100_000, detail="22x slower"),
         "efficiency: n^1.81 vs reference n^0.97 at n = 10^5 (22x) — 22x slower"),
        (EfficiencyResult(status="passed", ratio=0.05, largest=100_000),
         "efficiency: no growth fitted (fewer than two sizes timed) at n = 10^5 (0.05x)"),
        (EfficiencyResult(status="failed", largest=100_000, detail="did not return within 30s at n = 100000"),
         "efficiency: did not return within 30s at n = 100000"),
        (EfficiencyResult(status="not_run", detail="not measured: the function disagrees with its reference"),
         "efficiency: not measured: the function disagrees with its reference"),
    ],
)  # fmt: skip
def test_an_efficiency_row(efficiency: EfficiencyResult, line: str) -> None:
    assert efficiency_line(efficiency) == line


def test_a_suite_s_row_counts_and_a_held_out_one_has_no_inputs() -> None:
    hidden = DifferentialResult(name="hidden", source="hidden", checked=2, agreed=1, inputs=2001,
                                efficiency_checked=1, efficiency_passed=0)  # fmt: skip
    assert (
        differential_numbers(hidden)
        == "differential (hidden) 1/2 functions agree in 2,001 inputs · efficiency 0/1 within bounds"
    )
    held_out = DifferentialResult(name="held-out", source="held_out", checked=1, agreed=1)
    assert differential_numbers(held_out) == "differential (held-out) 1/1 functions agree"
