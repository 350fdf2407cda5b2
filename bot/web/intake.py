"""The intake's writer: one thread of its own records deliveries, every waiting one per transaction.

A webhook's 202 waits for its delivery's commit and for nothing else. When each
request ran its own transaction on the event loop's default executor, it queued
there behind the in-process workers' database calls, and on SQLite its thread
then queued on the store's writer lock behind the other requests' threads. One
writer that takes every delivery waiting when it is free and records them all
in one transaction (a group commit) answers a lone delivery as fast as before,
and a burst with one commit instead of one per delivery. On PostgreSQL a few
writers run at once, each owning the deliveries of some installations
(``lane``). A batch that fails is recorded again one delivery at a time, so
one delivery's trouble is never another's: each request gets its own result
or its own exception.
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
    """Record ``batch`` in one call of ``record``; if that fails, each delivery alone, once more."""
    try:
        return _checked(record(batch), batch)
    except Exception:
        # One delivery's trouble (or a connection that broke: the store replaces it) must not
        # be the others': each gets a transaction of its own, and its own exception.
        log.warning("recording %d deliveries failed; recording each alone", len(batch), exc_info=True)
    return [_alone(record, one) for one in batch]


def _alone(record: RecordFn, one: Incoming) -> Outcome:
    try:
        return _checked(record([one]), [one])[0]
    except Exception as exc:
        return exc


def _checked(done: list[Recorded], batch: Sequence[Incoming]) -> list[Outcome]:
    if len(done) != len(batch):  # a broken store must not leave a request waiting forever
        raise RuntimeError(f"the store answered {len(done)} of {len(batch)} deliveries")
    return list(done)


def _settle(pairs: list[tuple[asyncio.Future[Recorded], Outcome]]) -> None:
    for future, outcome in pairs:
        if future.done():  # the request went away (the client hung up): nothing to tell
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


def lane(installation_id: int | None, writers: int, turn: int) -> int:
    """Return the writer a delivery goes to: one per installation, any one (``turn``) without.

    What a delivery writes beyond its own row (the installation's row, its repositories,
    the flags on its PRs' jobs) belongs to its installation. Two writers updating the same
    rows in different orders deadlocked on PostgreSQL, and its deadlock check waits a second
    first (``deadlock_timeout``); one writer per installation keeps those rows to one writer,
    which also records an installation's deliveries in the order they came.
    """
    if not isinstance(installation_id, int):  # none, or not what GitHub sends: no rows of its own
        return turn % writers
    return installation_id % writers


class Intake:
    """Records deliveries for the event loop on threads of its own; ``record`` waits for the commit.

    ``writers`` threads each record batches from a queue of their own (``lane``): one for
    SQLite (it has one writer at a time anyway), more for a server, where one transaction's
    round trips overlap another's.
    """

    def __init__(self, record: RecordFn, *, writers: int = 1, max_batch: int = MAX_BATCH) -> None:
        self._record = record
        self._max_batch = max_batch
        self._queues: list[queue.SimpleQueue[_Pending | None]] = [queue.SimpleQueue() for _ in range(writers)]
        self._threads = [
            threading.Thread(target=self._run, args=(q,), name=f"patchgate-intake-{n}", daemon=True)
            for n, q in enumerate(self._queues)
        ]
        self._turn = 0

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Record what is waiting, then end the threads."""
        for waiting in self._queues:
            waiting.put(None)
        for thread in self._threads:
            thread.join(timeout)

    async def record(self, incoming: Incoming) -> Recorded:
        """Record one delivery; return once it is committed (or raise what recording it raised)."""
        n = lane(incoming.installation_id, len(self._queues), self._turn)
        if not self._threads[n].is_alive():
            raise RuntimeError("the intake writer is not running")
        self._turn += 1
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Recorded] = loop.create_future()
        self._queues[n].put(_Pending(incoming, loop, future))
        return await future

    def _run(self, waiting: queue.SimpleQueue[_Pending | None]) -> None:
        stopping = False
        while not stopping:
            first = waiting.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self._max_batch:
                try:
                    more = waiting.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                batch.append(more)
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
