"""The durable store: deliveries, jobs, runs, judge records, the verdict cache.

SQLite (WAL) by default, PostgreSQL by URL. Every method is one short
transaction; the async callers run them in a thread. State changes that race
between workers are single conditional UPDATEs, so whoever's row count is 1
won.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, and_, create_engine, event, func, or_, select, text, update
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from bot.events import Action, CancelRequest, GateRequest, Ignore, InstallationChange, run_key
from bot.migrations import upgrade
from bot.tables import (
    LIVE,
    QUEUED,
    RUNNING,
    Delivery,
    Installation,
    Job,
    JudgeRecord,
    Repository,
    Run,
    VerdictCache,
)
from checks.report import CriterionResult

# A job whose sha already has one of these is not queued again by a plain pull_request event.
_SETTLED_OR_LIVE = (QUEUED, RUNNING, "done")


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


@dataclass(frozen=True)
class Recorded:
    """What recording a delivery did: a duplicate records nothing."""

    duplicate: bool
    job_ids: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class JudgeRow:
    model: str
    rubric: str
    execution_passed: bool
    judge_passed: bool
    shadow: bool


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


def make_engine(url: str) -> Engine:
    """Create an engine; SQLite gets WAL, a busy timeout and write-locking transactions."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy, not pysqlite, issue BEGIN (see "Serializable isolation /
        # Savepoints / Transactional DDL" in SQLAlchemy's SQLite dialect docs).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # IMMEDIATE takes the write lock up front: a read-then-write transaction can
        # otherwise fail with SQLITE_BUSY instead of waiting.
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


