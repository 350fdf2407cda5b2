"""patchgate's pytest plugin: every test's outcome, written to a report file of our own.

Its ``Recorder`` writes the report in every pytest run: in the grader
(``pytest_runner.py``) and in the in-process mode (``inprocess.py``). One
JSON object a line: ``start``, ``collected``, ``collect_error``, ``begin``,
``test``, ``finish`` (the session completed) and ``exit`` (pytest returned).

A test passes only when no phase raised and the final report says passed:
the outcome is read both from the raised exception (``call.excinfo``, as
seen by this outermost hook wrapper) and from the report after every other
hook changed it, and the worse of the two wins. So a hook rewriting a
failure into a pass, a skip or an xfail cannot make it pass.
"""

from __future__ import annotations

import json
import os
import re
import time
import traceback
from collections.abc import Callable, Generator
from typing import Any

import pytest

MESSAGE_CHARS = 300
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}
_MISSING = re.compile(r"No module named '([^']+)'")
# A traceback entry as pytest prints it: "test_x.py:12: in <module>".
_WHERE = re.compile(r"^(\S+?:\d+): in ")
_TIMEOUT = "from pytest-timeout"


def codec_text(exc: BaseException) -> str:
    """``str(exc)``, whatever a hostile ``__str__`` does."""
    try:
        return str(exc)
    except Exception:  # a hostile __str__ (the change's exception raised at import)
        return "<the message could not be read>"


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return (lines[0] if lines else "")[:MESSAGE_CHARS]


def _classify(
    call: pytest.CallInfo[None], report: pytest.TestReport, marked_xfail: bool = False
) -> tuple[str, str, bool]:
    """Return (outcome, message, timed_out) for one phase of one test.

    ``marked_xfail``: the suite's own ``xfail`` marker is on the test - its failing is what pytest
    turned into an xfail, as the suite said (a change raising ``pytest.xfail()`` is not that).
    """
    exc = call.excinfo
    failed_kind = "failed" if call.when == "call" else "error"
    if exc is None:
        raised = "passed"
    elif exc.errisinstance(pytest.skip.Exception):
        raised = "skipped"
    elif exc.errisinstance(pytest.xfail.Exception):
        raised = "xfailed"
    else:
        raised = failed_kind
    if report.passed:
        reported = "passed"
    elif report.skipped:
        reported = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    else:
        reported = failed_kind
    if marked_xfail and reported == "xfailed" and raised == failed_kind == "failed":
        raised = "xfailed"
    outcome = max(raised, reported, key=lambda k: _RANK[k])
    message = ""
    timed_out = False
    if exc is not None:
        try:
            message = _first_line(exc.exconly())
        except BaseException:  # a hostile __str__ may raise anything
            message = f"{exc.typename}: <the message could not be read>"
        timed_out = (exc.errisinstance(pytest.fail.Exception) and _TIMEOUT in message) or (
            # The grader's word that the code under test ran past this test's budget (proxy.py).
            exc.typename == "SubjectTimeout"
        )
    elif outcome != "passed":
        message = f"reported {reported} by a hook although nothing was raised"
    return outcome, message, timed_out


