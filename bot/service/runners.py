"""The worker's sandbox, shared by its jobs: at most ``max_sandboxes`` runs at once in this process."""

from __future__ import annotations

import threading

from bot import metrics
from checks.runner import Runner
from sandbox.spec import RunResult, RunSpec


class LimitedRunner:
    """Wrap a Runner so that this worker never has more than ``limit`` sandbox runs in flight.

    Jobs run their layers in parallel (shape tools, suites): without a
    per-process bound, ``concurrency`` jobs times each job's parallelism
    containers would share one Docker engine.
    """

    def __init__(self, runner: Runner, limit: int) -> None:
        self.runner = runner
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)

    def run(self, spec: RunSpec) -> RunResult:
        """Wait for a slot, then run ``spec`` on the wrapped runner."""
        with self._slots:
            metrics.SANDBOXES.inc()
            try:
                return self.runner.run(spec)
            finally:
                metrics.SANDBOXES.dec()
