"""Which lines of the change's files the code under test runs: coverage.py in the subject's own process.

What is recorded is an observation of the subject, like a return value:
code written against patchgate could stop the tracer or claim lines it never
ran (the grader-probing hygiene rule flags tracer tricks). Without
coverage.py in the image nothing is recorded, and the host reports coverage
as unavailable.
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


# One tracer per subject process, inherited by the cases' forked children; None until the grader
# names the files.
_CURRENT: list[Lines] = []


def start(repo: str, files: list[str]) -> None:
    """Trace ``files`` (relative to ``repo``) in this process from now on."""
    _CURRENT[:] = [Lines(repo, files)]


def executed() -> dict[str, list[int]] | None:
    """Return the lines run so far, per file; None when nothing is traced or could be recorded."""
    return _CURRENT[0].executed() if _CURRENT else None
