"""An efficiency check's verdict from the times measured in one run: growth exponents and a ratio. Pure.

The grader measures, at each declared size, the change and the reference
on the same inputs, interleaved (``incontainer/grader/timing.py``). Here:

- each side's **growth exponent** is the slope of log(time) against log(n)
  (least squares over the sizes' medians), fitted only over sizes where both
  sides took long enough to measure: ``MEASURABLE`` times the spread of an
  empty round trip in the same run, so the channel's own noise is never fitted;
- the **ratio** at the largest size is the median of the paired ratios
  (change / reference, one pair per input);
- the change **fails** when it is more than ``max_slowdown`` times slower at
  the largest size, or when its exponent exceeds the reference's by more
  than ``max_exponent_margin`` while it is the slower there (a change whose
  higher exponent still leaves it faster at every size measured is not
  judged on an extrapolation).

No absolute time is compared with anything: only ratios of one run.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

# A size's median counts towards the exponent only above this many noise spreads of the channel.
MEASURABLE = 10.0
# The smallest spread believed (a clock's resolution): a round trip that never varies is not noiseless.
MIN_SPREAD_S = 1e-6

Verdict = Literal["passed", "failed"]


@dataclass(frozen=True)
class Sizes:
    """One size's times, in seconds, one per input (the change's with the empty round trip taken off)."""

    reference: tuple[float, ...]
    head: tuple[float, ...]


@dataclass(frozen=True)
class Growth:
    """The verdict of one efficiency check and the figures it rests on."""

    verdict: Verdict
    head_exponent: float | None
    reference_exponent: float | None
    ratio: float | None
    largest: int
    reason: str


def exponent(points: Sequence[tuple[float, float]]) -> float | None:
    """The least-squares slope of log(t) against log(n); None with fewer than two sizes or a time <= 0."""
    if len(points) < 2 or any(n <= 0 or t <= 0 for n, t in points):
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mx) ** 2 for x in xs)
    if spread == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / spread


def noise(overhead: Sequence[float]) -> float:
    """How much an empty round trip's time varied in this run (interquartile range, MIN_SPREAD_S at least)."""
    if len(overhead) < 2:
        return MIN_SPREAD_S
    q = statistics.quantiles(overhead, n=4, method="inclusive")
    return max(q[2] - q[0], MIN_SPREAD_S)


def paired_ratio(sizes: Sizes, floor: float) -> float | None:
    """The median of change/reference over the inputs of one size (both held at ``floor`` at least)."""
    pairs = list(zip(sizes.head, sizes.reference, strict=False))
    if not pairs:
        return None
    return statistics.median(max(h, floor) / max(r, floor) for h, r in pairs)


def judge(
    samples: Mapping[int, Sizes],
    overhead: Sequence[float],
    *,
    max_exponent_margin: float,
    max_slowdown: float,
) -> Growth:
    """Judge the change's growth against the reference's from one run's measurements."""
    measured = {n: s for n, s in samples.items() if s.reference and s.head}
    if not measured:
        return Growth("failed", None, None, None, 0, "nothing was measured")
    floor = MEASURABLE * noise(overhead)
    largest = max(measured)
    ratio = paired_ratio(measured[largest], floor)
    fitted = sorted(
        n
        for n, s in measured.items()
        if statistics.median(s.head) >= floor and statistics.median(s.reference) >= floor
    )
    head_exp = exponent([(n, statistics.median(measured[n].head)) for n in fitted])
    ref_exp = exponent([(n, statistics.median(measured[n].reference)) for n in fitted])
    if ratio is not None and ratio > max_slowdown:
        return Growth(
            "failed",
            head_exp,
            ref_exp,
            ratio,
            largest,
            f"{ratio:.3g}x slower than the reference at the largest size (at most {max_slowdown:g}x)",
        )
    slower = ratio is not None and ratio > 1
    if slower and head_exp is not None and ref_exp is not None and head_exp - ref_exp > max_exponent_margin:
        return Growth(
            "failed",
            head_exp,
            ref_exp,
            ratio,
            largest,
            f"grows as n^{head_exp:.2f} against the reference's n^{ref_exp:.2f} "
            f"(at most {max_exponent_margin:g} more)",
        )
    return Growth("passed", head_exp, ref_exp, ratio, largest, "")
