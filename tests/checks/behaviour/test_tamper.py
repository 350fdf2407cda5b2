from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

import pytest

from checks.behaviour.tamper import restore_infra, restore_path
from checks.workspace import Workspace, from_git
from tests.conftest import GitRepo

BASE: dict[str, str | bytes | None] = {
    "pkg/__init__.py": "VALUE = 1\n",
    "tests/conftest.py": "# base conftest\n",
    "pytest.ini": "[pytest]\naddopts = -q\n",
    "pyproject.toml": "[project]\nname = 'x'\n",
}


def test_every_infrastructure_change_is_undone(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit("base", BASE)
    git_repo.branch("pr")
    git_repo.commit("pr", {
        "pkg/__init__.py": "VALUE = 2\n",
        "tests/conftest.py": "# hostile conftest\n",
        "conftest.py": "# added conftest\n",
        "pytest.ini": None,
        "sitecustomize.py": "import os\n",
        "pkg/evil.pth": "import os\n",
        "pyproject.toml": "[project]\nname = 'x'\n\n[tool.pytest.ini_options]\naddopts = '-p evil'\n",
    })  # fmt: skip
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    tree, undone = restore_infra(ws, tmp_path / "run")
    assert tree == tmp_path / "run"
    assert {c.path for c in undone} == {
        "conftest.py", "tests/conftest.py", "pytest.ini", "sitecustomize.py", "pkg/evil.pth",
        "pyproject.toml",
    }  # fmt: skip
    assert (tree / "tests/conftest.py").read_text() == "# base conftest\n"
    assert (tree / "pytest.ini").read_text() == BASE["pytest.ini"]
    assert (tree / "pyproject.toml").read_text() == BASE["pyproject.toml"]
    for added in ("conftest.py", "sitecustomize.py", "pkg/evil.pth"):
        assert not (tree / added).exists()
    # The change itself stays; the head tree on disk is untouched.
    assert (tree / "pkg/__init__.py").read_text() == "VALUE = 2\n"
    assert (ws.head_dir / "tests/conftest.py").read_text() == "# hostile conftest\n"


def test_nothing_to_undo_runs_the_head_tree_itself(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit("base", BASE)
    git_repo.branch("pr")
    git_repo.commit("pr", {"pkg/__init__.py": "VALUE = 2\n"})
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    assert restore_infra(ws, tmp_path / "run") == (ws.head_dir, ())
    assert not (tmp_path / "run").exists()


def test_a_tree_deeper_than_the_recursion_limit_is_copied(tmp_path: Path) -> None:
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir()
    # Within the trees' depth bound (100), deeper than the lowered recursion limit allows os.walk.
    deep = head / "/".join(["d"] * 90)
    deep.mkdir(parents=True)
    (deep / "x.py").write_text("X = 1\n")
    (head / "conftest.py").write_text("# added\n")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 30)
    try:
        tree, _ = restore_infra(Workspace(base, head, "b", "h", ()), tmp_path / "run")
    finally:
        sys.setrecursionlimit(limit)
    assert (tree / "/".join(["d"] * 90) / "x.py").read_text() == "X = 1\n"
    assert not (tree / "conftest.py").exists()


def test_restoring_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    base, tree, outside = tmp_path / "base", tmp_path / "tree", tmp_path / "outside"
    (base / "tests").mkdir(parents=True)
    (base / "tests/conftest.py").write_text("# base\n")
    tree.mkdir()
    outside.mkdir()
    # The change replaced tests/ with a link out of the tree.
    os.symlink(outside, tree / "tests")
    restore_path(base, tree, "tests/conftest.py")
    assert not (tree / "tests").is_symlink()
    assert (tree / "tests/conftest.py").read_text() == "# base\n"
    assert list(outside.iterdir()) == []


def test_removing_an_added_file_behind_a_link_touches_nothing_outside(tmp_path: Path) -> None:
    base, tree, outside = tmp_path / "base", tmp_path / "tree", tmp_path / "outside"
    base.mkdir()
    tree.mkdir()
    outside.mkdir()
    (outside / "conftest.py").write_text("# not ours\n")
    os.symlink(outside, tree / "linked")
    restore_path(base, tree, "linked/conftest.py")
    assert (outside / "conftest.py").exists()


def test_a_base_symlink_is_restored_as_a_link(tmp_path: Path) -> None:
    base, tree = tmp_path / "base", tmp_path / "tree"
    base.mkdir()
    tree.mkdir()
    os.symlink("real_conftest.py", base / "conftest.py")
    (tree / "conftest.py").write_text("# changed\n")
    restore_path(base, tree, "conftest.py")
    assert os.readlink(tree / "conftest.py") == "real_conftest.py"


@pytest.mark.parametrize("rel", ["../x", "/etc/passwd", ""])
def test_paths_outside_the_tree_are_refused(tmp_path: Path, rel: str) -> None:
    with pytest.raises(ValueError, match="not a relative path"):
        restore_path(tmp_path, tmp_path, rel)
