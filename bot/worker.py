"""Workers: claim a job, gate its PR, keep its check run honest, and never leave it in_progress.

A job is claimed with a lease that a heartbeat renews; a worker that dies
stops renewing, and the reaper re-enqueues the job for another attempt. After
``job_attempts`` attempts (crashes or infrastructure failures) the check run
is completed as ``neutral`` with the reason: infrastructure trouble is never
a ``failure``. The pipeline runs in a thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import secrets
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bot import checkrun
from bot.checkrun import UpdateBody
from bot.events import classify
from bot.github import GitHubApp, GitHubError, Installation, InstallationGone, NotFound
from bot.judging import judge_anyway
from bot.queue import JobQueue
from bot.settings import Settings
from bot.signature import run_token
from bot.store import JobView, JudgeRow, RunRecord, Store
from bot.tables import ABANDONED, CANCELLED, DONE, FAILED, SKIPPED
from bot.trees import fetch_workspace, suites_for
from checks.gate import Runner
from checks.inputs import JudgeSettings, PipelineInputs, Task
from checks.pipeline import Progress, ShadowSink, error_report, run_pipeline
from checks.policy import POLICY_PATH, PolicyError, load_policy
from checks.report import Report

log = logging.getLogger(__name__)


class GateFn(Protocol):
    """The pipeline's shape (checks.pipeline.run_pipeline); tests pass a small deterministic one."""

    def __call__(
        self,
        inputs: PipelineInputs,
        *,
        on_progress: Progress | None = None,
        on_shadow: ShadowSink | None = None,
    ) -> Report: ...


def load_gate(spec: str | None) -> GateFn:
    """Return the pipeline function named ``module:function`` (default: checks.pipeline:run_pipeline)."""
    if not spec:
        return run_pipeline
    module, _, attr = spec.partition(":")
    fn = getattr(importlib.import_module(module), attr or "", None)
    if not callable(fn):
        raise ValueError(f"--gate {spec!r}: expected MODULE:FUNCTION naming a function")
    gate: GateFn = fn
    return gate


def default_runner() -> Runner:
    """Build the production sandbox (imported late: the web process never needs Docker)."""
    from sandbox.docker import DockerSandbox

    return DockerSandbox()


@dataclass
class _Watch:
    """What the heartbeat learnt: the job was cancelled (and why), or is no longer ours."""

    event: asyncio.Event = field(default_factory=asyncio.Event)
    reason: str | None = None
    lost: bool = False


class _ProgressSender:
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


