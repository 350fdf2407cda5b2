"""Hostile programs against DockerSandbox's limits: pids, memory, CPU, wall clock, output."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from sandbox.docker import DockerSandbox
from sandbox.execution import HOST_GRACE_S, KILL_GRACE_S, Execution
from sandbox.host import run_process
from sandbox.images import image_id
from sandbox.reaper import remove_container
from sandbox.spec import Limits, MiB, RunResult, RunSpec

pytestmark = pytest.mark.docker


def run_python(sandbox: DockerSandbox, image: str, program: str, limits: Limits) -> RunResult:
    return sandbox.run(RunSpec(image=image, argv=("python3", "-c", textwrap.dedent(program)), limits=limits))


def test_pids_limit_stops_forking(sandbox: DockerSandbox, base_image: str) -> None:
    program = """
        import json, os, time
        children = failures = 0
        end = time.time() + 2
        while time.time() < end:
            try:
                pid = os.fork()
            except BlockingIOError:
                failures += 1
                time.sleep(0.01)
                continue
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children += 1
        print(json.dumps({"children": children, "failures": failures}))
    """
    result = run_python(sandbox, base_image, program, Limits(pids=32, timeout_s=30))
    # The first fork refused by the limit ends the run at once (the host watches the cgroup's
    # pids.events), named, instead of letting it spin until its budget.
    assert result.limit_hit == "pids", result
    assert not result.ok and not result.timed_out
    assert result.exit_code != 0


def test_fork_bomb_ends_and_the_host_still_starts_processes(sandbox: DockerSandbox, base_image: str) -> None:
    # The bomb's pids are the container's: the host still forks while it runs. (How long a host
    # process then takes depends on everything else the machine does: not asserted here.)
    exits: list[int | None] = []
    done = threading.Event()

    def probe() -> None:
        while not done.is_set():
            exits.append(run_process([sys.executable, "-c", "pass"], timeout=120).returncode)
            time.sleep(0.2)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        result = sandbox.run(
            RunSpec(
                image=base_image,
                argv=("bash", "-c", "bomb() { bomb | bomb & }; bomb; sleep 60"),
                limits=Limits(pids=64, timeout_s=4, cpus=1.0),
            )
        )
    finally:
        done.set()
        prober.join()
    # Ended at the pids limit (or, at the latest, by its time budget).
    assert result.limit_hit == "pids" or result.timed_out, result
    assert exits and all(code == 0 for code in exits), exits


def test_memory_bomb_is_reported_as_oom_killed(sandbox: DockerSandbox, base_image: str) -> None:
    program = """
        hog = []
        while True:
            hog.append(b"x" * 10**7)
    """
    result = run_python(sandbox, base_image, program, Limits(memory_mb=128, timeout_s=60))
    assert result.oom_killed, result
    # Named as the limit it hit, from the cgroup's own count of OOM kills.
    assert result.limit_hit == "memory"
    assert result.exit_code == 137
    assert not result.ok
    assert result.peak_memory_bytes is not None
    assert 100 * MiB < result.peak_memory_bytes <= 130 * MiB


def test_cpu_quota_caps_cpu_time(sandbox: DockerSandbox, base_image: str) -> None:
    program = """
        import json, os, resource, time
        end = time.time() + 2.0
        pids = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                while time.time() < end:
                    pass
                os._exit(0)
            pids.append(pid)
        for pid in pids:
            os.waitpid(pid, 0)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(json.dumps({"cpu": usage.ru_utime + usage.ru_stime}))
    """
    capped = run_python(sandbox, base_image, program, Limits(cpus=0.25, timeout_s=30))
    capped_cpu = json.loads(capped.stdout)["cpu"]
    # 0.25 CPU for 2 s of wall time is 0.5 s of CPU, whatever else the machine does: other work
    # can only lower it. (How much an uncapped run gets depends on that other work: the ratio
    # is measured in bench/cpu_quota.py, not asserted here.)
    assert capped_cpu < 0.7, capped_cpu


def test_timeout_kills_a_term_ignoring_forking_tree(sandbox: DockerSandbox, base_image: str) -> None:
    program = """
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for _ in range(3):
            if os.fork() == 0:
                os.setsid()  # leave timeout's process group
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                if os.fork() == 0:
                    while True:
                        time.sleep(0.1)
                while True:
                    time.sleep(0.1)
        print("forked", flush=True)
        while True:
            time.sleep(0.1)
    """
    result = run_python(sandbox, base_image, program, Limits(timeout_s=2))
    assert result.timed_out
    assert result.stdout == b"forked\n"
    assert not result.ok
    # Not before its 2 s budget (a busy machine can only make it later: no upper bound here).
    assert result.wall_s >= 2, result.wall_s


def test_output_flood_is_cut_and_flagged(sandbox: DockerSandbox, base_image: str) -> None:
    program = """
        import sys
        chunk = b"y" * 2**20
        for _ in range(4 * 1024):  # 4 GiB
            sys.stdout.buffer.write(chunk)
        sys.stderr.write("finished")
    """
    result = run_python(sandbox, base_image, program, Limits(output_bytes=1 * MiB, timeout_s=120))
    assert result.output_limit_exceeded
    assert not result.ok
    assert len(result.stdout) + len(result.stderr) == 1 * MiB
    assert b"finished" not in result.stderr
    assert not result.timed_out  # cut at the limit, not left to run into its 120 s budget


HOST_READER = """
import json, sys
from sandbox.docker import DockerSandbox
from sandbox.execution import HARD_KILL_S, HOST_GRACE_S, KILL_GRACE_S, Execution
from sandbox.spec import Limits, MiB, RunSpec
flood = "import sys\\nc = b'z' * 2**20\\nwhile True: sys.stdout.buffer.write(c)"
result = DockerSandbox().run(RunSpec(
    image=sys.argv[1], argv=("python3", "-c", flood),
    limits=Limits(output_bytes=64 * MiB, timeout_s=60)))
