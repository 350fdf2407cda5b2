"""Growth exponents and the efficiency verdict, from made-up measurements: pure, a table of cases."""

from __future__ import annotations

import pytest

from checks.behaviour.growth import MIN_REFERENCE_S, Sizes, exponent, judge, paired_ratio


def series(sizes: list[int], f: object, reps: int = 3) -> dict[int, tuple[float, ...]]:
    return {n: tuple(f(n) for _ in range(reps)) for n in sizes}  # type: ignore[operator]


def samples(head: dict[int, tuple[float, ...]], ref: dict[int, tuple[float, ...]]) -> dict[int, Sizes]:
    return {n: Sizes(ref[n], head[n]) for n in head}


SIZES = [10_000, 30_000, 100_000]
LINEAR = series(SIZES, lambda n: n * 1e-7)  # 1 ms at 10^4
QUADRATIC = series(SIZES, lambda n: n * n * 1e-11)  # 1 ms at 10^4, 100 ms at 10^5
LINEAR_X3 = series(SIZES, lambda n: 3 * n * 1e-7)
N_LOG_N = series(SIZES, lambda n: n * (n.bit_length()) * 1e-8)


@pytest.mark.parametrize(
    ("points", "expected"),
    [
        ([(10, 1.0), (100, 10.0), (1000, 100.0)], 1.0),
        ([(10, 1.0), (100, 100.0)], 2.0),
        ([(10, 5.0), (1000, 5.0)], 0.0),
        ([(10, 1.0)], None),  # one size: no slope
        ([(10, 1.0), (10, 2.0)], None),  # one size twice: no slope
        ([(10, 0.0), (100, 1.0)], None),  # a time of zero has no logarithm
    ],
)
def test_exponent_is_the_slope_of_log_time_against_log_n(
    points: list[tuple[float, float]], expected: float | None
) -> None:
    found = exponent(points)
    assert found == (pytest.approx(expected) if expected is not None else None)


def test_the_ratio_pairs_the_inputs() -> None:
    assert paired_ratio(Sizes((1.0, 2.0, 4.0), (3.0, 2.0, 40.0))) == 3.0
    assert paired_ratio(Sizes((0.0,), (1.0,))) is None  # a reference time of 0 pairs with nothing
    assert paired_ratio(Sizes((), ())) is None


@pytest.mark.parametrize(
    ("head", "ref", "verdict", "reason"),
    [
        (LINEAR, LINEAR, "passed", ""),
        (QUADRATIC, LINEAR, "failed", "slower than the reference"),  # 10x at 10^5
        (LINEAR_X3, LINEAR, "passed", ""),  # same growth, 3x: within max_slowdown
        (N_LOG_N, LINEAR, "passed", ""),  # log n is within the margin
        (LINEAR, QUADRATIC, "passed", ""),  # better than the reference
    ],
)
def test_the_verdict_compares_growth_and_the_ratio_at_the_largest_size(
    head: dict[int, tuple[float, ...]], ref: dict[int, tuple[float, ...]], verdict: str, reason: str
) -> None:
    growth = judge(samples(head, ref), max_exponent_margin=0.3, max_slowdown=5.0)
    assert growth.verdict == verdict
    assert reason in growth.reason
    assert growth.largest == 100_000


def test_a_higher_exponent_fails_within_the_slowdown_when_slower_at_the_largest_size() -> None:
    # Faster at 10^4, 3x slower at 10^5: within a 5x slowdown, but growing as n^1.5 against n.
    head = series(SIZES, lambda n: 0.03 * (n / 100_000) ** 1.5)
    growth = judge(samples(head, LINEAR), max_exponent_margin=0.3, max_slowdown=5.0)
    assert growth.head_exponent == pytest.approx(1.5)
    assert growth.reference_exponent == pytest.approx(1.0)
    assert (growth.verdict, growth.reason.startswith("grows as n^1.50")) == ("failed", True)


def test_a_higher_exponent_while_faster_at_every_size_is_not_judged_on_an_extrapolation() -> None:
    head = series(SIZES, lambda n: n * n * 1e-13)  # quadratic, 10x faster at 10^5
    growth = judge(samples(head, LINEAR), max_exponent_margin=0.3, max_slowdown=5.0)
    assert growth.head_exponent == pytest.approx(2.0)
    assert growth.verdict == "passed"
    assert growth.ratio == pytest.approx(0.1)


def test_the_channel_s_cost_is_the_change_s_to_pay_and_never_taken_off() -> None:
    # A tenth of a millisecond a call on top of the reference's own work: within bounds when the
    # reference takes milliseconds, and nothing measured on the subject is ever subtracted from it.
    head = series(SIZES, lambda n: n * 1e-7 + 1e-4)
    growth = judge(samples(head, LINEAR), max_exponent_margin=0.3, max_slowdown=5.0)
    assert growth.verdict == "passed"
    assert growth.ratio == pytest.approx(1.01)
    assert growth.head_exponent is not None and growth.head_exponent < 1  # the constant flattens it


def test_sizes_the_reference_is_too_fast_at_are_the_suite_s_problem() -> None:
    # Decided by the reference's time alone (the grader's measurement): the change cannot bring it about.
    tiny = series(SIZES, lambda n: n * 1e-9)  # 0.1 ms at 10^5
    growth = judge(samples(series(SIZES, lambda n: 1.0), tiny), max_exponent_margin=0.3, max_slowdown=5.0)
    assert growth.verdict == "error"
    assert growth.reason.startswith("the sizes are too small to time: the reference takes 0.1 ms")
    assert MIN_REFERENCE_S == 1e-3


def test_nothing_measured_fails() -> None:
    assert judge({}, max_exponent_margin=0.3, max_slowdown=5.0).verdict == "failed"
    empty = {10: Sizes((), ())}
    assert judge(empty, max_exponent_margin=0.3, max_slowdown=5.0).reason == "nothing was measured"
