"""One end of the grader-subject channel: requests that may nest, in both directions, from any thread.

A request is ``{"q": n, "op": ..., ...}``; its answer ``{"r": n, "ok": value}``
or ``{"r": n, "raise": {...}}``. A request a thread sends while it serves one
of the other side's requests carries ``"in": m``, the request it serves: the
other side hands it to the thread waiting for m's answer, which serves it
before it goes on waiting - so a callback that calls back runs on the thread
that made the call, as it would in one process. A request with no ``in``
(the other side's main line, or a thread it started) is *free*: one sent
from the other side's main thread (``"main": true``) is served by
``serve_forever`` on its caller's thread (the subject's main thread, where
its deadline alarm lands); any other, with ``free_threads``, by threads of
this end (a test's callback called from the change's own thread runs on a
thread of the grader, never on a test's thread that happens to be
waiting; calls from a test's own threads run at once in the subject, as
they would in one process).

Whoever waits reads: a thread waiting for an answer (or ``serve_forever``
waiting for a request) takes the socket's read lock and reads and routes
messages itself until what it waits for is there, so a round trip costs no
hand-over between threads of one end. A reader thread per end reads only
when nobody else does (a request from the other side while every thread of
ours is busy). An answer no thread waits for (its request was abandoned) is
dropped. ``{"dead": reason}`` says the sender is going away.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from . import wire

Handler = Callable[[dict[str, Any]], dict[str, Any]]
Box = queue.SimpleQueue[dict[str, Any] | None]
_POLL_S = 0.5
_EMPTY: Any = object()  # _wait's "nothing before the deadline"
_TAKE_OVER_S = 0.005
# How long the reader thread reads (or stays out) at a time: a request nobody else reads waits at most this.
_IDLE_S = 0.002
# Ours as the process started: a test that patches time.sleep (to skip a library's waits) must not
# turn the reader's rest into a spin.
_SLEEP = time.sleep


# How long a reader spins on the socket before it sleeps in select (``Peer._spin``), and how many
# waits go straight to select after a spin that found nothing.
SPIN_S = 50e-6
_SPIN_REST = 4


def _multicore() -> bool:
    """Whether another core can run the other side while this one spins (the sandbox's one-CPU quota
    spans the host's cores; a process pinned to one core must not spin)."""
    return len(os.sched_getaffinity(0)) > 1 if hasattr(os, "sched_getaffinity") else False


# Whether this process was forked since this module was imported: only then can a Peer be another process's
# (os.getpid is a system call on every request otherwise).
_FORKED: list[bool] = []
os.register_at_fork(after_in_child=lambda: _FORKED.append(True))


class PeerGone(Exception):
    """The other side is gone or broke the protocol; the channel is unusable from now on."""


class PeerTimeout(PeerGone):
    """The other side did not answer before the deadline; the channel is unusable from now on."""


class Peer:
    """Send requests from any thread, route what arrives, serve the other side's requests."""

    def __init__(
        self, sock: socket.socket, handler: Handler, *, free_threads: int = 0, mainline: bool = False
    ) -> None:
        self.sock = sock
        self.handler = handler
        self.broken: str | None = None
        # With free_threads, free requests are served by up to that many threads of ours; with
        # mainline, those from the other side's main thread by serve_forever.
        self.free_threads = free_threads
        self.mainline = mainline
        self._seq = itertools.count(1)
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._waiting: dict[int, Box] = {}
        self._free: Box = queue.SimpleQueue()
        self._pool: Box = queue.SimpleQueue()
        self._workers = 0
        self._idle = 0  # workers waiting for a request no message is counted on yet
        self._queued = 0  # requests in the pool waiting for a worker to finish
        self._local = threading.local()
        self._pid = os.getpid()
        # Whoever holds it reads from the socket; the buffer of what was read is theirs meanwhile.
        self._read_lock = threading.Lock()
        self._reader = wire.Reader(sock)
        # Threads of ours waiting on the channel (they read it): while there are any, the reader thread
        # keeps out of the way.
        self._waiting_count = 0
        # Waits left to ``select`` after a spin that found nothing (``_spin``).
        self._spin_rest = 0
        self._multicore = _multicore()
        # Messages this end sent (requests and answers alike): a test's round trips, for the report.
        self.sent = 0
        threading.Thread(target=self._read, name="patchgate-peer", daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        with self._send_lock:
            self.sent += 1  # before: the other side may act on the message before this thread runs again
            wire.send(self.sock, message)

    def request(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send ``message`` and return its answer, serving the requests nested in it meanwhile.

        ``message`` is left as it was: what is sent is a copy marked with the request's number (a
        caller may reuse its dict, from another thread too; a copy costs ~0.1 us of a ~60 us round trip).
        """
        if self.broken is not None:
            raise PeerGone(self.broken)
        if _FORKED and os.getpid() != self._pid:
            # A forked child (multiprocessing) has our socket but not our reader thread.
            raise PeerGone("the channel belongs to the process that opened it, not to a forked child")
        seq = next(self._seq)
        box: Box = queue.SimpleQueue()
        with self._lock:
            self._waiting[seq] = box
        outgoing = {**message, "q": seq}
        serving = self._serving()
        if serving:
            outgoing["in"] = serving[-1]
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            if self.broken is not None:  # closed while we registered: nobody would wake us
                raise PeerGone(self.broken)
            self._send_or_break(outgoing)
            while True:
                left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                incoming = self._wait(box, left)
                if incoming is _EMPTY:
                    self.broken = f"the other side did not answer in time (no answer within {timeout:g}s)"
                    raise PeerTimeout(self.broken) from None
                if incoming is None:
                    raise PeerGone(self.broken or "the channel closed")
                if "q" in incoming:
                    self._serve(incoming)
                    continue
                answer: dict[str, Any] = incoming
                return answer
        finally:
            with self._lock:
                self._waiting.pop(seq, None)

    def serve_forever(self) -> None:
        """Serve free requests on this thread until the other side closes the channel."""
        while True:
            incoming = self._wait(self._free, None)
            if incoming is None:
                return
            try:
                self._serve(incoming)
            except PeerGone:
                return

    def _wait(self, box: Box, timeout: float | None) -> Any:
        """Return the next item of ``box`` (_EMPTY at ``timeout``), reading the socket if nobody else does."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            self._waiting_count += 1
        try:
            while True:
                if not box.empty():  # only this thread takes from its box
                    return box.get_nowait()
                left = _POLL_S if deadline is None else min(deadline - time.monotonic(), _POLL_S)
                if left <= 0:
                    return _EMPTY
                if self._read_lock.acquire(blocking=False):
                    try:
                        if box.empty() and self.broken is None:
                            self._pump(left)
                    finally:
                        self._read_lock.release()
                    continue
                # Another waiter is reading: it routes what comes, ours included; should it leave first,
                # we take over within a few milliseconds.
                try:
                    return box.get(timeout=min(left, _TAKE_OVER_S))
                except queue.Empty:
                    continue
        finally:
            with self._lock:
                self._waiting_count -= 1

    def _pump(self, timeout: float) -> None:
        """Route what is buffered or arrives within ``timeout`` (the read lock is held)."""
        try:
            if not self._reader.pending() and not self._spin():
                ready, _, _ = select.select([self.sock], [], [], timeout)
                if ready:
                    self._reader.fill()
            while self._reader.pending():
                self._route(self._reader.next())
        except (wire.ChannelClosed, OSError, ValueError) as exc:
            self._close(str(exc) or type(exc).__name__)

    def _spin(self) -> bool:
        """Read for up to ``SPIN_S`` before sleeping in ``select``; return whether a whole message came.

        Woken from ``select`` on a core of its own, a process here waits 40-60 us more per message
        than one that never slept (bench/README.md, ``roundtrip.py``): most answers come sooner than
        that. Only where another core can run the other side (on one, spinning would hold the very
        core the answer needs), and only while spinning pays: a spin that found nothing (a long
        request, or the other side not running) leaves the next ``_SPIN_REST`` waits to ``select``.
        """
        if not self._multicore:
            return False
        if self._spin_rest:
            self._spin_rest -= 1
            return False
        fill, pending, clock = self._reader.fill, self._reader.pending, time.perf_counter
        end = clock() + SPIN_S
        while True:
            if fill() and pending():
                return True
            if clock() > end:
                self._spin_rest = _SPIN_REST
                return False

    # -- internals ------------------------------------------------------------------------------

    def _serving(self) -> list[Any]:
        stack: list[Any] | None = getattr(self._local, "serving", None)
        if stack is None:
            stack = self._local.serving = []
        return stack

    def _serve(self, incoming: dict[str, Any]) -> None:
        stack = self._serving()
        stack.append(incoming.get("q"))
        try:
            answer = self.handler(incoming)
        except BaseException as exc:
            # A handler that fails leaves its request unanswered, and the other side would wait for
            # it for ever: the channel is declared dead instead, so every waiter on both sides learns.
            why = f"serving a request failed: {type(exc).__name__}: {exc}"[:300]
            with contextlib.suppress(OSError):
                self.send({"dead": why})
            self._close(why)
            raise PeerGone(why) from exc
        finally:
            stack.pop()
        # A copy: the handler's dict may be shared (a constant, a cached answer) and served at once on
        # another thread, which would send this request's number with its own.
        self._send_or_break({**answer, "r": incoming.get("q")})

    def _send_or_break(self, message: dict[str, Any]) -> None:
        try:
            self.send(message)
        except OSError as exc:
            self._close(f"the connection failed: {exc}")
            raise PeerGone(self.broken or "the channel closed") from None

    def _read(self) -> None:
        """Read when nobody else does: wait for the socket outside the lock, read and route under it."""
        while self.broken is None:
            if self._waiting_count:
                # A thread of ours waits on the channel, and reads it: staying out of its way saves a
                # hand-over between threads for every message (no wake-up for us, no contention).
                _SLEEP(_IDLE_S)
                continue
            try:
                # Waiting for data outside the lock: a thread that starts waiting meanwhile reads it.
                ready, _, _ = select.select([self.sock], [], [], _IDLE_S)
            except (OSError, ValueError) as exc:
                self._close(str(exc) or type(exc).__name__)
                return
            if ready and not self._waiting_count and self._read_lock.acquire(blocking=False):
                try:
                    self._pump(0.0)
                finally:
                    self._read_lock.release()

    def _route(self, message: dict[str, Any]) -> None:
        if "dead" in message:
            raise wire.ChannelClosed(str(message.get("dead"))[:300])
        if "r" in message:
            with self._lock:
                box = self._waiting.get(message["r"]) if type(message["r"]) is int else None
            if box is not None:
                box.put(message)
            return
        if "q" not in message:
            raise wire.ChannelClosed("a message that is neither a request nor an answer")
        owner = message.get("in")
        with self._lock:
            box = self._waiting.get(owner) if type(owner) is int else None
            mainline = self.mainline and message.get("main", True) is True
            if box is None and (mainline or not self.free_threads):
                box = self._free
            start = False
            if box is None:
                # Each request for the pool is some worker's from here: an idle one's (counted off now,
                # not when it wakes - two requests in a row must not both count on the same one), a new
                # one's, or, with every thread busy, the next to finish ``_queued``.
                if self._idle:
                    self._idle -= 1
                elif self._workers < self.free_threads:
                    self._workers += 1
                    start = True
                else:
                    self._queued += 1
        if start:
            try:
                threading.Thread(target=self._work, name="patchgate-serve", daemon=True).start()
            except RuntimeError:  # no thread to be had (the container's pids limit): it waits its turn
                with self._lock:
                    self._workers -= 1
                    if self._idle:  # a worker that finished meanwhile counted itself idle: it takes this
                        self._idle -= 1
                    else:
                        self._queued += 1
        (box or self._pool).put(message)

    def _work(self) -> None:
        counted = True  # started for a request already on its way to the pool: not idle for another
        while True:
            if not counted:
                with self._lock:
                    if self._queued:
                        self._queued -= 1  # a request waits for a thread: this one takes it
                    else:
                        self._idle += 1
            counted = False
            incoming = self._pool.get()
            if incoming is None:
                return
            try:
                self._serve(incoming)
            except PeerGone:
                return

    def _close(self, why: str) -> None:
        with self._lock:
            if self.broken is None:
                self.broken = why
            boxes = list(self._waiting.values())
            workers = self._workers
        for box in boxes:
            box.put(None)
        self._free.put(None)
        for _ in range(workers):
            self._pool.put(None)
