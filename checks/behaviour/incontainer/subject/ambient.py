"""The subject's side of the process state that travels with each request (see grader/ambient.py).

``apply`` takes what a request carries (the test's environment changes,
working directory and random seeds) into this process before the change's
code runs; ``Capture`` collects what the request printed, warned and logged,
for its answer.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import random
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ..channel import codec
from ..channel.protocol import AMBIENT_FUNCTIONS, HARNESS_DIR, MAX_RECORDS, RECORD_CHARS

CAPTURE_CHARS = 1_000_000
MAX_WARNINGS = 100


# The environment this process started with: a test-owned variable that goes back to how the grader
# started goes back to this (see grader/ambient.py).
STARTUP: dict[str, str] = {}
_ARGV, _STDIN = list(sys.argv), sys.stdin


def apply(request: dict[str, Any], decode: Callable[[Any], Any]) -> None:
    """The subject's side: take the test's environment changes, working directory and random seeds."""
    env = request.get("env")
    if isinstance(env, dict):
        for key, entry in env.items():
            if not (isinstance(key, str) and isinstance(entry, list) and entry):
                continue
            if entry[0] == "set" and len(entry) == 2:
                os.environ[key] = str(entry[1])
            elif entry[0] == "unset" or (entry[0] == "revert" and key not in STARTUP):
                os.environ.pop(key, None)
            elif entry[0] == "revert":
                os.environ[key] = STARTUP[key]
    argv = request.get("argv")
    if isinstance(argv, dict):
        given = argv.get("set")
        sys.argv = [str(a) for a in given] if isinstance(given, list) else list(_ARGV)
    stdin = request.get("stdin")
    if isinstance(stdin, dict):
        with contextlib.suppress(Exception):  # a stream we cannot name: ours stays
            sys.stdin = decode(stdin["set"]) if "set" in stdin else _STDIN
    cwd = request.get("cwd")
    if isinstance(cwd, str):
        with contextlib.suppress(OSError):
            os.chdir(cwd)
    if "random" in request:
        with contextlib.suppress(Exception):  # a state the generator refuses: the test's own problem
            for name, args in decode(request["random"]):
                getattr(random, {"seed": "seed", "setstate": "setstate"}[name])(*args)
    patched = request.get("patched")
    if isinstance(patched, dict):
        _patch(patched, decode)
    streams = request.get("streams")
    if isinstance(streams, dict):
        for key in ("out", "err"):
            entry = streams.get(key)
            if isinstance(entry, dict):
                with contextlib.suppress(Exception):  # a stream we cannot stand for: our capture stays
                    TEST_STREAMS[key] = decode(entry["set"]) if "set" in entry else None
    log_level(request)


def log_level(message: dict[str, Any]) -> None:
    """The lowest level any of the test's loggers takes (grader/ambient.py), from a request or an answer."""
    level = message.get("log_level")
    if type(level) is int:
        logging.getLogger().setLevel(level)


# A test's own object standing as sys.stdout / sys.stderr in the grader: the request's stream here.
TEST_STREAMS: dict[str, Any] = {"out": None, "err": None}


_OWN: dict[str, object] = {}  # this process's own ambient functions, as they were before the first patch
_ABSENT: Any = object()


def _patch(patched: dict[Any, Any], decode: Callable[[Any], Any]) -> None:
    """A test's replacements of ``AMBIENT_FUNCTIONS`` (and their undoing), here; nothing else of a module."""
    for key, entry in patched.items():
        module_name, _, name = str(key).rpartition(".")
        if name not in AMBIENT_FUNCTIONS.get(module_name, ()) or not (isinstance(entry, list) and entry):
            continue
        module = importlib.import_module(module_name)
        own = _OWN.setdefault(f"{module_name}.{name}", vars(module).get(name, _ABSENT))
        with contextlib.suppress(Exception):  # a callable we cannot stand for: ours stays
            if entry[0] == "set" and len(entry) == 2:
                setattr(module, name, decode(entry[1]))
            elif entry[0] == "unset" or (entry[0] == "revert" and own is _ABSENT):
                if name in vars(module):
                    delattr(module, name)
            elif entry[0] == "revert":
                setattr(module, name, own)


_CAPTURING: list[Capture] = []


def _harness_frame(filename: str) -> bool:
    """Whether a warning's frame is the harness's (ours, a stand-in's, or none), not the change's."""
    return filename.startswith((HARNESS_DIR, "<patchgate")) or filename == "sys"


def install_warning_hook() -> None:
    """Show every warning, and keep those shown while a request runs for its answer (any thread's)."""
    warnings.simplefilter("always")

    def show(*shown: Any) -> None:  # showwarning's (message, category, filename, lineno, file, line)
        for capture in _CAPTURING[:1]:
            if len(capture.caught) < MAX_WARNINGS:
                capture.caught.append(warnings.WarningMessage(*shown[:6]))

    warnings.showwarning = show  # type: ignore[assignment]


class _Relay(logging.Handler):
    """Every record the change logs while a request runs (any thread's), for the test's loggers.

    In one process the change's records reach the test's ``caplog`` and ``assertLogs``, and the
    test's levels decide which are made. Here the root logger makes them all, and the grader's
    loggers decide which of them to handle (``grader/ambient.py``).
    """

    def emit(self, record: logging.LogRecord) -> None:
        for capture in _CAPTURING[:1]:
            if len(capture.records) < MAX_RECORDS:
                capture.records.append(_described(record))
            else:
                capture.records_cut += 1