class Recorder:
    """The plugin object: writes one JSON line per event to an already open file descriptor."""

    def __init__(self, fd: int, messages: bool) -> None:
        self._fd = fd
        self._messages = messages
        self._phases: dict[str, list[tuple[str, str, bool]]] = {}
        self._started: dict[str, float] = {}
        # The test whose call phase is running: a report made meanwhile is one of its subtests'.
        self._calling: str | None = None
        self._skipped_subtests: dict[str, int] = {}
        # Isolated: how many messages the grader has sent the subject so far (a test's count is what it
        # adds: its round trips, the one figure that says what isolation costs it).
        self.exchanges: Callable[[], int] | None = None
        # Called as each test begins (isolated: the relayed output's per-test budget, grader/ambient.py).
        self.on_begin: Callable[[], None] | None = None
        self._exchanged: dict[str, int] = {}

    def write(self, record: dict[str, Any]) -> None:
        """Append one record as a single write, so a crash never leaves half a line behind a whole one."""
        os.write(self._fd, json.dumps(record, ensure_ascii=True).encode() + b"\n")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.passed:
            return
        text = str(report.longrepr)
        found = _MISSING.search(text)
        lines = text.strip().splitlines()
        # The host decides what of it is shown (a held-out suite's, never): here it is always kept.
        exception = next(
            (ln[1:].strip() for ln in reversed(lines) if ln.startswith("E ")), lines[-1] if lines else ""
        )
        where = next((m.group(1) for ln in reversed(lines) if (m := _WHERE.match(ln))), "")
        self.write(
            {
                "kind": "collect_error",
                "path": report.nodeid,
                "skipped": report.skipped,
                "missing_module": found.group(1) if found else None,
                "message": _first_line(exception),
                "where": where[:MESSAGE_CHARS],
            }
        )

    @pytest.hookimpl(wrapper=True)
    def pytest_load_initial_conftests(self, early_config: pytest.Config) -> Generator[None, object, object]:
        # A conftest.py pytest loads before collecting (the suite folder's own) that fails to import
        # ends the run before any collect report: say which file, where and why.
        try:
            return (yield)
        except Exception as exc:
            cause = getattr(exc, "cause", None) or exc
            path = str(getattr(exc, "path", "") or "")
            root = str(early_config.rootpath)
            frames = [f for f in traceback.extract_tb(cause.__traceback__) if f.filename.startswith(root)]
            where = f"{frames[-1].filename[len(root) :].lstrip('/')}:{frames[-1].lineno}" if frames else ""
            found = _MISSING.search(codec_text(cause))
            rel = path[len(root) :].lstrip("/") if path.startswith(root) else path
            self.write({
                "kind": "collect_error", "path": rel,
                "skipped": False, "missing_module": found.group(1) if found else None,
                "message": _first_line(f"{type(cause).__name__}: {codec_text(cause)}"), "where": where,
            })  # fmt: skip
            raise

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.write({"kind": "collected", "ids": [item.nodeid for item in session.items]})

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self._started[nodeid] = time.monotonic()
        if self.on_begin is not None:
            self.on_begin()
        if self.exchanges is not None:
            self._exchanged[nodeid] = self.exchanges()
        self.write({"kind": "begin", "id": nodeid})

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        self._calling = item.nodeid
        try:
            return (yield)
        finally:
            self._calling = None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        marked = item.get_closest_marker("xfail") is not None
        phase = _classify(call, report, marked)
        if self._calling == item.nodeid and phase[0] in ("skipped", "xfailed"):
            # A subtest's (unittest's subTest, pytest's subtests): as pytest has it, its skip does not
            # skip the test; the host counts them against base's (grade.py), its failure fails the test.
            self._skipped_subtests[item.nodeid] = self._skipped_subtests.get(item.nodeid, 0) + 1
        elif not (self._calling == item.nodeid and phase[0] == "passed"):
            self._phases.setdefault(item.nodeid, []).append(phase)
        return report

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        phases = self._phases.pop(nodeid, [])
        if phases:
            outcome, message, _ = max(phases, key=lambda p: _RANK[p[0]])
        else:
            outcome, message = "error", "no phase of the test was reported"
        start = self._started.pop(nodeid, time.monotonic())
        record = {
            "kind": "test",
            "id": nodeid,
            "outcome": outcome,
            "timed_out": any(p[2] for p in phases),
            "message": message if self._messages else "",
            "seconds": round(time.monotonic() - start, 3),
            "skipped_subtests": self._skipped_subtests.pop(nodeid, 0),
        }
        before = self._exchanged.pop(nodeid, None)
        if self.exchanges is not None and before is not None:
            record["messages"] = self.exchanges() - before
        self.write(record)

    def pytest_sessionfinish(self, exitstatus: int) -> None:
        self.write({"kind": "finish", "exit_status": int(exitstatus)})
