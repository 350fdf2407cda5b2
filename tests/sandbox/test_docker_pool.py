"""DockerSandbox with a warm pool: a run may start in a container made ahead, and it is still fresh."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.docker import DockerSandbox
from sandbox.engine import docker_client
from sandbox.pool import Warm, WarmPool
from sandbox.reaper import wait_removals
from sandbox.spec import Limits, Mount, RunSpec

pytestmark = pytest.mark.docker

LIMITS = Limits(timeout_s=30, memory_mb=256, tmpfs_mb=16)
LABEL = "patchgate.test-pool"

# What a run may leave in its container: a file in each writable place, a process that outlives it.
LEAVE = """
import os, pathlib, subprocess
for place in ("/tmp", "/work", "/dev/shm"):
    pathlib.Path(place, "left-behind").write_text("run one")
subprocess.Popen(["sleep", "300"], start_new_session=True)
print(sorted(os.listdir("/work")))
"""
# What the next run sees of it.
LOOK = """
import os, pathlib
seen = [p for p in ("/tmp", "/work", "/dev/shm") if pathlib.Path(p, "left-behind").exists()]
procs = [open(f"/proc/{pid}/cmdline", "rb").read() for pid in os.listdir("/proc") if pid.isdigit()]
print(seen, any(b"sleep\\x00300" in cmd for cmd in procs), sorted(os.listdir("/work")))
"""


class Claims:
    """Records what each claim of the pool handed out."""

    def __init__(self, pool: WarmPool) -> None:
        self.got: list[Warm | None] = []
        real = pool.claim

        def claim(shape: str) -> Warm | None:
            found = real(shape)
            self.got.append(found)
            return found

        pool.claim = claim  # type: ignore[method-assign]


@pytest.fixture
def box(base_image: str) -> Iterator[tuple[DockerSandbox, Claims, str]]:
    marker = uuid.uuid4().hex
    made = DockerSandbox(max_concurrency=2, labels={LABEL: marker}, warm=1)
    assert made.pool is not None
    yield made, Claims(made.pool), marker
    made.close()
    assert wait_removals(60)
    assert _containers(marker) == [], "close left a container made ahead of need"
    made.client().close()


def _containers(marker: str) -> list[Any]:
    client = docker_client()
    try:
        return list(client.containers.list(all=True, filters={"label": f"{LABEL}={marker}"}))
    finally:
        client.close()


def _spec(image: str, tree: Path, program: str, limits: Limits = LIMITS) -> RunSpec:
    argv = ("python3", "-c", program)
    return RunSpec(image=image, argv=argv, copy_in=(Mount(tree, "/work"),), limits=limits)


def _tree(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    tree = tmp_path / name
    tree.mkdir()
    for file, text in files.items():
        (tree / file).write_text(text)
    return tree


def _wait_idle(pool: WarmPool) -> None:
    for thread in list(pool._threads):
        thread.join(60)


def _made_ahead(sandbox: DockerSandbox, spec: RunSpec) -> Warm:
    """Run ``spec``'s shape twice (a shape is made ahead from its second run) and return the one waiting."""
    assert sandbox.pool is not None
    for _ in range(2):
        assert sandbox.run(spec).ok
    _wait_idle(sandbox.pool)
    (waiting,) = [w for idle in sandbox.pool._idle.values() for w in idle]
    return waiting


def test_the_next_run_starts_in_a_container_made_ahead_that_holds_nothing_of_the_last_one(
    box: tuple[DockerSandbox, Claims, str], base_image: str, tmp_path: Path
) -> None:
    sandbox, claims, _ = box
    assert sandbox.pool is not None
    tree = _tree(tmp_path, "one", {"one.py": ""})
    assert sandbox.run(_spec(base_image, tree, "pass")).ok  # the shape's first run: nothing made ahead
    assert sandbox.pool.idle() == {}
    first = sandbox.run(_spec(base_image, tree, LEAVE))  # its second: the third's is made meanwhile
    assert first.ok, first
    assert first.stdout == b"['left-behind', 'one.py']\n"
    _wait_idle(sandbox.pool)
    assert list(sandbox.pool.idle().values()) == [1]
    # The container made ahead has had no exec and its inbox is empty: nothing of any change.
    (waiting,) = [w for idle in sandbox.pool._idle.values() for w in idle]
    client = sandbox.client()
    assert client.api.inspect_container(waiting.name)["ExecIDs"] is None
    assert list(Path(waiting.inbox.name).iterdir()) == []
    second = sandbox.run(_spec(base_image, _tree(tmp_path, "two", {"two.py": ""}), LOOK))
    assert claims.got[-1] is waiting, "the second run did not start in the container made ahead"
    assert second.ok, second
    # Nothing of the first run: no file, no process, and only its own tree.
    assert second.stdout == b"[] False ['two.py']\n"