class Worker:
    """Runs jobs from the queue with bounded concurrency, and reaps jobs whose worker died."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        queue: JobQueue,
        *,
        gate: GateFn = run_pipeline,
        runner_factory: Callable[[], Runner] = default_runner,
        github: GitHubApp | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.queue = queue
        self.gate = gate
        self.github = github if github is not None else GitHubApp(settings)
        self.name = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self._runner_factory = runner_factory
        self._runner: Runner | None = None
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._reaper: asyncio.Task[None] | None = None
        self._later: set[asyncio.Task[None]] = set()
        self.judge = (
            JudgeSettings(
                api_base=settings.judge_api_base,
                api_key=settings.judge_api_key.get_secret_value() if settings.judge_api_key else None,
            )
            if settings.judge_api_base or settings.judge_api_key
            else None
        )

    async def start(self) -> None:
        """Start consuming and reaping; unfinished jobs in the store are enqueued at once."""
        self.queue.consume(self.run_job)
        await self.queue.start()
        self._reaper = asyncio.create_task(self._reap_forever(), name="patchgate-reaper")

    async def stop(self) -> None:
        for task in [self._reaper, *self._later]:
            if task is not None:
                task.cancel()
        await self.queue.stop()

    async def reap_once(self) -> list[int]:
        """Enqueue due jobs: never enqueued, retry time reached, or lease expired (dead worker)."""
        ids = await asyncio.to_thread(self.store.due_jobs, self.settings.lease_s)
        for job_id in ids:
            log.info("reaper: enqueueing job %s", job_id)
            await self.queue.kick(job_id)
        return ids

    async def _reap_forever(self) -> None:
        while True:
            try:
                await self.reap_once()
            except Exception:  # the reaper must outlive a database hiccup
                log.exception("reaper pass failed")
            await asyncio.sleep(self.settings.reaper_interval_s)

    # -- one job --------------------------------------------------------------------------------

    async def run_job(self, job_id: int) -> None:
        """Claim ``job_id`` and take it to a final state (or back to the queue for a retry)."""
        async with self._slots:
            job = await asyncio.to_thread(self.store.claim, job_id, self.name, self.settings.lease_s)
            if job is None:
                return
            log.info("job %s (%s) attempt %s: %s", job.id, job.key, job.attempts, job.trigger)
            watch = _Watch()
            beat = asyncio.create_task(self._heartbeat(job, watch))
            try:
                await self._attempt(job, watch)
            finally:
                beat.cancel()

    async def _heartbeat(self, job: JobView, watch: _Watch) -> None:
        every = min(self.settings.lease_s / 3, 2.0)
        while True:
            await asyncio.sleep(every)
            owned, reason = await asyncio.to_thread(
                self.store.heartbeat, job.id, self.name, self.settings.lease_s
            )
            if not owned or reason:
                watch.lost, watch.reason = not owned, reason
                watch.event.set()
                return

    async def _attempt(self, job: JobView, watch: _Watch) -> None:
        client = self.github.installation(job.installation_id)
        try:
            if job.attempts > self.settings.job_attempts:
                reason = (
                    f"gave up after {job.attempts - 1} attempts "
                    f"(last: {job.detail or 'the worker stopped mid-run'})"
                )
                await self._complete_neutral(client, job, reason)
                return
            await self._gate_job(client, job, watch)
        except InstallationGone as exc:
            log.warning("job %s abandoned: %s", job.id, exc)
            await self._finish(job, ABANDONED, detail=str(exc))
        except NotFound as exc:
            log.warning("job %s abandoned: %s", job.id, exc)
            await self._finish(job, ABANDONED, detail=str(exc))
        except Exception as exc:  # infrastructure (GitHub, sandbox, disk) or a bug: never the PR's fault
            await self._infra_failure(client, job, exc)

    async def _infra_failure(self, client: Installation, job: JobView, exc: Exception) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        log.warning("job %s attempt %s failed: %s", job.id, job.attempts, reason, exc_info=exc)
        retryable = not (isinstance(exc, GitHubError) and not exc.retryable)
        if retryable and job.attempts < self.settings.job_attempts:
            delay = self.settings.retry_backoff_s * 2 ** (job.attempts - 1)
            if await asyncio.to_thread(self.store.retry_later, job.id, self.name, delay, reason):
                self._kick_later(job.id, delay)
            return
        await self._complete_neutral(client, job, reason)

    def _kick_later(self, job_id: int, delay: float) -> None:
        async def kick() -> None:
            await asyncio.sleep(delay)
            await self.queue.kick(job_id)

        task = asyncio.create_task(kick())
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def _complete_neutral(self, client: Installation, job: JobView, reason: str) -> None:
        """Report infrastructure trouble on the check run as neutral, and give the job up."""
        report = error_report(
            f"patchgate could not finish this run: {reason}", "neutral", head_sha=job.head_sha
        )
        try:
            check_run_id = await self._ensure_check_run(client, job)
            await self._complete(client, job, check_run_id, report)
        except (GitHubError, InstallationGone) as exc:
            log.error("job %s: cannot report the failure on GitHub either: %s", job.id, exc)
            reason += f"; reporting it failed too: {exc}"
        await self._finish(job, FAILED, conclusion="neutral", detail=reason)

    async def _finish(
        self, job: JobView, state: str, *, conclusion: str | None = None, detail: str = ""
    ) -> None:
        await asyncio.to_thread(
            self.store.finish, job.id, self.name, state, conclusion=conclusion, detail=detail
        )

    async def _check_run_id(self, job: JobView) -> int | None:
        fresh = await asyncio.to_thread(self.store.job, job.id)
        return fresh.check_run_id if fresh is not None else None

    async def _ensure_check_run(self, client: Installation, job: JobView) -> int:
        """Return the job's check run, creating it (in progress) the first time."""
        found = await self._check_run_id(job)
        if found is None and job.attempts > 1:
            # An earlier attempt may have died between creating the run and recording it.
            found = await client.find_check_run(job.repository, job.head_sha, job.key)
        if found is None:
            body = checkrun.started(
                self.settings.check_name, job.head_sha, job.key, self._details_url(job), job.trigger
            )
            found = await client.create_check_run(job.repository, body)
        await asyncio.to_thread(self.store.set_check_run, job.id, found)
        return found

    def _details_url(self, job: JobView) -> str:
        token = run_token(self.settings.require_webhook_secret(), job.id)
        return f"{self.settings.public_url}/runs/{job.id}?token={token}"

    async def _cancel(self, client: Installation, job: JobView, reason: str) -> None:
        """Stop a job that must not finish; its check run (if any) completes as cancelled."""
        if await asyncio.to_thread(self.store.installation_active, job.installation_id) is False:
            # The App is gone: GitHub would refuse every request.
            await self._finish(job, ABANDONED, detail=reason)
            return
        check_run_id = await self._check_run_id(job)
        if check_run_id is not None:
            await client.update_check_run(job.repository, check_run_id, checkrun.cancelled(reason))
        await self._finish(job, CANCELLED, conclusion="cancelled" if check_run_id else None, detail=reason)

    async def _complete(self, client: Installation, job: JobView, check_run_id: int, report: Report) -> None:
        updates, final = checkrun.completion(report)
        for body in updates:
            await client.update_check_run(job.repository, check_run_id, body)
        await client.update_check_run(job.repository, check_run_id, final)

    async def _gate_job(self, client: Installation, job: JobView, watch: _Watch) -> None:
        started = time.monotonic()
        if job.cancel_reason:
            await self._cancel(client, job, job.cancel_reason)
            return
        pr = await client.pull(job.repository, job.pr_number)
        if pr.state != "open":
            await self._cancel(client, job, "the pull request was closed")
            return
        if pr.head.sha != job.head_sha:
            await self._cancel(client, job, f"superseded by {pr.head.sha}")
            return
        base_sha = pr.base.sha
        try:
            policy = load_policy(await client.file_at(job.repository, POLICY_PATH, base_sha))
        except PolicyError as exc:
            # A broken policy needs a maintainer, whoever wrote the PR.
            report = error_report(str(exc), "action_required", base_sha=base_sha, head_sha=job.head_sha)
            await self._deliver(
                client, job, await self._ensure_check_run(client, job), report, started=started
            )
            return
        verdict = classify(
            policy,
            author=pr.user.login if pr.user else "",
            labels=[lb.name for lb in pr.labels],
            head_ref=pr.head.ref,
            draft=bool(pr.draft),
        )
        if verdict != "agent":
            reason = (
                "not an agent PR by the base branch's policy"
                if verdict == "not_agent"
                else "a draft PR (policy agents.include_drafts is false)"
            )
            if verdict == "not_agent" and policy.agents.others == "neutral":
                body = checkrun.not_agent(
                    self.settings.check_name, job.head_sha, job.key, self._details_url(job)
                )
                check_run_id = await client.create_check_run(job.repository, body)
                await asyncio.to_thread(self.store.set_check_run, job.id, check_run_id)
            await self._finish(job, SKIPPED, detail=reason)
            return
        check_run_id = await self._ensure_check_run(client, job)
        self.settings.work_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.settings.work_dir, prefix=f"job-{job.id}-") as tmp:
            head_repo = pr.head.repo.full_name if pr.head.repo is not None else job.repository
            ws = await fetch_workspace(
                client,
                base_repo=job.repository,
                base_sha=base_sha,
                head_repo=head_repo,
                head_sha=job.head_sha,
                dest=Path(tmp),
            )
            inputs = PipelineInputs(
                workspace=ws,
                policy=policy,
                runner=self._get_runner(),
                suites=suites_for(self.settings.test_store, job.repository),
                task=Task(title=pr.title, body=pr.body or ""),
                judge=self.judge,
                run_key=job.key,
            )
            outcome = await self._run_gate(client, job, check_run_id, inputs, watch)
        if outcome is not None:
            report, shadows = outcome
            await self._deliver(client, job, check_run_id, report, started=started, shadows=shadows)

    def _get_runner(self) -> Runner:
        if self._runner is None:
            self._runner = self._runner_factory()
        return self._runner

    async def _run_gate(
        self, client: Installation, job: JobView, check_run_id: int, inputs: PipelineInputs, watch: _Watch
    ) -> tuple[Report, list[JudgeRow]] | None:
        """Run the pipeline in a thread; None when the job was cancelled (or lost) meanwhile."""
        loop = asyncio.get_running_loop()
        sender = _ProgressSender(client, job.repository, check_run_id)
        shadows: list[JudgeRow] = []

        def on_progress(stage: str, report: Report) -> None:
            # Build the body now: the pipeline keeps changing ``report`` after this call.
            body = checkrun.progress(stage, report)
            if body is not None:
                loop.call_soon_threadsafe(sender.queue.put_nowait, body)

        def on_shadow(execution_passed: bool, judge_passed: bool, model: str, rubric: str) -> None:
            shadows.append(JudgeRow(model, rubric, execution_passed, judge_passed, shadow=True))

        def gate() -> Report:
            report = self.gate(inputs, on_progress=on_progress, on_shadow=on_shadow)
            return judge_anyway(inputs, report, self.store) if job.judge_anyway else report

        work = asyncio.ensure_future(asyncio.to_thread(gate))
        stop = asyncio.ensure_future(watch.event.wait())
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not work.done():
            sender.discard()
            if not watch.lost:
                await self._cancel(client, job, watch.reason or "cancelled")
            # The thread cannot be stopped; it keeps this job's slot until it ends, so the
            # number of pipelines running never exceeds the concurrency setting.
            with contextlib.suppress(Exception):
                await work
            return None
        await sender.close()
        report = work.result()
        owned, reason = await asyncio.to_thread(
            self.store.heartbeat, job.id, self.name, self.settings.lease_s
        )
        if not owned:
            return None
        if reason:
            await self._cancel(client, job, reason)
            return None
        return report, shadows

    async def _deliver(
        self,
        client: Installation,
        job: JobView,
        check_run_id: int,
        report: Report,
        *,
        started: float,
        shadows: list[JudgeRow] | None = None,
    ) -> None:
        """Complete the check run, then record the run; the job is done only after both."""
        await self._complete(client, job, check_run_id, report)
        record = run_record(job, report, time.monotonic() - started)
        await asyncio.to_thread(self.store.save_run, record)
        for row in shadows or []:
            await asyncio.to_thread(self.store.add_judge_record, job.id, job.repository, job.head_sha, row)
        await self._finish(job, DONE, conclusion=report.conclusion, detail="; ".join(report.reasons)[:1000])


def run_record(job: JobView, report: Report, seconds: float) -> RunRecord:
    """Return the stored form of a report: the JSON plus the numbers worth querying."""
    rates = {s.kind: s.pass_rate for s in report.behaviour.suites}
    return RunRecord(
        job_id=job.id,
        repository=job.repository,
        pr_number=job.pr_number,
        head_sha=job.head_sha,
        base_sha=report.base_sha,
        conclusion=report.conclusion,
        report=report.model_dump(mode="json"),
        findings=sum(1 for f in report.shape.findings if f.introduced),
        hidden_pass_rate=rates.get("hidden"),
        held_out_pass_rate=rates.get("held_out"),
        regressions=report.behaviour.regressions,
        quality_status=report.quality.status,
        judge_cost_usd=report.quality.cost_usd,
        seconds=seconds,
        timings=dict(report.timings),
    )
