"""Remove sandbox containers: each run's own, and those whose owning process died.

A run that fails removes its container before the error goes up; a run that
returns a result hands its container to ``remove_later``, a thread of its own
that the interpreter waits for at exit and ``close_creations`` waits for on
termination. A process killed outright (SIGKILL, a default SIGTERM) cannot
remove anything: each container is labelled with its owner's host name and
pid, so a restarted worker can remove what its predecessor left. Containers
this finds are also bounded on their own: their waiter ends them after
``timeout_s + 610`` s.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator

import docker
from docker.errors import APIError, DockerException, NotFound

from sandbox.errors import SandboxError

log = logging.getLogger(__name__)

SANDBOX_LABEL = "patchgate.sandbox"
OWNER_HOST = "patchgate.owner-host"
OWNER_PID = "patchgate.owner-pid"
REMOVE_WAIT_S = 30.0
# A background removal that fails is tried again after each of these pauses; after the
# last try the container is left to remove_owned, remove_orphans and its waiter's deadline.
REMOVE_RETRY_S = (1.0, 5.0)


class _Creations:
    """Container creations and removals in flight in this process; closed once it is being terminated."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.in_flight: dict[int, int] = {}  # thread id -> creations it has in flight
        self.removals = 0  # background removals not yet finished
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
    """Refuse new creations and wait for those and the removals in flight; False on a timeout.

    Creations of the calling thread are not waited for: a signal handler runs on
    top of whatever its thread was doing, which cannot go on until it returns.
    """
    me = threading.get_ident()
    deadline = time.monotonic() + timeout_s
    with _CREATIONS.cond:
        _CREATIONS.closed = True
        while any(tid != me for tid in _CREATIONS.in_flight) or _CREATIONS.removals:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _CREATIONS.cond.wait(left)
    return True


def remove_container(client: docker.DockerClient, name: str) -> None:
    """Remove the container ``name`` and wait until the engine no longer knows it."""
    deadline = time.monotonic() + REMOVE_WAIT_S
    while time.monotonic() < deadline:
        try:
            client.api.remove_container(name, force=True)
        except NotFound:
            return
        except APIError as exc:
            # 409: auto_remove is already removing it; wait for that to finish.
            if exc.status_code != 409:
                raise SandboxError(f"could not remove container {name}: {exc.explanation}") from exc
        try:
            client.api.inspect_container(name)
        except NotFound:
            return
        time.sleep(0.1)
    raise SandboxError(f"container {name} was not removed within {REMOVE_WAIT_S:g} s")


def remove_later(remove: Callable[[], None], name: str, done: Callable[[], None]) -> None:
    """Call ``remove`` (of the container ``name``) in a thread of its own, then ``done``.

    The thread is not a daemon: the interpreter waits for it before exiting, and
    ``close_creations`` and ``wait_removals`` wait for it too. A ``remove`` that
    raises is logged and tried again after each of REMOVE_RETRY_S; ``done`` runs
    whatever happened.
    """
    gate = _CREATIONS
    with gate.cond:
        gate.removals += 1
    thread = threading.Thread(target=_removing, args=(gate, remove, name, done), name=f"{name}-removal")
    try:
        thread.start()
    except RuntimeError:
        # No thread to be had (resources, interpreter shutdown): remove it here and now.
        _removing(gate, remove, name, done)


def wait_removals(timeout_s: float) -> bool:
    """Wait until every background removal has finished; False when some did not in time."""
    deadline = time.monotonic() + timeout_s
    with _CREATIONS.cond:
        while _CREATIONS.removals:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _CREATIONS.cond.wait(left)
    return True


def _removing(gate: _Creations, remove: Callable[[], None], name: str, done: Callable[[], None]) -> None:
    try:
        for pause in (*REMOVE_RETRY_S, None):
            try:
                remove()
            except Exception as exc:  # engine, network or file system: logged, tried again, swept
                if pause is None:
                    log.error("could not remove sandbox container %s, left to the reaper: %s", name, exc)
                    return
                log.warning(
                    "removing sandbox container %s failed, trying again in %g s: %s", name, pause, exc
                )
                time.sleep(pause)
            else:
                return
    finally:
        try:
            done()
        finally:
            with gate.cond:
                gate.removals -= 1
                gate.cond.notify_all()


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