def test_a_run_of_another_shape_never_gets_it(
    box: tuple[DockerSandbox, Claims, str], base_image: str, tmp_path: Path
) -> None:
    sandbox, claims, _ = box
    tree = _tree(tmp_path, "one", {"one.py": ""})
    _made_ahead(sandbox, _spec(base_image, tree, "print(1)"))
    more = Limits(timeout_s=30, memory_mb=320, tmpfs_mb=16)
    program = (  # cgroup v2, else v1
        "import pathlib; v2 = pathlib.Path('/sys/fs/cgroup/memory.max'); "
        "v1 = pathlib.Path('/sys/fs/cgroup/memory/memory.limit_in_bytes'); "
        "print((v2 if v2.exists() else v1).read_text().strip())"
    )
    result = sandbox.run(_spec(base_image, tree, program, more))
    assert claims.got[-1] is None
    assert result.stdout == f"{320 * 1024 * 1024}\n".encode()


def test_a_container_idle_past_its_time_is_removed_and_the_run_makes_its_own(
    box: tuple[DockerSandbox, Claims, str], base_image: str, tmp_path: Path
) -> None:
    sandbox, claims, marker = box
    assert sandbox.pool is not None
    tree = _tree(tmp_path, "one", {"one.py": ""})
    stale = _made_ahead(sandbox, _spec(base_image, tree, "print(1)"))
    sandbox.pool.max_idle_s = 0.0
    assert sandbox.run(_spec(base_image, tree, "print(2)")).stdout == b"2\n"
    assert claims.got[-1] is None
    assert wait_removals(60)
    assert stale.name not in {c.name for c in _containers(marker)}


def test_a_rebuilt_tag_never_gets_a_container_of_the_old_image(
    box: tuple[DockerSandbox, Claims, str], base_image: str, tmp_path: Path
) -> None:
    sandbox, claims, _ = box
    assert sandbox.pool is not None
    client = sandbox.client()
    tag = f"patchgate-test-pool:{uuid.uuid4().hex[:12]}"
    repository, _, version = tag.partition(":")
    client.images.get(base_image).tag(repository, version)
    context = tmp_path / "context"
    context.mkdir()
    (context / "Dockerfile").write_text(f"FROM {base_image}\nLABEL patchgate.test=rebuilt\n")
    (context / "marker").write_text("rebuilt")
    (context / "Dockerfile").write_text(f"FROM {base_image}\nCOPY marker /etc/patchgate-rebuilt\n")
    try:
        tree = _tree(tmp_path, "one", {"one.py": ""})
        program = "import os; print(os.path.exists('/etc/patchgate-rebuilt'))"
        for _ in range(2):
            assert sandbox.run(_spec(tag, tree, program)).stdout == b"False\n"
        _wait_idle(sandbox.pool)
        assert list(sandbox.pool.idle().values()) == [1]
        client.images.build(path=str(context), tag=tag, network_mode="none", rm=True)
        result = sandbox.run(_spec(tag, tree, program))
        assert claims.got[-1] is None
        assert result.stdout == b"True\n"
    finally:
        sandbox.close()
        assert wait_removals(60)
        client.images.remove(tag, force=True)


EXITS = """
import sys
from sandbox.docker import DockerSandbox
from sandbox.spec import Limits, RunSpec

box = DockerSandbox(labels={"patchgate.test-pool": sys.argv[2]}, warm=1)
spec = RunSpec(image=sys.argv[1], argv=("true",), limits=Limits(timeout_s=30, memory_mb=256, tmpfs_mb=16))
assert box.run(spec).ok
assert box.run(spec).ok
for thread in list(box.pool._threads):
    thread.join(60)
assert sum(box.pool.idle().values()) == 1
print("one made ahead", flush=True)
"""


def test_a_process_that_exits_without_closing_removes_what_it_made_ahead(base_image: str) -> None:
    marker = uuid.uuid4().hex
    done = subprocess.run(
        [sys.executable, "-c", EXITS, base_image, marker],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2], check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "one made ahead\n"
    assert _containers(marker) == []
