"""The in-process mode, for suites that opted in to it (``isolation: in-process``), inside the sandbox::

    PATCHGATE_REPORT=/tmp/<random>.jsonl PATCHGATE_NONCE=<nonce> [PATCHGATE_MESSAGES=1] \\
        [PATCHGATE_PYTHONPATH=<the repository's paths>] \\
        python3 -P -s -B /patchgate/launch.py pytest-in-process <pytest arguments>

The variables are removed from the environment at once; PATCHGATE_PYTHONPATH
becomes PYTHONPATH in pytest's process only, for the processes the tests
start (this parent's own imports never look in the repository). This process
creates the report file exclusively (it must not exist yet), writes its
first line with the nonce, then forks: pytest runs in the child and sends
its records through a pipe; the report file is never open in it. This
parent, which never imports the code under test, appends each record as it
arrives; when pytest has exited it kills every process left behind (it is a
child subreaper, so daemons stay its descendants) and rewrites the file
from its own memory. So neither a process left running nor an exit hook of
the code under test can change the report after the fact.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys

import pytest

from .. import process
from .recorder import Recorder

MAX_REPORT_BYTES = 32 * 1024 * 1024


def main(args: list[str]) -> int:
    """Open the report, write its first line, run pytest in a child and keep what it reports."""
    path = os.environ.pop("PATCHGATE_REPORT")
    nonce = os.environ.pop("PATCHGATE_NONCE")
    messages = os.environ.pop("PATCHGATE_MESSAGES", "") == "1"
    pythonpath = os.environ.pop("PATCHGATE_PYTHONPATH", "")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    start = {"kind": "start", "runner": "pytest", "nonce": nonce, "version": 1}
    written = bytearray(json.dumps(start).encode() + b"\n")
    process.write_all(fd, bytes(written))
    read_end, write_end = os.pipe()
    process.become_subreaper()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if pythonpath:
            os.environ["PYTHONPATH"] = pythonpath
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
        process.reap_descendants()
        os.ftruncate(fd, 0)
        process.write_all(fd, bytes(written))

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
            process.write_all(fd, bytes(pending[:cut]))
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
    process.reap_descendants()
    while chunk := os.read(source, 65536):
        take(chunk)
    return status
