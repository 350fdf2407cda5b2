"""The headline numbers of each layer, shared by every renderer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from checks.decide import suite_numbers
from checks.report import (
    BehaviourResult,
    DifferentialResult,
    EfficiencyResult,
    FunctionCheck,
    LayerStatus,
    QualityResult,
    Report,
    ShapeResult,
    StrengthResult,
    percent,
)

QUALITY_LABEL = "quality (judged, not executed)"

STATUS_ICON: dict[LayerStatus, str] = {
    "passed": "✅",
    "failed": "❌",
    "error": "⚠️",
    "skipped": "⏭️",
    "unavailable": "⚠️",
}
CONCLUSION_ICON = {
    "success": "✅",
    "failure": "❌",
    "neutral": "⚪",
    "action_required": "🟠",
}


def maintainer_findings(shape: ShapeResult, tool: str | None = None) -> int:
    """Count the change's findings (of ``tool``, or any) that ask for a maintainer."""
    return sum(1 for f in shape.findings if f.introduced and f.needs_maintainer and tool in (None, f.tool))


def shape_status(shape: ShapeResult) -> tuple[str, str]:
    """Return (icon, words) for the shape layer: a pass with findings for a maintainer is no green tick."""
    if shape.status == "passed" and maintainer_findings(shape):
        return "🟠", "needs a maintainer"
    return STATUS_ICON[shape.status], shape.status


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def shape_numbers(shape: ShapeResult) -> str:
    """Return e.g. ``2 new findings (1 ruff, 1 mypy) · 5 pre-existing``."""
    if shape.status == "skipped":
        return "skipped"
    new = [f for f in shape.findings if f.introduced]
    parts = [plural(len(new), "new finding")]
    if new:
        by_tool = Counter(f.tool for f in new)
        parts[0] += " (" + ", ".join(f"{n} {t}" for t, n in sorted(by_tool.items())) + ")"
    parts.append(f"{shape.preexisting} pre-existing")
    broken = [t.tool for t in shape.tools if t.status == "error"]
    if broken:
        parts.append("could not run: " + ", ".join(broken))
    return " · ".join(parts)


def power(n: int) -> str:
    """Write a size as people read it: ``10^5`` for 100000, ``3·10^4`` for 30000, ``1500`` as it is."""
    exponent = len(str(n)) - 1
    if n < 10_000 or n % 10**exponent:
        return f"{n:,}"
    lead = n // 10**exponent
    return f"10^{exponent}" if lead == 1 else f"{lead}·10^{exponent}"


def differential_numbers(result: DifferentialResult) -> str:
    """Return e.g. ``differential (hidden) 1/1 functions agree in 2,000 inputs · efficiency 1/1``."""
    line = f"differential ({result.name}) {result.agreed}/{result.checked} functions agree"
    if result.inputs is not None:
        line += f" in {result.inputs:,} input{'' if result.inputs == 1 else 's'}"
    if result.efficiency_checked:
        line += f" · efficiency {result.efficiency_passed}/{result.efficiency_checked} within bounds"
    return line


def _backticks(text: str) -> str:
    return f"`{text}`"


def differential_notes(result: DifferentialResult) -> str:
    """Return e.g. ``seed 5eed... · times: CPU time, interleaved, ratios within this run, CPU quota 1``."""
    timed = [f.efficiency for f in result.functions if f.efficiency and f.efficiency.status != "not_run"]
    notes = [f"seed {result.seed}"] if result.seed and result.source != "held_out" else []
    notes += [f"Hypothesis {result.hypothesis}"] if result.hypothesis and result.source != "held_out" else []
    if timed:
        how = "CPU time" if all(e.clock == "cpu" for e in timed) else "wall time"
        quota = f", CPU quota {timed[0].cpu_quota:g}" if timed[0].cpu_quota else ""
        notes.append(f"times: {how}, interleaved, ratios within this run{quota}")
    return " · ".join([*notes, *([result.detail] if result.detail else [])])


def function_line(check: FunctionCheck, quote: Callable[[str], str] = _backticks) -> str:
    """Return e.g. ``differential: 0 disagreements in 2,000 inputs (reference `ref.parse_duration`)``."""
    reference = "base" if check.reference == "base" else quote(check.reference)
    if check.status == "agreed":
        return f"differential: 0 disagreements in {check.inputs:,} inputs (reference {reference})"
    if check.status == "disagreed":
        return f"differential: disagrees with reference {reference} after {plural(check.inputs, 'input')}"
    if check.status == "error":
        return f"differential: could not run (reference {reference})"
    return f"differential: not checked (reference {reference})"


def times(ratio: float) -> str:
    """Write a ratio of two times: ``0.18x``, ``1.1x``, ``22x``."""
    return f"{ratio:.2f}x" if ratio < 1 else f"{ratio:.1f}x" if ratio < 10 else f"{ratio:.0f}x"


