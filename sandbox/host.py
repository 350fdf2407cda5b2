"""Run a process on the host, outside any sandbox: the one way patchgate starts a program.

git (workspaces, suites repositories), docker (image builds, the engine's CLI)
and debootstrap run through :func:`run_process` with an argv tuple, never a
shell. Nothing here is sandboxed: the PR's code never runs through this module,
only through sandbox.docker's hardened containers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess  # nosec B404 - argv tuples only, never a shell
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

DEFAULT_OUTPUT_CAP = 16 * 1024 * 1024


@dataclass(frozen=True)
class ProcessResult:
    """The outcome of one host process."""

    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float
    timed_out: bool = False
    truncated: bool = False


class ProcessError(Exception):
    """A host process failed; the message shows what ran and what it printed."""

    def __init__(self, result: ProcessResult, what: str = "") -> None:
        self.result = result
        self.what = what
        super().__init__(str(self))

    def __str__(self) -> str:
        r = self.result
        head = f"{self.what}: " if self.what else ""
        status = "timed out" if r.timed_out else f"return code {r.returncode}"
        return (
            f"{head}command {' '.join(r.argv)!r} failed ({status})\n"
            f"stdout: {_tail(r.stdout)}\nstderr: {_tail(r.stderr)}"
        )


def _tail(data: bytes, limit: int = 2000) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def _drain(stream: IO[bytes], sink: bytearray, cap: int, over: threading.Event) -> None:
    while chunk := stream.read(65536):
        room = cap - len(sink)
        if room > 0:
            sink.extend(chunk[:room])
        if len(chunk) > room:
            over.set()


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float = 600.0,
    output_cap: int = DEFAULT_OUTPUT_CAP,
    check: bool = False,
    what: str = "",
) -> ProcessResult:
    """Run ``argv`` with a timeout and capped output, killing its process group on exit.

    A missing executable is returned as return code 127 with the reason on
    stderr, like a shell would. With ``check=True`` a non-zero return code or
    a timeout raises :class:`ProcessError`.
    """
    args = tuple(str(a) for a in argv)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(  # nosec B603 - argv tuple, no shell
            args,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        result = ProcessResult(args, 127, b"", str(exc).encode(), time.monotonic() - start)
        if check:
            raise ProcessError(result, what) from exc
        return result

    out, err = bytearray(), bytearray()
    over = threading.Event()
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, out, output_cap, over), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, err, output_cap, over), daemon=True),
    ]
    for t in readers:
        t.start()
    timed_out = False
    try:
        if stdin is not None and proc.stdin is not None:
            try:
                proc.stdin.write(stdin)
                proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
    finally:
        if proc.poll() is None or timed_out:
            _kill_group(proc)
        proc.wait()
        for t in readers:
            t.join(timeout=5)
        for stream in (proc.stdout, proc.stderr, proc.stdin):
            if stream is not None:
                stream.close()
    result = ProcessResult(
        args,
        proc.returncode if not timed_out else -signal.SIGKILL,
        bytes(out),
        bytes(err),
        time.monotonic() - start,
        timed_out=timed_out,
        truncated=over.is_set(),
    )
    if check and (timed_out or result.returncode != 0):
        raise ProcessError(result, what)
    return result


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
