"""PR trees from GitHub tarballs."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from bot.github.trees import unpack_github_tarball
from checks.workspace import WorkspaceError, from_trees
from sandbox.trees import TreeBoundExceeded
from tests.conftest import DEEP_FILE, GitRepo, shallow_stack


def archive(repo: GitRepo, ref: str, prefix: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(repo.path), "archive", "--format=tar.gz", f"--prefix={prefix}", ref],
        check=True,
        capture_output=True,
    ).stdout


def test_github_tarballs_unpack_into_base_and_head(git_repo: GitRepo, tmp_path: Path) -> None:
    base = git_repo.commit("base", {"a.py": "x = 1\n", "pkg/b.py": "y = 2\n"})
    head = git_repo.commit("head", {"a.py": "x = 3\n", "pkg/b.py": None, "c.py": "z = 4\n"})
    unpack_github_tarball(archive(git_repo, base, "octo-r-1234567/"), tmp_path / "base")
    unpack_github_tarball(archive(git_repo, head, "octo-r-89abcde/"), tmp_path / "head")
    assert (tmp_path / "base" / "pkg" / "b.py").read_text() == "y = 2\n"
    assert sorted(p.name for p in (tmp_path / "head").iterdir()) == ["a.py", "c.py"]
    ws = from_trees(tmp_path / "base", tmp_path / "head", base, head)
    assert {(f.path, f.status) for f in ws.changed} == {
        ("a.py", "modified"),
        ("pkg/b.py", "deleted"),
        ("c.py", "added"),
    }
    assert ws.changed_lines("a.py") == frozenset({1})


def test_a_tarball_without_one_top_level_folder_is_refused(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in ("one.txt", "two.txt"):
            info = tarfile.TarInfo(name)
            info.size = 0
            tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(WorkspaceError, match="one top-level folder"):
        unpack_github_tarball(buf.getvalue(), tmp_path / "head")


@pytest.mark.slow
def test_a_tarball_too_deep_is_refused_by_its_path_below_the_top_folder(
    deep_repo: GitRepo, tmp_path: Path
) -> None:
    data = archive(deep_repo, "agent/deep", "octo-r-89abcde/")
    with shallow_stack(), pytest.raises(TreeBoundExceeded) as caught:
        unpack_github_tarball(data, tmp_path / "head")
    # The folder GitHub adds counts for nothing: the path is the repository's own.
    assert caught.value.path == "d/" * 100 + "d"
    assert DEEP_FILE.startswith(caught.value.path)
    assert not (tmp_path / "head").exists()
