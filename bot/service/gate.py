"""The gate: one PR at one head, judged and reported on its check run.

The flow: the PR as it is now, the policy at the base sha, agent or not, the
check run (created in progress once), the inputs, an identical earlier run
or else the trees and the pipeline (bot/service/pipelinerun.py), then the
completed run, the stored report and its follow-ups (comment, SARIF, ranking).
Errors propagate to the worker, which retries or reports ``neutral``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from pathlib import Path

from bot.github import checkrun
from bot.github.events import classify
from bot.github.linked import competes_for, issue_text, linked_issues, pull_provenance
from bot.github.payloads import PullRequest
from bot.github.trees import fetch_workspace
from bot.service import cancel
from bot.service.attempt import Attempt
from bot.service.codescanning import upload_findings
from bot.service.commenting import check_run_url, post_summary
from bot.service.judging import stored_records
from bot.service.pipelinerun import run_pipeline
from bot.service.ranking import Ranker, enter
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
from bot.store import JudgeRow, StoreVerdictCache
from bot.store.candidates import CandidateRow
from bot.store.tables import SKIPPED
from checks.behaviour.baseruns import BaseRuns
from checks.behaviour.suites import Suites, suites_for
from checks.pipeline import Given, PipelineInputs, error_report
from checks.policy import POLICY_PATH, Policy
from checks.policyfile import PolicyError, load_policy
from checks.quality.inputs import Task
from checks.refusal import refused_report
from checks.report import Report
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


async def run(attempt: Attempt) -> None:
    """Gate the PR; raises for infrastructure trouble (GitHubError, SandboxError, ...).

    The steps, in order: the PR must still be open at this head; the base
    branch's policy; who wrote the PR; the check run; the inputs (suites, the
    judge's task); an identical earlier run answers at once; otherwise the
    trees are fetched and the pipeline runs.
    """
    job, settings = attempt.job, attempt.services.settings
    pr = await _current_pr(attempt)
    if pr is None:
        return
    base_sha = pr.base.sha
    policy = await _policy(attempt, base_sha)
    if policy is None or not await _is_agent_pr(attempt, pr, policy):
        return
    check_run_id = await attempt.ensure_check_run()
    task, provenance = await _judge_inputs(attempt, pr)
    # The PR's labels and title say whether it is a refactor, compared with base (behaviour.differential).
    labels = tuple(label.name for label in pr.labels)
    suites = dataclasses.replace(await _suites(attempt), labels=labels, title=pr.title)
    inputs = await _inputs(attempt, base_sha, policy, suites=suites, task=task, provenance=provenance)
    # Explicit reruns (and judge-anyway) gate afresh: no report and no base run is reused.
    fresh = job.trigger not in REUSING_TRIGGERS or job.judge_anyway
    key = None if fresh else reuse_key(inputs)
    if key is not None and (reused := await _stored(attempt, key, base_sha)) is not None:
        await attempt.deliver(check_run_id, reused)
        await _delivered(attempt, pr, policy, check_run_id, reused)
        return
    # One lookup of the image's id for the job's base runs, not one per run.
    identify = functools.cache(_image_id)
    base_runs = BaseRuns(
        settings.work_dir / BASE_RUNS_DIR, base_salt(inputs), read=not fresh, identify=identify
    )
    shape_cache = ShapeCache(settings.work_dir / SHAPE_CACHE_DIR, identify=identify, read=not fresh)
    outcome = await _gate(
        attempt, pr, policy, check_run_id, suites=suites, task=task, provenance=provenance,
        base_runs=base_runs, shape_cache=shape_cache,
    )  # fmt: skip
    if outcome is not None:
        report, shadows = outcome
        await attempt.deliver(check_run_id, report, shadows, key=key if key and reusable(report) else None)
        await _delivered(attempt, pr, policy, check_run_id, report)


async def _current_pr(attempt: Attempt) -> PullRequest | None:
    """Return the PR as GitHub has it now; None (the job cancelled) once closed or pushed past."""
    job = attempt.job
    pr = await attempt.client.pull(job.repository, job.pr_number)
    if pr.state != "open":
        await cancel.run(attempt, "the pull request was closed")
        return None
    if pr.head.sha != job.head_sha:
        await cancel.run(attempt, f"superseded by {pr.head.sha}")
        return None
    return pr


async def _policy(attempt: Attempt, base_sha: str) -> Policy | None:
    """Return the base branch's policy; None once a broken one is reported (action_required)."""
    job = attempt.job
    try:
        return load_policy(await attempt.client.file_at(job.repository, POLICY_PATH, base_sha))
    except PolicyError as exc:
        # A broken policy needs a maintainer, whoever wrote the PR.
        report = error_report(str(exc), "action_required", base_sha=base_sha, head_sha=job.head_sha)
        await attempt.deliver(await attempt.ensure_check_run(), report)
        return None


async def _is_agent_pr(attempt: Attempt, pr: PullRequest, policy: Policy) -> bool:
    """Return whether the policy gates this PR; otherwise finish the job as skipped."""
    job, services = attempt.job, attempt.services
    labels = [label.name for label in pr.labels]
    author = pr.user.login if pr.user else ""
    verdict = classify(policy, author=author, labels=labels, head_ref=pr.head.ref, draft=bool(pr.draft))
    if verdict == "agent":
        return True
    if verdict == "not_agent" and policy.agents.others == "neutral":
        body = checkrun.not_agent(services.settings.check_name, job.head_sha, job.key, attempt.details_url())
        check_run_id = await attempt.client.create_check_run(job.repository, body)
        await asyncio.to_thread(services.store.leases.set_check_run, job.id, check_run_id)
    reason = (
        "not an agent PR by the base branch's policy"
        if verdict == "not_agent"
        else "a draft PR (policy agents.include_drafts is false)"
    )
    await attempt.finish(SKIPPED, detail=reason)
    return False


