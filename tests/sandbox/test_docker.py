"""DockerSandbox basics: a run round-trips files, reports failures as data, and cleans up."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.docker import DockerSandbox
from sandbox.errors import ImageMissing, SandboxError
from sandbox.spec import Limits, Mount, RunSpec

pytestmark = pytest.mark.docker

FAST = Limits(timeout_s=30, memory_mb=256, tmpfs_mb=64)


def test_python_round_trip_with_copy_in_and_collect(
    sandbox: DockerSandbox, base_image: str, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "data.txt").write_text("hello from the host\n")
    program = (
        "import pathlib; "
        "text = pathlib.Path('pkg/data.txt').read_text(); "
        "pathlib.Path('out').mkdir(); "
        "pathlib.Path('out/echo.txt').write_text(text.upper()); "
        "print(1)"
    )
    result = sandbox.run(
        RunSpec(
            image=base_image,
            argv=("python3", "-c", program),
            copy_in=(Mount(tree, "/work"),),
            collect=("/work/out", "/work/missing.txt"),
            limits=FAST,
        )
    )
    assert result.ok, result
    assert result.stdout == b"1\n"
    assert result.files == {"/work/out/echo.txt": b"HELLO FROM THE HOST\n"}
    assert result.peak_memory_bytes is not None and result.peak_memory_bytes > 0
    # The host copy never changes.
    assert sorted(p.name for p in tree.rglob("*")) == ["data.txt", "pkg"]


def test_nonzero_exit_and_stderr_are_data(sandbox: DockerSandbox, base_image: str) -> None:
    result = sandbox.run(
        RunSpec(
            image=base_image,
            argv=("python3", "-c", "import sys; sys.stderr.write('bad'); sys.exit(3)"),
            limits=FAST,
        )
    )
    assert result.exit_code == 3
    assert result.stderr == b"bad"
    assert not result.ok
    assert not result.timed_out


def test_missing_command_is_a_nonzero_result(sandbox: DockerSandbox, base_image: str) -> None:
    result = sandbox.run(RunSpec(image=base_image, argv=("no-such-program", "--x"), limits=FAST))
    assert result.exit_code == 127
    assert b"no-such-program" in result.stderr


def test_missing_image_names_the_build_command(sandbox: DockerSandbox) -> None:
    with pytest.raises(ImageMissing, match="patchgate sandbox build"):
        sandbox.run(RunSpec(image="patchgate-base:does-not-exist", argv=("true",)))


def test_the_runtime_name_reaches_the_engine(base_image: str) -> None:
    # gVisor is not installed here; an unknown runtime proves the name is passed, and
    # that an engine refusal is a SandboxError, not a result.
    box = DockerSandbox(runtime="patchgate-no-such-runtime")
    try:
        with pytest.raises(SandboxError, match="patchgate-no-such-runtime"):
            box.run(RunSpec(image=base_image, argv=("true",), limits=FAST))
    finally:
        box.client().close()


def test_invalid_env_names_are_refused(sandbox: DockerSandbox, base_image: str) -> None:
    with pytest.raises(ValueError, match="environment"):
        sandbox.run(RunSpec(image=base_image, argv=("true",), env={"A=B": "x"}))


def test_env_and_workdir_follow_the_spec(sandbox: DockerSandbox, base_image: str, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    result = sandbox.run(
        RunSpec(
            image=base_image,
            argv=("python3", "-c", "import os; print(os.getcwd(), sorted(os.environ), os.environ['HOME'])"),
            copy_in=(Mount(tmp_path, "/work"),),
            workdir="/work/sub",
            env={"PWD_IS": "cwd", "PYTHONPATH": "/work"},
            limits=FAST,
        )
    )
    assert result.ok, result
    assert result.stdout.decode() == "/work/sub ['HOME', 'LANG', 'PATH', 'PWD_IS', 'PYTHONPATH'] /tmp\n"


def test_a_missing_workdir_is_a_failed_result(sandbox: DockerSandbox, base_image: str) -> None:
    result = sandbox.run(RunSpec(image=base_image, argv=("true",), workdir="/nowhere", limits=FAST))
    assert result.exit_code == 125
    assert b"/nowhere" in result.stderr


def test_the_copy_is_scratch_and_mounts_are_read_only(
    sandbox: DockerSandbox, base_image: str, tmp_path: Path
) -> None:
    tree, suite = tmp_path / "tree", tmp_path / "suite"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "mod.py").write_text("x = 1\n")
    suite.mkdir()
    (suite / "test_x.py").write_text("def test_x(): pass\n")
    script = (
        "rm /work/pkg/mod.py && echo changed > /work/new.txt && echo scratch-ok; "
        "cat /suite/test_x.py; touch /suite/evil 2>&1 || echo suite-ro; "
        "echo x >> /work/ro/test_x.py 2>&1 || echo nested-ro"
    )
    result = sandbox.run(
        RunSpec(
            image=base_image,
            argv=("sh", "-c", script),
            copy_in=(Mount(tree, "/work"),),
            mounts=(Mount(suite, "/suite"), Mount(suite, "/work/ro")),
            limits=FAST,
        )
    )
    out = result.stdout.decode()
    assert "scratch-ok" in out and "def test_x(): pass" in out
    assert "suite-ro" in out and "nested-ro" in out
    assert "Read-only file system" in out
    assert (tree / "pkg" / "mod.py").read_text() == "x = 1\n"
    assert not (tree / "new.txt").exists()
    assert sorted(p.name for p in suite.iterdir()) == ["test_x.py"]


def test_a_tree_larger_than_its_tmpfs_fails_the_run(
    sandbox: DockerSandbox, base_image: str, tmp_path: Path
) -> None:
    (tmp_path / "big.bin").write_bytes(b"\0" * (3 * 1024 * 1024))
    result = sandbox.run(
        RunSpec(
            image=base_image,
            argv=("true",),
            copy_in=(Mount(tmp_path, "/work"),),
            limits=Limits(timeout_s=30, tmpfs_mb=2),
        )
    )
    assert result.exit_code == 125
    assert b"patchgate: copying into /work failed" in result.stderr
