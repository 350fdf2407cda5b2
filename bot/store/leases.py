"""Job leases: claim, heartbeat, finish, retry, and which jobs are due (the reaper's question)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from sqlalchemy import and_, func, or_, select, text, update
from sqlalchemy.orm import Session

from bot.store.database import Part
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
    comment_id: int | None = None
    argument: str = ""
    # Set by ``claim``: the worker this attempt took the job over from, whose lease ran out.
    reclaimed_from: str | None = None

    @property
    def owner(self) -> str:
        return self.repository.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.repository.split("/", 1)[1]


class Lease(Enum):
    """What a heartbeat found."""

    RENEWED = "renewed"  # still ours and running: the lease now runs lease_s from now
    ENDED = "ended"  # no longer running, and nobody else holds it: we finished it (or put it back)
    TAKEN = "taken"  # another worker holds it: our lease ran out and it was claimed again


@dataclass(frozen=True, kw_only=True)
class Beat:
    """One heartbeat's answer: the lease, and the cancel reason recorded on the job (if any)."""

    lease: Lease
    cancel_reason: str | None = None


@dataclass(frozen=True)
class Due:
    """The jobs one reaper pass hands to the broker: queued ones, and those whose lease ran out."""

    queued: list[int]
    expired: list[int]

    @property
    def ids(self) -> list[int]:
        return sorted([*self.queued, *self.expired])


def _ours(worker: str, attempt: int | None) -> tuple[Any, ...]:
    """The conditions of "this attempt holds the job": our name, and (given) our attempt number.

    The number matters when one worker process takes back a job whose lease it let run out
    (a stalled heartbeat): the stale attempt and the new one share the worker's name.
    """
    return (Job.worker == worker,) if attempt is None else (Job.worker == worker, Job.attempts == attempt)


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
        job.comment_id,
        job.argument,
    )


class Leases(Part):
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
            before = s.execute(
                select(Job.repository, Job.state, Job.worker).where(Job.id == job_id)
            ).one_or_none()
            if before is None:
                return None
            repository = before.repository
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
            if row is None:
                return None
            return replace(_view(row), reclaimed_from=before.worker if before.state == RUNNING else None)

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

    def heartbeat(self, job_id: int, worker: str, lease_s: float, *, attempt: int | None = None) -> Beat:
        """Extend our lease if the job is still ours and running; say which it was.

        A job no longer running is ``ENDED`` unless another worker claimed it since our
        claim (another worker's name on it, or, given our ``attempt``, a later attempt
        number): a heartbeat that fires just after its own worker finished the job, or put
        it back for a retry, has lost nothing.
        """
        now = time.time()
        with self._tx() as s:
            result = s.execute(
                update(Job)
                .where(Job.id == job_id, *_ours(worker, attempt), Job.state == RUNNING)
                .values(lease_until=now + lease_s)
            )
            row = s.execute(
                select(Job.worker, Job.attempts, Job.cancel_reason).where(Job.id == job_id)
            ).one_or_none()
            reason = row.cancel_reason if row is not None else None
            if result.rowcount:  # type: ignore[attr-defined]
                return Beat(lease=Lease.RENEWED, cancel_reason=reason)
            taken = row is not None and (
                (row.worker is not None and row.worker != worker)
                or (attempt is not None and row.attempts != attempt)
            )
            return Beat(lease=Lease.TAKEN if taken else Lease.ENDED, cancel_reason=reason)

    def set_check_run(self, job_id: int, check_run_id: int) -> None:
        with self._tx() as s:
            s.execute(update(Job).where(Job.id == job_id).values(check_run_id=check_run_id))

    def finish(
        self,
        job_id: int,
        worker: str,
        state: str,
        *,
        conclusion: str | None = None,
        detail: str = "",
        attempt: int | None = None,
    ) -> bool:
        """Move our running job to a final state; False when it is no longer ours (or this attempt's)."""
        now = time.time()
        with self._tx() as s:
            result = s.execute(
                update(Job)
                .where(Job.id == job_id, *_ours(worker, attempt), Job.state == RUNNING)
                .values(
                    state=state, conclusion=conclusion, detail=detail[:4000], lease_until=None, updated_at=now
                )
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def retry_later(
        self, job_id: int, worker: str, delay_s: float, detail: str, *, attempt: int | None = None
    ) -> bool:
        """Put our running job back in the queue after an infrastructure failure."""
        now = time.time()
        with self._tx() as s:
            result = s.execute(
                update(Job)
                .where(Job.id == job_id, *_ours(worker, attempt), Job.state == RUNNING)
                .values(
                    state=QUEUED,
                    not_before=now + delay_s,
                    lease_until=None,
                    worker=None,
                    # The retrying worker enqueues it when the delay is over; a reaper only if
                    # that worker is gone by a lease period later.
                    enqueued_at=now + delay_s,
                    detail=detail[:4000],
                    updated_at=now,
                )
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def due(self, lease_s: float, now: float | None = None) -> Due:
        """Take the jobs to (re-)enqueue, each at most once per ``lease_s`` however many reapers ask.

        Due: queued jobs whose time has come, and running jobs whose lease ran out (their
        worker died). Either is handed out only if nobody handed it to the broker within
        the last lease period: a job that waits in the broker for a free slot is not pushed
        again at every pass of every reaper. Each row is marked by one conditional UPDATE
        (``RETURNING``), so of two reapers asking at once, one gets it.
        """
        now = time.time() if now is None else now
        quiet = or_(Job.enqueued_at.is_(None), Job.enqueued_at < now - lease_s)
        branches = {
            "queued": and_(Job.state == QUEUED, Job.not_before <= now),
            "lease expired": and_(Job.state == RUNNING, Job.lease_until < now),
        }
        taken: dict[str, list[int]] = {}
        with self._tx() as s:
            for why, due in branches.items():
                stmt = update(Job).where(due, quiet).values(enqueued_at=now).returning(Job.id)
                taken[why] = sorted(s.scalars(stmt))
        return Due(queued=taken["queued"], expired=taken["lease expired"])

    def due_jobs(self, lease_s: float, now: float | None = None) -> list[int]:
        """Return (and mark enqueued) the due jobs, in id order: see ``due``."""
        return self.due(lease_s, now).ids

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
