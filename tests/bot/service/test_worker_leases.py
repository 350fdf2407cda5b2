"""The worker's lease keeping in process: heartbeats survive errors, pipelines stay off the default pool."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.github.events import GateRequest
from bot.service.attempt import Watch
from bot.service.queue import JobQueue
from bot.service.worker import Worker
from bot.settings import Settings
from bot.store import Store
from bot.store.leases import Beat, JobView
from tests.bot.harness import APP_ID

SHA = "3" * 40


def make_worker(tmp_path: Path, app_key: tuple[str, bytes], **extra: object) -> Worker:
    settings = Settings(
        app_id=APP_ID,
        private_key=SecretStr(app_key[0]),
        webhook_secret=SecretStr("s"),
        database_url=f"sqlite:///{tmp_path / 'db.sqlite'}",
        **extra,  # type: ignore[arg-type]  # the tests' overrides, each of its field's type
    )
    store = Store(settings.database_url)
    store.migrate()
    return Worker(settings, store, JobQueue("memory", settings.concurrency))


def claimed_job(worker: Worker) -> JobView:
    request = GateRequest(11, "octo/repo", SHA, "pull_request.opened", 7)
    [job_id] = worker.store.deliveries.record("d1", "pull_request", "opened", [request]).job_ids
    job = worker.store.leases.claim(job_id, worker.name, worker.settings.lease_s)
    assert job is not None
    return job


@pytest.mark.slow
def test_a_failing_heartbeat_keeps_beating_and_the_lease_holds(
    tmp_path: Path, app_key: tuple[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = make_worker(tmp_path, app_key, lease_s=1.0)
    job = claimed_job(worker)
    real = worker.store.leases.heartbeat
    calls: list[float] = []

    def flaky(job_id: int, name: str, lease_s: float, *, attempt: int | None = None) -> Beat:
        calls.append(time.monotonic())
        if len(calls) == 2:
            raise RuntimeError("database is locked")
        return real(job_id, name, lease_s, attempt=attempt)

    monkeypatch.setattr(worker.store.leases, "heartbeat", flaky)

    async def beat_for(seconds: float) -> Watch:
        watch = Watch()
        task = asyncio.create_task(worker._heartbeat(job, watch))
        await asyncio.sleep(seconds)
        assert not task.done(), "the heartbeat task ended"
        task.cancel()
        return watch

    watch = asyncio.run(beat_for(2.5))
    assert len(calls) >= 6  # five beats a lease, and the error did not stop them
    assert not watch.event.is_set()
    # Nobody else can take the job: its lease is still current.
    assert worker.store.leases.due_jobs(worker.settings.lease_s) == []
    assert worker.store.leases.claim(job.id, "another", worker.settings.lease_s) is None


def test_a_lost_lease_is_reported_to_the_attempt(tmp_path: Path, app_key: tuple[str, bytes]) -> None:
    worker = make_worker(tmp_path, app_key, lease_s=0.5)
    job = claimed_job(worker)
    time.sleep(0.6)
    assert worker.store.leases.claim(job.id, "another", 30) is not None

    async def beat() -> Watch:
        watch = Watch()
        await asyncio.wait_for(worker._heartbeat(job, watch), 5)
        return watch

    watch = asyncio.run(beat())
    assert watch.lost and watch.event.is_set()


def test_a_job_its_own_worker_finished_never_reads_as_a_lost_lease(
    tmp_path: Path, app_key: tuple[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    worker = make_worker(tmp_path, app_key, lease_s=0.5)
    job = claimed_job(worker)

    async def finish_then_beat() -> tuple[Watch, bool]:
        watch = Watch()
        beat = asyncio.create_task(worker._heartbeat(job, watch))
        # The attempt ends (its last write) while its heartbeat has not been cancelled yet.
        assert await asyncio.to_thread(
            worker.store.leases.finish, job.id, worker.name, "done", conclusion="success"
        )
        await asyncio.sleep(0.5)  # five beat intervals
        ended = beat.done()
        beat.cancel()
        return watch, ended

    caplog.set_level("INFO")
    watch, ended = asyncio.run(finish_then_beat())
    assert ended  # the beat saw the job ended and stopped by itself
    assert not watch.lost and not watch.event.is_set()
    assert [r.getMessage() for r in caplog.records if "lease lost" in r.getMessage()] == []


def test_pipelines_never_occupy_the_default_executor(tmp_path: Path, app_key: tuple[str, bytes]) -> None:
    """Heartbeats run in the default executor; long pipelines there would starve them."""
    worker = make_worker(tmp_path, app_key, concurrency=3)
    release = threading.Event()
    names: list[str] = []

    def pipeline() -> str:
        names.append(threading.current_thread().name)
        release.wait(10)
        return "done"

    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(1))
        running = [loop.run_in_executor(worker.services.pipelines, pipeline) for _ in range(3)]
        # With every pipeline slot busy, the one default thread still answers: were a pipeline
        # on it, it would answer only after the pipelines' 10 s wait (three of them).
        await asyncio.wait_for(asyncio.to_thread(lambda: None), 9)
        release.set()
        return list(await asyncio.gather(*running))

    assert asyncio.run(main()) == ["done"] * 3
    assert len(names) == 3 and all(n.startswith("patchgate-pipeline") for n in names)


def test_jobs_a_reaper_could_not_hand_to_the_broker_are_due_again_at_once(
    tmp_path: Path, app_key: tuple[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = make_worker(tmp_path, app_key)
    requests = [GateRequest(11, "octo/repo", str(n) * 40, "pull_request.opened", n) for n in (1, 2, 3)]
    ids = list(worker.store.deliveries.record("d1", "pull_request", "opened", requests).job_ids)
    kicked: list[int] = []

    async def kick(job_id: int) -> None:
        if kicked:
            raise ConnectionError("the broker went away")
        kicked.append(job_id)

    monkeypatch.setattr(worker.queue, "kick", kick)
    with pytest.raises(ConnectionError):
        asyncio.run(worker.reap_once())
    assert kicked == ids[:1]
    # The first is in the broker: not due again for a lease period. The other two never got there.
    assert worker.store.leases.due_jobs(worker.settings.lease_s) == ids[1:]


@pytest.mark.parametrize(
    ("last", "ended"),
    [
        ("infrastructure: SandboxError: the engine is down", "neutral"),
        ("an error of its own: RecursionError", "internal"),
        ("", "internal"),  # the worker died mid-run (a hang a reaper ended): perhaps the change's doing
    ],
)
def test_a_job_past_its_attempts_is_neutral_only_after_infrastructure(
    tmp_path: Path, app_key: tuple[str, bytes], monkeypatch: pytest.MonkeyPatch, last: str, ended: str
) -> None:
    # Hostile: a file that hung a parser for hours lost the lease each time; the job then ended
    # neutral ("gave up after 3 attempts"), which GitHub counts as passing a required check.
    import dataclasses

    from bot.service.attempt import Attempt

    worker = make_worker(tmp_path, app_key)
    job = dataclasses.replace(claimed_job(worker), attempts=worker.settings.job_attempts + 1, detail=last)
    seen: list[tuple[str, str]] = []

    async def neutral(self: Attempt, reason: str) -> None:
        seen.append(("neutral", reason))

    async def internal(self: Attempt, reason: str) -> None:
        seen.append(("internal", reason))

    monkeypatch.setattr(Attempt, "complete_neutral", neutral)
    monkeypatch.setattr(Attempt, "complete_internal", internal)
    asyncio.run(worker._attempt(job, Watch()))
    [(kind, reason)] = seen
    assert kind == ended and reason.startswith("gave up after 3 attempts (last: ")
    assert "infrastructure: " not in reason
