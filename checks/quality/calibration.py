"""Judge calibration: how often the judge agrees with execution, from plain shadow records.

Rates carry Wilson intervals (a closed form: the standard library is enough, so
the judge's calibration note on every judged run needs nothing more); Cohen's
kappa (computed from the 2x2 counts) carries a percentile bootstrap interval
(scipy and numpy, the `calibrate` extra: only the calibration table needs it),
seeded so a table is reproducible. A model is *calibrated* once it has at least ``min_n`` records
of PRs whose tests failed: the false-acceptance rate is the number that
matters, because a judge that passes broken code is the failure execution
exists to catch.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

CONFIDENCE = 0.95
# The two-sided normal quantile of CONFIDENCE (1.96 for 95%).
_Z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class JudgeRecord:
    """One shadow judgement next to the execution verdict on the same PR."""

    execution_passed: bool
    judge_passed: bool
    model: str
    rubric: str
    # What the shadow call spent: calibration has a price, and the table shows it.
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class Rate:
    """``count`` of ``n`` with a Wilson interval; no value when n is 0."""

    count: int
    n: int
    low: float | None = None
    high: float | None = None

    @property
    def value(self) -> float | None:
        return self.count / self.n if self.n else None

    def text(self) -> str:
        """Return e.g. ``12% (95% CI 5-25%, n=40)``, or ``n/a (n=0)``."""
        if self.value is None or self.low is None or self.high is None:
            return f"n/a (n={self.n})"
        return f"{_pct(self.value)} (95% CI {_pct(self.low, sign=False)}-{_pct(self.high)}, n={self.n})"


@dataclass(frozen=True)
class ModelCalibration:
    """Agreement between one judge model and execution."""

    model: str
    n: int
    calibrated: bool
    rubrics: tuple[str, ...]
    agreement: Rate
    false_acceptance: Rate
    false_rejection: Rate
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


def _pct(value: float, *, sign: bool = True) -> str:
    return f"{value * 100:.0f}{'%' if sign else ''}"


def rate(count: int, n: int) -> Rate:
    """Return ``count``/``n`` with its Wilson score interval (no continuity correction)."""
    if n == 0:
        return Rate(count, n)
    # The form scipy's binomtest(...).proportion_ci(method="wilson") computes; a test compares the two.
    p = count / n
    denominator = 2 * (n + _Z**2)
    center = (2 * n * p + _Z**2) / denominator
    half = _Z * math.sqrt(_Z**2 + 4 * n * p * (1 - p)) / denominator
    return Rate(count, n, max(0.0, center - half), min(1.0, center + half))


@lru_cache(maxsize=65536)
def _kappa_of_counts(counts: tuple[int, int, int, int]) -> float:
    """Cohen's kappa of a 2x2 table (exec, judge) = (0,0), (0,1), (1,0), (1,1); NaN when undefined."""
    c00, c01, c10, c11 = counts
    n = c00 + c01 + c10 + c11
    if n == 0:
        return math.nan
    agreed = (c00 + c11) / n
    # What two raters with these marginals would agree on by chance.
    chance = ((c00 + c01) * (c00 + c10) + (c10 + c11) * (c01 + c11)) / n**2
    # Both raters constant and equal: kappa is undefined; NaN says so.
    return math.nan if chance == 1 else (agreed - chance) / (1 - chance)


def _kappa(execution: np.ndarray, judge: np.ndarray) -> float:
    import numpy as np  # the `calibrate` extra; already loaded by kappa_interval

    # Bootstrap resamples of binary pairs differ only in their 2x2 counts: cache by counts.
    cells = execution.astype(int) * 2 + judge.astype(int)
    counts = np.bincount(cells, minlength=4)
    return _kappa_of_counts((int(counts[0]), int(counts[1]), int(counts[2]), int(counts[3])))


