"""DockerSandbox lifecycle: containers never outlive a run, parallel runs share nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from docker.errors import NotFound

from sandbox import docker as sandbox_docker
from sandbox import reaper
from sandbox.docker import DockerSandbox
from sandbox.engine import docker_client
from sandbox.errors import SandboxError
from sandbox.host import run_process
from sandbox.reaper import wait_removals
from sandbox.spec import Grader, Limits, Mount, RunSpec

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]

INTERRUPTED = """
import sys
from sandbox.docker import DockerSandbox
from sandbox.spec import Limits, RunSpec
box = DockerSandbox(labels={"patchgate.test-interrupt": sys.argv[2]})
box.run(RunSpec(image=sys.argv[1], argv=("sleep", "60"), limits=Limits(timeout_s=120)))
print("the run finished, which it should not have")
"""

EXITING = """
import sys
from sandbox.docker import DockerSandbox
from sandbox.spec import Limits, RunSpec
box = DockerSandbox(labels={"patchgate.test-exit": sys.argv[2]})
result = box.run(RunSpec(image=sys.argv[1], argv=("true",), limits=Limits(timeout_s=60)))
print(result.exit_code)
"""


def _containers(label: str, value: str) -> list[object]:
    client = docker_client()
    try:
        return list(client.containers.list(all=True, filters={"label": f"{label}={value}"}, sparse=True))
    finally:
        client.close()


def test_container_is_removed_when_the_host_process_is_interrupted(base_image: str) -> None:
    marker = uuid.uuid4().hex
    # A real process interrupted with a real SIGINT (KeyboardInterrupt), mid-run.
    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, base_image, marker],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not _containers("patchgate.test-interrupt", marker):
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the run never started a container"
            time.sleep(0.1)
        time.sleep(1.0)  # into the command, not just the container start
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=40)
    finally:
        if child.poll() is None:
            child.kill()
    assert b"KeyboardInterrupt" in err
    assert _containers("patchgate.test-interrupt", marker) == []


def test_parallel_runs_are_isolated_and_bounded(base_image: str, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    box = DockerSandbox(max_concurrency=3, labels={"patchgate.test-parallel": marker})
    program = (
        "import json, os, pathlib, time\n"
        "start = time.time()\n"
        "mine = pathlib.Path('/work/id.txt').read_text()\n"
        "pathlib.Path('/work/seen.txt').write_text(mine + ' ' + ' '.join(sorted(os.listdir('/work'))))\n"
        "time.sleep(1.0)\n"
        "print(json.dumps({'id': mine, 'start': start, 'end': time.time()}))\n"
    )

    def one(index: int) -> tuple[int, dict[str, object], bytes]:
        tree = tmp_path / f"tree{index}"
        tree.mkdir()
        (tree / "id.txt").write_text(str(index))
        result = box.run(
            RunSpec(
                image=base_image,
                argv=("python3", "-c", program),
                copy_in=(Mount(tree, "/work"),),
                collect=("/work/seen.txt",),
                limits=Limits(timeout_s=60, memory_mb=256, tmpfs_mb=16),
            )
        )
        assert result.ok, result
        return index, json.loads(result.stdout), result.files["/work/seen.txt"]

    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = list(pool.map(one, range(6)))
    box.client().close()

    for index, data, seen in outcomes:
        assert data["id"] == str(index)
        # Each run saw only its own tree: no other run's files, no shared writable state.
        assert seen == f"{index} id.txt".encode()
    spans = [(float(str(d["start"])), float(str(d["end"]))) for _, d, _ in outcomes]
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert most <= 3, spans
    assert most >= 2, "the runs did not overlap at all"
    assert wait_removals(60)
    assert _containers("patchgate.test-parallel", marker) == []


def test_a_process_that_exits_after_a_run_waits_for_its_removal(base_image: str) -> None:
    # The removal runs after run() returns, in a thread the interpreter waits for at exit.
    marker = uuid.uuid4().hex
    proc = run_process([sys.executable, "-c", EXITING, base_image, marker], cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.strip() == b"0"
    assert _containers("patchgate.test-exit", marker) == []


# The grader and the subject each leave a process behind that closed its output.
LEFTOVER_GRADER = (
    "cat /grader/plan > /grader/out; sleep 600 >/dev/null 2>&1 & "
    "while [ ! -e /tmp/subject-ready ]; do sleep 0.05; done; echo graded"
)
LEFTOVER_SUBJECT = "sleep 600 >/dev/null 2>&1 & touch /tmp/subject-ready; wait"
# The uid of every process in the container but this one.
UIDS = """
import os
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            with open(f"/proc/{pid}/status") as status:
                print(next(line.split()[1] for line in status if line.startswith("Uid:")))
        except OSError:
            pass
"""


def test_until_removed_a_container_holds_its_slot_and_runs_nothing_but_its_waiter(
    base_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate, removing = threading.Event(), threading.Event()
    real_remove = reaper.remove_container

    def held_remove(client: object, name: str) -> None:
        removing.set()
        gate.wait(60)
        real_remove(client, name)  # type: ignore[arg-type]

    monkeypatch.setattr(sandbox_docker, "remove_container", held_remove)
    marker = uuid.uuid4().hex
    box = DockerSandbox(max_concurrency=1, labels={"patchgate.test-held": marker})
    plan = tmp_path / "plan"
    plan.write_text("the plan")
    spec = RunSpec(
        image=base_image,
        argv=("sh", "-c", LEFTOVER_SUBJECT),
        limits=Limits(timeout_s=60, memory_mb=256, tmpfs_mb=16),
        grader=Grader(
            argv=("sh", "-c", LEFTOVER_GRADER),
            private=(Mount(plan, "/grader/plan"),),
            collect=("/grader/out",),
        ),
    )
    try:
        result = box.run(spec)
        assert result.ok, result
        assert result.stdout == b"graded\n"
        assert result.files == {"/grader/out": b"the plan"}
        assert removing.wait(30)
        # The container is still there, still holding the box's one slot...
        assert box._slots.acquire(blocking=False) is False
        (container,) = _containers("patchgate.test-held", marker)
        # ...and of the grader's and the subject's processes nothing is left: only the waiter's uid.
        client = box.client()
        exec_id = client.api.exec_create(container.id, ["python3", "-c", UIDS])["Id"]  # type: ignore[attr-defined]
        uids = set(client.api.exec_start(exec_id).decode().split())
        assert uids == {"10002"}, uids
    finally:
        gate.set()
    assert wait_removals(60)
    assert _containers("patchgate.test-held", marker) == []
    assert box._slots.acquire(blocking=False)
    box._slots.release()
    box.client().close()


def test_a_removal_that_fails_once_is_tried_again(
    sandbox: DockerSandbox, base_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reaper, "REMOVE_RETRY_S", (0.0,))
    attempts: list[str] = []

    def flaky_remove(client: object, name: str) -> None:
        attempts.append(name)
        if len(attempts) == 1:
            raise SandboxError("the engine said no")
        reaper.remove_container(client, name)  # type: ignore[arg-type]

    monkeypatch.setattr(sandbox_docker, "remove_container", flaky_remove)
    result = sandbox.run(RunSpec(image=base_image, argv=("true",), limits=Limits(timeout_s=60)))
    assert result.ok
    assert wait_removals(60)
    assert len(attempts) == 2 and attempts[0] == attempts[1]
    with pytest.raises(NotFound):
        sandbox.client().api.inspect_container(attempts[0])
