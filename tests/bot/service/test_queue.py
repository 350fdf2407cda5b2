"""The job queue: in-process (taskiq InMemoryBroker) and shared through a real Redis."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from bot.github.events import GateRequest
from bot.service.queue import QUEUE_NAME, JobQueue, WaitingListBroker
from bot.store import Store


class Recorder:
    def __init__(self, delay: float = 0.0) -> None:
        self.seen: list[int] = []
        self.running = 0
        self.peak = 0
        self.delay = delay

    async def __call__(self, job_id: int) -> None:
        self.running += 1
        self.peak = max(self.peak, self.running)
        await asyncio.sleep(self.delay)
        self.seen.append(job_id)
        self.running -= 1


async def until(predicate: object, timeout: float = 20.0) -> None:
    async def wait() -> None:
        while not predicate():  # type: ignore[operator]
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout)


def test_the_in_memory_queue_runs_jobs_in_this_process() -> None:
    async def main() -> list[int]:
        queue = JobQueue("memory", concurrency=2)
        handler = Recorder()
        queue.consume(handler)
        await queue.start()
        await queue.ping()
        for job_id in (1, 2, 3):
            await queue.kick(job_id)
        await until(lambda: len(handler.seen) == 3)
        await queue.stop()
        return sorted(handler.seen)

    assert asyncio.run(main()) == [1, 2, 3]


def test_an_in_memory_queue_nobody_consumes_drops_nothing_it_should_not(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    [job] = store.deliveries.record(
        "d1", "pull_request", "opened", [GateRequest(11, "octo/repo", "1" * 40, "pull_request.opened", 7)]
    ).job_ids
    assert store.leases.due_jobs(lease_s=30) == [job]  # what a reaper does before it kicks

    async def kick_unconsumed() -> None:
        queue = JobQueue("memory", concurrency=1)
        await queue.start()
        await queue.kick(job)  # nobody in this process runs it: no error, and nothing runs
        await queue.stop()

    asyncio.run(kick_unconsumed())
    # The job is still the store's: queued, unclaimed, and due again once the kick's lease runs out.
    view = store.leases.job(job)
    assert view is not None
    assert (view.state, view.worker, view.attempts) == ("queued", None, 0)
    assert store.leases.due_jobs(lease_s=30) == []
    [due] = store.leases.due_jobs(lease_s=30, now=time.time() + 31)
    store.close()

    async def kick_consumed() -> list[int]:
        queue = JobQueue("memory", concurrency=1)
        handler = Recorder()
        queue.consume(handler)
        await queue.start()
        await queue.kick(due)
        await until(lambda: handler.seen)
        await queue.stop()
        return handler.seen

    # A worker's queue (one that consumes) then runs it.
    assert asyncio.run(kick_consumed()) == [job]


@pytest.mark.redis
def test_redis_carries_jobs_from_the_web_process_to_a_worker(redis_url: str) -> None:
    async def main() -> Recorder:
        web = JobQueue(redis_url, concurrency=1)
        await web.start()
        await web.ping()
        worker = JobQueue(redis_url, concurrency=2)
        handler = Recorder(delay=0.2)
        worker.consume(handler)
        await worker.start()
        for job_id in range(1, 7):
            await web.kick(job_id)
        await until(lambda: len(handler.seen) == 6)
        await worker.stop()
        await web.stop()
        return handler

    handler = asyncio.run(main())
    assert sorted(handler.seen) == [1, 2, 3, 4, 5, 6]
    assert handler.peak == 2  # bounded by the worker's concurrency


def test_a_redis_queue_that_is_down_is_not_ready() -> None:
    from redis.exceptions import ConnectionError as RedisConnectionError

    async def main() -> None:
        queue = JobQueue("redis://127.0.0.1:1/0", concurrency=1)
        with pytest.raises(RedisConnectionError):
            await queue.ping()

    asyncio.run(main())


def _loud(records: list[logging.LogRecord]) -> list[str]:
    return [f"{r.levelname} {r.name}: {r.getMessage()}" for r in records if r.levelno > logging.INFO]


async def _listen_through(
    redis_url: str, meanwhile: Callable[[], Awaitable[None]], job_id: int
) -> tuple[WaitingListBroker, Recorder]:
    """Start a worker's queue (1 s socket timeout), let ``meanwhile`` happen, then send it one job."""
    worker = JobQueue(redis_url, concurrency=1)
    broker = WaitingListBroker(redis_url, queue_name=QUEUE_NAME, wait_s=0.3, socket_timeout=1.0)
    worker.broker = broker
    handler = Recorder()
    worker.consume(handler)
    await worker.start()
    await meanwhile()
    web = JobQueue(redis_url, concurrency=1)
    await web.start()
    await web.kick(job_id)  # and the listener that lived through it still takes work
    await until(lambda: handler.seen)
    await web.stop()
    await worker.stop()
    return broker, handler


@pytest.mark.redis
@pytest.mark.slow
def test_a_worker_idle_past_the_socket_timeout_logs_nothing_and_keeps_its_listener(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A socket timeout of 1 s, idle for 3.5: taskiq-redis' own broker (a BRPOP with no
    # timeout) ends every wait in TimeoutError, a traceback and a rebuilt listener.
    async def idle() -> None:
        await asyncio.sleep(3.5)

    caplog.set_level(logging.DEBUG)
    broker, handler = asyncio.run(_listen_through(redis_url, idle, 42))
    assert handler.seen == [42]
    assert _loud(caplog.records) == []
    assert broker.listens == 1


def test_a_wait_longer_than_the_socket_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="before the socket timeout"):
        WaitingListBroker("redis://127.0.0.1:1/0", queue_name=QUEUE_NAME, wait_s=5, socket_timeout=5)


@pytest.mark.redis
@pytest.mark.slow
def test_a_listener_outlives_a_broken_connection_and_says_so_once(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    import redis

    async def drops() -> None:
        await asyncio.sleep(0.5)
        # Redis drops every client connection (as a restart or a failover would), three times.
        admin = redis.Redis.from_url(redis_url)
        for _ in range(3):
            admin.client_kill_filter(_type="normal", skipme=True)
            await asyncio.sleep(0.4)
        admin.close()

    caplog.set_level(logging.DEBUG)
    broker, handler = asyncio.run(_listen_through(redis_url, drops, 7))
    assert handler.seen == [7]
    assert broker.listens == 1
    loud = _loud(caplog.records)
    assert all("job queue is unreachable" in line for line in loud), loud
    assert not [r for r in caplog.records if r.exc_info]
