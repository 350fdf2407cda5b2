"""Local runs (`patchgate run`/`demo`) land in the same store as the service's, through its writer."""

from __future__ import annotations

from pathlib import Path

from bot.store import Store
from bot.store.localruns import LOCAL_INSTALLATION, record_local_run
from checks.pipeline import error_report


def test_a_local_run_is_a_finished_job_with_its_report(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'nested' / 'patchgate.db'}"  # the folder does not exist yet
    report = error_report("no sandbox", "neutral", base_sha="b" * 40, head_sha="h" * 40)
    job_id = record_local_run(url, "local/demo", "agent/fix", report, seconds=1.5)
    store = Store(url)
    try:
        job = store.leases.job(job_id)
        assert job is not None
        assert (job.state, job.conclusion, job.trigger, job.repository) == (
            "done",
            "neutral",
            "local",
            "local/demo",
        )
        assert job.installation_id == LOCAL_INSTALLATION
        stored = store.runs.report(job_id)
        assert stored is not None and stored["reasons"] == ["no sandbox"]
        # A second run of the same ref is a job of its own, not a replacement.
        assert record_local_run(url, "local/demo", "agent/fix", report) != job_id
        assert len(store.leases.jobs(repository="local/demo")) == 2
    finally:
        store.close()
