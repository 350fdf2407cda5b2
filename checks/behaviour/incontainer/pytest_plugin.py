"""patchgate's pytest plugin: every test's outcome, written to a report file of our own.

Its ``Recorder`` writes the report in every pytest run (``pytest_grader.py``).
``main`` is the in-process mode, for suites that opted in to it
(``isolation: in-process``), inside the sandbox::

    PATCHGATE_REPORT=/tmp/<random>.jsonl PATCHGATE_NONCE=<nonce> [PATCHGATE_MESSAGES=1] \\
        python3 -I -B /patchgate/launch.py pytest-in-process <pytest arguments>

The variables are removed from the environment at once. This process
creates the report file exclusively (it must not exist yet), writes its
first line with the nonce, then forks: pytest runs in the child and sends
its records through a pipe; the report file is never open in it. This
parent, which never imports the code under test, appends each record as it
arrives; when pytest has exited it kills every process left behind (it is a
child subreaper, so daemons stay its descendants) and rewrites the file
from its own memory. So neither a process left running nor an exit hook of
the code under test can change the report after the fact. One JSON object
a line: ``start``, ``collected``, ``collect_error``, ``begin``, ``test``,
``finish`` (the session completed) and ``exit`` (pytest returned).

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
import select
import signal
import sys
import time
from collections.abc import Generator
from typing import Any

import pytest

from . import reaping

MESSAGE_CHARS = 300
MAX_REPORT_BYTES = 32 * 1024 * 1024
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}
_MISSING = re.compile(r"No module named '([^']+)'")
_TIMEOUT = "from pytest-timeout"


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return (lines[0] if lines else "")[:MESSAGE_CHARS]


def _classify(call: pytest.CallInfo[None], report: pytest.TestReport) -> tuple[str, str, bool]:
    """Return (outcome, message, timed_out) for one phase of one test."""
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

    def write(self, record: dict[str, Any]) -> None:
        """Append one record as a single write, so a crash never leaves half a line behind a whole one."""
        os.write(self._fd, json.dumps(record, ensure_ascii=True).encode() + b"\n")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.passed:
            return
        text = str(report.longrepr)
        found = _MISSING.search(text)
        self.write(
            {
                "kind": "collect_error",
                "path": report.nodeid,
                "skipped": report.skipped,
                "missing_module": found.group(1) if found else None,
                "message": _first_line(text.strip().splitlines()[-1] if text.strip() else "")
                if self._messages
                else "",
            }
        )

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.write({"kind": "collected", "ids": [item.nodeid for item in session.items]})

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self._started[nodeid] = time.monotonic()
        self.write({"kind": "begin", "id": nodeid})

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        self._phases.setdefault(item.nodeid, []).append(_classify(call, report))
        return report

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        phases = self._phases.pop(nodeid, [])
        if phases:
            outcome, message, _ = max(phases, key=lambda p: _RANK[p[0]])
        else:
            outcome, message = "error", "no phase of the test was reported"
        start = self._started.pop(nodeid, time.monotonic())
        self.write(
            {
                "kind": "test",
                "id": nodeid,
                "outcome": outcome,
                "timed_out": any(p[2] for p in phases),
                "message": message if self._messages else "",
                "seconds": round(time.monotonic() - start, 3),
            }
        )

    def pytest_sessionfinish(self, exitstatus: int) -> None:
        self.write({"kind": "finish", "exit_status": int(exitstatus)})


def main(args: list[str]) -> int:
    """Open the report, write its first line, run pytest in a child and keep what it reports."""
    path = os.environ.pop("PATCHGATE_REPORT")
    nonce = os.environ.pop("PATCHGATE_NONCE")
    messages = os.environ.pop("PATCHGATE_MESSAGES", "") == "1"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    start = {"kind": "start", "runner": "pytest", "nonce": nonce, "version": 1}
    written = bytearray(json.dumps(start).encode() + b"\n")
    reaping.write_all(fd, bytes(written))
    read_end, write_end = os.pipe()
    reaping.become_subreaper()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.close(fd)
        os.close(read_end)
        recorder = Recorder(write_end, messages)
        code = int(pytest.main(args, plugins=[recorder]))
        recorder.write({"kind": "exit", "code": code})
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    os.close(write_end)

    def seal(*_: object) -> None:
        # Nothing of the run is alive any more: undo whatever was written to the file by its path.
        reaping.reap_descendants()
        os.ftruncate(fd, 0)
        reaping.write_all(fd, bytes(written))

    def out_of_time(*_: object) -> None:
        # The sandbox's time budget ran out (`timeout` sends SIGTERM first): keep what was reported.
        seal()
        os._exit(124)

    signal.signal(signal.SIGTERM, out_of_time)
    code = _relay(pid, read_end, fd, written)
    seal()
    os.close(fd)
    return code


def _relay(pid: int, source: int, fd: int, written: bytearray) -> int:
    """Copy whole lines from the child's pipe to the report until the child and all it started are gone."""
    pending = bytearray()

    def take(chunk: bytes) -> None:
        pending.extend(chunk)
        cut = pending.rfind(b"\n") + 1
        if cut and len(written) + cut <= MAX_REPORT_BYTES:
            reaping.write_all(fd, bytes(pending[:cut]))
            written.extend(pending[:cut])
        del pending[:cut]

    status: int | None = None
    while status is None:
        ready, _, _ = select.select([source], [], [], 0.2)
        chunk = os.read(source, 65536) if ready else None
        if chunk:
            take(chunk)
            continue
        done, wait_status = os.waitpid(pid, 0 if chunk == b"" else os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(wait_status)
    # Processes the run left behind may hold the pipe open: end them, then read to the end.
    reaping.reap_descendants()
    while chunk := os.read(source, 65536):
        take(chunk)
    return status
