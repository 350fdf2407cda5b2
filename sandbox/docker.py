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

import contextlib
import dataclasses
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import docker
import requests
from docker.errors import APIError, NotFound
from docker.types import LogConfig, Mount, Ulimit

from sandbox import cgroup
from sandbox.copyin import CONTAINER_TMP, INBOX, pack_copy_in, writable_roots
from sandbox.engine import docker_client, engine_errors
from sandbox.errors import SandboxError
from sandbox.grader import GRADER_UID, SubjectDrain, copy_private, pack_private
from sandbox.images import ISOLATED_BIN, require_image
from sandbox.reaper import (
    SANDBOX_LABEL,
    creating,
    owner_labels,
    remove_container,
    remove_later,
    remove_orphans,
)
from sandbox.spec import GRADER_HOME, RENDEZVOUS, LimitHit, MiB, RunResult, RunSpec
from sandbox.stats import COLLECT_SCRIPT, Collected, parse_collect
from sandbox.stream import Demux, ExecStream

SANDBOX_UID = 10001
# The waiter runs as a different uid so that the kill sweep (as 10001) cannot end it.
WAITER_UID = 10002
CONTAINER_PATH = f"{ISOLATED_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_ENV: Mapping[str, str] = {"PATH": CONTAINER_PATH, "HOME": CONTAINER_TMP, "LANG": "C.UTF-8"}
LABEL = SANDBOX_LABEL

KILL_GRACE_S = 2.0  # `timeout -k`: SIGTERM at the deadline, SIGKILL this much later
HOST_GRACE_S = 3.0  # then the host sweeps every sandbox process itself
HARD_KILL_S = 5.0  # then the host kills the whole container
COLLECT_CAP = 64 * MiB
COLLECT_TIMEOUT_S = 60.0
POLL_S = 0.25
# The waiter outlives any run, then ends the container even if nobody removes it.
WAITER_MARGIN_S = 600

# Unpack each copy-in tarball, enter the workdir, run `env -u ... timeout -k ... argv`.
# Only positional parameters carry data: nothing from the spec is ever parsed as shell.
# The command gets the oom-killer's highest score: under memory pressure it goes first.
_RUN_SCRIPT = r"""
echo 1000 > /proc/self/oom_score_adj 2>/dev/null
n=$1; shift
while [ "$n" -gt 0 ]; do
  mkdir -p -- "$2" && tar -x -f "$1" -C "$2" \
    || { echo "patchgate: copying into $2 failed (does it fit the tmpfs?)" >&2; exit 125; }
  shift 2; n=$((n - 1))
done
cd -- "$1" || exit 125
shift
exec env "$@"
"""
# Variables Docker (HOSTNAME) or the shell's cd (PWD, OLDPWD) add: not part of the contract.
_STRAY_ENV = ("HOSTNAME", "PWD", "OLDPWD")