def _described(record: logging.LogRecord) -> dict[str, Any]:
    try:
        message = record.getMessage()
    except Exception:  # the change's arguments did not format: as logging would say, in short
        message = f"{record.msg!s:.{RECORD_CHARS}} (the arguments did not format)"
    exc_text = record.exc_text
    if record.exc_info and not exc_text:
        with contextlib.suppress(Exception):
            exc_text = logging.Formatter().formatException(record.exc_info)
    found = {
        "name": str(record.name), "levelno": int(record.levelno), "levelname": str(record.levelname),
        "msg": message[:RECORD_CHARS], "pathname": str(record.pathname), "filename": str(record.filename),
        "lineno": int(record.lineno or 0),
        "funcName": str(record.funcName), "module": str(record.module), "created": float(record.created),
    }  # fmt: skip
    if exc_text:
        found["exc_text"] = str(exc_text)[:RECORD_CHARS]
    if record.stack_info:
        found["stack_info"] = str(record.stack_info)[:RECORD_CHARS]
    return found


def install_log_relay() -> None:
    """Keep the records the change makes for the request's answer: the root logger at its lowest level
    until the first request says the test's (``apply``: ``log_level``)."""
    root = logging.getLogger()
    root.addHandler(_Relay(logging.NOTSET))
    root.setLevel(logging.NOTSET)


class _Stream(io.TextIOWrapper):
    """``sys.stdout`` or ``sys.stderr`` during one request: text, ``.buffer`` bytes, and a real descriptor.

    ``fileno()`` (a CLI that opens its own writer on ``sys.stdout.fileno()``) points the process's
    descriptor at a temporary file until the request ends, so what is written there is relayed too.
    """

    def __init__(self, fd: int) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)
        self._fd = fd
        self._saved: int | None = None
        self._file: Any = None

    def fileno(self) -> int:
        if self._saved is None:
            self.flush()
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed in text()
            self._saved = os.dup(self._fd)
            os.dup2(self._file.fileno(), self._fd)
        return self._fd

    def isatty(self) -> bool:
        return False

    def reset(self) -> None:
        self.seek(0)
        self.truncate()

    def written(self) -> bool:
        """Whether anything was written since the last reset (write-through: it is in the buffer)."""
        return self._saved is not None or bool(self.buffer.tell())  # type: ignore[attr-defined]

    def text(self) -> str:
        """What the request wrote, either way; the descriptor is the process's own again."""
        if not self.written():
            return ""
        self.flush()
        data = self.buffer.getvalue()  # type: ignore[attr-defined]
        if self._saved is not None:
            os.dup2(self._saved, self._fd)
            os.close(self._saved)
            self._saved = None
            self._file.seek(0)
            data += self._file.read(CAPTURE_CHARS * 4)
            self._file.close()
        return bytes(data).decode("utf-8", "replace")


class Capture:
    """The subject's side: prints and warnings of one request, for its answer.

    Warnings are caught by one hook for the whole process (``install_warning_hook``: every warning
    shown, the test's own filters decide on the grader's side), not a ``catch_warnings`` per request.
    """

    def __init__(self) -> None:
        self.out, self.err = _Stream(1), _Stream(2)
        self.caught: list[warnings.WarningMessage] = []
        self.records: list[dict[str, Any]] = []
        self.records_cut = 0

    def reset(self) -> None:
        if self.out.written():
            self.out.reset()
        if self.err.written():
            self.err.reset()
        if self.caught:
            self.caught = []
        if self.records:
            self.records, self.records_cut = [], 0

    def start(self) -> tuple[Any, Any]:
        """Take the process's streams and warnings for this request; return the streams to put back."""
        saved = sys.stdout, sys.stderr
        sys.stdout = TEST_STREAMS["out"] if TEST_STREAMS["out"] is not None else self.out
        sys.stderr = TEST_STREAMS["err"] if TEST_STREAMS["err"] is not None else self.err
        _CAPTURING[:] = [self]
        return saved

    def stop(self, saved: tuple[Any, Any]) -> None:
        _CAPTURING[:] = []
        sys.stdout, sys.stderr = saved

    @contextlib.contextmanager
    def during(self) -> Iterator[None]:
        saved = self.start()
        try:
            yield
        finally:
            self.stop(saved)

    def fields(self, encode: Callable[[object], Any]) -> dict[str, Any]:
        """What the request printed and warned, for its answer (nothing when it did neither)."""
        found: list[dict[str, Any]] = []
        for w in self.caught[:MAX_WARNINGS]:
            with contextlib.suppress(Exception):  # a category we cannot describe is left out
                ours = _harness_frame(str(w.filename))  # stacklevel past the change: the test's line
                found.append({"category": encode(w.category), "message": str(w.message)[:2000],
                              "filename": "" if ours else str(w.filename),
                              "lineno": 0 if ours else int(w.lineno)})  # fmt: skip
                gref = getattr(w.message, "_patchgate_gref", None)
                if type(gref) is int:  # the test's own warning object, warned by the change
                    found[-1]["same"] = {codec.TYPE: "obj", "side": "g", "id": gref}
        out: dict[str, Any] = {key: stream.text()[:CAPTURE_CHARS] for key, stream in
                               (("out", self.out), ("err", self.err)) if stream.written()}  # fmt: skip
        if found:
            out["warnings"] = found
        if self.records:
            out["logs"] = self.records
            if self.records_cut:
                out["logs_cut"] = self.records_cut
        return out
