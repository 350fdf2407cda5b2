from __future__ import annotations

import subprocess
import sys

import pytest

from checks.quality.calibration import (
    JudgeRecord,
    Rate,
    calibration_table,
    false_acceptance_label,
    kappa_interval,
    rate,
    render_calibration,
)

M = "openai/judge"


def records(exec_judge_counts: dict[tuple[bool, bool], int], model: str = M) -> list[JudgeRecord]:
    """Build records from counts of (execution_passed, judge_passed) pairs."""
    out = []
    for (execution, judge), n in exec_judge_counts.items():
        out += [JudgeRecord(execution, judge, model, "default")] * n
    return out


def test_wilson_interval_known_values() -> None:
    # Reference values of the Wilson score interval at 95%.
    r = rate(0, 10)
    assert r.value == 0
    assert r.low == pytest.approx(0.0, abs=1e-9)
    assert r.high == pytest.approx(0.2775, abs=1e-4)
    r = rate(5, 10)
    assert r.low == pytest.approx(0.2366, abs=1e-4)
    assert r.high == pytest.approx(0.7634, abs=1e-4)
    assert rate(0, 0) == Rate(0, 0)
    assert Rate(0, 0).text() == "n/a (n=0)"
    assert rate(12, 40).text() == "30% (95% CI 18-45%, n=40)"


@pytest.mark.parametrize(
    ("count", "n"), [(0, 1), (1, 1), (0, 10), (3, 10), (5, 10), (10, 10), (1, 97), (12, 40), (499, 1000)]
)
def test_the_wilson_interval_is_scipys(count: int, n: int) -> None:
    from scipy.stats import binomtest

    expected = binomtest(count, n).proportion_ci(confidence_level=0.95, method="wilson")
    got = rate(count, n)
    assert got.low == pytest.approx(expected.low, abs=1e-12)
    assert got.high == pytest.approx(expected.high, abs=1e-12)


def test_the_judges_calibration_note_needs_neither_scipy_nor_numpy() -> None:
    # Without the `calibrate` extra: the quality layer imports this module and labels every judged run.
    script = (
        "import sys\n"
        "sys.modules['scipy'] = sys.modules['numpy'] = None  # import fails, as when not installed\n"
        "import checks.quality\n"
        "from checks.quality.calibration import JudgeRecord, false_acceptance_label\n"
        "records = [JudgeRecord(False, i < 5, 'm', 'default') for i in range(40)]\n"
        "print(false_acceptance_label(records, 'm', 30))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("false acceptance 12% (95% CI 5-26%, n=40)")


def test_a_judge_that_passes_everything_is_exposed() -> None:
    rubber_stamp = records({(False, True): 30, (True, True): 30})
    (row,) = calibration_table(rubber_stamp, min_n=30)
    assert row.false_acceptance.value == 1.0
    assert row.false_acceptance.low is not None and row.false_acceptance.low > 0.88
    assert row.false_rejection.value == 0.0
    assert row.agreement.value == 0.5
    # No agreement beyond chance: kappa is exactly zero.
    assert row.kappa == pytest.approx(0.0)
    assert false_acceptance_label(rubber_stamp, M, 30) == (
        "task-level judge vs execution: false acceptance 100% (95% CI 89-100%, n=30)"
    )


def test_a_perfect_judge() -> None:
    perfect = records({(False, False): 20, (True, True): 20})
    (row,) = calibration_table(perfect, min_n=10)
    assert row.kappa == pytest.approx(1.0)
    assert row.kappa_low == pytest.approx(1.0)
    assert row.kappa_high == pytest.approx(1.0)
    assert row.agreement.value == 1.0
    assert row.false_acceptance.value == 0.0


def test_kappa_interval_is_seeded_and_brackets_the_estimate() -> None:
    mixed = records({(False, False): 12, (False, True): 8, (True, True): 15, (True, False): 5})
    ex = [r.execution_passed for r in mixed]
    ju = [r.judge_passed for r in mixed]
    k, low, high = kappa_interval(ex, ju, seed=1, resamples=500)
    assert k == pytest.approx(0.35)  # po = 27/40, pe = 0.5
    assert k is not None and low is not None and high is not None
    assert low < k < high
    assert kappa_interval(ex, ju, seed=1, resamples=500) == (k, low, high)


def test_undefined_kappa_is_none() -> None:
    # Both raters constant and equal: kappa is undefined, not 1 or 0.
    assert kappa_interval([False] * 5, [False] * 5) == (None, None, None)
    assert kappa_interval([], []) == (None, None, None)


def test_table_is_per_model_and_marks_uncalibrated() -> None:
    data = records({(False, True): 3, (True, True): 2}, "m-small") + records(
        {(False, False): 25, (False, True): 5, (True, True): 10}, "m-big"
    )
    table = calibration_table(data, min_n=30, resamples=200)
    assert [r.model for r in table] == ["m-big", "m-small"]
    big, small = table
    assert (big.n, big.calibrated, big.false_acceptance.count, big.false_acceptance.n) == (40, True, 5, 30)
    assert (small.n, small.calibrated) == (5, False)
    assert big.rubrics == ("default",)
    # Some resamples of five records have one class only: no interval, but still a kappa.
    assert small.kappa == pytest.approx(0.0)
    assert (small.kappa_low, small.kappa_high) == (None, None)


def test_label_before_and_after_min_n() -> None:
    few = records({(False, True): 3, (True, True): 50})
    # The label names what is measured: the task-level verdict, never a criterion's accuracy.
    assert false_acceptance_label(few, M, 30) == (
        "task-level judge vs execution: uncalibrated (n=3 < 30 failing PRs)"
    )
    assert false_acceptance_label(few, "other-model", 30).endswith("uncalibrated (n=0 < 30 failing PRs)")
    many = records({(False, True): 5, (False, False): 35})
    assert false_acceptance_label(many, M, 30) == (
        "task-level judge vs execution: false acceptance 12% (95% CI 5-26%, n=40)"
    )


def test_render_prints_each_number() -> None:
    data = records({(False, True): 6, (False, False): 24, (True, True): 8, (True, False): 2})
    text = render_calibration(calibration_table(data, min_n=30, resamples=200))
    assert "openai/judge  [calibrated]  rubrics: default" in text
    assert "  n                 40" in text
    assert "  false acceptance  20% (95% CI 10-37%, n=30)" in text
    assert "  false rejection   20% (95% CI 6-51%, n=10)" in text
    assert "  agreement         80%" in text
    # po = 0.8, pe = 0.25 * 0.35 + 0.75 * 0.65 = 0.575: kappa = 0.225 / 0.425
    assert "  Cohen's kappa     0.53 (95% CI " in text
    assert "UNCALIBRATED" in render_calibration(calibration_table(data, min_n=31, resamples=200))
    assert "uncalibrated" in render_calibration([])
    assert "not the accuracy of each rubric criterion" in text


def test_the_table_shows_what_shadow_verdicts_cost() -> None:
    data = [
        JudgeRecord(False, True, M, "default", prompt_tokens=1000, completion_tokens=20, cost_usd=0.002),
        JudgeRecord(True, True, M, "default", prompt_tokens=3000, completion_tokens=30, cost_usd=0.004),
    ]
    (row,) = calibration_table(data, min_n=1, resamples=50)
    assert (row.prompt_tokens, row.completion_tokens) == (4000, 50)
    assert row.cost_usd == pytest.approx(0.006)
    text = render_calibration([row], "1 failing PR (--min-n)")
    assert "  shadow usage      4,000+50 tokens, $0.0060 ($0.0030 per verdict)" in text
    assert "calibrated once a model has 1 failing PR (--min-n)" in text
