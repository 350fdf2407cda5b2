"""The intake's writer: one thread of its own records deliveries, every waiting one per transaction.

A webhook's 202 waits for its delivery's commit and for nothing else. When each
request ran its own transaction on the event loop's default executor, it queued
there behind the in-process workers' database calls, and on SQLite its thread
then queued on the store's writer lock behind the other requests' threads. One
writer that takes every delivery waiting when it is free and records them all
in one transaction (a group commit) answers a lone delivery as fast as before,
and a burst with one commit instead of one per delivery. A batch that fails is
recorded again one delivery at a time, so one delivery's trouble is never
another's: each request gets its own result or its own exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.store import Incoming, Recorded

log = logging.getLogger(__name__)

# A batch is one transaction: all of it waits for its commit. Past this many, the rest wait for the next.
MAX_BATCH = 32

RecordFn = Callable[[Sequence[Incoming]], list[Recorded]]


@dataclass
class _Pending:
    incoming: Incoming
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Recorded]


Outcome = Recorded | BaseException


def record_all(record: RecordFn, batch: Sequence[Incoming]) -> list[Outcome]:
    """Record ``batch`` in one call of ``record``; if that fails, each delivery alone."""
    try:
        done: list[Outcome] = list(record(batch))
    except Exception as exc:
        if len(batch) == 1:
            return [exc]
        log.warning("recording %d deliveries at once failed; recording them one by one", len(batch))
        return [record_all(record, [one])[0] for one in batch]
    if len(done) != len(batch):  # a broken store must not leave a request waiting forever
        return [RuntimeError(f"the store answered {len(done)} of {len(batch)} deliveries")] * len(batch)
    return done


def _settle(pairs: list[tuple[asyncio.Future[Recorded], Outcome]]) -> None:
    for future, outcome in pairs:
        if future.done():  # the request went away (the client hung up): nothing to tell
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


class Intake:
    """Records deliveries for the event loop on a thread of its own; ``record`` waits for the commit."""

    def __init__(self, record: RecordFn, *, max_batch: int = MAX_BATCH) -> None:
        self._record = record
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="patchgate-intake", daemon=True)
        self.batches = 0  # transactions tried, for the tests and the bench

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Record what is waiting, then end the thread."""
        self._queue.put(None)
        self._thread.join(timeout)

    async def record(self, incoming: Incoming) -> Recorded:
        """Record one delivery; return once it is committed (or raise what recording it raised)."""
        if not self._thread.is_alive():
            raise RuntimeError("the intake writer is not running")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Recorded] = loop.create_future()
        self._queue.put(_Pending(incoming, loop, future))
        return await future

    def _run(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self._max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                batch.append(more)
            self.batches += 1
            try:
                outcomes = record_all(self._record, [p.incoming for p in batch])
            except BaseException as exc:  # never leave a request waiting, whatever broke
                outcomes = [exc] * len(batch)
            by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Recorded], Outcome]]] = {}
            for pending, outcome in zip(batch, outcomes, strict=True):
                by_loop.setdefault(pending.loop, []).append((pending.future, outcome))
            # One wake-up of the loop per batch, not one per delivery.
            for loop, pairs in by_loop.items():
                # RuntimeError: that loop has closed, and nobody is waiting any more.
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_settle, pairs)
