"""The database schema (SQLAlchemy 2). Alembic migrations in bot/store/migrations create it.

Times are UNIX seconds (floats): lease arithmetic stays the same on SQLite
and PostgreSQL, with no time zones to get wrong.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Job states. queued/running are live; the rest are final.
QUEUED, RUNNING = "queued", "running"
DONE, SKIPPED, CANCELLED, ABANDONED, FAILED = "done", "skipped", "cancelled", "abandoned", "failed"
LIVE = (QUEUED, RUNNING)
FINAL = (DONE, SKIPPED, CANCELLED, ABANDONED, FAILED)


class Base(DeclarativeBase):
    pass


class Delivery(Base):
    """One webhook delivery, recorded before any work is queued; the id makes redelivery a no-op."""

    __tablename__ = "deliveries"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    event: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(64), default="")
    installation_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    repository: Mapped[str] = mapped_column(String(255), default="")
    received_at: Mapped[float] = mapped_column(Float)
    outcome: Mapped[str] = mapped_column(String(32))
    detail: Mapped[str] = mapped_column(Text, default="")


class Installation(Base):
    __tablename__ = "installations"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    account: Mapped[str] = mapped_column(String(255), default="")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    updated_at: Mapped[float] = mapped_column(Float)


class Repository(Base):
    __tablename__ = "repositories"

    full_name: Mapped[str] = mapped_column(String(255), primary_key=True)
    installation_id: Mapped[int] = mapped_column(BigInteger)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    updated_at: Mapped[float] = mapped_column(Float)


class Job(Base):
    """One gate run of one head sha: the queue's durable truth (the broker only carries ids)."""

    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_pr", "repository", "pr_number"),
        Index("ix_jobs_state", "state"),
        Index("ix_jobs_sha", "repository", "head_sha"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(400), unique=True)
    delivery_id: Mapped[str] = mapped_column(String(64))
    trigger: Mapped[str] = mapped_column(String(64))
    installation_id: Mapped[int] = mapped_column(BigInteger)
    repository: Mapped[str] = mapped_column(String(255))
    pr_number: Mapped[int] = mapped_column(Integer)
    head_sha: Mapped[str] = mapped_column(String(64))
    judge_anyway: Mapped[bool] = mapped_column(Boolean, default=False)
    state: Mapped[str] = mapped_column(String(16), default=QUEUED)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    not_before: Mapped[float] = mapped_column(Float, default=0.0)
    enqueued_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    lease_until: Mapped[float | None] = mapped_column(Float, nullable=True)
    worker: Mapped[str | None] = mapped_column(String(128), nullable=True)
    check_run_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    cancel_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    conclusion: Mapped[str | None] = mapped_column(String(32), nullable=True)
    detail: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    # A comment command's comment (it gets a reaction) and the word after /patchgate as typed.
    comment_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    argument: Mapped[str] = mapped_column(String(64), default="", server_default="")


class Run(Base):
    """The outcome of a finished job: the report, its headline numbers and timings."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_reuse_key", "reuse_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), unique=True)
    repository: Mapped[str] = mapped_column(String(255))
    pr_number: Mapped[int] = mapped_column(Integer)
    head_sha: Mapped[str] = mapped_column(String(64))
    base_sha: Mapped[str] = mapped_column(String(64), default="")
    conclusion: Mapped[str] = mapped_column(String(32))
    findings: Mapped[int] = mapped_column(Integer, default=0)
    hidden_pass_rate: Mapped[float | None] = mapped_column(Float, nullable=True)
    held_out_pass_rate: Mapped[float | None] = mapped_column(Float, nullable=True)
    regressions: Mapped[int] = mapped_column(Integer, default=0)
    quality_status: Mapped[str] = mapped_column(String(16), default="skipped")
    judge_cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    timings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    report: Mapped[dict[str, Any]] = mapped_column(JSON)
    # bot/service/reuse.py's key of the run's inputs, set only on a complete verdict that was gated
    # (never on a reused one): a later job with the same key is answered with this report.
    reuse_key: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[float] = mapped_column(Float)


class JudgeRecord(Base):
    """One judge verdict next to what execution said, for calibration (shadow or shown)."""

    __tablename__ = "judge_records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    repository: Mapped[str] = mapped_column(String(255))
    head_sha: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(255), default="")
    rubric: Mapped[str] = mapped_column(String(255), default="")
    execution_passed: Mapped[bool] = mapped_column(Boolean)
    judge_passed: Mapped[bool] = mapped_column(Boolean)
    shadow: Mapped[bool] = mapped_column(Boolean)
    # What the judge call behind this record spent (0 for records older than migration 0002).
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    created_at: Mapped[float] = mapped_column(Float)


class Candidate(Base):
    """An agent PR competing for an issue (best of k): its latest gated head and its check run."""

    __tablename__ = "candidates"
    __table_args__ = (Index("ix_candidates_issue", "repository", "issue"),)

    repository: Mapped[str] = mapped_column(String(255), primary_key=True)
    pr_number: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    # None: the PR names no issue, so it competes with nobody.
    issue: Mapped[int | None] = mapped_column(Integer, nullable=True)
    state: Mapped[str] = mapped_column(String(16))  # open | closed | merged
    title: Mapped[str] = mapped_column(Text, default="")
    author: Mapped[str] = mapped_column(String(255), default="")
    base_sha: Mapped[str] = mapped_column(String(64), default="")
    head_sha: Mapped[str] = mapped_column(String(64))
    head_repository: Mapped[str] = mapped_column(String(255), default="")
    # The job whose run (report) and completed check run show this head.
    job_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    check_run_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # Its check run shows a ranking (so one left alone is set back to its plain report).
    ranked: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[float] = mapped_column(Float)


class Pairwise(Base):
    """The pairwise judge's answer on two heads, in both orders, by (model, head shas, task)."""

    __tablename__ = "pairwise"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[float] = mapped_column(Float)


class VerdictCache(Base):
    """Judge verdicts by (rubric, model, shown content): the same question is not paid for twice."""

    __tablename__ = "verdict_cache"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    verdicts: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    created_at: Mapped[float] = mapped_column(Float)
