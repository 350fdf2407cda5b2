"""Run declarative cases inside the sandbox and write each result as plain JSON.

Usage: ``python3 -I -B case_runner.py PLAN REPORT NONCE REPO``

PLAN lists the cases (id, module, call, timeout_s) and nothing else: the
expected values never enter the sandbox, so no code in it can find them.
Each case runs in a forked child with stdio on /dev/null, no other file
descriptor of ours, and a hard timeout; this parent never imports the code
under test. The parent is a child subreaper, so every process a case
leaves behind (daemons included) stays its descendant and is killed before
the next case starts. Results go to REPORT (created exclusively; one JSON
object a line, the first carrying NONCE), which is rewritten from the
parent's memory at the end, when no process of any case is left alive to
have tampered with it. They are compared outside the sandbox.

Values are encoded by walking exact built-in types through their base
methods, so a result's own ``__eq__``, ``__iter__`` or ``__str__`` never
decides what is written: ``timedelta(hours=1)`` becomes
``{"__type__": "timedelta", "seconds": 3600, "microseconds": 0}``.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import decimal
import importlib
import json
import math
import os
import select
import signal
import struct
import sys
import time
from typing import Any

MAX_RESULT_BYTES = 256 * 1024
MAX_NODES = 100_000
MAX_DEPTH = 64
MESSAGE_CHARS = 300
_HEADER = struct.Struct(">Q")
_RESULT_FIELDS = ("status", "value", "exception", "missing_module", "detail")
_PR_SET_CHILD_SUBREAPER = 36
_MAX_FD = 65536


class Unserializable(Exception):
    """The result has no plain-JSON encoding."""


def _type_name(t: type) -> str:
    module = getattr(t, "__module__", "") or ""
    name = getattr(t, "__qualname__", "") or "?"
    return name if module == "builtins" else f"{module}.{name}"


def _field(cls: type, name: str, value: object) -> Any:
    # The base class's descriptor: a subclass property of the same name is ignored.
    return cls.__dict__[name].__get__(value, cls)


def encode(value: object, depth: int = 0, budget: list[int] | None = None) -> Any:
    """Encode ``value`` as plain JSON, or raise Unserializable saying why not."""
    budget = budget if budget is not None else [0]
    budget[0] += 1
    if budget[0] > MAX_NODES:
        raise Unserializable(f"the result has more than {MAX_NODES} parts")
    if depth > MAX_DEPTH:
        raise Unserializable(f"the result is nested deeper than {MAX_DEPTH} levels (or is cyclic)")
    if value is None or type(value) is bool:
        return value
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        f = float.__float__(value)
        if math.isfinite(f):
            return f
        return {"__type__": "float", "value": "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")}
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (bytes, bytearray)):
        return {"__type__": "bytes", "hex": bytes(memoryview(value)).hex()}
    if isinstance(value, complex):
        return {
            "__type__": "complex",
            "real": encode(_field(complex, "real", value), depth + 1, budget),
            "imag": encode(_field(complex, "imag", value), depth + 1, budget),
        }
    if isinstance(value, list):
        return [encode(v, depth + 1, budget) for v in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"__type__": "tuple", "items": [encode(v, depth + 1, budget) for v in tuple.__iter__(value)]}
    if isinstance(value, dict):
        items = [(k, v) for k, v in dict.items(value)]
        if all(type(k) is str for k, _ in items) and not any(k == "__type__" for k, _ in items):
            return {k: encode(v, depth + 1, budget) for k, v in items}
        return {
            "__type__": "dict",
            "items": [[encode(k, depth + 1, budget), encode(v, depth + 1, budget)] for k, v in items],
        }
    if isinstance(value, (set, frozenset)):
        members = set.__iter__(value) if isinstance(value, set) else frozenset.__iter__(value)
        encoded = [encode(v, depth + 1, budget) for v in members]
        encoded.sort(key=lambda e: json.dumps(e, sort_keys=True))
        return {"__type__": "set" if isinstance(value, set) else "frozenset", "items": encoded}
    if isinstance(value, datetime.timedelta):
        days = _field(datetime.timedelta, "days", value)
        seconds = _field(datetime.timedelta, "seconds", value)
        micro = _field(datetime.timedelta, "microseconds", value)
        return {"__type__": "timedelta", "seconds": days * 86400 + seconds, "microseconds": micro}
    if isinstance(value, datetime.datetime):
        return {"__type__": "datetime", "iso": datetime.datetime.isoformat(value)}
    if isinstance(value, datetime.date):
        return {"__type__": "date", "iso": datetime.date.isoformat(value)}
    if isinstance(value, datetime.time):
        return {"__type__": "time", "iso": datetime.time.isoformat(value)}
    if isinstance(value, decimal.Decimal):
        return {"__type__": "decimal", "value": decimal.Decimal.__str__(value)}
    raise Unserializable(f"a result of type {_type_name(type(value))} has no JSON encoding")


def describe(exc: BaseException) -> dict[str, Any]:
    """Describe an exception by its real type (never its ``__class__``) and first message line."""
    t = type(exc)
    try:
        text = str.__str__(str(exc))
    except BaseException:  # a hostile __str__ may raise anything
        text = "<the exception's message could not be read>"
    lines = text.strip().splitlines()
    return {
        "type": _type_name(t),
        "mro": [c.__name__ for c in t.__mro__] + [_type_name(c) for c in t.__mro__],
        "message": (lines[0] if lines else "")[:MESSAGE_CHARS],
    }


def evaluate(module_name: str, call: str) -> dict[str, Any]:
    """Import the module, evaluate the call in its namespace and encode what happened."""
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # the code under test may raise anything, SystemExit too
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        return {"status": "import_error", "exception": describe(exc), "missing_module": missing}
    try:
        code = compile(call, "<case>", "eval")
        value = eval(code, dict(vars(module)))  # noqa: S307 - the maintainers' call expression, in the sandbox
    except BaseException as exc:
        return {"status": "raised", "exception": describe(exc)}
    try:
        return {"status": "returned", "value": encode(value)}
    except Unserializable as exc:
        return {"status": "unserializable", "detail": str(exc)}
    except BaseException as exc:  # e.g. a hostile tzinfo raising while encoded
        return {"status": "unserializable", "detail": f"encoding the result raised {_type_name(type(exc))}"}


def _child(case: dict[str, Any], repo: str, out: int) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.chdir(repo)
    sys.path[:0] = [p for p in (os.path.join(repo, "src"), repo) if os.path.isdir(p)]
    result = evaluate(str(case["module"]), str(case["call"]))
    payload = json.dumps(result, ensure_ascii=True, allow_nan=False).encode()
    if len(payload) > MAX_RESULT_BYTES:
        detail = f"the encoded result is larger than {MAX_RESULT_BYTES} bytes"
        payload = json.dumps({"status": "unserializable", "detail": detail}).encode()
    _write_all(out, _HEADER.pack(len(payload)) + payload)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _become_subreaper() -> bool:
    """Make orphans of our descendants our children rather than init's (Linux prctl)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _children() -> list[int]:
    me = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields after the last ")" do not.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1] == me:
            found.append(int(entry))
    return found