# VmHWM is this process's own peak. ru_maxrss is not: Linux carries the high-water mark
# of the forked image across exec, so it would report the (large) pytest parent's size.
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"exceeded": result.output_limit_exceeded, "kept": len(result.stdout),
                  "maxrss_kb": peak_kb}))
"""


def test_host_memory_stays_bounded_under_a_flood(base_image: str) -> None:
    proc = run_process([sys.executable, "-c", HOST_READER, base_image], timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    data = json.loads(proc.stdout)
    assert data["exceeded"]
    assert data["kept"] == 64 * MiB
    # The 64 MiB kept plus the interpreter and the docker client, not the flood.
    assert data["maxrss_kb"] < 250 * 1024, data


def test_a_session_leaving_fork_bomb_still_ends(sandbox: DockerSandbox, base_image: str) -> None:
    # Bomb processes leave timeout's process group and fill the pids limit, so the
    # in-container timeout cannot reach them and the host's sweep may not even start:
    # the host then kills the whole container.
    program = """
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if os.fork() == 0:
            os.setsid()
            while True:
                try:
                    if os.fork() == 0:
                        try:
                            os.setsid()
                        except OSError:
                            pass
                except OSError:
                    time.sleep(0.01)
        print("started", flush=True)
        while True:
            time.sleep(1)
    """
    result = run_python(sandbox, base_image, program, Limits(pids=48, timeout_s=2))
    assert result.limit_hit == "pids" or result.timed_out, result
    assert result.stdout.startswith(b"started\n")


class _RefusedSweep(Execution):
    """An engine that refuses the sweep exec: only the host's container kill is left."""

    def _sweep(self, uids: tuple[int, ...] | None = None) -> bool:
        return False


def test_host_kills_the_container_when_nothing_else_works(
    sandbox: DockerSandbox, base_image: str, tmp_path: Path
) -> None:
    program = """
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if os.fork() == 0:
            os.setsid()  # out of timeout's reach, holding stdout open
            while True:
                time.sleep(0.1)
        while True:
            time.sleep(0.1)
    """
    argv = ("python3", "-c", textwrap.dedent(program))
    spec = RunSpec(image=base_image, argv=argv, limits=Limits(timeout_s=1))
    client = sandbox.client()
    name = f"patchgate-test-{uuid.uuid4().hex[:12]}"
    try:
        options = sandbox._options(spec, image_id(spec.image, client))
        container = sandbox._start(client, options, name, tmp_path)
        result = _RefusedSweep(client, container, spec, []).run()
    finally:
        remove_container(client, name)
    assert result.timed_out
    assert result.exit_code == 137  # timeout's own SIGKILL; the setsid child outlived it
    assert result.peak_memory_bytes is None  # nothing ran after the kill


def test_a_program_that_freezes_its_timeout_still_ends(sandbox: DockerSandbox, base_image: str) -> None:
    # SIGSTOP on the in-container `timeout` (same uid) disarms it: the host's deadline ends the run.
    program = """
        import os, signal, time
        os.kill(os.getppid(), signal.SIGSTOP)
        print("froze", flush=True)
        while True:
            time.sleep(0.1)
    """
    result = run_python(sandbox, base_image, program, Limits(timeout_s=1))
    assert result.timed_out
    assert result.stdout == b"froze\n"
    # Not before the host's own deadline (its budget, timeout's grace, the host's grace).
    assert result.wall_s >= 1 + KILL_GRACE_S + HOST_GRACE_S, result.wall_s
