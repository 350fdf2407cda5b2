"""A differential suite's report entry, from its run's parsed report, under the visibility rules. Pure.

Per function: *agreed* (no disagreement in the inputs drawn), *disagreed*
(with the smallest counterexample Hypothesis shrank to), *error* (the
suite's reference, strategy or generator failed: a configuration problem,
never the change's failure) or *not run* (the code under test stopped
answering, or the run ended first: counted against the change). Whether a
reported disagreement is one is decided again here, on the host, by the
same rule the grader used (``observations.agree``).

A hidden suite (and base, for a refactor) shows every function, its
counterexample and its efficiency figures; a held-out suite shows counts
only - how many functions agreed and how many efficiency checks passed -
and nothing of its inputs, counterexamples or timings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from checks.behaviour.diffsuite import DiffSpec
from checks.behaviour.growth import Sizes, judge
from checks.behaviour.incontainer.channel.observations import agree, call_text, describe
from checks.behaviour.outcomes import clean
from checks.policy import Behaviour
from checks.report import DifferentialResult, EfficiencyResult, FunctionCheck, LayerStatus

Source = Literal["hidden", "held_out", "base"]
NAMES: dict[Source, str] = {"hidden": "hidden", "held_out": "held-out", "base": "base"}
HELD_OUT_ERROR = "the held-out differential suite could not run as written (details in the server log)"


def counterexample(spec: DiffSpec, found: Mapping[str, Any], size: int | None = None) -> str:
    """Say what the change and the reference did on one input, e.g. ``head returned ... for f('0x'); ...``."""
    call = call_text(spec.name, found.get("args"), found.get("kwargs"))
    head, reference = found.get("head") or {}, found.get("reference") or {}
    at = f" (an input of size {size})" if size is not None else ""
    return clean(f"head {describe(head)} for {call}{at}; reference {describe(reference)}")


def _disagrees(found: object) -> bool:
    if not isinstance(found, dict):
        return False
    reference, head = found.get("reference"), found.get("head")
    return isinstance(reference, dict) and isinstance(head, dict) and not agree(reference, head)


def _efficiency(spec: DiffSpec, record: Mapping[str, Any] | None, agreed: bool, *, gone: str, log_clock: str,
                quota: float | None, policy: Behaviour) -> EfficiencyResult | None:  # fmt: skip
    if spec.efficiency is None or not policy.efficiency.enabled:
        return None
    clock: Literal["cpu", "wall"] = "wall" if log_clock == "wall" else "cpu"
    base = EfficiencyResult(status="not_run", sizes=list(spec.efficiency.sizes), clock=clock, cpu_quota=quota)

    def failed(detail: str, size: object = None) -> EfficiencyResult:
        largest = size if isinstance(size, int) and not isinstance(size, bool) else None
        return base.model_copy(update={"status": "failed", "largest": largest, "detail": clean(detail)})

    if not agreed:
        return base.model_copy(update={"detail": "not measured: the function disagrees with its reference"})
    status = record.get("status") if record is not None else None
    if record is None or status == "gone":
        # The change's code stopped answering, or the run ended, before it was measured: its doing.
        return failed(gone or "the run ended before it was measured")
    if status == "error":
        return base.model_copy(update={"status": "error", "detail": clean(record.get("detail"))})
    size = record.get("size")
    if status == "timeout":
        return failed(f"did not return within {policy.efficiency.call_timeout_s:g}s at n = {size}", size)
    if status == "disagreed":
        return failed(f"disagrees with the reference at n = {size}", size)
    if status not in ("measured", "time"):
        return failed("the grader's record is inconsistent")
    samples: dict[int, Sizes] = {}
    raw = record.get("samples")
    for key, value in raw.items() if isinstance(raw, dict) else []:
        if isinstance(value, dict) and str(key).isdigit():
            samples[int(key)] = Sizes(_floats(value.get("reference")), _floats(value.get("head")))
    growth = judge(samples, max_exponent_margin=policy.efficiency.max_exponent_margin,
                   max_slowdown=policy.efficiency.max_slowdown)  # fmt: skip
    detail = growth.reason
    if status == "time":
        spent = [sum(s.head) - sum(s.reference) for s in samples.values()]
        if growth.verdict == "error" and sum(spent) > 0:
            # Cut short before a size the reference takes long enough at, by the change's own time.
            return failed(
                "used up its time limit before the sizes could be timed (the change's calls took most of it)"
            )
        detail = "; ".join(filter(None, [detail, "stopped at its time limit: the sizes measured so far"]))
    return base.model_copy(
        update={
            "status": growth.verdict,
            "head_exponent": _rounded(growth.head_exponent),
            "reference_exponent": _rounded(growth.reference_exponent),
            "ratio": _rounded(growth.ratio),
            "largest": growth.largest or None,
            "detail": detail,
        }
    )


def _floats(value: object) -> tuple[float, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(
        float(v) for v in value if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def function_check(
    spec: DiffSpec,
    record: Mapping[str, Any] | None,
    efficiency: Mapping[str, Any] | None,
    *,
    gone: str,
    clock: str,
    quota: float | None,
    policy: Behaviour,
) -> FunctionCheck:
    """One function's entry, from its records (None: not reported)."""
    reference = "base" if spec.source == "base" else spec.reference
    check = FunctionCheck(id=spec.id, function=spec.function, reference=reference, status="not_run")
    if record is None:
        detail = gone or "the run ended before this function was checked"
        return check.model_copy(update={"detail": clean(detail)})
    inputs = record.get("inputs")
    check.inputs = inputs if isinstance(inputs, int) and not isinstance(inputs, bool) and inputs >= 0 else 0
    status = record.get("status")
    if status == "error":
        return check.model_copy(update={"status": "error", "detail": clean(record.get("detail"))})
    if status == "disagreed" and _disagrees(record.get("found")):
        check.status, check.counterexample = "disagreed", counterexample(spec, record["found"])
    elif status == "agreed":
        check.status = "agreed"
    else:
        return check.model_copy(update={"status": "error", "detail": "the grader's record is inconsistent"})
    check.efficiency = _efficiency(
        spec, efficiency, check.status == "agreed", gone=gone, log_clock=clock, quota=quota, policy=policy
    )
    if (
        efficiency is not None
        and efficiency.get("status") == "disagreed"
        and _disagrees(efficiency.get("found"))
    ):
        size = efficiency.get("size") if isinstance(efficiency.get("size"), int) else None
        check.status, check.counterexample = "disagreed", counterexample(spec, efficiency["found"], size)
    return check


