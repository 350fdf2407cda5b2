"""Remove sandbox containers whose owning process died without removing them.

A run removes its container in ``finally``; a process killed outright (SIGKILL, a
default SIGTERM) cannot. Each container is labelled with its owner's host name and pid,
so a restarted worker can remove what its predecessor left. Containers this finds are
also bounded on their own: their waiter ends them after ``timeout_s + 610`` s.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator

import docker
from docker.errors import DockerException

from sandbox.errors import SandboxError

SANDBOX_LABEL = "patchgate.sandbox"
OWNER_HOST = "patchgate.owner-host"
OWNER_PID = "patchgate.owner-pid"


class _Creations:
    """Container creations in flight in this process; closed once it is being terminated."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.in_flight: dict[int, int] = {}  # thread id -> creations it has in flight
        self.closed = False


_CREATIONS = _Creations()


@contextlib.contextmanager
def creating() -> Iterator[None]:
    """Wrap every container creation: refused once the process is terminating.

    A container whose creation request is in flight when termination starts would
    appear after the last sweep; ``close_creations`` waits for those first.
    """
    me = threading.get_ident()
    with _CREATIONS.cond:
        if _CREATIONS.closed:
            raise SandboxError("this process is terminating: no new sandbox containers")
        _CREATIONS.in_flight[me] = _CREATIONS.in_flight.get(me, 0) + 1
    try:
        yield
    finally:
        with _CREATIONS.cond:
            _CREATIONS.in_flight[me] -= 1
            if not _CREATIONS.in_flight[me]:
                del _CREATIONS.in_flight[me]
            _CREATIONS.cond.notify_all()


def close_creations(timeout_s: float) -> bool:
    """Refuse new creations and wait for those in flight; False when some did not finish in time.

    Creations of the calling thread are not waited for: a signal handler runs on
    top of whatever its thread was doing, which cannot go on until it returns.
    """
    me = threading.get_ident()
    deadline = time.monotonic() + timeout_s
    with _CREATIONS.cond:
        _CREATIONS.closed = True
        while any(tid != me for tid in _CREATIONS.in_flight):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _CREATIONS.cond.wait(left)
    return True


def owner_labels() -> dict[str, str]:
    """Return the labels that name this process as a container's owner."""
    return {OWNER_HOST: socket.gethostname(), OWNER_PID: str(os.getpid())}


def remove_orphans(client: docker.DockerClient) -> list[str]:
    """Remove this host's sandbox containers whose owner process is gone; return their ids.

    Best effort: an engine error here never fails the caller.
    """
    return _remove_where(client, lambda pid: not _alive(pid))


def remove_owned(client: docker.DockerClient) -> list[str]:
    """Remove every sandbox container this process owns (it is being terminated); return their ids."""
    me = os.getpid()
    return _remove_where(client, lambda pid: pid == me)


def _remove_where(client: docker.DockerClient, owner_matches: Callable[[int], bool]) -> list[str]:
    host = socket.gethostname()
    removed: list[str] = []
    # The list endpoint only: other processes' containers come and go meanwhile.
    filters = {"label": [SANDBOX_LABEL, f"{OWNER_HOST}={host}"]}
    try:
        listed = client.api.containers(all=True, filters=filters)
    except DockerException:
        return removed
    for entry in listed:
        pid = str((entry.get("Labels") or {}).get(OWNER_PID, ""))
        if pid.isdigit() and owner_matches(int(pid)):
            with contextlib.suppress(DockerException):
                client.api.remove_container(entry["Id"], force=True)
                removed.append(str(entry["Id"]))
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True
