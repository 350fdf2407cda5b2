"""Record runs made without GitHub (`patchgate run`/`demo`) in the same store as the service's."""

from __future__ import annotations

from pathlib import Path

from bot.store import Store, run_record
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
        job_id = store.runs.add_local_job(repository, ref, report, installation_id=LOCAL_INSTALLATION)
        store.runs.save(run_record(job_id, repository, 0, report.head_sha, report, seconds=seconds))
        return job_id
    finally:
        store.close()
