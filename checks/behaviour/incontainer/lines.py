"""Which lines of the change's files the code under test runs: coverage.py in the subject's process.

The subject records, the grader counts. What is recorded is an observation
of the subject, like a return value: code written against patchgate could
stop the tracer or claim lines it never ran (the grader-probing hygiene rule
flags tracer tricks). Without coverage.py in the image nothing is recorded,
and the host reports coverage as unavailable.
"""

from __future__ import annotations

import importlib
import os
from typing import Any


class Lines:
    """Trace the given files (paths relative to the repository) from now on."""

    def __init__(self, repo: str, files: list[str]) -> None:
        self.paths = {os.path.join(repo, f): f for f in files}
        self.cov: Any = None
        if not self.paths:
            return
        try:
            coverage = importlib.import_module("coverage")  # in the image's tools layer, not patchgate's
        except ImportError:
            return
        # In memory only (no data file), our settings only (the repository's .coveragerc is never read).
        self.cov = coverage.Coverage(data_file=None, include=list(self.paths), config_file=False)
        self.cov.start()

    def executed(self) -> dict[str, list[int]] | None:
        """Return the lines run so far, per file; None when nothing could be recorded."""
        if self.cov is None:
            return None
        self.cov.stop()
        try:
            data = self.cov.get_data()
            return {rel: sorted(data.lines(path) or []) for path, rel in self.paths.items()}
        finally:
            self.cov.start()


def counted(executed: Any, executable: dict[str, list[int]]) -> dict[str, list[int]]:
    """Return, per file, the executable changed lines that ``executed`` (the subject's word) includes."""
    out: dict[str, list[int]] = {}
    if not isinstance(executed, dict):
        return out
    for path, lines in executable.items():
        ran = executed.get(path)
        if isinstance(ran, list):
            hit = set(lines) & {n for n in ran if isinstance(n, int)}
            if hit:
                out[path] = sorted(hit)
    return out


def merge(into: dict[str, list[int]], more: dict[str, list[int]]) -> None:
    """Add ``more``'s lines to ``into``."""
    for path, lines in more.items():
        into[path] = sorted(set(into.get(path, [])) | set(lines))


def record(covered: dict[str, list[int]], detail: bool) -> dict[str, Any]:
    """Return the report's lines record: the lines for a hidden suite, a count alone for a held-out one."""
    count = sum(len(lines) for lines in covered.values())
    return {"kind": "lines", "covered": covered if detail else None, "count": count}