class DockerSandbox:
    """Runs RunSpecs in fresh hardened containers, at most ``max_concurrency`` at a time.

    A container counts against that until it is removed, after its run has returned.
    ``runtime`` names an OCI runtime registered with the engine (e.g. ``runsc`` for
    gVisor); None uses the engine's default (runc). ``labels`` are added to every
    container (the tests use them to find their own).
    """

    def __init__(
        self,
        *,
        max_concurrency: int = 2,
        client: docker.DockerClient | None = None,
        runtime: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._client = client
        self._client_lock = threading.Lock()
        self.runtime = runtime
        self.labels = dict(labels or {})

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
        require_image(client, spec.image)
        name = f"patchgate-{uuid.uuid4().hex[:16]}"
        private = pack_private(spec.grader.private) if spec.grader is not None else None
        scratch = TemporaryDirectory(prefix="patchgate-run-")
        try:
            unpack = pack_copy_in(spec.copy_in, Path(scratch.name), SANDBOX_UID)
        except BaseException:
            scratch.cleanup()
            raise
        removal = _Removal(client, name, scratch)
        try:
            container = self._start(client, spec, name, Path(scratch.name))
            if private is not None:
                copy_private(client.api, container.id, private)
            return _Execution(client, container, spec, unpack).run(), removal
        except BaseException:
            removal.remove()
            raise

    def _start(self, client: docker.DockerClient, spec: RunSpec, name: str, inbox: Path) -> Any:
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
        mounts = [Mount(INBOX, str(inbox), type="bind", read_only=True)]
        for m in spec.mounts:
            if not m.source.exists():
                raise SandboxError(f"mount source {m.source} does not exist")
            mounts.append(Mount(m.target, str(m.source.resolve()), type="bind", read_only=True))
        waiter_s = int(limits.timeout_s + KILL_GRACE_S + HOST_GRACE_S + HARD_KILL_S) + WAITER_MARGIN_S
        with creating():
            container = client.containers.create(
                spec.image,
                command=["sleep", str(waiter_s)],
                name=name,
                hostname="sandbox",
                user=f"{WAITER_UID}:{WAITER_UID}",
                environment=dict(BASE_ENV),
                working_dir="/",
                labels={LABEL: "1", **owner_labels(), **self.labels},
                init=True,
                auto_remove=True,
                read_only=True,
                network_mode="none",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges:true"],
                mem_limit=limits.memory_mb * MiB,
                # Equal to mem_limit: no swap, so a memory bomb meets the OOM killer.
                memswap_limit=limits.memory_mb * MiB,
                pids_limit=limits.pids,
                nano_cpus=int(limits.cpus * 1e9),
                tmpfs=tmpfs,
                mounts=mounts,
                ulimits=[Ulimit(name="core", soft=0, hard=0)],
                log_config=LogConfig(type=LogConfig.types.NONE),
                runtime=self.runtime,
            )
        container.start()
        return container


class _Removal:
    """What a run leaves behind: its container (perhaps never created) and its scratch directory."""

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


class _Execution:
    """One run inside a started container: the command, the sweep, the collection."""

    def __init__(self, client: docker.DockerClient, container: Any, spec: RunSpec, unpack: list[str]) -> None:
        self.api = client.api
        self.container = container
        self.spec = spec
        self.unpack = unpack
        self.dead = False  # the host killed the whole container
        # The command's exit code as seen while the container still ran (a child may outlive it).
        self.exit_seen: int | None = None
        self.sweeper: threading.Thread | None = None
        self.cgroup = cgroup.locate(container.id)
        self.limit_hit: LimitHit | None = None
        self.drain: SubjectDrain | None = None

    def _command(self) -> str:
        """Create the exec of the spec's command (as the sandbox uid) and return its id."""
        limits = self.spec.limits
        unset = [arg for name in _STRAY_ENV if name not in self.spec.env for arg in ("-u", name)]
        argv = [
            "sh", "-c", _RUN_SCRIPT, "sh", str(len(self.unpack) // 2), *self.unpack, self.spec.workdir,
            *unset, "timeout", "-k", f"{KILL_GRACE_S:g}", f"{limits.timeout_s:.3f}", *self.spec.argv,
        ]  # fmt: skip
        env = [f"{k}={v}" for k, v in self.spec.env.items()]
        user = f"{SANDBOX_UID}:{SANDBOX_UID}"
        return str(self.api.exec_create(self.container.id, argv, user=user, environment=env)["Id"])

    def _grader(self) -> str:
        """Create the exec of the grader's command (as the grader uid, in GRADER_HOME) and return its id."""
        grader = self.spec.grader
        if grader is None:
            raise ValueError("this run has no grader")
        limits = self.spec.limits
        unset = [arg for name in _STRAY_ENV if name not in grader.env for arg in ("-u", name)]
        argv = ["env", *unset, "timeout", "-k", f"{KILL_GRACE_S:g}", f"{limits.timeout_s:.3f}", *grader.argv]
        env = [f"{k}={v}" for k, v in grader.env.items()]
        user = f"{GRADER_UID}:{GRADER_UID}"
        created = self.api.exec_create(
            self.container.id, argv, user=user, environment=env, workdir=grader.workdir
        )
        return str(created["Id"])

    def _start_subject(self) -> None:
        self.drain = SubjectDrain(self.api, self._command())

    def run(self) -> RunResult:
        limits = self.spec.limits
        graded = self.spec.grader is not None
        exec_id = self._grader() if graded else self._command()
        start = time.monotonic()
        demux = Demux(limits.output_bytes)
        deadline = start + limits.timeout_s + KILL_GRACE_S + HOST_GRACE_S
        host_timed_out = self._pump(exec_id, demux, deadline, self._start_subject if graded else None)
        wall = time.monotonic() - start
        exit_code = self._exit_code(exec_id)
        timed_out = host_timed_out or (exit_code in (124, 137) and wall >= limits.timeout_s)
        subject_output, subject_code = b"", None
        if self.drain is not None:
            # The grader is done: whatever the untrusted command still runs is ended now. The
            # grader's own leftovers end in the collect exec, which runs as the grader.
            if not self.dead and not self._sweep((SANDBOX_UID,)):
                self._kill_container()
            subject_output, subject_code = self.drain.finish(HARD_KILL_S)
        collected = Collected(peak_memory_bytes=None, oom_killed=False, files={})
        if not self.dead:
            collected = self._collect()
        if self.limit_hit is None and self.cgroup is not None:
            self.limit_hit = cgroup.limit_hit(self.cgroup)
        return RunResult(
            exit_code=exit_code,
            stdout=bytes(demux.stdout),
            stderr=bytes(demux.stderr),
            wall_s=wall,
            timed_out=timed_out,
            oom_killed=collected.oom_killed,
            output_limit_exceeded=demux.exceeded or collected.over_cap,
            peak_memory_bytes=collected.peak_memory_bytes,
            files=collected.files,
            limit_hit=self.limit_hit,
            subject_output=subject_output,
            subject_exit_code=subject_code,
        )

    def _pump(
        self, exec_id: str, demux: Demux, deadline: float, started: Callable[[], None] | None = None
    ) -> bool:
        """Read the exec's output until it ends; enforce the deadline and the cap.

        Returns True when the host had to end the command at its deadline. Reading
        never pauses: the engine finishes an exec only after its output is delivered,
        and it handles a container's events one at a time, so a sweep started while
        nobody reads the stream waits forever. The sweep runs in its own thread.
        """
        stream = ExecStream(self.api.exec_start(exec_id, socket=True))
        if started is not None:
            started()
        swept_at: float | None = None
        host_timed_out = False
        try:
            while True:
                now = time.monotonic()
                if swept_at is None and self.cgroup is not None:
                    # A fork bomb or a memory bomb ends the run now, not at the wall-clock budget.
                    self.limit_hit = cgroup.limit_hit(self.cgroup)
                    if self.limit_hit is not None:
                        swept_at = self._start_sweep(now)
                        continue
                if swept_at is None and now >= deadline:
                    host_timed_out = True
                    swept_at = self._start_sweep(now)
                elif swept_at is not None and now >= swept_at + HARD_KILL_S:
                    stream.close()
                    self._kill_container()
                    return host_timed_out
                chunk = stream.read(POLL_S)
                if chunk == b"":
                    return host_timed_out
                if chunk is None:
                    # Silence: the command may have exited while a child it left holds stdout.
                    if swept_at is None and not (state := self.api.exec_inspect(exec_id)).get("Running"):
                        code = state.get("ExitCode")
                        self.exit_seen = code if isinstance(code, int) else None
                        swept_at = self._start_sweep(time.monotonic())
                    continue
                demux.feed(chunk)
                if demux.exceeded and swept_at is None:
                    swept_at = self._start_sweep(time.monotonic())
        finally:
            stream.close()
            # The collect exec must not race a late `kill -1` from the sweep.
            if self.sweeper is not None:
                self.sweeper.join(HARD_KILL_S)
                if self.sweeper.is_alive():
                    self._kill_container()

    def _start_sweep(self, now: float) -> float:
        def sweep() -> None:
            if not self._sweep():
                self._kill_container()

        self.sweeper = threading.Thread(target=sweep, name="patchgate-sweep", daemon=True)
        self.sweeper.start()
        return now

    def _sweep(self, uids: tuple[int, ...] | None = None) -> bool:
        """Kill every process of ``uids`` (default: sandbox and grader); False when that could not start."""
        if self.dead:
            return False
        if uids is None:
            uids = (SANDBOX_UID, GRADER_UID) if self.spec.grader is not None else (SANDBOX_UID,)
        for uid in uids:
            try:
                # Under a fork bomb the exec itself may fail to start (pids limit): non-zero.
                code, _ = self.container.exec_run(
                    ["sh", "-c", "kill -KILL -1 2>/dev/null; exit 0"], user=f"{uid}:{uid}"
                )
            except (APIError, requests.exceptions.RequestException):
                return False
            if code != 0:
                return False
        return True

    def _exit_code(self, exec_id: str) -> int | None:
        """Return the command's exit code; None when the container died before anyone read it."""
        try:
            code = self.api.exec_inspect(exec_id).get("ExitCode")
        except (NotFound, APIError):
            return self.exit_seen  # the host killed the container after the command had exited
        return code if isinstance(code, int) else self.exit_seen

    def _kill_container(self) -> None:
        self.dead = True
        with contextlib.suppress(NotFound, APIError):
            self.container.kill()

    def _collect(self) -> Collected:
        grader = self.spec.grader
        paths = [*self.spec.collect, *(grader.collect if grader is not None else ())]
        # Private paths are readable by the grader's uid only; that is who collects them.
        uid = GRADER_UID if grader is not None else SANDBOX_UID
        argv = ["sh", "-c", COLLECT_SCRIPT, "sh", *paths]
        exec_id = self.api.exec_create(self.container.id, argv, user=f"{uid}:{uid}")["Id"]
        demux = Demux(COLLECT_CAP)
        stream = ExecStream(self.api.exec_start(exec_id, socket=True))
        deadline = time.monotonic() + COLLECT_TIMEOUT_S
        try:
            while time.monotonic() < deadline and not demux.exceeded:
                chunk = stream.read(POLL_S)
                if chunk == b"":
                    break
                if chunk is not None:
                    demux.feed(chunk)
        finally:
            stream.close()
        collected = parse_collect(bytes(demux.stdout), bytes(demux.stderr))
        return dataclasses.replace(collected, over_cap=demux.exceeded)


def _check_env(env: Mapping[str, str]) -> None:
    for key, value in env.items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ValueError(f"invalid environment variable name or value: {key!r}")
