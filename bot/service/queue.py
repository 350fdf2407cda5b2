"""The job queue: a taskiq broker that carries job ids (the store holds the jobs themselves).

``memory`` runs jobs in this process (taskiq's InMemoryBroker); a ``redis://``
URL shares one Redis list between the web process, which only enqueues, and
any number of ``patchgate worker`` processes. A message lost in either
(a crash between pop and claim) costs nothing: the reaper re-enqueues every
job the store still has as queued or whose lease ran out.

A worker idle on an empty queue waits in ``BRPOP``. taskiq-redis blocks there
with no timeout while the client's socket timeout (redis-py: 5 s) still
applies, so every idle wait ended in ``TimeoutError``, a traceback and a
listener rebuilt from scratch. ``WaitingListBroker`` asks Redis for a
bounded wait, shorter than the socket timeout, and an empty answer is just
another wait; a broken connection is retried quietly, logged once per outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from taskiq import AsyncBroker, InMemoryBroker
from taskiq.api import run_receiver_task
from taskiq.kicker import AsyncKicker
from taskiq_redis import ListQueueBroker

log = logging.getLogger(__name__)

TASK_NAME = "patchgate.run_job"
QUEUE_NAME = "patchgate:jobs"

Handler = Callable[[int], Awaitable[None]]

# How long one BRPOP waits on an empty queue, and the socket timeout of every broker
# connection: a wait always ends (empty) well before the socket gives up on it.
WAIT_S = 2.0
SOCKET_TIMEOUT_S = 10.0
# After a broken connection: the first retry at once, then this long between tries; an outage
# that lasts is said again this often.
RECONNECT_S = 1.0
OUTAGE_REPEAT_S = 60.0


class WaitingListBroker(ListQueueBroker):
    """taskiq-redis' list broker, whose listener outlives an empty queue and a lost connection."""

    def __init__(
        self, url: str, *, queue_name: str, wait_s: float = WAIT_S, socket_timeout: float = SOCKET_TIMEOUT_S
    ) -> None:
        if not 0 < wait_s < socket_timeout:
            raise ValueError(f"the wait ({wait_s}s) must end before the socket timeout ({socket_timeout}s)")
        super().__init__(
            url, queue_name=queue_name, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout
        )
        self.wait_s = wait_s
        self.listens = 0  # how often taskiq (re)started listening: once per worker, unless it failed

    async def listen(self) -> AsyncGenerator[bytes, None]:
        self.listens += 1
        broken_since: float | None = None
        said = 0.0
        # Redis before 6 takes whole seconds only.
        wait = int(self.wait_s) if float(self.wait_s).is_integer() else self.wait_s
        while True:
            try:
                async with Redis(connection_pool=self.connection_pool) as conn:
                    popped = await conn.brpop([self.queue_name], timeout=wait)
            except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
                now = time.monotonic()
                if broken_since is None:
                    broken_since = said = now
                    log.warning("the job queue is unreachable (%s: %s); retrying every %ss",
                                type(exc).__name__, exc, RECONNECT_S)  # fmt: skip
                elif now - said >= OUTAGE_REPEAT_S:
                    # Bad credentials or ACLs look like this too: say it again, never go silent.
                    said = now
                    log.warning("the job queue is still unreachable after %.0fs (%s: %s)",
                                now - broken_since, type(exc).__name__, exc)  # fmt: skip
                await asyncio.sleep(RECONNECT_S if now > broken_since else 0)
                continue
            if broken_since is not None:
                log.info("the job queue is reachable again")
                broken_since = None
            if popped is not None:
                message = popped[1]
                yield message if isinstance(message, bytes) else message.encode()


class _DropCancelled(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "task was cancelled" not in record.getMessage()


class JobQueue:
    """Enqueue job ids, and (in a worker) hand them to ``handler`` as they arrive."""

    def __init__(self, broker_url: str, concurrency: int) -> None:
        self.url = broker_url
        self.concurrency = concurrency
        self.broker: AsyncBroker
        if broker_url == "memory":
            self.broker = InMemoryBroker(max_async_tasks=concurrency)
        else:
            self.broker = WaitingListBroker(broker_url, queue_name=QUEUE_NAME)
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
            # taskiq warns that its listening task was cancelled: here that is the plan, not news.
            receiver_log = logging.getLogger("taskiq.receiver")
            quiet = _DropCancelled()
            receiver_log.addFilter(quiet)
            self._receiver.cancel()
            try:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._receiver
            finally:
                receiver_log.removeFilter(quiet)
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
