"""One attempt at one job: gate a PR and keep its check run honest.

The flow: the PR as it is now, the policy at the base sha, agent or not, the
check run (created in progress once), the trees, the pipeline in a thread
with progress on the run, then the completed run and the stored report. A
job cancelled meanwhile (new push, PR closed) completes its run as
``cancelled``; errors propagate to the worker, which retries or reports
``neutral``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import importlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bot import metrics
from bot.github import checkrun
from bot.github.checkrun import UpdateBody
from bot.github.client import GitHubError, Installation, InstallationGone
from bot.github.events import (
    EXPLAIN,
    REPLIES,
    UNKNOWN,
    WITHDRAWN_CLOSED,
    WITHDRAWN_MERGED,
    classify,
)
from bot.github.linked import competes_for, issue_text, linked_issues, pull_provenance
from bot.github.payloads import PullRequest
from bot.github.tarballs import TarballCache
from bot.github.trees import fetch_workspace
from bot.service.codescanning import upload_findings
from bot.service.commenting import (
    ACCEPTED,
    NOT_UNDERSTOOD,
    check_run_url,
    explain,
    help_reply,
    post_summary,
    react,
)
from bot.service.judging import judge_anyway, stored_records
from bot.service.ranking import Ranker, enter, withdraw
from bot.service.reuse import (
    REUSING_TRIGGERS,
    ReuseInputs,
    answer,
    base_salt,
    job_inputs,
    judge_text,
    reusable,
    reuse_key,
)
from bot.service.runtokens import run_tokens
from bot.service.suitestore import SuiteStore
from bot.settings import Settings
from bot.store import JudgeRow, Store, StoreVerdictCache, run_record
from bot.store.candidates import CandidateRow
from bot.store.leases import JobView, Lease
from bot.store.tables import ABANDONED, CANCELLED, DONE, FAILED, SKIPPED
from checks.behaviour.baseruns import BaseRuns
from checks.behaviour.suites import Suites, suites_for
from checks.pipeline import PipelineInputs, Progress, ShadowSink, Stopped, error_report, run_pipeline
from checks.policy import POLICY_PATH, Policy, PolicyError, load_policy
from checks.quality import JudgeRecord
from checks.quality.inputs import JudgeSettings, Task
from checks.refusal import refused_report
from checks.report import Report
from checks.runner import Runner
from checks.shape import ShapeCache
from checks.workspace import TreeRefused
from sandbox.trees import scratch

log = logging.getLogger(__name__)
# Under the work folder: the suites' clean base runs, kept across jobs (checks.behaviour.baseruns).
BASE_RUNS_DIR = "base-runs"
# semgrep's and bandit's findings per base file, mypy's cache per base (checks/shape/cache.py).
SHAPE_CACHE_DIR = "shape-cache"


def _image_id(image: str) -> str:
    """The environment image's content id (imported late: the web process never needs Docker)."""
    from sandbox.images import image_id

    return image_id(image)


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


@dataclass(frozen=True)
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


