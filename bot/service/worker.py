"""Workers: claim jobs with bounded concurrency, retry infrastructure failures, reap dead workers' jobs.

A job is claimed with a lease that a heartbeat renews; a worker that dies
stops renewing, and the reaper (of any worker) re-enqueues the job for
another attempt. After ``job_attempts`` attempts (crashes or infrastructure
failures) the check run is completed as ``neutral`` with the reason:
infrastructure trouble is never a ``failure``, and no check run is left
``in_progress``.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from redis.exceptions import RedisError

from bot import logs, metrics
from bot.github.app import GitHubApp
from bot.github.client import GitHubError, InstallationGone, NotFound
from bot.github.tarballs import TarballCache
from bot.service.attempt import PipelineFn, Services, Watch
from bot.service.job import JobRun
from bot.service.queue import JobQueue
from bot.service.runners import LimitedRunner
from bot.service.suitesgithub import GitHubSuites
from bot.service.suitestore import SuiteStore
from bot.settings import Settings
from bot.store import STORE_ERRORS, Store
from bot.store.leases import JobView, Lease
from bot.store.tables import ABANDONED
from checks.pipeline import run_pipeline
from checks.runner import Runner
from sandbox.errors import SandboxError

log = logging.getLogger(__name__)
# What fails a job for a reason outside patchgate and the change alike: GitHub, the sandbox, the
# network, the store and the queue, a full or failing disk. Retried, then reported neutral; anything
# else asks a maintainer (an OSError such as a missing file or a name too long may be the tree's).
INFRASTRUCTURE: tuple[type[BaseException], ...] = (
    GitHubError, SandboxError, ConnectionError, TimeoutError, *STORE_ERRORS, RedisError,
)  # fmt: skip
_MACHINE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.ENOMEM, errno.EMFILE, errno.ENFILE})


def is_infrastructure(exc: BaseException) -> bool:
    """Whether ``exc`` is trouble of the machine or a service, not of patchgate's code or the change."""
    return isinstance(exc, INFRASTRUCTURE) or (isinstance(exc, OSError) and exc.errno in _MACHINE_ERRNOS)


# How a retried job's detail says its last failure was infrastructure (``_attempt`` reads it back).
INFRA = "infrastructure: "


def default_runner(runtime: str | None = None) -> Runner:
    """Build the production sandbox (imported late: the web process never needs Docker)."""
    from sandbox.docker import WARM_PER_SHAPE, DockerSandbox

    # The worker's LimitedRunner (PATCHGATE_MAX_SANDBOXES) is the bound; this one only stops a runaway.
    return DockerSandbox(max_concurrency=64, runtime=runtime, warm=WARM_PER_SHAPE)


