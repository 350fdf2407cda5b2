"""Run one untrusted command in a fresh, hardened Docker container.

In-container conventions (other parts of patchgate rely on them):

- the command runs as uid:gid 10001:10001 ("sandbox"), with ``HOME=/tmp``;
- the root filesystem is read-only. Writable: each ``copy_in`` target (a tmpfs of
  ``limits.tmpfs_mb`` MiB owned by 10001, e.g. the PR tree at /work), ``/tmp`` (a tmpfs of
  the same size, mode 1777) and Docker's ``/dev/shm`` (64 MiB, for multiprocessing);
- ``mounts`` are read-only bind mounts; ``collect`` paths come back as regular files;
- python3 and the base image's tools (pytest, ruff, mypy, bandit, semgrep, ...) are on PATH;
- the environment is exactly PATH, HOME, LANG plus ``RunSpec.env``: nothing of the host's;
- the command starts in ``RunSpec.workdir``; there is no network and no Docker socket;
- a copy-in that does not fit (or a missing workdir) ends the run with exit code 125.

With ``RunSpec.grader`` the run has two trust domains (see sandbox.grader): the grader
runs as 10003 in a 0700 tmpfs at /grader, the command as 10001; they meet only at a
socket in /run/patchgate-rpc, and the run lasts as long as the grader does.

While a run goes on, the host watches the container's cgroup (sandbox.cgroup): a run
that hits its pids or memory limit is ended at once and says which (``limit_hit``).

How a run works: the container's init (tini) runs a waiter as uid 10002; everything
else is an exec. One exec as 10001 unpacks the copy-in tarballs (bind-mounted read-only)
into the tmpfs targets and execs ``timeout -k`` around the command; its output is read
with a byte cap. Afterwards ``kill -KILL -1`` as 10001 ends every process the command
left (setsid cannot escape a uid), which never touches the waiter; one more exec reads
the cgroup's peak memory and OOM count and tars the ``collect`` paths to stdout. With a
grader, the sweep as 10001 ends the subject once the grader is done, and the last exec
(as the grader) ends the grader's leftovers. A run that fails removes its container before
its error goes up; one that has its result returns it at once and leaves the removal to a
thread that still holds the run's concurrency slot (sandbox.reaper.remove_later: the
interpreter and ``close_creations`` wait for it). If the host process dies first, the
waiter's own deadline ends the container and ``auto_remove`` deletes it.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import docker
from docker.types import LogConfig, Mount, Ulimit

from sandbox.copyin import CONTAINER_TMP, INBOX, open_inbox, pack_copy_in, writable_roots
from sandbox.engine import docker_client, engine_errors
from sandbox.errors import SandboxError
from sandbox.execution import HARD_KILL_S, HOST_GRACE_S, KILL_GRACE_S, SANDBOX_UID, Execution
from sandbox.grader import GRADER_UID, copy_private, pack_private
from sandbox.images import ISOLATED_BIN, image_id
from sandbox.pool import Warm, WarmPool
from sandbox.reaper import (
    REMOVE_WAIT_S,
    SANDBOX_LABEL,
    creating,
    owner_labels,
    remove_container,
    remove_later,
    remove_orphans,
    wait_removals,
)
from sandbox.spec import GRADER_HOME, RENDEZVOUS, MiB, RunResult, RunSpec

log = logging.getLogger(__name__)

# The waiter runs as a different uid so that the kill sweep (as 10001) cannot end it.
WAITER_UID = 10002
CONTAINER_PATH = f"{ISOLATED_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_ENV: Mapping[str, str] = {"PATH": CONTAINER_PATH, "HOME": CONTAINER_TMP, "LANG": "C.UTF-8"}
LABEL = SANDBOX_LABEL
# The waiter outlives any run, then ends the container even if nobody removes it.
WAITER_MARGIN_S = 600
# Containers made ahead of need per shape, for `patchgate run` and the worker (sandbox.pool).
WARM_PER_SHAPE = 1


class DockerSandbox:
    """Runs RunSpecs in fresh hardened containers, at most ``max_concurrency`` at a time.

    A container counts against that until it is removed, after its run has returned.
    ``runtime`` names an OCI runtime registered with the engine (e.g. ``runsc`` for
    gVisor); None uses the engine's default (runc). ``labels`` are added to every
    container (the tests use them to find their own). With ``warm`` > 0, up to that many
    containers of each shape a run used are made ahead of the next run (sandbox.pool);
    ``close`` removes those still idle (so does the interpreter's exit).
    """

    def __init__(
        self,
        *,
        max_concurrency: int = 2,
        client: docker.DockerClient | None = None,
        runtime: str | None = None,
        labels: Mapping[str, str] | None = None,
        warm: int = 0,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if warm < 0:
            raise ValueError(f"warm must not be negative, got {warm}")
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._client = client
        self._client_lock = threading.Lock()
        self.runtime = runtime
        self.labels = dict(labels or {})
        self.pool = WarmPool(self._discard, per_shape=warm) if warm else None
        if self.pool is not None:
            atexit.register(self.close)

    def close(self) -> None:
        """Remove the containers made ahead of need that no run has claimed, and wait until they are gone.

        Also at interpreter exit: by then nothing waits for a removal's thread, so this does.
        """
        if self.pool is not None:
            self.pool.close()
            if not wait_removals(REMOVE_WAIT_S):
                log.warning("containers made ahead of need were not all removed: left to the reaper")

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, spec: RunSpec) -> RunResult:
        """Run ``spec.argv`` in a fresh container and return what happened.

        A failing, missing, timed-out, OOM-killed or over-talkative command is a
        RunResult. Raises EngineUnavailable when no engine answers, ImageMissing
        when ``spec.image`` is not built, SandboxError for any other engine failure,
        ValueError for an invalid environment variable in ``spec.env``.
        """
        _check_env(spec.env)
        self._slots.acquire()
        handed_over = False
        try:
            with engine_errors():
                result, removal = self._run(spec)
            # The result is whole: the container goes in the background, holding the slot till gone.
            remove_later(removal.remove, removal.name, self._slots.release)
            handed_over = True
        finally:
            if not handed_over:
                self._slots.release()
        return result

    def client(self) -> docker.DockerClient:
        """Return the engine client, connecting on first use.

        The first connection also removes containers that dead processes on this host
        left behind (see sandbox.reaper).
        """
        with self._client_lock:
            if self._client is None:
                self._client = docker_client()
                remove_orphans(self._client)
            return self._client

    def _run(self, spec: RunSpec) -> tuple[RunResult, _Removal]:
        """Run ``spec``; return its result and the removal still owed, or raise having removed it."""
        client = self.client()
        image = image_id(spec.image, client)
        options = self._options(spec, image)
        shape = json.dumps(options, sort_keys=True, default=str)
        private = pack_private(spec.grader.private) if spec.grader is not None else None
        staged = TemporaryDirectory(prefix="patchgate-run-")
        try:
            # Packed before any container is claimed or made: a tree over a bound is refused first.
            unpack = pack_copy_in(spec.copy_in, Path(staged.name), SANDBOX_UID)
        except BaseException:
            staged.cleanup()
            raise
        warm = self.pool.claim(shape) if self.pool is not None else None
        if warm is None:
            name, inbox, container = f"patchgate-{uuid.uuid4().hex[:16]}", staged, None
        else:
            name, inbox, container = warm.name, warm.inbox, warm.container
            _move_into(Path(staged.name), Path(inbox.name))
            staged.cleanup()
        removal = _Removal(client, name, inbox)
        try:
            if container is None:
                container = self._start(client, options, name, Path(inbox.name))
            if self.pool is not None:
                self.pool.refill(shape, lambda: self._make_warm(client, options))
            if private is not None:
                copy_private(client.api, container.id, private)
            return Execution(client, container, spec, unpack).run(), removal
        except BaseException:
            removal.remove()
            raise

    def _make_warm(self, client: docker.DockerClient, options: dict[str, Any]) -> Warm:
        name = f"patchgate-{uuid.uuid4().hex[:16]}"
        inbox = TemporaryDirectory(prefix="patchgate-run-")
        open_inbox(Path(inbox.name), SANDBOX_UID)
        try:
            return Warm(name, self._start(client, options, name, Path(inbox.name)), inbox)
        except BaseException:
            _Removal(client, name, inbox).remove()
            raise

    def _discard(self, warm: Warm) -> None:
        removal = _Removal(self.client(), warm.name, warm.inbox)
        remove_later(removal.remove, removal.name, lambda: None)

    def _options(self, spec: RunSpec, image: str) -> dict[str, Any]:
        """What ``containers.create`` is given for ``spec``, but the name and the inbox's mount."""
        limits = spec.limits
        tmpfs = {CONTAINER_TMP: f"rw,exec,nosuid,nodev,size={limits.tmpfs_mb}m,mode=1777"}
        for root in writable_roots(spec.copy_in):
            tmpfs[root] = (
                f"rw,exec,nosuid,nodev,size={limits.tmpfs_mb}m,uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0755"
            )
        if spec.grader is not None:
            owner = f"uid={GRADER_UID},gid={GRADER_UID}"
            tmpfs[GRADER_HOME] = f"rw,exec,nosuid,nodev,size={limits.tmpfs_mb}m,{owner},mode=0700"
            tmpfs[RENDEZVOUS] = f"rw,noexec,nosuid,nodev,size=1m,{owner},mode=0711"
        mounts = []
        for m in spec.mounts:
            if not m.source.exists():
                raise SandboxError(f"mount source {m.source} does not exist")
            mounts.append(Mount(m.target, str(m.source.resolve()), type="bind", read_only=True))
        waiter_s = int(limits.timeout_s + KILL_GRACE_S + HOST_GRACE_S + HARD_KILL_S) + WAITER_MARGIN_S
        return {
            "image": image,
            "command": ["sleep", str(waiter_s)],
            "hostname": "sandbox",
            "user": f"{WAITER_UID}:{WAITER_UID}",
            "environment": dict(BASE_ENV),
            "working_dir": "/",
            "labels": {LABEL: "1", **owner_labels(), **self.labels},
            "init": True,
            "auto_remove": True,
            "read_only": True,
            "network_mode": "none",
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges:true"],
            "mem_limit": limits.memory_mb * MiB,
            # Equal to mem_limit: no swap, so a memory bomb meets the OOM killer.
            "memswap_limit": limits.memory_mb * MiB,
            "pids_limit": limits.pids,
            "nano_cpus": int(limits.cpus * 1e9),
            "tmpfs": tmpfs,
            "mounts": mounts,
            "ulimits": [Ulimit(name="core", soft=0, hard=0)],
            "log_config": LogConfig(type=LogConfig.types.NONE),
            "runtime": self.runtime,
        }

    def _start(self, client: docker.DockerClient, options: dict[str, Any], name: str, inbox: Path) -> Any:
        mounts = [Mount(INBOX, str(inbox), type="bind", read_only=True), *options["mounts"]]
        with creating():
            container = client.containers.create(**{**options, "mounts": mounts}, name=name)
        container.start()
        return container


class _Removal:
    """What a run leaves behind: its container (perhaps never created) and its inbox folder."""

    def __init__(self, client: docker.DockerClient, name: str, scratch: TemporaryDirectory[str]) -> None:
        self.client = client
        self.name = name
        self.scratch = scratch

    def remove(self) -> None:
        """Remove the container, then the scratch directory bind-mounted into it."""
        try:
            remove_container(self.client, self.name)
        finally:
            self.scratch.cleanup()


def _move_into(staged: Path, inbox: Path) -> None:
    """Move the packed copy-in from where it was packed into a claimed container's (empty) inbox."""
    for entry in staged.iterdir():
        entry.rename(inbox / entry.name)


def _check_env(env: Mapping[str, str]) -> None:
    for key, value in env.items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ValueError(f"invalid environment variable name or value: {key!r}")