class JobRun:
    """One claimed attempt at one job, acting as the job's installation."""

    def __init__(self, services: Services, client: Installation, job: JobView, watch: Watch) -> None:
        self.s = services
        self.client = client
        self.job = job
        self.watch = watch
        self.started = time.monotonic()
        # The verdict already on the check run while the mutants run (policy strength.report_first).
        self.first: Report | None = None

    async def finish(self, state: str, *, conclusion: str | None = None, detail: str = "") -> None:
        """Move the job to a final state (only while it is still ours)."""
        if await asyncio.to_thread(
            self.s.store.finish,
            self.job.id,
            self.s.worker,
            state,
            conclusion=conclusion,
            detail=detail,
            attempt=self.job.attempts,
        ):
            metrics.job_ended(state, conclusion)

    async def complete_neutral(self, reason: str) -> None:
        """Report infrastructure trouble on the check run as neutral, and give the job up."""
        report = error_report(
            f"patchgate could not finish this run: {reason}", "neutral", head_sha=self.job.head_sha
        )
        try:
            await self._complete(await self._ensure_check_run(), report)
        except (GitHubError, InstallationGone) as exc:
            log.error("job %s: cannot report the failure on GitHub either: %s", self.job.id, exc)
            reason += f"; reporting it failed too: {exc}"
        await self.finish(FAILED, conclusion="neutral", detail=reason)

    async def run(self) -> None:
        """Gate the PR; raises for infrastructure trouble (GitHubError, SandboxError, ...).

        The steps, in order: a job that is not a gate (withdrawn, explain, cancelled) does its own
        thing; the PR must still be open at this head; the base branch's policy; who wrote the
        PR; the check run; the inputs (suites, the judge's task); an identical earlier run
        answers at once; otherwise the trees are fetched and the pipeline runs.
        """
        job = self.job
        if job.trigger in (WITHDRAWN_CLOSED, WITHDRAWN_MERGED):
            await self._withdraw()
            return
        if job.trigger in REPLIES:
            await self._reply()
            return
        if job.comment_id is not None and job.attempts == 1:
            # The command was taken: say so on its comment before the work (a gate takes minutes).
            await react(self.client, job.repository, job.comment_id, ACCEPTED)
        if job.trigger == EXPLAIN:
            await self._explain()
            return
        if job.cancel_reason:
            await self._cancel(job.cancel_reason)
            return
        pr = await self._current_pr()
        if pr is None:
            return
        base_sha = pr.base.sha
        policy = await self._policy(base_sha)
        if policy is None or not await self._is_agent_pr(pr, policy):
            return
        check_run_id = await self._ensure_check_run()
        task, provenance = await self._judge_inputs(pr)
        suites = await self._suites()
        inputs = await self._inputs(base_sha, policy, suites, task, provenance)
        # Explicit reruns (and judge-anyway) gate afresh: no report and no base run is reused.
        fresh = job.trigger not in REUSING_TRIGGERS or job.judge_anyway
        key = None if fresh else reuse_key(inputs)
        if key is not None and (reused := await self._stored(key, base_sha)) is not None:
            await self._deliver(check_run_id, reused)
            await self._delivered(pr, policy, check_run_id, reused)
            return
        # One lookup of the image's id for the job's base runs, not one per run.
        identify = functools.cache(_image_id)
        base_runs = BaseRuns(
            self.s.settings.work_dir / BASE_RUNS_DIR, base_salt(inputs), read=not fresh, identify=identify
        )
        shape_cache = ShapeCache(
            self.s.settings.work_dir / SHAPE_CACHE_DIR, identify=identify, read=not fresh
        )
        outcome = await self._gate(
            pr, policy, check_run_id, suites=suites, task=task, provenance=provenance, base_runs=base_runs,
            shape_cache=shape_cache,
        )  # fmt: skip
        if outcome is not None:
            report, shadows = outcome
            await self._deliver(
                check_run_id, report, shadows, reuse_key=key if key and reusable(report) else None
            )
            await self._delivered(pr, policy, check_run_id, report)

    async def _current_pr(self) -> PullRequest | None:
        """Return the PR as GitHub has it now; None (the job cancelled) once closed or pushed past."""
        pr = await self.client.pull(self.job.repository, self.job.pr_number)
        if pr.state != "open":
            await self._cancel("the pull request was closed")
            return None
        if pr.head.sha != self.job.head_sha:
            await self._cancel(f"superseded by {pr.head.sha}")
            return None
        return pr

    async def _policy(self, base_sha: str) -> Policy | None:
        """Return the base branch's policy; None once a broken one is reported (action_required)."""
        job = self.job
        try:
            return load_policy(await self.client.file_at(job.repository, POLICY_PATH, base_sha))
        except PolicyError as exc:
            # A broken policy needs a maintainer, whoever wrote the PR.
            report = error_report(str(exc), "action_required", base_sha=base_sha, head_sha=job.head_sha)
            await self._deliver(await self._ensure_check_run(), report)
            return None

    async def _is_agent_pr(self, pr: PullRequest, policy: Policy) -> bool:
        """Return whether the policy gates this PR; otherwise finish the job as skipped."""
        job = self.job
        labels = [label.name for label in pr.labels]
        author = pr.user.login if pr.user else ""
        verdict = classify(policy, author=author, labels=labels, head_ref=pr.head.ref, draft=bool(pr.draft))
        if verdict == "agent":
            return True
        if verdict == "not_agent" and policy.agents.others == "neutral":
            body = checkrun.not_agent(self.s.settings.check_name, job.head_sha, job.key, self._details_url())
            check_run_id = await self.client.create_check_run(job.repository, body)
            await asyncio.to_thread(self.s.store.set_check_run, job.id, check_run_id)
        reason = (
            "not an agent PR by the base branch's policy"
            if verdict == "not_agent"
            else "a draft PR (policy agents.include_drafts is false)"
        )
        await self.finish(SKIPPED, detail=reason)
        return False

    async def _gate(
        self,
        pr: PullRequest,
        policy: Policy,
        check_run_id: int,
        *,
        suites: Suites,
        task: Task,
        provenance: tuple[str, ...],
        base_runs: BaseRuns,
        shape_cache: ShapeCache,
    ) -> tuple[Report, list[JudgeRow]] | None:
        """Fetch the trees and run the pipeline; None when the outcome is already delivered."""
        job, base_sha = self.job, pr.base.sha
        work_dir = self.s.settings.work_dir
        work_dir.mkdir(parents=True, exist_ok=True)
        # The trees are the PR's: removed without recursion, and never raising over the outcome.
        with scratch(f"job-{job.id}-", work_dir) as tmp:
            try:
                ws = await fetch_workspace(
                    self.client,
                    base_repo=job.repository,
                    base_sha=base_sha,
                    head_repo=pr.head.repo.full_name if pr.head.repo is not None else job.repository,
                    head_sha=job.head_sha,
                    dest=tmp,
                    cache=self.s.tarballs,
                )
            except TreeRefused as exc:
                # A tree beyond bounds is the PR's failure (or, on the base, a maintainer's problem).
                # Delivered once the partial tree is removed: the job is done only when nothing is left.
                refused = refused_report(exc)
            else:
                inputs = PipelineInputs(
                    workspace=ws,
                    policy=policy,
                    runner=self.s.runner(),
                    suites=suites,
                    base_runs=base_runs,
                    shape_cache=shape_cache,
                    task=task,
                    provenance=provenance,
                    judge=self.s.judge,
                    run_key=job.key,
                    verdict_cache=StoreVerdictCache(self.s.store),
                    judge_records=(
                        await asyncio.to_thread(stored_records, self.s.store) if self.s.judge else ()
                    ),
                    stop=self.watch.pipeline_stop,
                )
                return await self._run_pipeline(check_run_id, inputs)
        await self._deliver(check_run_id, refused)
        return None

    async def _delivered(self, pr: PullRequest, policy: Policy, check_run_id: int, report: Report) -> None:
        """Follow a delivered report up: the sticky comment (if the policy wants one), the ranking."""
        job = self.job
        url = check_run_url(self.s.settings.github_url, job.repository, check_run_id)
        mode = policy.report.comment
        await post_summary(self.client, job.repository, job.pr_number, report, mode=mode, url=url)
        if self.s.settings.upload_sarif:
            await upload_findings(self.client, job.repository, job.pr_number, job.head_sha, report)
        await self._compete(pr, policy, check_run_id)

    async def _inputs(
        self, base_sha: str, policy: Policy, suites: Suites, task: Task, provenance: tuple[str, ...]
    ) -> ReuseInputs:
        """Return what this job's verdict depends on, as the host knows it (bot/service/reuse.py)."""
        job, s = self.job, self.s
        return await asyncio.to_thread(
            job_inputs,
            job.repository,
            base_sha,
            job.head_sha,
            suites=suites,
            policy=policy,
            pipeline=s.pipeline,
            settings=s.settings,
            judge=judge_text(s.judge, task, provenance),
        )

    async def _stored(self, key: str, base_sha: str) -> Report | None:
        """Return the report of an identical earlier run, marked as reused; None if there is none."""
        found = await asyncio.to_thread(self.s.store.reusable_run, key)
        report = answer(found, base_sha, self.job.head_sha, self.s.settings.github_url, self.job.repository)
        if report is not None and report.reused_from is not None:
            log.info(
                "job %s: inputs identical to job %s's: its report is reused",
                self.job.id,
                report.reused_from.job_id,
            )
        return report

    async def _suites(self) -> Suites:
        """Return the job's suites; a suites repository the App cannot read sets their ``error``."""
        if self.s.suites is None:
            return suites_for(Path(self.s.settings.test_store), self.job.repository)
        return await self.s.suites.suites(self.job.repository)

    async def _compete(self, pr: PullRequest, policy: Policy, check_run_id: int) -> None:
        """Enter the delivered run in its issue's ranking (best of k); advisory, never raises."""
        job = self.job
        labels = [label.name for label in pr.labels]
        row = CandidateRow(
            repository=job.repository,
            pr_number=job.pr_number,
            issue=competes_for(pr.body or "", labels, pr.head.ref, job.repository, policy.ranking),
            state="open",
            title=pr.title,
            author=pr.user.login if pr.user else "",
            base_sha=pr.base.sha,
            head_sha=job.head_sha,
            head_repository=pr.head.repo.full_name if pr.head.repo is not None else job.repository,
            job_id=job.id,
            check_run_id=check_run_id,
        )
        ranker = Ranker(self.client, self.s.store, self.s.settings, self.s.judge, policy, self.s.tarballs)
        try:
            await enter(ranker, row)
        except Exception:  # the run is delivered; a ranking that failed is tried again on the next run
            log.exception("job %s: ranking %s#%s failed", job.id, job.repository, job.pr_number)

    async def _withdraw(self) -> None:
        """A PR was closed or merged: take it out of its issue's ranking (no check run of its own)."""
        job, s = self.job, self.s
        state = "merged" if job.trigger == WITHDRAWN_MERGED else "closed"
        ranker = Ranker(self.client, s.store, s.settings, s.judge, Policy(), s.tarballs)
        try:
            detail = await withdraw(ranker, job.repository, job.pr_number, state)
        except Exception as exc:  # advisory: a closed PR must never get a neutral check run for this
            log.exception("job %s: ranking after #%s %s failed", job.id, job.pr_number, state)
            detail = f"ranking failed: {type(exc).__name__}: {exc}"
        await self.finish(DONE, detail=detail)

    async def _reply(self) -> None:
        """Answer /patchgate help, or a /patchgate word that is no command; never with a check run."""
        job = self.job
        unknown = job.argument if job.trigger == UNKNOWN else None
        try:
            await self.client.comment(job.repository, job.pr_number, help_reply(unknown))
            detail = "listed the commands" if unknown is None else f"answered the unknown command {unknown!r}"
        except (GitHubError, InstallationGone) as exc:
            log.warning("job %s: the command reply failed: %s", job.id, exc)
            detail = f"the command reply failed: {exc}"
        if job.comment_id is not None:
            await react(
                self.client, job.repository, job.comment_id, ACCEPTED if unknown is None else NOT_UNDERSTOOD
            )
        await self.finish(DONE, detail=detail)

    async def _explain(self) -> None:
        """Reply to /patchgate explain, and never with a check run.

        Not even a neutral one on a failure: a later run of the same name would
        stand in for the real verdict on a required check.
        """
        job, s = self.job, self.s
        try:
            detail = await explain(self.client, s.store, s.settings.github_url, job.repository, job.pr_number)
        except (GitHubError, InstallationGone) as exc:
            log.warning("job %s: the explain reply failed: %s", job.id, exc)
            detail = f"the explain reply failed: {exc}"
        await self.finish(DONE, detail=detail)

    async def _judge_inputs(self, pr: PullRequest) -> tuple[Task, tuple[str, ...]]:
        """Return the task the judge reads (with the linked issues' text) and who wrote the PR."""
        task = Task(title=pr.title, body=pr.body or "")
        if self.s.judge is None:  # nobody would read them: spare GitHub the calls
            return task, ()
        repo, author = self.job.repository, pr.user.login if pr.user else ""
        issues = [await self.client.issue(repo, n) for n in linked_issues(task.body, repo)]
        commits = await self.client.pull_commits(repo, self.job.pr_number)
        text = issue_text([i for i in issues if i is not None])
        return Task(task.title, task.body, text), pull_provenance(author, commits)

    async def _check_run_id(self) -> int | None:
        fresh = await asyncio.to_thread(self.s.store.job, self.job.id)
        return fresh.check_run_id if fresh is not None else None

    async def _ensure_check_run(self) -> int:
        """Return the job's check run, creating it (in progress) the first time."""
        job = self.job
        found = await self._check_run_id()
        if found is None and job.attempts > 1:
            # An earlier attempt may have died between creating the run and recording it.
            found = await self.client.find_check_run(job.repository, job.head_sha, job.key)
        if found is None:
            body = checkrun.started(
                self.s.settings.check_name, job.head_sha, job.key, self._details_url(), job.trigger
            )
            found = await self.client.create_check_run(job.repository, body)
        await asyncio.to_thread(self.s.store.set_check_run, job.id, found)
        return found

    def _details_url(self) -> str:
        token = run_tokens(self.s.settings).issue(self.job.id)
        return f"{self.s.settings.public_url}/runs/{self.job.id}?token={token}"

    async def _cancel(self, reason: str) -> None:
        """Stop a job that must not finish; its check run (if any) completes as cancelled."""
        job = self.job
        if await asyncio.to_thread(self.s.store.installation_active, job.installation_id) is False:
            # The App is gone: GitHub would refuse every request.
            await self.finish(ABANDONED, detail=reason)
            return
        check_run_id = await self._check_run_id()
        if self.first is not None and check_run_id is not None:
            # The verdict is on the check run already and stands; only its mutation score is missing.
            await self._deliver(check_run_id, without_mutants(self.first, reason))
            return
        if check_run_id is not None:
            await self.client.update_check_run(job.repository, check_run_id, checkrun.cancelled(reason))
        await self.finish(CANCELLED, conclusion="cancelled" if check_run_id else None, detail=reason)

    async def _complete(self, check_run_id: int, report: Report) -> None:
        await self.client.complete_check_run(self.job.repository, check_run_id, checkrun.prepare(report))

    async def _verdict_first(self, sender: _ProgressSender, check_run_id: int, report: Report) -> None:
        """Complete the check run with the verdict while the mutants still run (strength.report_first).

        The run is completed again when they finish (GitHub lets a completed run
        be updated, conclusion included:
        https://docs.github.com/en/rest/checks/runs#update-a-check-run); a job
        cancelled meanwhile keeps this verdict, without the mutation score.
        """
        if self.watch.event.is_set():  # cancelled or lost: never deliver
            return
        await sender.close()  # the progress updates queued before the verdict go first
        self.first = report
        try:
            await self._complete(check_run_id, report)
        except (GitHubError, InstallationGone) as exc:
            # The final completion, after the mutants, still comes.
            log.warning("job %s: the verdict before strength was not posted: %s", self.job.id, exc)

    async def _run_pipeline(
        self, check_run_id: int, inputs: PipelineInputs
    ) -> tuple[Report, list[JudgeRow]] | None:
        """Run the pipeline in a thread; None when the job was cancelled (or lost) meanwhile."""
        loop = asyncio.get_running_loop()
        sender = _ProgressSender(self.client, self.job.repository, check_run_id)
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
            asyncio.run_coroutine_threadsafe(self._verdict_first(sender, check_run_id, report), loop).result()

        def pipeline() -> Report:
            report = self.s.pipeline(
                inputs, on_progress=on_progress, on_shadow=on_shadow, on_verdict=on_verdict
            )
            if not self.job.judge_anyway:
                return report
            if why := inputs.stop():  # no judge for a run nobody will see
                raise Stopped(why)
            return judge_anyway(inputs, report, self.s.store)

        # The pipeline's log records carry this job's ids: its thread runs in a copy of our context.
        work = loop.run_in_executor(self.s.pipelines, contextvars.copy_context().run, pipeline)
        stop = asyncio.ensure_future(self.watch.event.wait())
        either: set[asyncio.Future[Any]] = {work, stop}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if self.watch.event.is_set() or not work.done():  # cancelled or lost: never deliver
            sender.discard()
            if not self.watch.lost:
                await self._cancel(self.watch.reason or "cancelled")
            # The pipeline stops at its next layer boundary (inputs.stop); until then it keeps
            # this job's slot, so the number of pipelines never exceeds the concurrency setting.
            with contextlib.suppress(Exception):
                await work
            log.info("job %s: the abandoned pipeline ended; its result is discarded", self.job.id)
            return None
        await sender.close()
        report = work.result()
        beat = await asyncio.to_thread(
            self.s.store.heartbeat,
            self.job.id,
            self.s.worker,
            self.s.settings.lease_s,
            attempt=self.job.attempts,
        )
        if beat.lease is not Lease.RENEWED:  # another attempt owns the job now: never deliver
            return None
        if beat.cancel_reason:
            await self._cancel(beat.cancel_reason)
            return None
        return report, shadows

    async def _deliver(
        self,
        check_run_id: int,
        report: Report,
        shadows: list[JudgeRow] | None = None,
        *,
        reuse_key: str | None = None,
    ) -> None:
        """Complete the check run, then record the run; the job is done only after both."""
        job = self.job
        await self._complete(check_run_id, report)
        metrics.report_done(report)
        await asyncio.to_thread(
            self.s.store.save_run,
            run_record(
                job.id,
                job.repository,
                job.pr_number,
                job.head_sha,
                report,
                seconds=time.monotonic() - self.started,
                reuse_key=reuse_key,
            ),
        )
        for row in shadows or []:
            await asyncio.to_thread(self.s.store.add_judge_record, job.id, job.repository, job.head_sha, row)
        await self.finish(DONE, conclusion=report.conclusion, detail="; ".join(report.reasons)[:1000])


def without_mutants(report: Report, reason: str) -> Report:
    """Return a verdict posted before its mutants (strength.report_first), for a job ending without them."""
    strength = report.behaviour.strength.model_copy(
        update={"pending": False, "detail": f"mutants not run: {reason}"}
    )
    behaviour = report.behaviour.model_copy(update={"strength": strength})
    return report.model_copy(update={"behaviour": behaviour})
