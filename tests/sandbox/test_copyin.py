"""copy_in planning: which tmpfs mounts a run needs, and what gets packed."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from sandbox.copyin import pack_copy_in, writable_roots
from sandbox.docker import DockerSandbox
from sandbox.spec import Limits, Mount, RunSpec
from sandbox.trees import Bounds, TreeBoundExceeded, remove
from tests.conftest import nest, shallow_stack


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f.py").write_text("x = 1\n")
    (root / "link").symlink_to("sub/f.py")
    os.mkfifo(root / "pipe")
    return root


@pytest.mark.parametrize(
    ("targets", "roots"),
    [
        (["/work"], ["/work"]),
        (["/work", "/work/suite"], ["/work"]),
        (["/work/suite", "/work"], ["/work"]),
        (["/tmp/x", "/srv"], ["/srv"]),
        (["/a", "/b"], ["/a", "/b"]),
    ],
)
def test_writable_roots(tree: Path, targets: list[str], roots: list[str]) -> None:
    assert writable_roots([Mount(tree, t) for t in targets]) == roots


def test_a_file_lands_in_its_target_directory(tree: Path) -> None:
    assert writable_roots([Mount(tree / "sub" / "f.py", "/opt/cfg/f.py")]) == ["/opt/cfg"]


@pytest.mark.parametrize("target", ["relative", "/", "/work/../etc", "/run/patchgate-in"])
def test_bad_targets_are_refused(tree: Path, target: str) -> None:
    with pytest.raises(ValueError, match="copy_in"):
        writable_roots([Mount(tree, target)])


def test_pack_keeps_files_and_links_and_drops_fifos(tree: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    plan = pack_copy_in([Mount(tree, "/work")], scratch, uid=os.getuid())
    assert plan == ["/run/patchgate-in/0.tar", "/work"]
    with tarfile.open(scratch / "0.tar") as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert set(members) == {".", "./sub", "./sub/f.py", "./link"}
    assert members["./link"].issym()
    assert all(m.uid == 0 and m.uname == "" for m in members.values())


@pytest.mark.slow
def test_pack_refuses_a_tree_1100_deep_naming_it_without_recursing(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    nest(root, 1_100)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    try:
        with shallow_stack(), pytest.raises(TreeBoundExceeded) as caught:
            pack_copy_in([Mount(root, "/work")], scratch, uid=os.getuid())
        assert caught.value.bound == "depth"
        assert caught.value.path.startswith("d/d/d/")
        # Deep, but within bounds that allow it: packed in full, still without recursion.
        roomy = Bounds(depth=2000, path=4000)
        with shallow_stack():
            pack_copy_in([Mount(root, "/work")], scratch, uid=os.getuid(), bounds=roomy)
        with tarfile.open(scratch / "0.tar") as tar:
            assert len(tar.getmembers()) == 1_102
    finally:
        remove(root)


@pytest.mark.docker
def test_a_tree_100_deep_reaches_the_container_and_101_is_refused_before_it(
    sandbox: DockerSandbox, base_image: str, tmp_path: Path
) -> None:
    root = tmp_path / "tree"
    rel = nest(root, 99)  # the file is the 100th level: the most the default bounds allow
    spec = RunSpec(
        image=base_image, argv=("cat", rel), copy_in=(Mount(root, "/work"),), limits=Limits(timeout_s=30)
    )
    result = sandbox.run(spec)
    assert (result.exit_code, result.stdout) == (0, b"x = 1\n"), result.stderr
    (root / rel).unlink()
    (root / rel).mkdir()
    (root / rel / "one-too-many.py").write_text("")
    # The PR's tree, not the sandbox: never a SandboxError; raised while packing, before any container.
    with pytest.raises(TreeBoundExceeded, match=r"one-too-many\.py: nested more than 100 levels deep$"):
        sandbox.run(spec)