async def _gate(
    attempt: Attempt,
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
    job, services, base_sha = attempt.job, attempt.services, pr.base.sha
    work_dir = services.settings.work_dir
    work_dir.mkdir(parents=True, exist_ok=True)
    # The trees are the PR's: removed without recursion, and never raising over the outcome.
    with scratch(f"job-{job.id}-", work_dir) as tmp:
        try:
            ws = await fetch_workspace(
                attempt.client,
                base_repo=job.repository,
                base_sha=base_sha,
                head_repo=pr.head.repo.full_name if pr.head.repo is not None else job.repository,
                head_sha=job.head_sha,
                dest=tmp,
                cache=services.tarballs,
            )
        except TreeRefused as exc:
            # A tree beyond bounds is the PR's failure (or, on the base, a maintainer's problem).
            # Delivered once the partial tree is removed: the job is done only when nothing is left.
            refused = refused_report(exc)
        else:
            inputs = PipelineInputs(
                workspace=ws,
                policy=policy,
                runner=services.runner(),
                given=Given(suites=suites, task=task, judge=services.judge),
                base_runs=base_runs,
                shape_cache=shape_cache,
                provenance=provenance,
                run_key=job.key,
                verdict_cache=StoreVerdictCache(services.store),
                judge_records=(
                    await asyncio.to_thread(stored_records, services.store) if services.judge else ()
                ),
                stop=attempt.watch.pipeline_stop,
            )
            return await run_pipeline(attempt, check_run_id, inputs)
    await attempt.deliver(check_run_id, refused)
    return None


async def _delivered(
    attempt: Attempt, pr: PullRequest, policy: Policy, check_run_id: int, report: Report
) -> None:
    """Follow a delivered report up: the sticky comment (if the policy wants one), the ranking."""
    job, settings = attempt.job, attempt.services.settings
    url = check_run_url(settings.github_url, job.repository, check_run_id)
    mode = policy.report.comment
    await post_summary(attempt.client, job.repository, job.pr_number, report, mode=mode, url=url)
    if settings.upload_sarif:
        await upload_findings(attempt.client, job.repository, job.pr_number, job.head_sha, report)
    await _compete(attempt, pr, policy, check_run_id)


async def _inputs(
    attempt: Attempt,
    base_sha: str,
    policy: Policy,
    *,
    suites: Suites,
    task: Task,
    provenance: tuple[str, ...],
) -> ReuseInputs:
    """Return what this job's verdict depends on, as the host knows it (bot/service/reuse.py)."""
    job, services = attempt.job, attempt.services
    return await asyncio.to_thread(
        job_inputs,
        job.repository,
        base_sha,
        job.head_sha,
        suites=suites,
        policy=policy,
        pipeline=services.pipeline,
        settings=services.settings,
        judge=judge_text(services.judge, task, provenance),
    )


async def _stored(attempt: Attempt, key: str, base_sha: str) -> Report | None:
    """Return the report of an identical earlier run, marked as reused; None if there is none."""
    job, services = attempt.job, attempt.services
    found = await asyncio.to_thread(services.store.runs.reusable, key)
    report = answer(found, base_sha, job.head_sha, services.settings.github_url, job.repository)
    if report is not None and report.reused_from is not None:
        log.info(
            "job %s: inputs identical to job %s's: its report is reused", job.id, report.reused_from.job_id
        )
    return report


async def _suites(attempt: Attempt) -> Suites:
    """Return the job's suites; a suites repository the App cannot read sets their ``error``."""
    services = attempt.services
    if services.suites is None:
        return suites_for(Path(services.settings.test_store), attempt.job.repository)
    return await services.suites.suites(attempt.job.repository)


async def _compete(attempt: Attempt, pr: PullRequest, policy: Policy, check_run_id: int) -> None:
    """Enter the delivered run in its issue's ranking (best of k); advisory, never raises."""
    job, services = attempt.job, attempt.services
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
    ranker = Ranker(
        attempt.client, services.store, services.settings, services.judge, policy, services.tarballs
    )
    try:
        await enter(ranker, row)
    except Exception:  # the run is delivered; a ranking that failed is tried again on the next run
        log.exception("job %s: ranking %s#%s failed", job.id, job.repository, job.pr_number)


async def _judge_inputs(attempt: Attempt, pr: PullRequest) -> tuple[Task, tuple[str, ...]]:
    """Return the task the judge reads (with the linked issues' text) and who wrote the PR."""
    task = Task(title=pr.title, body=pr.body or "")
    if attempt.services.judge is None:  # nobody would read them: spare GitHub the calls
        return task, ()
    client, repo, author = attempt.client, attempt.job.repository, pr.user.login if pr.user else ""
    issues = [await client.issue(repo, n) for n in linked_issues(task.body, repo)]
    commits = await client.pull_commits(repo, attempt.job.pr_number)
    text = issue_text([i for i in issues if i is not None])
    return Task(title=task.title, body=task.body, issue=text), pull_provenance(author, commits)