def differential_result(
    source: Source,
    specs: tuple[DiffSpec, ...],
    checks: list[FunctionCheck],
    *,
    seed: str,
    policy: Behaviour,
    problem: str = "",
) -> DifferentialResult:
    """Combine a suite's function checks; a held-out suite keeps only its counts."""
    name = NAMES[source]
    checked = len(checks)
    agreed = sum(c.status == "agreed" for c in checks)
    # Measured only: a function that disagrees is not timed, and is counted as disagreeing already.
    timed = [
        c.efficiency
        for c in checks
        if c.efficiency is not None and c.efficiency.status in ("passed", "failed")
    ]
    errors = [c for c in checks if c.status == "error" or (c.efficiency and c.efficiency.status == "error")]
    rate = agreed / checked if checked else 0.0
    status: LayerStatus
    if errors:
        status = "error"
    elif problem or rate < policy.differential.min_pass_rate or any(t.status != "passed" for t in timed):
        status = "failed"
    else:
        status = "passed"
    private = source == "held_out"
    # The problem's words name a record of the run: a held-out suite says it in fixed words.
    notes = [("its report was not believed" if private else problem)] if problem else []
    if errors:
        first = errors[0]
        why = first.detail or (first.efficiency.detail if first.efficiency else "")
        notes.append(HELD_OUT_ERROR if private else f"gate configuration problem: {first.id}: {why}")
    result = DifferentialResult(
        name=name,
        source=source,
        status=status,
        checked=checked,
        agreed=agreed,
        pass_rate=round(rate, 4),
        efficiency_checked=len(timed),
        efficiency_passed=sum(t.status == "passed" for t in timed),
        seed=seed,
    )
    if not private:
        result.inputs = sum(c.inputs for c in checks)
        result.functions = checks
    result.detail = "; ".join(notes)
    return result