def kappa_interval(
    execution: Sequence[bool], judge: Sequence[bool], *, seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float | None, float | None, float | None]:
    """Return Cohen's kappa and its percentile bootstrap interval; None where undefined.

    Needs scipy (the `calibrate` extra); ModuleNotFoundError without it.
    """
    import numpy as np

    ex, ju = np.asarray(execution, dtype=bool), np.asarray(judge, dtype=bool)
    if len(ex) == 0:
        return None, None, None
    point = _kappa(ex, ju)
    if np.isnan(point) or len(ex) < 2:
        return (None if np.isnan(point) else point), None, None
    from scipy.stats import DegenerateDataWarning, bootstrap

    with warnings.catch_warnings():
        # Resamples where kappa is undefined make the interval NaN; that is handled below.
        warnings.simplefilter("ignore", DegenerateDataWarning)
        found = bootstrap(
            (ex, ju),
            _kappa,
            paired=True,
            vectorized=False,
            n_resamples=resamples,
            confidence_level=CONFIDENCE,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    if np.isnan(low) or np.isnan(high):
        return point, None, None
    return point, low, high


def calibration_table(
    records: Sequence[JudgeRecord], *, min_n: int, seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES
) -> list[ModelCalibration]:
    """Measure each judge model against execution, one row per model (sorted by name)."""
    table = []
    for model in sorted({r.model for r in records}):
        mine = [r for r in records if r.model == model]
        failing = [r for r in mine if not r.execution_passed]
        passing = [r for r in mine if r.execution_passed]
        kappa, low, high = kappa_interval(
            [r.execution_passed for r in mine], [r.judge_passed for r in mine], seed=seed, resamples=resamples
        )
        table.append(
            ModelCalibration(
                model=model,
                n=len(mine),
                calibrated=len(failing) >= min_n,
                rubrics=tuple(sorted({r.rubric for r in mine})),
                agreement=rate(sum(r.execution_passed == r.judge_passed for r in mine), len(mine)),
                false_acceptance=rate(sum(r.judge_passed for r in failing), len(failing)),
                false_rejection=rate(sum(not r.judge_passed for r in passing), len(passing)),
                kappa=kappa,
                kappa_low=low,
                kappa_high=high,
                prompt_tokens=sum(r.prompt_tokens for r in mine),
                completion_tokens=sum(r.completion_tokens for r in mine),
                cost_usd=sum(r.cost_usd for r in mine),
            )
        )
    return table


# What the calibration measures, said wherever its number is shown: the judge's one task-level
# accept/reject question in shadow, against execution - not the accuracy of each rubric criterion.
MEASURES = "task-level judge vs execution"


def false_acceptance_label(records: Sequence[JudgeRecord], model: str, min_n: int) -> str:
    """Return the calibration note for the quality row, naming what it measures.

    E.g. ``task-level judge vs execution: false acceptance 12% (95% CI 5-26%, n=40)``.
    """
    failing = [r for r in records if r.model == model and not r.execution_passed]
    if len(failing) < min_n:
        return f"{MEASURES}: uncalibrated (n={len(failing)} < {min_n} failing PRs)"
    return f"{MEASURES}: false acceptance {rate(sum(r.judge_passed for r in failing), len(failing)).text()}"


def _kappa_text(row: ModelCalibration) -> str:
    if row.kappa is None:
        return "n/a"
    if row.kappa_low is None or row.kappa_high is None:
        return f"{row.kappa:.2f}"
    return f"{row.kappa:.2f} (95% CI {row.kappa_low:.2f} to {row.kappa_high:.2f})"


def render_calibration(table: Sequence[ModelCalibration], min_n_source: str = "") -> str:
    """Return the text `patchgate calibrate` prints: one block per judge model.

    ``min_n_source`` says where the calibration threshold came from, e.g.
    ``30 failing PRs (quality.calibration_min_n in .github/patchgate.yml)``.
    """
    if not table:
        return "no shadow judgements recorded yet: the judge is uncalibrated\n"
    lines = [
        "judge calibration: the judge's task-level verdict (shadow: does this patch accomplish the",
        "task? PASS/FAIL) compared with execution. It is not the accuracy of each rubric criterion.",
        "false acceptance = P(judge PASS | tests fail); false rejection = P(judge FAIL | tests pass)",
    ]
    if min_n_source:
        lines.append(f"calibrated once a model has {min_n_source}")
    for row in table:
        state = "calibrated" if row.calibrated else f"UNCALIBRATED (n={row.false_acceptance.n} failing PRs)"
        lines += [
            "",
            f"{row.model}  [{state}]  rubrics: {', '.join(row.rubrics)}",
            f"  n                 {row.n}",
            f"  agreement         {row.agreement.text()}",
            f"  false acceptance  {row.false_acceptance.text()}",
            f"  false rejection   {row.false_rejection.text()}",
            f"  Cohen's kappa     {_kappa_text(row)}",
            f"  shadow usage      {row.prompt_tokens:,}+{row.completion_tokens:,} tokens, "
            f"${row.cost_usd:.4f} ({_per_verdict(row)} per verdict)",
        ]
    return "\n".join(lines) + "\n"


def _per_verdict(row: ModelCalibration) -> str:
    return f"${row.cost_usd / row.n:.4f}" if row.n else "n/a"
