"""One run inside a started sandbox container: the command (or the grader and its subject), the
sweep of what it left, and the collect exec. sandbox/docker.py creates the container and hands it
here; its docstring says how a run works.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

import docker
import requests
from docker.errors import APIError, NotFound

from sandbox import cgroup
from sandbox.grader import GRADER_UID, SubjectDrain
from sandbox.spec import LimitHit, MiB, RunResult, RunSpec
from sandbox.stats import COLLECT_SCRIPT, Collected, parse_collect
from sandbox.stream import Demux, ExecStream

SANDBOX_UID = 10001

KILL_GRACE_S = 2.0  # `timeout -k`: SIGTERM at the deadline, SIGKILL this much later
HOST_GRACE_S = 3.0  # then the host sweeps every sandbox process itself
HARD_KILL_S = 5.0  # then the host kills the whole container
COLLECT_CAP = 64 * MiB
COLLECT_TIMEOUT_S = 60.0
POLL_S = 0.25

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


class Execution:
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
