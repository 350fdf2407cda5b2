"""DockerSandbox lifecycle: containers never outlive a run, parallel runs share nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sandbox.docker import DockerSandbox
from sandbox.engine import docker_client
from sandbox.spec import Limits, Mount, RunSpec

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
    assert _containers("patchgate.test-parallel", marker) == []
