"""The stored runs: each job's report and the numbers worth querying, and reuse's lookups."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from bot.store.database import Part
from bot.store.tables import DONE, Job, Run
from checks.report import Report


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    job_id: int
    repository: str
    pr_number: int
    head_sha: str
    base_sha: str
    conclusion: str
    report: dict[str, Any]
    findings: int = 0
    hidden_pass_rate: float | None = None
    held_out_pass_rate: float | None = None
    regressions: int = 0
    quality_status: str = "skipped"
    judge_cost_usd: float = 0.0
    seconds: float = 0.0
    timings: dict[str, float] | None = None
    reuse_key: str | None = None


@dataclass(frozen=True, kw_only=True)
class StoredRun:
    """A stored run that a job with the same inputs may be answered with."""

    job_id: int
    check_run_id: int | None
    report: dict[str, Any]


def run_record(
    job_id: int,
    repository: str,
    pr_number: int,
    head_sha: str,
    report: Report,
    *,
    seconds: float,
    reuse_key: str | None = None,
) -> RunRecord:
    """Return the stored form of a report: the JSON plus the numbers worth querying."""
    rates = {s.kind: s.pass_rate for s in report.behaviour.suites}
    return RunRecord(
        job_id=job_id,
        repository=repository,
        pr_number=pr_number,
        head_sha=head_sha,
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
        reuse_key=reuse_key,
    )


@dataclass(frozen=True, kw_only=True)
class RepositoryRun:
    """One stored run as the repository page lists it."""

    job_id: int
    pr_number: int
    head_sha: str
    conclusion: str
    hidden_pass_rate: float | None
    held_out_pass_rate: float | None
    mutation_score: float | None
    created_at: float


class Runs(Part):
    """The runs of jobs (GitHub's and ``patchgate run``'s), newest first where it matters."""

    def add_local_job(self, repository: str, ref: str, report: Report, *, installation_id: int) -> int:
        """Add a finished job for a run made without GitHub (``patchgate run``/``demo``); return its id."""
        now = time.time()
        with self._tx() as s:
            job = Job(
                key=f"local:{repository}:{ref}:{report.head_sha}:{now}",
                delivery_id="local",
                trigger="local",
                installation_id=installation_id,
                repository=repository,
                pr_number=0,
                head_sha=report.head_sha,
                state=DONE,
                conclusion=report.conclusion,
                detail="; ".join(report.reasons)[:1000],
                created_at=now,
                updated_at=now,
            )
            s.add(job)
            s.flush()
            return job.id

    def save(self, record: RunRecord) -> None:
        """Store (or replace, after a crash and a second attempt) the run of a job."""
        with self._tx() as s:
            existing = s.scalar(select(Run).where(Run.job_id == record.job_id))
            if existing is not None:
                s.delete(existing)
                s.flush()
            s.add(
                Run(
                    job_id=record.job_id,
                    repository=record.repository,
                    pr_number=record.pr_number,
                    head_sha=record.head_sha,
                    base_sha=record.base_sha,
                    conclusion=record.conclusion,
                    findings=record.findings,
                    hidden_pass_rate=record.hidden_pass_rate,
                    held_out_pass_rate=record.held_out_pass_rate,
                    regressions=record.regressions,
                    quality_status=record.quality_status,
                    judge_cost_usd=record.judge_cost_usd,
                    seconds=record.seconds,
                    timings=dict(record.timings or {}),
                    report=record.report,
                    reuse_key=record.reuse_key,
                    created_at=time.time(),
                )
            )

    def reusable(self, reuse_key: str) -> StoredRun | None:
        """Return the newest run gated with inputs of key ``reuse_key`` (bot/service/reuse.py), or None."""
        with self._tx() as s:
            row = s.execute(
                select(Run.job_id, Job.check_run_id, Run.report)
                .join(Job, Job.id == Run.job_id)
                .where(Run.reuse_key == reuse_key)
                .order_by(Run.id.desc())
                .limit(1)
            ).first()
            return StoredRun(job_id=row[0], check_run_id=row[1], report=row[2]) if row is not None else None

    def report(self, job_id: int) -> dict[str, Any] | None:
        with self._tx() as s:
            return s.scalar(select(Run.report).where(Run.job_id == job_id))

    def latest(self, repository: str, pr_number: int) -> tuple[dict[str, Any], int | None] | None:
        """Return the newest stored report of a PR and its job's check run id (``/patchgate explain``)."""
        with self._tx() as s:
            row = s.execute(
                select(Run.report, Job.check_run_id)
                .join(Job, Job.id == Run.job_id)
                .where(Run.repository == repository, Run.pr_number == pr_number)
                .order_by(Run.id.desc())
                .limit(1)
            ).first()
            return (row[0], row[1]) if row is not None else None

    def for_repository(self, repository: str, limit: int = 100) -> list[RepositoryRun]:
        """Return the repository's newest stored runs (the repository page), newest first."""
        with self._tx() as s:
            rows = s.execute(
                select(Run.job_id, Run.pr_number, Run.head_sha, Run.conclusion, Run.hidden_pass_rate,
                       Run.held_out_pass_rate, Run.report, Run.created_at)
                .where(Run.repository == repository)
                .order_by(Run.id.desc())
                .limit(limit)
            ).all()  # fmt: skip
        runs = []
        for job_id, number, head, conclusion, hidden, held_out, report, created in rows:
            strength = ((report or {}).get("behaviour") or {}).get("strength") or {}
            ran = int(strength.get("mutants") or 0) - int(strength.get("not_run") or 0)
            score = int(strength.get("killed") or 0) / ran if ran > 0 else None
            runs.append(
                RepositoryRun(
                    job_id=job_id,
                    pr_number=number,
                    head_sha=head,
                    conclusion=conclusion,
                    hidden_pass_rate=hidden,
                    held_out_pass_rate=held_out,
                    mutation_score=score,
                    created_at=created,
                )
            )
        return runs

    def count(self) -> int:
        with self._tx() as s:
            return int(s.scalar(select(func.count()).select_from(Run)) or 0)
