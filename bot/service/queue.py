"""The job queue: a taskiq broker that carries job ids (the store holds the jobs themselves).

``memory`` runs jobs in this process (taskiq's InMemoryBroker); a ``redis://``
URL shares one Redis list between the web process, which only enqueues, and
any number of ``patchgate worker`` processes. A message lost in either
(a crash between pop and claim) costs nothing: the reaper re-enqueues every
job the store still has as queued or whose lease ran out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis
from taskiq import AsyncBroker, InMemoryBroker
from taskiq.api import run_receiver_task
from taskiq.kicker import AsyncKicker
from taskiq_redis import ListQueueBroker

log = logging.getLogger(__name__)

TASK_NAME = "patchgate.run_job"
QUEUE_NAME = "patchgate:jobs"

Handler = Callable[[int], Awaitable[None]]


class JobQueue:
    """Enqueue job ids, and (in a worker) hand them to ``handler`` as they arrive."""

    def __init__(self, broker_url: str, concurrency: int) -> None:
        self.url = broker_url
        self.concurrency = concurrency
        self.broker: AsyncBroker
        if broker_url == "memory":
            self.broker = InMemoryBroker(max_async_tasks=concurrency)
        else:
            self.broker = ListQueueBroker(broker_url, queue_name=QUEUE_NAME)
        self._receiver: asyncio.Task[None] | None = None
        self._consuming = False

    @property
    def in_process(self) -> bool:
        return self.url == "memory"

    def consume(self, handler: Handler) -> None:
        """Register the function that runs a job; call before ``start``."""

        async def run_job(job_id: int) -> None:
            await handler(job_id)

        self.broker.register_task(run_job, task_name=TASK_NAME)
        self._consuming = True

    async def start(self) -> None:
        """Connect; a consuming Redis queue also starts listening."""
        await self.broker.startup()
        if self._consuming and not self.in_process:
            self._receiver = asyncio.create_task(
                run_receiver_task(self.broker, max_async_tasks=self.concurrency, max_prefetch=0),
                name="patchgate-receiver",
            )

    async def stop(self) -> None:
        if self._receiver is not None:
            self._receiver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._receiver
        await self.broker.shutdown()

    async def kick(self, job_id: int) -> None:
        """Enqueue one job id."""
        if self.in_process and not self._consuming:
            # Nobody in this process would run it; the store keeps it queued for a worker.
            return
        kicker: AsyncKicker[Any, Any] = AsyncKicker(task_name=TASK_NAME, broker=self.broker, labels={})
        await kicker.kiq(job_id)

    async def ping(self) -> None:
        """Raise unless the broker is reachable."""
        if self.in_process:
            return
        client: Redis = Redis.from_url(self.url, socket_connect_timeout=2, socket_timeout=2)
        try:
            await client.ping()
        finally:
            await client.aclose()
