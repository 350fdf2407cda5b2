"""Process hygiene for the in-container scripts: adopt orphans, then kill every descendant."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make orphans of our descendants our children rather than init's (Linux prctl)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def children() -> list[int]:
    """Return the pids whose parent is this process."""
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


def kill(pid: int) -> None:
    """Kill ``pid`` and its process group, whichever still exists."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def reap_descendants() -> None:
    """Kill every process left under us; orphans come back to us as the subreaper, round after round."""
    for _ in range(1000):
        found = children()
        if not found:
            return
        for child in found:
            kill(child)
        for child in found:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child, 0)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``."""
    while data:
        data = data[os.write(fd, data) :]
