"""The "Run judge anyway" button: judge a change whose behaviour did not pass.

The pipeline runs the judge only when behaviour passes (plausible-but-wrong
code is what a judge is worst at). A maintainer may still want the rubric's
opinion; the result is added to the report, labelled as requested, and the
conclusion is decided again from the three results - it cannot turn a
behaviour failure into a success.
"""

from __future__ import annotations

from bot.store import Store, StoreVerdictCache
from checks.decide import decide
from checks.pipeline import PipelineInputs
from checks.quality import JudgeRecord
from checks.report import Report

REQUESTED = "run on request (Run judge anyway)"


def stored_records(store: Store) -> list[JudgeRecord]:
    """Return the stored judge verdicts as calibration records."""
    return [r.record() for r in store.judge.records()]


def judge_anyway(inputs: PipelineInputs, report: Report, store: Store) -> Report:
    """Return ``report`` with the quality layer run whatever behaviour said."""
    if report.quality.status not in ("skipped", "unavailable"):
        return report  # the judge ran already
    if inputs.given.judge is None:
        quality = report.quality.model_copy(
            update={"detail": "judge requested, but no judge model is configured"}
        )
        return report.model_copy(update={"quality": quality})
    from checks.quality import QualityInputs, run_quality
    from checks.runner import ChangeContext

    quality = run_quality(
        ChangeContext(inputs.workspace, inputs.policy),
        QualityInputs(
            inputs.given.task, inputs.given.judge, StoreVerdictCache(store), records=stored_records(store)
        ),
    )
    if quality.status != "skipped":
        quality = quality.model_copy(update={"detail": f"{REQUESTED}. {quality.detail}".strip()})
    decision = decide(report.shape, report.behaviour, quality, inputs.policy)
    return report.model_copy(
        update={
            "quality": quality,
            "conclusion": decision.conclusion,
            "reasons": list(decision.reasons),
        }
    )
