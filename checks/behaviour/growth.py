"""An efficiency check's verdict from the times measured in one run: growth exponents and a ratio. Pure.

The grader measures, at each declared size, the change and the reference
on the same inputs, interleaved (``incontainer/grader/timing.py``). Here:

- each side's **growth exponent** is the slope of log(time) against log(n)
  (least squares over the sizes' medians);
- the **ratio** at the largest size is the median of the paired ratios
  (change / reference, one pair per input);
- the change **fails** when it is more than ``max_slowdown`` times slower at
  the largest size, or when its exponent exceeds the reference's by more
  than ``max_exponent_margin`` while it is the slower there (a change whose
  higher exponent still leaves it faster at every size measured is not
  judged on an extrapolation).

Nothing the code under test can inflate is ever subtracted from its own
times or decides what counts as noise: its time is the whole round trip of
its call (the channel's share, about a tenth of a millisecond, is its to pay),
and only the reference's own time - the grader's measurement - says whether
the sizes are large enough to time: under ``MIN_REFERENCE_S`` at the
largest size, the check is the suite's problem (declare larger sizes). An
earlier version subtracted an empty round trip measured on the subject and
fitted above its spread: code that spun a forked process during those round
trips inflated both and hid an 8x slowdown (measured 2.06x).

No absolute time is compared with anything: only ratios of one run.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

# The reference's median at the largest size must reach this for the ratio to say more than the channel.
MIN_REFERENCE_S = 1e-3

Verdict = Literal["passed", "failed", "error"]


@dataclass(frozen=True)
class Sizes:
    """One size's times, in seconds, one per input."""

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


def paired_ratio(sizes: Sizes) -> float | None:
    """The median of change/reference over the inputs of one size (None: nothing to pair)."""
    pairs = [(h, r) for h, r in zip(sizes.head, sizes.reference, strict=False) if r > 0]
    return statistics.median(h / r for h, r in pairs) if pairs else None


def judge(samples: Mapping[int, Sizes], *, max_exponent_margin: float, max_slowdown: float) -> Growth:
    """Judge the change's growth against the reference's from one run's measurements."""
    measured = {n: s for n, s in samples.items() if s.reference and s.head}
    if not measured:
        return Growth("failed", None, None, None, 0, "nothing was measured")
    largest = max(measured)
    reference_s = statistics.median(measured[largest].reference)
    if reference_s < MIN_REFERENCE_S:
        why = (f"the sizes are too small to time: the reference takes {reference_s * 1e3:.3g} ms at the "
               f"largest, under {MIN_REFERENCE_S * 1e3:g} ms (declare larger sizes)")  # fmt: skip
        return Growth("error", None, None, None, largest, why)
    ratio = paired_ratio(measured[largest])
    points = sorted(measured)
    head_exp = exponent([(n, statistics.median(measured[n].head)) for n in points])
    ref_exp = exponent([(n, statistics.median(measured[n].reference)) for n in points])
    if ratio is not None and ratio > max_slowdown:
        why = f"{ratio:.3g}x slower than the reference at the largest size (at most {max_slowdown:g}x)"
        return Growth("failed", head_exp, ref_exp, ratio, largest, why)
    slower = ratio is not None and ratio > 1
    if slower and head_exp is not None and ref_exp is not None and head_exp - ref_exp > max_exponent_margin:
        why = (f"grows as n^{head_exp:.2f} against the reference's n^{ref_exp:.2f} "
               f"(at most {max_exponent_margin:g} more)")  # fmt: skip
        return Growth("failed", head_exp, ref_exp, ratio, largest, why)
    return Growth("passed", head_exp, ref_exp, ratio, largest, "")
