"""remove_orphans: containers of a killed owner go, containers of a live owner stay."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from sandbox.engine import docker_client
from sandbox.reaper import OWNER_PID, remove_orphans

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]

OWNER = """
import sys
from sandbox.docker import DockerSandbox
from sandbox.spec import Limits, RunSpec
DockerSandbox(labels={"patchgate.test-reaper": sys.argv[2]}).run(
    RunSpec(image=sys.argv[1], argv=("sleep", "60"), limits=Limits(timeout_s=120)))
"""


def test_a_killed_owners_container_is_removed_and_a_live_ones_is_not(base_image: str) -> None:
    marker = uuid.uuid4().hex
    mine_only: dict[str, str | list[str] | bool] = {"label": f"patchgate.test-reaper={marker}"}
    client = docker_client()
    owners = [subprocess.Popen([sys.executable, "-c", OWNER, base_image, marker], cwd=ROOT) for _ in range(2)]
    try:
        deadline = time.monotonic() + 30
        while len(mine := client.containers.list(filters=mine_only, sparse=True)) < 2:
            assert time.monotonic() < deadline, "the owners never started their containers"
            time.sleep(0.1)
        killed, alive = owners
        killed.send_signal(signal.SIGKILL)  # no finally runs: the container is orphaned
        killed.wait()
        orphan = next(c for c in mine if c.attrs["Labels"][OWNER_PID] == str(killed.pid))
        survivor = next(c for c in mine if c.attrs["Labels"][OWNER_PID] == str(alive.pid))

        removed = remove_orphans(client)

        assert orphan.id in removed
        assert survivor.id not in removed
        left = client.containers.list(all=True, filters=mine_only, sparse=True)
        assert [c.id for c in left] == [survivor.id]
    finally:
        for owner in owners:
            owner.kill()
            owner.wait()
        for container in client.containers.list(all=True, filters=mine_only, sparse=True):
            container.remove(force=True)
        client.close()
