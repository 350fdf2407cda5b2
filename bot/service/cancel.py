"""A job that must not finish (a new push, the PR closed): its check run completes as cancelled."""

from __future__ import annotations

import asyncio

from bot.github import checkrun
from bot.service.attempt import Attempt
from bot.store.tables import ABANDONED, CANCELLED
from checks.report import Report


async def run(attempt: Attempt, reason: str) -> None:
    """Stop the job; its check run (if any) completes as cancelled."""
    job, store = attempt.job, attempt.services.store
    if await asyncio.to_thread(store.deliveries.installation_active, job.installation_id) is False:
        # The App is gone: GitHub would refuse every request.
        await attempt.finish(ABANDONED, detail=reason)
        return
    check_run_id = await attempt.check_run_id()
    if attempt.first is not None and check_run_id is not None:
        # The verdict is on the check run already and stands; only its mutation score is missing.
        await attempt.deliver(check_run_id, without_mutants(attempt.first, reason))
        return
    if check_run_id is not None:
        await attempt.client.update_check_run(job.repository, check_run_id, checkrun.cancelled(reason))
    await attempt.finish(CANCELLED, conclusion="cancelled" if check_run_id else None, detail=reason)


def without_mutants(report: Report, reason: str) -> Report:
    """Return a verdict posted before its mutants (strength.report_first), for a job ending without them."""
    strength = report.behaviour.strength.model_copy(
        update={"pending": False, "detail": f"mutants not run: {reason}"}
    )
    behaviour = report.behaviour.model_copy(update={"strength": strength})
    return report.model_copy(update={"behaviour": behaviour})
