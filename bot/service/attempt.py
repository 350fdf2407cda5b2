"""One claimed attempt at one job: what every kind of job shares.

The services a worker's jobs share, the heartbeat's news (``Watch``), and
``Attempt``: the job acting as its installation, with the check run it owns
and the final state it moves to. bot/service/job.py dispatches an attempt
on its trigger; gate.py, withdraw.py, explain.py and cancel.py do the work.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Protocol

from bot import metrics
from bot.github import checkrun
from bot.github.client import GitHubError, Installation, InstallationGone
from bot.github.tarballs import TarballCache
from bot.service.runtokens import run_tokens
from bot.service.suitestore import SuiteStore
from bot.settings import Settings
from bot.store import JudgeRow, Store, run_record
from bot.store.leases import JobView
from bot.store.tables import DONE, FAILED
from checks.pipeline import PipelineInputs, Progress, ShadowSink, error_report, run_pipeline
from checks.quality.inputs import JudgeSettings
from checks.report import Conclusion, Report
from checks.runner import Runner

log = logging.getLogger(__name__)


class PipelineFn(Protocol):
    """The pipeline's shape (checks.pipeline.run_pipeline); tests pass a small deterministic one."""

    def __call__(
        self,
        inputs: PipelineInputs,
        *,
        on_progress: Progress | None = None,
        on_shadow: ShadowSink | None = None,
        on_verdict: Callable[[Report], None] | None = None,
    ) -> Report: ...


def load_pipeline(spec: str | None) -> PipelineFn:
    """Return the pipeline function named ``module:function`` (default: checks.pipeline:run_pipeline)."""
    if not spec:
        return run_pipeline
    module, _, attr = spec.partition(":")
    fn = getattr(importlib.import_module(module), attr or "", None)
    if not callable(fn):
        raise ValueError(f"--pipeline {spec!r}: expected MODULE:FUNCTION naming a function")
    pipeline: PipelineFn = fn
    return pipeline


@dataclass
class Watch:
    """What the heartbeat learnt: the job was cancelled (and why), or is no longer ours."""

    event: asyncio.Event = field(default_factory=asyncio.Event)
    reason: str | None = None
    lost: bool = False
    # The same news for the pipeline's thread, which stops at its next layer boundary.
    halted: threading.Event = field(default_factory=threading.Event)

    def stop(self, *, lost: bool, reason: str | None) -> None:
        """Record why the attempt must end and wake both the job and its pipeline."""
        self.lost, self.reason = lost, reason
        self.halted.set()
        self.event.set()

    def pipeline_stop(self) -> str | None:
        """Called from the pipeline's thread between layers (PipelineInputs.stop)."""
        if not self.halted.is_set():
            return None
        return "the job no longer owns its lease" if self.lost else (self.reason or "cancelled")


@dataclass(frozen=True, kw_only=True)
class Services:
    """What every job of one worker shares."""

    settings: Settings
    store: Store
    pipeline: PipelineFn
    runner: Callable[[], Runner]
    judge: JudgeSettings | None
    worker: str
    # Pipelines run here, not in the event loop's default executor: a full default
    # executor would queue the heartbeats' short database calls behind long pipelines.
    pipelines: Executor
    tarballs: TarballCache | None = None
    # Where the suites come from (PATCHGATE_TEST_STORE); None: the setting, read as a directory.
    suites: SuiteStore | None = None


class Attempt:
    """One claimed attempt at one job, acting as the job's installation."""

    def __init__(self, services: Services, client: Installation, job: JobView, watch: Watch) -> None:
        self.services = services
        self.client = client
        self.job = job
        self.watch = watch
        self.started = time.monotonic()
        # The verdict already on the check run while the mutants run (policy strength.report_first).
        self.first: Report | None = None

    async def finish(self, state: str, *, conclusion: str | None = None, detail: str = "") -> None:
        """Move the job to a final state (only while it is still ours)."""
        if await asyncio.to_thread(
            self.services.store.leases.finish,
            self.job.id,
            self.services.worker,
            state,
            conclusion=conclusion,
            detail=detail,
            attempt=self.job.attempts,
        ):
            metrics.job_ended(state, conclusion)

    async def complete_neutral(self, reason: str) -> None:
        """Report infrastructure trouble on the check run as neutral, and give the job up."""
        await self._complete_unfinished(f"patchgate could not finish this run: {reason}", reason, "neutral")

    async def complete_internal(self, reason: str) -> None:
        """Report an error of patchgate's own as asking a maintainer, and give the job up.

        Not ``neutral``, which GitHub counts as passing a required check: the change's content may be
        what provoked the error (a file that crashed a parser, links that broke the unpacking).
        """
        summary = (
            f"patchgate could not finish this run ({reason}); the change's content may have provoked it, "
            "so a maintainer decides"
        )
        await self._complete_unfinished(summary, reason, "action_required")

    async def _complete_unfinished(self, summary: str, reason: str, conclusion: Conclusion) -> None:
        report = error_report(summary, conclusion, head_sha=self.job.head_sha)
        try:
            await self.complete(await self.ensure_check_run(), report)
        except (GitHubError, InstallationGone) as exc:
            log.error("job %s: cannot report the failure on GitHub either: %s", self.job.id, exc)
            reason += f"; reporting it failed too: {exc}"
        await self.finish(FAILED, conclusion=conclusion, detail=reason)

    async def check_run_id(self) -> int | None:
        """Return the check run the store has for this job, if any."""
        fresh = await asyncio.to_thread(self.services.store.leases.job, self.job.id)
        return fresh.check_run_id if fresh is not None else None

    async def ensure_check_run(self) -> int:
        """Return the job's check run, creating it (in progress) the first time."""
        job = self.job
        found = await self.check_run_id()
        if found is None and job.attempts > 1:
            # An earlier attempt may have died between creating the run and recording it.
            found = await self.client.find_check_run(job.repository, job.head_sha, job.key)
        if found is None:
            body = checkrun.started(
                self.services.settings.check_name, job.head_sha, job.key, self.details_url(), job.trigger
            )
            found = await self.client.create_check_run(job.repository, body)
        await asyncio.to_thread(self.services.store.leases.set_check_run, job.id, found)
        return found

    def details_url(self) -> str:
        """Return the run page's link for this job, with its token."""
        token = run_tokens(self.services.settings).issue(self.job.id)
        return f"{self.services.settings.public_url}/runs/{self.job.id}?token={token}"

    async def complete(self, check_run_id: int, report: Report) -> None:
        """Complete the check run with the report (again, if it was completed before)."""
        await self.client.complete_check_run(self.job.repository, check_run_id, checkrun.prepare(report))

    async def deliver(
        self,
        check_run_id: int,
        report: Report,
        shadows: list[JudgeRow] | None = None,
        *,
        key: str | None = None,
    ) -> None:
        """Complete the check run, then record the run (reusable under ``key``); done only after both."""
        job, store = self.job, self.services.store
        await self.complete(check_run_id, report)
        metrics.report_done(report)
        await asyncio.to_thread(
            store.runs.save,
            run_record(
                job.id,
                job.repository,
                job.pr_number,
                job.head_sha,
                report,
                seconds=time.monotonic() - self.started,
                reuse_key=key,
            ),
        )
        for row in shadows or []:
            await asyncio.to_thread(store.judge.add, job.id, job.repository, job.head_sha, row)
        await self.finish(DONE, conclusion=report.conclusion, detail="; ".join(report.reasons)[:1000])
