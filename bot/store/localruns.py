"""Record runs made without GitHub (`patchgate run`/`demo`) in the same store as the service's."""

from __future__ import annotations

import time
from pathlib import Path

from sqlalchemy.orm import Session

from bot.store import Store, run_record
from bot.store.tables import DONE, Job
from checks.report import Report

LOCAL_INSTALLATION = 0


def ensure_sqlite_dir(url: str) -> None:
    """Create the folder of a SQLite database file (SQLite creates the file, not its folder)."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and url != prefix + ":memory:":
        Path(url[len(prefix) :]).parent.mkdir(parents=True, exist_ok=True)


def record_local_run(url: str, repository: str, ref: str, report: Report, seconds: float = 0.0) -> int:
    """Store ``report`` as a finished local job and its run; return the job id."""
    ensure_sqlite_dir(url)
    store = Store(url)
    try:
        store.migrate()
        now = time.time()
        with Session(store.engine) as session, session.begin():
            job = Job(
                key=f"local:{repository}:{ref}:{report.head_sha}:{now}",
                delivery_id="local",
                trigger="local",
                installation_id=LOCAL_INSTALLATION,
                repository=repository,
                pr_number=0,
                head_sha=report.head_sha,
                state=DONE,
                conclusion=report.conclusion,
                detail="; ".join(report.reasons)[:1000],
                created_at=now,
                updated_at=now,
            )
            session.add(job)
            session.flush()
            job_id = job.id
        store.save_run(run_record(job_id, repository, 0, report.head_sha, report, seconds=seconds))
        return job_id
    finally:
        store.close()