class Store:
    """All database access of the service."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._session = sessionmaker(self.engine, expire_on_commit=False)

    def migrate(self) -> None:
        """Bring the schema up to date (Alembic ``upgrade head``)."""
        upgrade(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def ping(self) -> None:
        """Raise unless the database answers."""
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    @contextmanager
    def _tx(self) -> Iterator[Session]:
        with self._session.begin() as session:
            yield session

    def _insert_ignore(self, session: Session, model: type[Any], values: dict[str, Any]) -> bool:
        """INSERT unless the unique key exists; return whether a row was inserted."""
        dialect = self.engine.dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        # RETURNING, not rowcount: drivers disagree on rowcount for ON CONFLICT DO NOTHING.
        key = sa_inspect(model).primary_key[0]
        stmt = insert(model).values(**values).on_conflict_do_nothing().returning(key)
        return session.execute(stmt).first() is not None

    # -- deliveries ---------------------------------------------------------------------------

    def record_delivery(
        self,
        delivery_id: str,
        event: str,
        action: str,
        actions: Sequence[Action],
        *,
        installation_id: int | None = None,
        repository: str = "",
        now: float | None = None,
    ) -> Recorded:
        """Record a delivery and the work it asks for in one transaction; a known id is a duplicate."""
        now = time.time() if now is None else now
        with self._tx() as s:
            fresh = self._insert_ignore(
                s,
                Delivery,
                {
                    "id": delivery_id,
                    "event": event,
                    "action": action,
                    "installation_id": installation_id,
                    "repository": repository,
                    "received_at": now,
                    "outcome": "recorded",
                    "detail": "",
                },
            )
            if not fresh:
                return Recorded(duplicate=True)
            job_ids: list[int] = []
            notes: list[str] = []
            for act in actions:
                if isinstance(act, GateRequest):
                    job_id, note = self._add_job(s, delivery_id, act, now)
                    if job_id is not None:
                        job_ids.append(job_id)
                    notes.append(note)
                elif isinstance(act, CancelRequest):
                    n = self._flag(
                        s,
                        Job.repository == act.repository,
                        Job.pr_number == act.pr_number,
                        reason=act.reason,
                        now=now,
                    )
                    notes.append(f"{act.reason}: {n} live job(s) flagged")
                elif isinstance(act, InstallationChange):
                    notes.append(self._installation(s, act, now))
                elif isinstance(act, Ignore):
                    notes.append(f"ignored: {act.reason}")
            outcome = (
                "queued"
                if job_ids
                else ("ignored" if all(isinstance(a, Ignore) for a in actions) else "recorded")
            )
            s.execute(
                update(Delivery)
                .where(Delivery.id == delivery_id)
                .values(outcome=outcome, detail="; ".join(notes)[:4000])
            )
            return Recorded(False, tuple(job_ids), tuple(notes))

    def delivery_outcome(self, delivery_id: str) -> tuple[str, str] | None:
        with self._tx() as s:
            row = s.get(Delivery, delivery_id)
            return (row.outcome, row.detail) if row is not None else None

    def _add_job(self, s: Session, delivery_id: str, req: GateRequest, now: float) -> tuple[int | None, str]:
        number = req.pr_number
        if number is None and req.external_id:
            origin = s.scalar(select(Job).where(Job.key == req.external_id))
            number = origin.pr_number if origin is not None else None
        if number is None:
            number = s.scalar(
                select(Job.pr_number)
                .where(Job.repository == req.repository, Job.head_sha == req.head_sha)
                .order_by(Job.id.desc())
                .limit(1)
            )
        if number is None:
            return None, f"{req.trigger}: no pull request known for {req.head_sha[:12]}"
        key = run_key(req.repository, number, req.head_sha)
        if not req.rerun:
            existing = s.scalar(
                select(Job).where(Job.key.startswith(key, autoescape=True)).order_by(Job.id.desc()).limit(1)
            )
            if existing is not None and existing.state in _SETTLED_OR_LIVE and not existing.cancel_reason:
                return None, f"{req.trigger}: {key} is already {existing.state} (job {existing.id})"
            if existing is not None:
                key = run_key(req.repository, number, req.head_sha, delivery_id)
        else:
            key = run_key(req.repository, number, req.head_sha, delivery_id)
        if req.supersedes:
            self._flag(
                s,
                Job.repository == req.repository,
                Job.pr_number == number,
                Job.head_sha != req.head_sha,
                reason=f"superseded by {req.head_sha}",
                now=now,
            )
        inserted = self._insert_ignore(
            s,
            Job,
            {
                "key": key,
                "delivery_id": delivery_id,
                "trigger": req.trigger,
                "installation_id": req.installation_id,
                "repository": req.repository,
                "pr_number": number,
                "head_sha": req.head_sha,
                "judge_anyway": req.judge_anyway,
                "state": QUEUED,
                "attempts": 0,
                "not_before": 0.0,
                "detail": "",
                "created_at": now,
                "updated_at": now,
            },
        )
        if not inserted:
            return None, f"{req.trigger}: {key} was queued concurrently"
        job_id = s.scalar(select(Job.id).where(Job.key == key))
        return job_id, f"{req.trigger}: queued {key} as job {job_id}"

    def _flag(self, s: Session, *where: Any, reason: str, now: float) -> int:
        """Ask live jobs to stop: the worker running one completes its check run with ``reason``."""
        result = s.execute(
            update(Job)
            .where(*where, Job.state.in_(LIVE), Job.cancel_reason.is_(None))
            .values(cancel_reason=reason, updated_at=now)
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    def _installation(self, s: Session, change: InstallationChange, now: float) -> str:
        row = s.get(Installation, change.installation_id)
        if row is None:
            s.add(
                Installation(
                    id=change.installation_id, account=change.account, active=change.active, updated_at=now
                )
            )
        else:
            row.active, row.updated_at = change.active, now
            row.account = change.account or row.account
        for name in change.repos_added:
            repo = s.get(Repository, name)
            if repo is None:
                s.add(
                    Repository(
                        full_name=name, installation_id=change.installation_id, active=True, updated_at=now
                    )
                )
            else:
                repo.installation_id, repo.active, repo.updated_at = change.installation_id, True, now
        for name in change.repos_removed:
            s.execute(
                update(Repository).where(Repository.full_name == name).values(active=False, updated_at=now)
            )
        flagged = 0
        if not change.active:
            what = "suspended" if change.action == "suspend" else "removed"
            flagged = self._flag(
                s,
                Job.installation_id == change.installation_id,
                reason=f"the installation was {what}",
                now=now,
            )
        for name in change.repos_removed:
            flagged += self._flag(
                s, Job.repository == name, reason="the repository was removed from the installation", now=now
            )
        return f"installation {change.installation_id} {change.action}; {flagged} live job(s) flagged"

    def installation_active(self, installation_id: int) -> bool | None:
        with self._tx() as s:
            row = s.get(Installation, installation_id)
            return None if row is None else row.active

    # -- jobs ---------------------------------------------------------------------------------

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

    def claim(self, job_id: int, worker: str, lease_s: float, now: float | None = None) -> JobView | None:
        """Take a queued job, or a running one whose lease expired (its worker died)."""
        now = time.time() if now is None else now
        with self._tx() as s:
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

    def mark_enqueued(self, job_ids: Sequence[int]) -> None:
        with self._tx() as s:
            s.execute(update(Job).where(Job.id.in_(list(job_ids))).values(enqueued_at=time.time()))

    # -- runs, judge records, cache ---------------------------------------------------------------

    def save_run(self, record: RunRecord) -> None:
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
                    created_at=time.time(),
                )
            )

    def run_report(self, job_id: int) -> dict[str, Any] | None:
        with self._tx() as s:
            return s.scalar(select(Run.report).where(Run.job_id == job_id))

    def run_count(self) -> int:
        with self._tx() as s:
            return int(s.scalar(select(func.count()).select_from(Run)) or 0)

    def add_judge_record(self, job_id: int, repository: str, head_sha: str, row: JudgeRow) -> None:
        with self._tx() as s:
            s.add(
                JudgeRecord(
                    job_id=job_id,
                    repository=repository,
                    head_sha=head_sha,
                    model=row.model,
                    rubric=row.rubric,
                    execution_passed=row.execution_passed,
                    judge_passed=row.judge_passed,
                    shadow=row.shadow,
                    created_at=time.time(),
                )
            )

    def judge_records(self) -> list[JudgeRow]:
        with self._tx() as s:
            return [
                JudgeRow(r.model, r.rubric, r.execution_passed, r.judge_passed, r.shadow)
                for r in s.scalars(select(JudgeRecord).order_by(JudgeRecord.id))
            ]

    def verdicts(self, key: str) -> list[CriterionResult] | None:
        """Return cached judge verdicts (checks.quality.VerdictCache ``get``)."""
        with self._tx() as s:
            rows = s.scalar(select(VerdictCache.verdicts).where(VerdictCache.key == key))
            return None if rows is None else [CriterionResult.model_validate(r) for r in rows]

    def put_verdicts(self, key: str, value: list[CriterionResult]) -> None:
        """Cache judge verdicts; the first answer for a key stays (checks.quality.VerdictCache ``put``)."""
        with self._tx() as s:
            self._insert_ignore(
                s,
                VerdictCache,
                {
                    "key": key,
                    "verdicts": [c.model_dump(mode="json") for c in value],
                    "created_at": time.time(),
                },
            )


class StoreVerdictCache:
    """The store as a checks.quality.VerdictCache: judge verdicts survive restarts and are shared."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> list[CriterionResult] | None:
        return self.store.verdicts(key)

    def put(self, key: str, value: list[CriterionResult]) -> None:
        self.store.put_verdicts(key, value)
