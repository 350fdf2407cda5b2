"""Shadow judging for calibration: on a sample of PRs, ask the judge whether the patch does its task.

The answer is never shown on the PR. Stored next to the execution verdict it
measures how often the judge would have passed code the tests failed.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from checks.policy import Policy
from checks.quality.answer import AnswerError, ShadowAnswer
from checks.quality.calibration import JudgeRecord
from checks.quality.context import collect
from checks.quality.inputs import JudgeSettings, Task
from checks.quality.judge import Judge, JudgeUnavailable, Usage, run, token_counter
from checks.quality.prompt import SHADOW_PROMPT, messages, model_aliases, render_task, user_message
from checks.workspace import Workspace

log = logging.getLogger(__name__)

SHADOW_QUESTION = "does this patch accomplish the task? PASS or FAIL"
SCAFFOLD_TOKENS = 200


@dataclass(frozen=True)
class ShadowVerdict:
    """The judge's answer to the task question; ``judge_passed`` is None when there is no answer."""

    judge_passed: bool | None
    model: str
    rubric: str
    reason: str = ""
    detail: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def record(self, execution_passed: bool) -> JudgeRecord | None:
        """Pair this verdict with execution's for calibration; None when the judge gave none."""
        if self.judge_passed is None:
            return None
        return JudgeRecord(
            execution_passed,
            self.judge_passed,
            self.model,
            self.rubric,
            self.prompt_tokens,
            self.completion_tokens,
            self.cost_usd,
        )


def should_shadow(run_key: str, rate: float) -> bool:
    """Decide by hash whether this run is in the shadow sample: the same key always decides alike."""
    if rate <= 0:
        return False
    if rate >= 1:
        return True
    point = int.from_bytes(hashlib.sha256(run_key.encode("utf-8", "surrogateescape")).digest()[:8], "big")
    return point / 2**64 < rate


def run_shadow(ws: Workspace, policy: Policy, task: Task, settings: JudgeSettings) -> ShadowVerdict:
    """Ask the judge, in shadow, whether the patch accomplishes the task; never raises for an outage."""
    q = policy.quality
    rubric = "+".join(q.rubrics)
    settings = settings.started()  # the run's judge budget, unless the caller started it
    usage = Usage(price=settings.cost_per_token)

    def verdict(judge_passed: bool | None, reason: str = "", detail: str = "") -> ShadowVerdict:
        return ShadowVerdict(
            judge_passed,
            q.model,
            rubric,
            reason,
            detail,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cost_usd,
        )

    try:
        count = token_counter(q.model)
        ctx = collect(
            ws,
            render_task(task.title, task.body, task.issue, hide=model_aliases(q.model)),
            budget=q.max_prompt_tokens,
            reserve=count(SHADOW_PROMPT) + SCAFFOLD_TOKENS,
            count=count,
        )
        if not ctx.files:
            return verdict(None, detail="nothing to review")
        chat = messages(SHADOW_PROMPT, user_message(ctx.render(), SHADOW_QUESTION))

        async def ask() -> ShadowAnswer | AnswerError:
            return await Judge(q.model, settings, usage).ask(chat, ShadowAnswer)

        answer = run(ask)
    except JudgeUnavailable as exc:
        return verdict(None, detail=f"unavailable: {exc.reason}")
    except Exception as exc:  # calibration is best effort: it must never break the pipeline
        log.exception("shadow judge: internal error")
        return verdict(None, detail=f"unavailable: internal error: {type(exc).__name__}: {exc}")
    if isinstance(answer, AnswerError):
        return verdict(None, detail=f"judge output unusable after one repair: {answer}")
    return verdict(answer.verdict == "PASS", reason=answer.reason)
