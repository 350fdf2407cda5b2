"""Which lines of the change's files the code under test runs: coverage.py in the subject's own process.

coverage.py is one of the grader's tools, not the change's: it is loaded
from the image's tools path (the repository is not on ``sys.path`` while it
loads) and its modules are then taken out of ``sys.modules``, so a tree
that ships a module named ``coverage`` neither replaces the tracer nor gets
it when its own code imports ``coverage`` (a repository that *is* coverage.py
is imported and tested as its own). Our modules are put back only while our
own calls into them run.

What is recorded is still an observation of the subject, like a return
value: code written against patchgate could stop the tracer or edit its
data in memory (the grader-probing hygiene rule flags tracer tricks), so the
host shows the figure as the code under test's own report, for hidden
suites only. Without coverage.py in the image nothing is recorded, and the
host reports coverage as unavailable.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator
from typing import Any

TOOL = "coverage"
# sys.path before the repository was put first on it (set by main.py): where the tools load from.
TOOL_PATH: list[str] = []
_OURS: dict[str, Any] = {}


def _ours_name(name: str) -> bool:
    return name == TOOL or name.startswith(TOOL + ".")


@contextlib.contextmanager
def ours() -> Iterator[None]:
    """Let our own coverage.py modules be what ``sys.modules`` holds under their names, for a while."""
    theirs = {n: sys.modules.pop(n) for n in [n for n in sys.modules if _ours_name(n)]}
    sys.modules.update(_OURS)
    try:
        yield
    finally:
        for name in [n for n in sys.modules if _ours_name(n)]:
            _OURS[name] = sys.modules.pop(name)  # a lazy import of ours lands in our table
        sys.modules.update(theirs)


def _load() -> Any:
    """Import coverage.py from the tools path, then keep its modules out of ``sys.modules``."""
    saved = sys.path[:]
    if TOOL_PATH:
        sys.path[:] = TOOL_PATH
    with ours():
        try:
            return importlib.import_module(TOOL)
        except ImportError:
            return None
        finally:
            sys.path[:] = saved


class Lines:
    """Trace the given files (paths relative to the repository) from now on."""

    def __init__(self, repo: str, files: list[str]) -> None:
        self.paths = {os.path.join(repo, f): f for f in files}
        self.cov: Any = None
        if not self.paths:
            return
        coverage = _load()
        if coverage is None:
            return
        with ours():
            # In memory only (no data file), our settings only (the repository's .coveragerc is never read).
            self.cov = coverage.Coverage(data_file=None, include=list(self.paths), config_file=False)
            self.cov.start()

    def executed(self) -> dict[str, list[int]] | None:
        """Return the lines run so far, per file; None when nothing could be recorded."""
        if self.cov is None:
            return None
        with ours():
            self.cov.stop()
            try:
                data = self.cov.get_data()
                return {rel: sorted(data.lines(path) or []) for path, rel in self.paths.items()}
            finally:
                self.cov.start()


# One tracer per subject process, inherited by the cases' forked children; none until the grader
# names the files.
_CURRENT: list[Lines] = []


def start(repo: str, files: list[str]) -> None:
    """Trace ``files`` (relative to ``repo``) in this process from now on."""
    _CURRENT[:] = [Lines(repo, files)]


def executed() -> dict[str, list[int]] | None:
    """Return the lines run so far, per file; None when nothing is traced or could be recorded."""
    return _CURRENT[0].executed() if _CURRENT else None
