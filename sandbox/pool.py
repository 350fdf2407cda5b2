"""Containers made ahead of need: a few per container shape, each handed to one run, never back.

Creating and starting a container costs about 150 ms of a sandbox run's 300-550 ms
(bench/README.md, ``sandbox_overhead.py``). With a pool, the next run of a shape (the same
image, limits, mounts and writable roots: everything ``containers.create`` is given but the
name and the inbox) finds its container already started while the current one runs.

What keeps "a fresh container per run" (docs/sandbox.md):

- a pooled container is made exactly as a run would make it, and until a run claims it, it
  runs nothing but its waiter and holds nothing but its shape's read-only mounts (the same
  job's trees, which only a run of that shape sees): its inbox (the folder its copy-in
  tarballs arrive in) is empty, no exec has run in it, the grader's private files are copied
  in after the claim;
- a claim takes it out of the pool for good: it is never handed to a second run, and it is
  removed after its run as every run's container is;
- it is given to a run of the same shape only (the shape names the image by id, so a rebuilt
  tag never gets a container of the old image);
- one idle longer than ``max_idle_s`` is removed, not handed out: its waiter (the container's
  own deadline) started when it was made, and ``max_idle_s`` stays well inside the waiter's
  margin beyond the longest run of that shape.

The pool never delays a run: a run that finds no container makes one as before, and the
pool's refills happen on threads of their own. A shape is made ahead from its second run
on: a job's one-off runs (a tool with limits of its own) would leave a container nobody
claims, made for nothing on a machine whose cores the runs themselves need.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from tempfile import TemporaryDirectory
from typing import Any

log = logging.getLogger(__name__)

# Well inside the waiter's margin (sandbox.docker.WAITER_MARGIN_S, 600 s) past a run's own limits.
MAX_IDLE_S = 240.0
# Shapes whose runs are counted (the most recently asked for), to make ahead only those that recur.
REMEMBERED_SHAPES = 64


@dataclass
class Warm:
    """A started container that no run has had: its name, its SDK object and its (empty) inbox."""

    name: str
    container: Any
    inbox: TemporaryDirectory[str]
    made: float = field(default_factory=time.monotonic)


class WarmPool:
    """Idle containers by shape: at most ``per_shape`` of each of the ``shapes`` most recently used.

    ``discard`` removes a container nobody will run (expired, evicted, left at close) and
    should not keep its caller waiting (DockerSandbox hands it to the reaper's background
    removal). ``close`` discards every idle one and refuses refills from then on.
    """

    def __init__(
        self,
        discard: Callable[[Warm], None],
        *,
        per_shape: int = 1,
        shapes: int = 4,
        max_idle_s: float = MAX_IDLE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_shape < 1 or shapes < 1:
            raise ValueError("a pool holds at least one container of at least one shape")
        self._discard = discard
        self.per_shape = per_shape
        self.shapes = shapes
        self.max_idle_s = max_idle_s
        self._clock = clock
        self._lock = threading.Lock()
        self._idle: OrderedDict[str, list[Warm]] = OrderedDict()
        self._asked: OrderedDict[str, int] = OrderedDict()  # claims per shape, most recent last
        self._making: dict[str, int] = {}
        self._threads: set[threading.Thread] = set()
        self.closed = False

    def claim(self, shape: str) -> Warm | None:
        """Take an idle container of ``shape`` out of the pool for good, or None."""
        stale: list[Warm] = []
        found = None
        with self._lock:
            self._asked[shape] = self._asked.pop(shape, 0) + 1
            while len(self._asked) > REMEMBERED_SHAPES:
                self._asked.popitem(last=False)
            idle = self._idle.get(shape, [])
            while idle and found is None:
                warm = idle.pop(0)
                if self._clock() - warm.made > self.max_idle_s:
                    stale.append(warm)
                else:
                    found = warm
            if shape in self._idle:
                self._idle.move_to_end(shape)
        self._discard_all(stale)
        return found

    def refill(self, shape: str, make: Callable[[], Warm]) -> None:
        """Make one more container of ``shape`` on a thread of its own, once the shape has recurred.

        Nothing is made for a shape claimed fewer than twice, nor when enough are idle or coming.
        """
        with self._lock:
            if self._asked.get(shape, 0) < 2:
                return
            if self.closed or len(self._idle.get(shape, [])) + self._making.get(shape, 0) >= self.per_shape:
                return
            self._making[shape] = self._making.get(shape, 0) + 1
            thread = threading.Thread(target=self._make, args=(shape, make), name="patchgate-warm")
            self._threads.add(thread)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had (resources, shutdown): the pool just stays short
            with self._lock:
                self._making[shape] -= 1
                self._threads.discard(thread)

    def close(self) -> None:
        """Refuse refills, wait for those under way, and discard every idle container."""
        with self._lock:
            self.closed = True
            threads = list(self._threads)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join()
        with self._lock:
            left = [warm for idle in self._idle.values() for warm in idle]
            self._idle.clear()
        for warm in left:
            self._discard(warm)

    def idle(self) -> dict[str, int]:
        """How many containers of each shape wait for a run."""
        with self._lock:
            return {shape: len(idle) for shape, idle in self._idle.items() if idle}

    def _make(self, shape: str, make: Callable[[], Warm]) -> None:
        warm = None
        try:
            warm = make()
        except Exception as exc:  # the engine, or a process being terminated: a run will make its own
            log.info("could not make a warm sandbox container: %s", exc)
        evicted: list[Warm] = []
        with self._lock:  # counted as coming until it is idle: a refill meanwhile makes no extra one
            self._making[shape] -= 1
            self._threads.discard(threading.current_thread())
            if warm is not None and self.closed:
                evicted.append(warm)
            elif warm is not None:
                self._idle.setdefault(shape, []).append(warm)
                self._idle.move_to_end(shape)
                while len(self._idle) > self.shapes:
                    _, older = self._idle.popitem(last=False)
                    evicted.extend(older)
        self._discard_all(evicted)

    def _discard_all(self, warms: list[Warm]) -> None:
        for warm in warms:
            self._discard(warm)