def efficiency_line(efficiency: EfficiencyResult) -> str:
    """Return e.g. ``efficiency: n^1.02 vs reference n^0.98 at n = 10^5 (1.1x)``."""
    if efficiency.status in ("not_run", "error") or efficiency.ratio is None:
        return f"efficiency: {efficiency.detail or efficiency.status}"
    if efficiency.head_exponent is not None and efficiency.reference_exponent is not None:
        growth = f"n^{efficiency.head_exponent:.2f} vs reference n^{efficiency.reference_exponent:.2f}"
    else:
        growth = "no growth fitted (fewer than two sizes timed)"
    at = f" at n = {power(efficiency.largest)}" if efficiency.largest else ""
    line = f"efficiency: {growth}{at} ({times(efficiency.ratio)})"
    return line + (f" — {efficiency.detail}" if efficiency.detail else "")


def behaviour_numbers(behaviour: BehaviourResult) -> str:
    """Return e.g. ``hidden 43/50 (86%) · held-out 9/10 · regressions 0 · fail→pass 5/7``."""
    if not behaviour.suites:
        found = [differential_numbers(d) for d in behaviour.differential]
        return " · ".join(found) if found else behaviour.detail or behaviour.status
    parts = []
    for suite in behaviour.suites:
        parts.append(suite_numbers(suite))
    parts.append(f"regressions {behaviour.regressions}")
    if behaviour.fail_to_pass_total:
        parts.append(f"fail→pass {behaviour.fail_to_pass}/{behaviour.fail_to_pass_total}")
    flaky = sum(s.flaky for s in behaviour.suites)
    if flaky:
        parts.append(f"flaky {flaky} excluded")
    if behaviour.overfitting:
        parts.append("overfitting signal")
    parts += [differential_numbers(d) for d in behaviour.differential]
    strength = behaviour.strength
    if strength.status == "measured":
        if strength.hidden_covered is not None:
            parts.append(f"changed lines run {strength.hidden_covered}/{strength.changed_lines}")
        if strength.mutants:
            parts.append(f"mutants killed {strength.killed}/{strength.mutants - strength.not_run}")
        elif strength.pending:
            parts.append("suite strength: still measuring")
    return " · ".join(parts)


def strength_numbers(strength: StrengthResult) -> str:
    """Return e.g. ``hidden suite runs 38/40 changed lines (95%) · kills 14/20 mutants (70%)``."""
    if strength.status != "measured":
        return strength.detail or strength.status
    parts = []
    coverage = strength.hidden_coverage
    if coverage is not None:
        fraction = f"{strength.hidden_covered}/{strength.changed_lines}"
        parts.append(
            f"{strength.measured_by} runs {fraction} changed lines "
            f"({percent(coverage)}, the code under test's report)"
        )
    else:
        parts.append(f"changed-line coverage unavailable ({strength.changed_lines} changed lines)")
    score = strength.mutation_score
    if score is not None:
        ran = strength.mutants - strength.not_run
        parts.append(
            f"{strength.measured_by} kills {strength.killed}/{ran} mutants of the changed lines "
            f"({percent(score)})"
        )
    if strength.not_run:
        parts.append(f"{strength.not_run} mutants not run (time budget)")
    if strength.read_whole:
        count = len(strength.read_whole)
        parts.append(f"{count} changed file{'s' if count != 1 else ''} counted whole (could not be parsed)")
    if strength.not_mutated:
        count = len(strength.not_mutated)
        parts.append(f"{count} changed file{'s' if count != 1 else ''} not mutated")
    if strength.pending:
        parts.append("mutation score: still measuring")
    elif not strength.mutants and strength.detail:
        parts.append(strength.detail)
    return " · ".join(parts)


def quality_numbers(quality: QualityResult) -> str:
    """Return e.g. ``5/6 criteria pass · 1 unverified · uncalibrated``."""
    if quality.status in ("skipped", "unavailable", "error") and not quality.criteria:
        return quality.detail or quality.status
    verdicts = Counter(c.verdict for c in quality.criteria)
    applicable = len(quality.criteria) - verdicts["n/a"]
    parts = [f"{verdicts['pass']}/{applicable} criteria pass"]
    for verdict in ("fail", "unverified", "error"):
        if verdicts[verdict]:
            parts.append(f"{verdicts[verdict]} {verdict}")
    parts.append(quality.calibration)
    if quality.self_preference:
        parts.append(quality.self_preference)
    return " · ".join(parts)


def headline(report: Report, *, with_reason: bool = True) -> str:
    """Return the one line that says the conclusion and the numbers that decided it (and why)."""
    icon = CONCLUSION_ICON[report.conclusion]
    first = report.reasons[0] if report.reasons else ""
    numbers = [f"shape {shape_status(report.shape)[1]}"]
    if report.behaviour.suites or report.behaviour.differential:
        shown = [suite_numbers(s) for s in report.behaviour.suites]
        shown += [f"differential ({d.name}) {d.agreed}/{d.checked}" for d in report.behaviour.differential]
        numbers.append(" · ".join(shown))
    else:
        numbers.append(f"behaviour {report.behaviour.status}")
    if report.quality.criteria:
        criteria = quality_numbers(report.quality).split(" · ")[0]
        numbers.append(f"quality (judged) {criteria}")
    line = f"{icon} {report.conclusion} — " + " · ".join(numbers)
    if not with_reason or not first or report.conclusion == "success":
        return line
    return f"{line} — {first}"
