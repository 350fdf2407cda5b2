"""Declarative cases in the subject: each call evaluated in a forked child, its result encoded there.

The child holds no file descriptor of ours but its result pipe, and
everything it started is killed before the next case. It is given a case's
module, call and timeout only - never an id or an expectation.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import struct
import time
from typing import Any

from .. import process
from ..channel import codec
from . import tracer, tree

MAX_RESULT_BYTES = 256 * 1024
_HEADER = struct.Struct(">Q")
_RESULT_FIELDS = ("status", "value", "exception", "missing_module", "detail", "lines")
_MAX_FD = 65536


class CallTimeout(BaseException):
    """Raised into the change's code when a request runs past its deadline.

    Not an Exception, so ``except Exception`` in the change's code does not swallow it.
    """


def evaluate(module_name: str, call: str, repo: str | None = None) -> dict[str, Any]:
    """Import the module, evaluate the call in its namespace and encode what happened.

    With ``repo``, a module the tree provides must be the tree's (``tree.check``).
    """
    try:
        module = importlib.import_module(module_name)
        if repo is not None and tree.provides(repo, module_name):
            tree.check(module, module_name, repo)
    except BaseException as exc:  # the code under test may raise anything, SystemExit too
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        return {"status": "import_error", "exception": codec.describe(exc), "missing_module": missing}
    try:
        code = compile(call, "<case>", "eval")
        value = eval(code, dict(vars(module)))  # noqa: S307 - the maintainers' call expression, in the sandbox
    except BaseException as exc:
        return {"status": "raised", "exception": codec.describe(exc)}
    try:
        return {"status": "returned", "value": codec.encode(value)}
    except codec.Unserializable as exc:
        return {"status": "unserializable", "detail": str(exc)}
    except BaseException as exc:  # e.g. a hostile tzinfo raising while encoded
        detail = f"encoding the result raised {codec.type_name(type(exc))}"
        return {"status": "unserializable", "detail": detail}


def _case_child(module: str, call: str, out: int, repo: str) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    result = evaluate(module, call, repo)
    lines = tracer.executed()
    if lines is not None:
        result["lines"] = lines
    payload = json.dumps(result, ensure_ascii=True, allow_nan=False).encode()
    if len(payload) > MAX_RESULT_BYTES:
        detail = f"the encoded result is larger than {MAX_RESULT_BYTES} bytes"
        payload = json.dumps({"status": "unserializable", "detail": detail}).encode()
    process.write_all(out, _HEADER.pack(len(payload)) + payload)


def run_case(case: dict[str, Any], repo: str) -> dict[str, Any]:
    """Run one case in a forked child and return its observation (no id: the subject never knows it)."""
    read_end, write_end = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the parent's loop
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, 0)
            # Nothing of ours stays open in the code under test but its result pipe.
            os.closerange(3, write_end)
            os.closerange(write_end + 1, _MAX_FD)
            os.setpgid(0, 0)
            _case_child(str(case["module"]), str(case["call"]), write_end, repo)
        finally:
            os._exit(0)
    os.close(write_end)
    with contextlib.suppress(OSError):  # the child already did it, or already exited
        os.setpgid(pid, pid)
    timeout = float(case["timeout_s"])
    status, buf, want = _read_result(read_end, start + timeout)
    process.kill(pid)
    _, wait_status = os.waitpid(pid, 0)
    # Whatever the case started dies with it, daemons too.
    process.reap_descendants()
    os.close(read_end)
    seconds = round(time.monotonic() - start, 3)
    if status == "timeout":
        return {"status": "timeout", "detail": f"no result within {timeout:g}s", "seconds": seconds}
    if status != "done" or want is None:
        code = os.waitstatus_to_exitcode(wait_status)
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return {"status": "crashed", "detail": f"the case ended without a result ({how})", "seconds": seconds}
    try:
        record = json.loads(bytes(buf[_HEADER.size : _HEADER.size + want]))
    except ValueError:
        record = None
    if not isinstance(record, dict):
        return {"status": "crashed", "detail": "the case wrote a malformed result", "seconds": seconds}
    # Only the fields the host reads; whatever else the child wrote is dropped.
    kept = {k: record[k] for k in _RESULT_FIELDS if k in record}
    kept["seconds"] = seconds
    return kept


def _read_result(fd: int, deadline: float) -> tuple[str, bytearray, int | None]:
    buf = bytearray()
    want: int | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout", buf, want
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return "crashed", buf, want
        buf.extend(chunk)
        if want is None and len(buf) >= _HEADER.size:
            (want,) = _HEADER.unpack_from(buf)
        if want is not None and len(buf) >= _HEADER.size + want:
            return "done", buf, want
        if len(buf) > MAX_RESULT_BYTES + _HEADER.size:
            return "crashed", buf, want
