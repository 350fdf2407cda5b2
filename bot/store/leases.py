"""Job leases: claim, heartbeat, finish, retry, and which jobs are due (the reaper's question)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import and_, func, or_, select, text, update
from sqlalchemy.orm import Session

from bot.store.database import Database
from bot.store.tables import QUEUED, RUNNING, Job


@dataclass(frozen=True)
class JobView:
    """A snapshot of one job row."""

    id: int
    key: str
    trigger: str
    installation_id: int
    repository: str
    pr_number: int
    head_sha: str
    judge_anyway: bool
    state: str
    attempts: int
    check_run_id: int | None
    cancel_reason: str | None
    conclusion: str | None
    detail: str
    worker: str | None
    created_at: float
    updated_at: float

    @property
    def owner(self) -> str:
        return self.repository.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.repository.split("/", 1)[1]


def _view(job: Job) -> JobView:
    return JobView(
        job.id,
        job.key,
        job.trigger,
        job.installation_id,
        job.repository,
        job.pr_number,
        job.head_sha,
        job.judge_anyway,
        job.state,
        job.attempts,
        job.check_run_id,
        job.cancel_reason,
        job.conclusion,
        job.detail,
        job.worker,
        job.created_at,
        job.updated_at,
    )


class Leases(Database):
    """The job table as a durable queue with leases."""

    def job(self, job_id: int) -> JobView | None:
        with self._tx() as s:
            row = s.get(Job, job_id)
            return _view(row) if row is not None else None

    def jobs(self, *, repository: str | None = None) -> list[JobView]:
        with self._tx() as s:
            stmt = select(Job).order_by(Job.id)
            if repository is not None:
                stmt = stmt.where(Job.repository == repository)
            return [_view(j) for j in s.scalars(stmt)]

    def claim(
        self,
        job_id: int,
        worker: str,
        lease_s: float,
        now: float | None = None,
        *,
        per_repository: int | None = None,
    ) -> JobView | None:
        """Take a queued job, or a running one whose lease expired (its worker died).

        With ``per_repository``, a job whose repository already has that many
        jobs running (on any worker) is left queued and marked not enqueued:
        the worker that finishes one of them, or the reaper, enqueues it again.
        """
        now = time.time() if now is None else now
        with self._tx() as s:
            repository = s.scalar(select(Job.repository).where(Job.id == job_id))
            if repository is None:
                return None
            limit = per_repository
            if limit is not None and self._repository_full(s, repository, job_id, limit, now):
                s.execute(update(Job).where(Job.id == job_id, Job.state == QUEUED).values(enqueued_at=None))
                return None
            result = s.execute(
                update(Job)
                .where(
                    Job.id == job_id,
                    or_(
                        and_(Job.state == QUEUED, Job.not_before <= now),
                        and_(Job.state == RUNNING, Job.lease_until < now),
                    ),
                )
                .values(
                    state=RUNNING,
                    worker=worker,
                    lease_until=now + lease_s,
                    attempts=Job.attempts + 1,
                    updated_at=now,
                )
            )
            if not result.rowcount:  # type: ignore[attr-defined]
                return None
            row = s.get(Job, job_id)
            return _view(row) if row is not None else None

    def _repository_full(self, s: Session, repository: str, job_id: int, limit: int, now: float) -> bool:
        """Return True when ``repository`` has ``limit`` live-leased jobs besides ``job_id``."""
        if self.engine.dialect.name == "postgresql":
            # Two workers counting at once would both see room: claims of one repository take
            # turns (SQLite's BEGIN IMMEDIATE already serializes every write transaction).
            s.execute(text("SELECT pg_advisory_xact_lock(hashtext(:repo))"), {"repo": repository})
        running = s.scalar(
            select(func.count())
            .select_from(Job)
            .where(
                Job.repository == repository,
                Job.state == RUNNING,
                Job.lease_until >= now,
                Job.id != job_id,
            )
        )
        return int(running or 0) >= limit

    def waiting(self, repository: str, now: float | None = None) -> list[int]:
        """Return (and mark enqueued) the due jobs of ``repository`` that a full repository turned away."""
        now = time.time() if now is None else now
        with self._tx() as s:
            ids = list(
                s.scalars(
                    select(Job.id)
                    .where(
                        Job.repository == repository,
                        Job.state == QUEUED,
                        Job.not_before <= now,
                        Job.enqueued_at.is_(None),
                    )
                    .order_by(Job.id)
                )
            )
            if ids:
                s.execute(update(Job).where(Job.id.in_(ids)).values(enqueued_at=now))
            return ids

    def heartbeat(self, job_id: int, worker: str, lease_s: float) -> tuple[bool, str | None]:
        """Extend our lease; return (still ours, cancel reason)."""
        now = time.time()
        with self._tx() as s:
            result = s.execute(
                update(Job)
                .where(Job.id == job_id, Job.worker == worker, Job.state == RUNNING)
                .values(lease_until=now + lease_s)
            )
            reason = s.scalar(select(Job.cancel_reason).where(Job.id == job_id))
            return bool(result.rowcount), reason  # type: ignore[attr-defined]

    def set_check_run(self, job_id: int, check_run_id: int) -> None:
        with self._tx() as s:
            s.execute(update(Job).where(Job.id == job_id).values(check_run_id=check_run_id))

    def finish(
        self, job_id: int, worker: str, state: str, *, conclusion: str | None = None, detail: str = ""
    ) -> bool:
        """Move our running job to a final state; False when it is no longer ours."""
        now = time.time()
        with self._tx() as s:
            result = s.execute(
                update(Job)
                .where(Job.id == job_id, Job.worker == worker, Job.state == RUNNING)
                .values(
                    state=state, conclusion=conclusion, detail=detail[:4000], lease_until=None, updated_at=now
                )
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def retry_later(self, job_id: int, worker: str, delay_s: float, detail: str) -> bool:
        """Put our running job back in the queue after an infrastructure failure."""
        now = time.time()
        with self._tx() as s:
            result = s.execute(
                update(Job)
                .where(Job.id == job_id, Job.worker == worker, Job.state == RUNNING)
                .values(
                    state=QUEUED,
                    not_before=now + delay_s,
                    lease_until=None,
                    worker=None,
                    enqueued_at=None,
                    detail=detail[:4000],
                    updated_at=now,
                )
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def due_jobs(self, lease_s: float, now: float | None = None) -> list[int]:
        """Return jobs to (re-)enqueue: queued and due but not enqueued recently, or with a dead lease."""
        now = time.time() if now is None else now
        with self._tx() as s:
            ids = list(
                s.scalars(
                    select(Job.id)
                    .where(
                        or_(
                            and_(
                                Job.state == QUEUED,
                                Job.not_before <= now,
                                or_(Job.enqueued_at.is_(None), Job.enqueued_at < now - lease_s),
                            ),
                            and_(Job.state == RUNNING, Job.lease_until < now),
                        )
                    )
                    .order_by(Job.id)
                )
            )
            if ids:
                s.execute(update(Job).where(Job.id.in_(ids)).values(enqueued_at=now))
            return ids

    def mark_enqueued(self, job_ids: Sequence[int], *, undo: bool = False) -> None:
        """Record that the jobs were handed to the broker now (``undo``: they were not after all)."""
        when = None if undo else time.time()
        with self._tx() as s:
            s.execute(update(Job).where(Job.id.in_(list(job_ids))).values(enqueued_at=when))

    def queue_stats(self, now: float | None = None) -> tuple[int, float, int]:
        """Return (jobs queued, age of the oldest queued one in seconds, jobs running)."""
        now = time.time() if now is None else now
        with self._tx() as s:
            depth, oldest = s.execute(
                select(func.count(), func.min(Job.created_at)).where(Job.state == QUEUED)
            ).one()
            running = s.scalar(select(func.count()).select_from(Job).where(Job.state == RUNNING))
            age = max(now - float(oldest), 0.0) if oldest is not None else 0.0
            return int(depth), age, int(running or 0)
