"""Pairwise comparison of candidate patches for one task, asked in both orders.

Judges favour whichever answer they read first (position bias), so each pair
is asked twice with the candidates swapped; a preference counts only when
both orders agree, and how often they agree is reported.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from checks.policy import Policy
from checks.quality.answer import AnswerError, PairAnswer
from checks.quality.context import Context, collect
from checks.quality.inputs import JudgeSettings, Task
from checks.quality.judge import Judge, JudgeUnavailable, Usage, gather, run, token_counter
from checks.quality.prompt import (
    PAIRWISE_PROMPT,
    fence,
    messages,
    model_aliases,
    omitted_line,
    render_file,
    render_task,
    user_message,
)
from checks.workspace import Workspace

log = logging.getLogger(__name__)

Preference = Literal["a", "b", "tie"]
PAIR_QUESTION = "which candidate, FIRST or SECOND, is better? (or TIE)"
SCAFFOLD_TOKENS = 300


@dataclass(frozen=True)
class PairwiseResult:
    """Both orders' answers, mapped back to candidates a and b."""

    preferred: Preference | None  # None: the orders disagree, or the judge gave no answer
    a_first: Preference | None  # the answer when a was shown first
    b_first: Preference | None  # the answer when b was shown first
    consistent: bool
    reasons: tuple[str, str] = ("", "")
    detail: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class PositionConsistency:
    """How often the two orders agreed, and how often disagreement favoured the first position."""

    n: int
    consistent: int
    first_position_wins: int

    @property
    def rate(self) -> float | None:
        return self.consistent / self.n if self.n else None


def combine(a_first: Preference | None, b_first: Preference | None) -> tuple[Preference | None, bool]:
    """Return (preference, consistent): a preference counts only when both orders give it."""
    if a_first is None or b_first is None:
        return None, False
    return (a_first, True) if a_first == b_first else (None, False)


def position_consistency(results: Sequence[PairwiseResult]) -> PositionConsistency:
    """Summarize position consistency over comparisons that got an answer in both orders."""
    answered = [r for r in results if r.a_first is not None and r.b_first is not None]
    # Inconsistent in the telling way: each order picked whichever candidate came first.
    first_wins = sum(r.a_first == "a" and r.b_first == "b" for r in answered)
    return PositionConsistency(len(answered), sum(r.consistent for r in answered), first_wins)


def _mapped(answer: PairAnswer | AnswerError, first: Preference) -> tuple[Preference | None, str]:
    if isinstance(answer, AnswerError):
        return None, f"unusable: {answer}"
    second: Preference = "b" if first == "a" else "a"
    mapping: dict[str, Preference] = {"FIRST": first, "SECOND": second, "TIE": "tie"}
    return mapping[answer.preferred], answer.reason


def _material(task: str, first: Context, second: Context) -> str:
    def files(ctx: Context) -> str:
        body = "\n\n".join(render_file(v) for v in ctx.files) or "(no files shown)"
        if ctx.omitted:
            body += "\n\n" + omitted_line(ctx.omitted)
        return body

    return "\n\n".join((fence("TASK", task), fence("FIRST", files(first)), fence("SECOND", files(second))))


def compare_pairwise(
    a: Workspace, b: Workspace, policy: Policy, task: Task, settings: JudgeSettings
) -> PairwiseResult:
    """Ask which of two candidate patches for ``task`` is better, in both orders.

    Never raises for a judge outage: the result then has no preference and says why.
    """
    q = policy.quality
    settings = settings.started()  # the run's judge budget, unless the caller started it
    usage = Usage(price=settings.cost_per_token)

    def result(
        a_first: Preference | None, b_first: Preference | None, reasons: tuple[str, str], detail: str = ""
    ) -> PairwiseResult:
        preferred, consistent = combine(a_first, b_first)
        return PairwiseResult(
            preferred,
            a_first,
            b_first,
            consistent,
            reasons,
            detail,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cost_usd,
        )

    try:
        count = token_counter(q.model)
        task_text = render_task(task.title, task.body, task.issue, hide=model_aliases(q.model))
        # Each candidate gets half of the budget left after the instructions.
        half = max((q.max_prompt_tokens - count(PAIRWISE_PROMPT) - SCAFFOLD_TOKENS) // 2, 1)
        ctx_a = collect(a, task_text, budget=half, reserve=0, count=count)
        ctx_b = collect(b, task_text, budget=half, reserve=0, count=count)
        orders = (
            messages(PAIRWISE_PROMPT, user_message(_material(ctx_a.task, ctx_a, ctx_b), PAIR_QUESTION)),
            messages(PAIRWISE_PROMPT, user_message(_material(ctx_a.task, ctx_b, ctx_a), PAIR_QUESTION)),
        )

        async def ask_both() -> list[PairAnswer | AnswerError]:
            judge = Judge(q.model, settings, usage)
            return await gather(judge.ask(chat, PairAnswer) for chat in orders)

        first, second = run(ask_both)
    except JudgeUnavailable as exc:
        return result(None, None, ("", ""), f"unavailable: {exc.reason}")
    except Exception as exc:  # ranking is advisory: never break the caller
        log.exception("pairwise judge: internal error")
        return result(None, None, ("", ""), f"unavailable: internal error: {type(exc).__name__}: {exc}")
    a_first, reason_a = _mapped(first, "a")
    b_first, reason_b = _mapped(second, "b")
    return result(a_first, b_first, (reason_a, reason_b))
