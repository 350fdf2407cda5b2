"""The quality layer: ask the judge every rubric criterion, verify its evidence, summarize the result.

A judge outage never raises out of `run_quality`: the result is
`unavailable` with the reason, and the conclusion is decided by shape and
behaviour (``neutral`` at best under a blocking policy, see checks.decide).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

from checks.quality.answer import AnswerError, CriterionAnswer
from checks.quality.cache import VerdictCache, cache_key
from checks.quality.calibration import false_acceptance_label
from checks.quality.context import Context, collect
from checks.quality.evidence import Claim, verify_all
from checks.quality.inputs import QualityInputs
from checks.quality.judge import Judge, JudgeUnavailable, Usage, gather, run, token_counter
from checks.quality.prompt import criterion_prompt, messages, model_aliases, render_task, user_message
from checks.quality.provenance import self_preference
from checks.quality.rubric import Criterion, Rubric, RubricError, load_rubrics
from checks.report import Citation, CriterionResult, LayerStatus, QualityResult, Verdict
from checks.runner import ChangeContext

log = logging.getLogger(__name__)

# Tokens kept free for the message scaffolding around the instructions and material.
SCAFFOLD_TOKENS = 200


def _result(
    rubric: Rubric, criterion: Criterion, verdict: Verdict, reason: str, evidence: Sequence[Citation] = ()
) -> CriterionResult:
    return CriterionResult(
        id=criterion.id,
        rubric=rubric.name,
        question=criterion.question,
        severity=criterion.severity,
        verdict=verdict,
        reason=reason,
        evidence=list(evidence),
    )


def grade(answer: CriterionAnswer, head_dir: Path, shown: set[str]) -> tuple[Verdict, str, list[Citation]]:
    """Turn a validated answer into a verdict: PASS/FAIL count only when every citation verifies."""
    claims = [Claim(e.path, e.start_line, e.end_line, e.quote) for e in answer.evidence]
    citations = verify_all(claims, head_dir, shown)
    if answer.verdict == "N/A":
        return "n/a", answer.reason, citations
    bad = [c for c in citations if not c.verified]
    if bad:
        where = "; ".join(f"{c.path}:{c.start_line}-{c.end_line}: {c.detail}" for c in bad[:3])
        reason = f"the judge said {answer.verdict}, but its cited text is not at head ({where})"
        reason += f": {answer.reason}" if answer.reason else ""
        return "unverified", reason, citations
    return ("pass" if answer.verdict == "PASS" else "fail"), answer.reason, citations


def status_of(criteria: Sequence[CriterionResult]) -> LayerStatus:
    """Return the layer status: failed on a verified blocking FAIL; unavailable if nothing was judged."""
    if not criteria or all(c.verdict == "error" for c in criteria):
        return "unavailable"
    if any(c.verdict == "fail" and c.severity == "blocking" for c in criteria):
        return "failed"
    return "passed"


async def _criterion(
    judge: Judge, rubric: Rubric, criterion: Criterion, ctx: Context, head_dir: Path
) -> CriterionResult:
    views = [v for v in ctx.files if criterion.applies_to(v.path)]
    if not views:
        if any(criterion.applies_to(p) for p in ctx.omitted):
            reason = "not judged: every file it applies to was left out (size budget, binary or unreadable)"
            return _result(rubric, criterion, "error", reason)
        return _result(rubric, criterion, "n/a", f"no changed file matches {', '.join(criterion.files)}")
    chat = messages(criterion_prompt(criterion), user_message(ctx.render(views), criterion.question))
    answer = await judge.ask(chat, CriterionAnswer)
    if isinstance(answer, AnswerError):
        return _result(rubric, criterion, "error", f"judge output unusable after one repair: {answer}")
    verdict, reason, citations = grade(answer, head_dir, {v.path for v in views})
    return _result(rubric, criterion, verdict, reason, citations)


async def _rubric(
    judge: Judge, rubric: Rubric, ctx: Context, head_dir: Path, cache: VerdictCache | None
) -> tuple[list[CriterionResult], bool]:
    key = cache_key(rubric.digest, judge.model, ctx.digest)
    # A cache is an optimization: if the store behind it fails, ask the judge instead.
    try:
        hit = cache.get(key) if cache is not None else None
    except Exception:
        log.warning("quality: verdict cache lookup failed", exc_info=True)
        hit = None
    if hit is not None:
        return hit, True
    results = await gather(_criterion(judge, rubric, c, ctx, head_dir) for c in rubric.criteria)
    # Errors are not cached: the next run should ask again.
    if cache is not None and all(r.verdict != "error" for r in results):
        try:
            cache.put(key, results)
        except Exception:
            log.warning("quality: verdict cache store failed", exc_info=True)
    return results, False


def run_quality(ctx: ChangeContext, inputs: QualityInputs) -> QualityResult:
    """Judge the change against the policy's rubrics; never raises for a judge outage."""
    ws, task, cache, rubric_dirs = ctx.workspace, inputs.task, inputs.cache, inputs.rubric_dirs
    records, provenance = inputs.records, inputs.provenance
    q = ctx.policy.quality
    label = false_acceptance_label(records, q.model, q.calibration_min_n)
    result = QualityResult(
        rubrics=list(q.rubrics),
        model=q.model,
        calibration=label,
        self_preference=self_preference(provenance, q.model),
    )
    if not q.enabled:
        return result.model_copy(update={"status": "skipped", "detail": "disabled by policy"})
    start = time.monotonic()
    settings = inputs.judge.started()  # the run's judge budget, unless the caller started it
    usage = Usage(price=settings.cost_per_token)
    try:
        rubrics = load_rubrics(q.rubrics, rubric_dirs)
        count = token_counter(q.model)
        reserve = max(count(criterion_prompt(c)) for r in rubrics for c in r.criteria) + SCAFFOLD_TOKENS
        context = collect(
            ws,
            render_task(task.title, task.body, task.issue, hide=model_aliases(q.model)),
            budget=q.max_prompt_tokens,
            reserve=reserve,
            count=count,
        )
        result.omitted_files = list(context.omitted)
        if not context.files:
            what = "every changed file was left out" if context.omitted else "only test files changed"
            return result.model_copy(update={"status": "skipped", "detail": f"nothing to review: {what}"})

        async def judge_all() -> list[tuple[list[CriterionResult], bool]]:
            judge = Judge(q.model, settings, usage)
            return await gather(_rubric(judge, r, context, ws.head_dir, cache) for r in rubrics)

        # Latency is the judge's: importing litellm and counting tokens come before.
        start = time.monotonic()
        outcomes = run(judge_all)
    except RubricError as exc:
        return result.model_copy(update={"status": "error", "detail": f"rubric: {exc}"})
    except JudgeUnavailable as exc:
        log.warning("quality: judge unavailable: %s", exc.reason)
        # A request the endpoint refused for what it holds may be the change's doing (a content
        # filter tripped by a comment): not an outage - under a blocking judge, a maintainer decides.
        return _spent(result, usage, start).model_copy(
            update={"status": "unavailable", "detail": f"unavailable: {exc.reason}", "internal": exc.rejected}
        )
    except Exception as exc:  # the judge layer must never fail a PR or the pipeline, nor pass one
        log.exception("quality: internal error")
        return _spent(result, usage, start).model_copy(
            update={
                "status": "unavailable",
                "detail": f"unavailable: internal error: {type(exc).__name__}",
                "internal": True,
            }
        )
    result.criteria = [c for criteria, _ in outcomes for c in criteria]
    result.status = status_of(result.criteria)
    result.detail = _detail(result, usage, all(hit for _, hit in outcomes))
    return _spent(result, usage, start)


def _spent(result: QualityResult, usage: Usage, start: float) -> QualityResult:
    result.prompt_tokens = usage.prompt_tokens
    result.completion_tokens = usage.completion_tokens
    result.cost_usd = usage.cost_usd
    result.latency_s = round(time.monotonic() - start, 3)
    return result


def _detail(result: QualityResult, usage: Usage, cached: bool) -> str:
    errors = [c for c in result.criteria if c.verdict == "error"]
    if result.status == "unavailable":
        return f"unavailable: no usable verdict: {errors[0].reason}" if errors else "unavailable: no criteria"
    notes = []
    if cached:
        notes.append("verdicts from cache")
    if errors:
        notes.append(f"{len(errors)} criteria not judged")
    if usage.unpriced:
        notes.append(f"cost unknown: litellm has no price for {result.model} (set cost_per_token)")
    return "; ".join(notes)