def _reap_descendants() -> None:
    """Kill every process left under us; orphans come back to us as the subreaper, round after round."""
    for _ in range(1000):
        children = _children()
        if not children:
            return
        for child in children:
            _kill(child)
        for child in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child, 0)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def run_case(case: dict[str, Any], repo: str) -> dict[str, Any]:
    """Run one case in a forked child and return its result record (without the id)."""
    read_end, write_end = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the parent's loop
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            # Nothing of ours stays open in the code under test but its result pipe.
            os.closerange(3, write_end)
            os.closerange(write_end + 1, _MAX_FD)
            os.setpgid(0, 0)
            _child(case, repo, write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    with contextlib.suppress(OSError):  # the child already did it, or already exited
        os.setpgid(pid, pid)
    timeout = float(case["timeout_s"])
    buf = bytearray()
    want: int | None = None
    status = "crashed"
    try:
        while True:
            remaining = start + timeout - time.monotonic()
            if remaining <= 0:
                status = "timeout"
                break
            ready, _, _ = select.select([read_end], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            buf.extend(chunk)
            if want is None and len(buf) >= _HEADER.size:
                (want,) = _HEADER.unpack_from(buf)
            if want is not None and len(buf) >= _HEADER.size + want:
                status = "done"
                break
            if len(buf) > MAX_RESULT_BYTES + _HEADER.size:
                break
    finally:
        os.close(read_end)
        _kill(pid)
        _, wait_status = os.waitpid(pid, 0)
        # Whatever the case started dies with it, daemons too (see _reap_descendants).
        _reap_descendants()
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


def main(argv: list[str]) -> int:
    """Run every case in the plan and write the report; the exit code is 0 unless the harness broke."""
    plan_path, report_path, nonce, repo = argv
    with open(plan_path, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    fd = os.open(report_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    written = bytearray()
    _become_subreaper()

    def write(record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=True, allow_nan=False).encode() + b"\n"
        written.extend(line)
        _write_all(fd, line)

    def seal(*_: object) -> None:
        # No process of any case is alive now: whatever one wrote to the file is undone.
        _reap_descendants()
        os.ftruncate(fd, 0)
        _write_all(fd, bytes(written))

    def out_of_time(*_: object) -> None:
        # The sandbox's time budget ran out (`timeout` sends SIGTERM first): keep what was reported.
        seal()
        os._exit(124)

    signal.signal(signal.SIGTERM, out_of_time)
    write({"kind": "start", "runner": "cases", "nonce": nonce, "version": 1})
    for case in cases:
        write({"kind": "begin", "id": case["id"]})
        write({**run_case(case, repo), "kind": "case", "id": case["id"]})
    write({"kind": "finish"})
    seal()
    os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
