"""The pipeline in a thread, with its progress on the check run and the heartbeat's news heeded.

A job cancelled meanwhile (new push, PR closed) completes its run as
``cancelled``; a verdict posted before the mutants (strength.report_first)
stands without them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from typing import Any

from bot.github import checkrun
from bot.github.checkrun import UpdateBody
from bot.github.client import GitHubError, Installation, InstallationGone
from bot.service import cancel
from bot.service.attempt import Attempt
from bot.service.judging import judge_anyway
from bot.store import JudgeRow
from bot.store.leases import Lease
from checks.pipeline import PipelineInputs, Stopped
from checks.quality import JudgeRecord
from checks.report import Report

log = logging.getLogger(__name__)


class ProgressSender:
    """Sends in-progress updates in order, best effort, from the pipeline thread's callbacks."""

    def __init__(self, client: Installation, repository: str, check_run_id: int) -> None:
        self.client, self.repository, self.check_run_id = client, repository, check_run_id
        self.queue: asyncio.Queue[UpdateBody | None] = asyncio.Queue()
        self.task = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        while (body := await self.queue.get()) is not None:
            try:
                await self.client.update_check_run(self.repository, self.check_run_id, body)
            except (GitHubError, InstallationGone) as exc:
                log.warning("progress update of check run %s failed: %s", self.check_run_id, exc)

    async def close(self) -> None:
        """Send what is queued, then stop."""
        self.queue.put_nowait(None)
        await self.task

    def discard(self) -> None:
        self.task.cancel()


async def _verdict_first(attempt: Attempt, sender: ProgressSender, check_run_id: int, report: Report) -> None:
    """Complete the check run with the verdict while the mutants still run (strength.report_first).

    The run is completed again when they finish (GitHub lets a completed run
    be updated, conclusion included:
    https://docs.github.com/en/rest/checks/runs#update-a-check-run); a job
    cancelled meanwhile keeps this verdict, without the mutation score.
    """
    if attempt.watch.event.is_set():  # cancelled or lost: never deliver
        return
    await sender.close()  # the progress updates queued before the verdict go first
    attempt.first = report
    try:
        await attempt.complete(check_run_id, report)
    except (GitHubError, InstallationGone) as exc:
        # The final completion, after the mutants, still comes.
        log.warning("job %s: the verdict before strength was not posted: %s", attempt.job.id, exc)


async def run_pipeline(
    attempt: Attempt, check_run_id: int, inputs: PipelineInputs
) -> tuple[Report, list[JudgeRow]] | None:
    """Run the pipeline in a thread; None when the job was cancelled (or lost) meanwhile."""
    job, services, watch = attempt.job, attempt.services, attempt.watch
    loop = asyncio.get_running_loop()
    sender = ProgressSender(attempt.client, job.repository, check_run_id)
    shadows: list[JudgeRow] = []

    def on_progress(stage: str, report: Report) -> None:
        # Build the body now: the pipeline keeps changing ``report`` after this call.
        body = checkrun.progress(stage, report)
        if body is not None:
            loop.call_soon_threadsafe(sender.queue.put_nowait, body)

    def on_shadow(record: JudgeRecord) -> None:
        shadows.append(
            JudgeRow(
                model=record.model,
                rubric=record.rubric,
                execution_passed=record.execution_passed,
                judge_passed=record.judge_passed,
                shadow=True,
                prompt_tokens=record.prompt_tokens,
                completion_tokens=record.completion_tokens,
                cost_usd=record.cost_usd,
            )
        )

    def on_verdict(report: Report) -> None:
        # The pipeline's thread waits until the verdict is on the check run: the final
        # completion, after the mutants, can never overtake it.
        first = _verdict_first(attempt, sender, check_run_id, report)
        asyncio.run_coroutine_threadsafe(first, loop).result()

    def gate() -> Report:
        report = services.pipeline(
            inputs, on_progress=on_progress, on_shadow=on_shadow, on_verdict=on_verdict
        )
        if not job.judge_anyway:
            return report
        if why := inputs.stop():  # no judge for a run nobody will see
            raise Stopped(why)
        return judge_anyway(inputs, report, services.store)

    # The pipeline's log records carry this job's ids: its thread runs in a copy of our context.
    work = loop.run_in_executor(services.pipelines, contextvars.copy_context().run, gate)
    stop = asyncio.ensure_future(watch.event.wait())
    either: set[asyncio.Future[Any]] = {work, stop}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if watch.event.is_set() or not work.done():  # cancelled or lost: never deliver
        sender.discard()
        if not watch.lost:
            await cancel.run(attempt, watch.reason or "cancelled")
        # The pipeline stops at its next layer boundary (inputs.stop); until then it keeps
        # this job's slot, so the number of pipelines never exceeds the concurrency setting.
        with contextlib.suppress(Exception):
            await work
        log.info("job %s: the abandoned pipeline ended; its result is discarded", job.id)
        return None
    await sender.close()
    report = work.result()
    beat = await asyncio.to_thread(
        services.store.leases.heartbeat,
        job.id,
        services.worker,
        services.settings.lease_s,
        attempt=job.attempts,
    )
    if beat.lease is not Lease.RENEWED:  # another attempt owns the job now: never deliver
        return None
    if beat.cancel_reason:
        await cancel.run(attempt, beat.cancel_reason)
        return None
    return report, shadows