class Worker:
    """Runs jobs from the queue, at most ``concurrency`` at a time, and reaps orphaned jobs."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        queue: JobQueue,
        *,
        pipeline: PipelineFn = run_pipeline,
        runner_factory: Callable[[], Runner] = default_runner,
        github: GitHubApp | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.queue = queue
        self.github = github if github is not None else GitHubApp(settings)
        self.name = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        if runner_factory is default_runner:
            runner_factory = functools.partial(default_runner, settings.sandbox_runtime)
        self._runner_factory = runner_factory
        self._runner: Runner | None = None
        self._pipelines = ThreadPoolExecutor(settings.concurrency, thread_name_prefix="patchgate-pipeline")
        self.services = Services(
            settings=settings,
            store=store,
            pipeline=pipeline,
            runner=self._get_runner,
            judge=settings.judge(),
            worker=self.name,
            pipelines=self._pipelines,
            tarballs=TarballCache(settings.work_dir / "tarballs", settings.tarball_cache_bytes),
            suites=SuiteStore(settings.test_store, settings.work_dir / "suites", GitHubSuites(self.github)),
        )
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._reaper: asyncio.Task[None] | None = None
        self._later: set[asyncio.Task[None]] = set()

    def _get_runner(self) -> Runner:
        # One sandbox per worker process, created on the first job (it connects lazily),
        # shared by all its jobs within one bound.
        if self._runner is None:
            self._runner = LimitedRunner(self._runner_factory(), self.settings.max_sandboxes)
        return self._runner

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
        # Running pipelines cannot be interrupted; do not wait for them here.
        self._pipelines.shutdown(wait=False, cancel_futures=True)

    async def reap_once(self) -> list[int]:
        """Enqueue due jobs: never enqueued, retry time reached, or lease expired (dead worker)."""
        due = await asyncio.to_thread(self.store.leases.due, self.settings.lease_s)
        handed = [(job_id, why) for why, ids in (("queued", due.queued), ("lease expired", due.expired))
                  for job_id in ids]  # fmt: skip
        for i, (job_id, why) in enumerate(handed):
            log.info("reaper: enqueueing job %s (%s)", job_id, why)
            try:
                await self.queue.kick(job_id)
            except BaseException:
                # Not handed over after all: the next pass (of any reaper) may take them at once.
                unsent = [j for j, _ in handed[i:]]
                await asyncio.to_thread(self.store.leases.mark_enqueued, unsent, undo=True)
                raise
            metrics.REAPER_ENQUEUED.labels(why=why).inc()
        return due.ids

    async def _reap_forever(self) -> None:
        while True:
            try:
                await self.reap_once()
            except Exception:  # the reaper must outlive a database or broker hiccup
                log.exception("reaper pass failed")
            await asyncio.sleep(self.settings.reaper_interval_s)

    async def run_job(self, job_id: int) -> None:
        """Claim ``job_id`` and take it to a final state (or back to the queue for a retry)."""
        async with self._slots:
            job = await asyncio.to_thread(
                self.store.leases.claim,
                job_id,
                self.name,
                self.settings.lease_s,
                per_repository=self.settings.max_jobs_per_repository,
            )
            if job is None:
                return
            with logs.bound(job_id=job.id, run_key=job.key):
                log.info("job %s (%s) attempt %s: %s", job.id, job.key, job.attempts, job.trigger)
                if job.reclaimed_from is not None:
                    metrics.JOBS_RECLAIMED.inc()
                    log.info("job %s: taken over from %s, whose lease ran out", job.id, job.reclaimed_from)
                watch = Watch()
                beat = asyncio.create_task(self._heartbeat(job, watch))
                try:
                    await self._attempt(job, watch)
                finally:
                    beat.cancel()
        # A slot of this repository is free: the jobs it turned away may run now (here or elsewhere).
        await self._kick_waiting(job.repository)

    async def _kick_waiting(self, repository: str) -> None:
        try:
            for waiting in await asyncio.to_thread(self.store.leases.waiting, repository):
                await self.queue.kick(waiting)
        except Exception:  # the reaper enqueues them later anyway
            log.exception("enqueueing the waiting jobs of %s failed", repository)

    async def _heartbeat(self, job: JobView, watch: Watch) -> None:
        # Five beats per lease: a beat may be late (a busy loop, a locked database) by
        # four intervals before another worker's reaper can take the job.
        every = min(self.settings.lease_s / 5, 2.0)
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(every)
            try:
                beat = await asyncio.to_thread(
                    self.store.leases.heartbeat,
                    job.id,
                    self.name,
                    self.settings.lease_s,
                    attempt=job.attempts,
                )
            except Exception:  # a database hiccup: keep beating, the lease has slack
                log.exception("job %s: heartbeat failed", job.id)
                continue
            now = time.monotonic()
            if now - renewed > self.settings.lease_s:
                log.warning(
                    "job %s: heartbeat %.1fs after the last one (lease %.1fs)",
                    job.id,
                    now - renewed,
                    self.settings.lease_s,
                )
            renewed = now
            if beat.lease is Lease.ENDED:
                # This attempt finished the job (or put it back) a moment ago; the beat was
                # about to be cancelled. Nothing was lost and nothing is left to stop.
                return
            if beat.lease is Lease.TAKEN:
                log.warning("job %s: lease lost to another worker; abandoning this attempt", job.id)
                watch.stop(lost=True, reason=beat.cancel_reason)
                return
            if beat.cancel_reason:
                watch.stop(lost=False, reason=beat.cancel_reason)
                return

    async def _attempt(self, job: JobView, watch: Watch) -> None:
        run = JobRun(self.services, self.github.installation(job.installation_id), job, watch)
        try:
            if job.attempts > self.settings.job_attempts:
                last = job.detail or "the worker stopped mid-run"
                gave_up = f"gave up after {job.attempts - 1} attempts (last: {last.removeprefix(INFRA)})"
                if last.startswith(INFRA):
                    await run.complete_neutral(gave_up)
                else:  # a bug, or a worker that died mid-run: perhaps the change's doing
                    await run.complete_internal(gave_up)
                return
            await run.run()
        except (InstallationGone, NotFound) as exc:
            # Nothing can be reported to an App that is gone, or about a PR that is.
            log.warning("job %s abandoned: %s", job.id, exc)
            await run.finish(ABANDONED, detail=str(exc))
        except Exception as exc:  # infrastructure (GitHub, sandbox, disk) or a bug: never the PR's failure
            outside = is_infrastructure(exc)
            # A bug's text can name the server's paths or quote the change: its class only (the log
            # has the rest).
            reason = (
                f"{type(exc).__name__}: {exc}" if outside else f"an error of its own: {type(exc).__name__}"
            )
            if isinstance(exc, SandboxError):
                metrics.SANDBOX_FAILURES.labels(kind=type(exc).__name__).inc()
            log.warning("job %s attempt %s failed: %s", job.id, job.attempts, reason, exc_info=exc)
            retryable = not (isinstance(exc, GitHubError) and not exc.retryable)
            if not retryable or job.attempts >= self.settings.job_attempts:
                # Infrastructure is neutral; anything else asks a maintainer - GitHub counts neutral as
                # passing a required check, and the change's content may be what raised it.
                await (run.complete_neutral if outside else run.complete_internal)(reason)
                return
            reason = (INFRA if outside else "") + reason
            delay = self.settings.retry_backoff_s * 2 ** (job.attempts - 1)
            retried = await asyncio.to_thread(
                functools.partial(self.store.leases.retry_later, attempt=job.attempts),
                job.id,
                self.name,
                delay,
                reason,
            )
            if retried:
                metrics.job_ended("retry", None)
                self._kick_later(job.id, delay)

    def _kick_later(self, job_id: int, delay: float) -> None:
        async def kick() -> None:
            await asyncio.sleep(delay)
            await self.queue.kick(job_id)

        task = asyncio.create_task(kick())
        self._later.add(task)
        task.add_done_callback(self._later.discard)
