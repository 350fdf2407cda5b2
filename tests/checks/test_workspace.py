from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from checks import workspace
from checks.workspace import (
    MAX_CHANGED_FILES,
    TreeRefused,
    WorkspaceError,
    extract_tar,
    from_git,
    from_trees,
)
from sandbox.trees import Bounds, TreeBoundExceeded
from tests.conftest import DEEP_FILE, GitRepo, git, shallow_stack


def pr_repo(repo: GitRepo) -> None:
    repo.commit("base", {"x.py": "a\nb\nc\n", "old.txt": "q\n", "d/del.py": "1\n", "keep.py": "k\n"})
    repo.branch("pr")
    git(repo.path, "mv", "old.txt", "new.txt")
    repo.commit(
        "pr",
        {
            "x.py": "a\nB\nc\nd\n",
            "d/del.py": None,
            "bin.dat": b"\x00\x01\x02",
            "|x| y.py": "x\n",
            "ü.py": "u\n",
        },
    )


def test_changed_files_and_lines(git_repo: GitRepo, tmp_path: Path) -> None:
    pr_repo(git_repo)
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    got = {f.path: (f.status, f.old_path, f.binary, sorted(f.lines)) for f in ws.changed}
    assert got == {
        "bin.dat": ("added", None, True, []),
        "d/del.py": ("deleted", None, False, []),
        "new.txt": ("renamed", "old.txt", False, []),
        "x.py": ("modified", None, False, [2, 4]),
        "|x| y.py": ("added", None, False, [1]),
        "ü.py": ("added", None, False, [1]),
    }
    assert [f.path for f in ws.python_files] == ["x.py", "|x| y.py", "ü.py"]
    assert not (ws.head_dir / ".git").exists() and not (ws.base_dir / ".git").exists()
    assert (ws.head_dir / "x.py").read_text() == "a\nB\nc\nd\n"
    assert (ws.base_dir / "d/del.py").exists() and not (ws.head_dir / "d/del.py").exists()


def test_from_trees_agrees_with_from_git(git_repo: GitRepo, tmp_path: Path) -> None:
    pr_repo(git_repo)
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    again = from_trees(ws.base_dir, ws.head_dir, ws.base_sha, ws.head_sha)
    assert again.changed == ws.changed


def test_merge_base_semantics(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit("base", {"a.py": "1\n"})
    git_repo.branch("pr")
    git_repo.commit("pr", {"b.py": "2\n"})
    git(git_repo.path, "checkout", "-q", "main")
    git_repo.commit("main moves on", {"c.py": "3\n"})
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    # base...head: what the PR changed since it forked, not main's later commits
    assert [f.path for f in ws.changed] == ["b.py"]
    assert not (ws.base_dir / "c.py").exists()


@pytest.mark.parametrize(
    ("base", "head", "message"),
    [("main", "nope", "unknown head ref 'nope'"), ("nope", "main", "unknown base ref 'nope'")],
)
def test_unknown_ref(git_repo: GitRepo, tmp_path: Path, base: str, head: str, message: str) -> None:
    git_repo.commit("base", {"a.py": "1\n"})
    with pytest.raises(WorkspaceError, match=message):
        from_git(git_repo.path, base, head, tmp_path / "ws")


def test_not_a_repository(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(WorkspaceError, match="not a git repository"):
        from_git(tmp_path / "plain", "main", "pr", tmp_path / "ws")


def test_empty_diff(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit("base", {"a.py": "1\n"})
    git_repo.branch("pr")
    git_repo.commit("empty")
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    assert ws.changed == ()


def test_symlinks_out_of_the_tree_are_dropped(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit("base", {"a.py": "1\n"})
    git_repo.branch("pr")
    (git_repo.path / "escape").symlink_to("/etc/passwd")
    (git_repo.path / "inside").symlink_to("a.py")
    git_repo.commit("links")
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    assert not (ws.head_dir / "escape").exists() and not (ws.head_dir / "escape").is_symlink()
    assert (ws.head_dir / "inside").read_text() == "1\n"


def test_extract_tar_refuses_traversal(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in ("ok.txt", "../evil.txt", "/abs.txt"):
            info = tarfile.TarInfo(name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"hi"))
        dev = tarfile.TarInfo("dev")
        dev.type = tarfile.CHRTYPE
        tar.addfile(dev)
    extract_tar(buf.getvalue(), tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").rglob("*")) == ["ok.txt"]
    assert not (tmp_path / "evil.txt").exists()


def test_a_change_past_the_changed_file_cap_is_refused_not_cut(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Hostile: 2,000 padding files sorted first left the evil one past the cap, unexamined, and the
    # verdict success. A bound the PR controls is the PR's failure, never a file nobody examined.
    monkeypatch.setattr(workspace, "MAX_CHANGED_FILES", 3)
    git_repo.commit("base", {"a.py": "1\n"})
    git_repo.branch("pr")
    git_repo.commit("many", {**{f"aaa/{i}.txt": f"{i}\n" for i in range(3)}, "zz/evil.py": "import os\n"})
    with pytest.raises(TreeRefused) as refused:
        from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    assert refused.value.side == "head" and refused.value.cause.bound == "changes"
    assert "more than 3 files" in str(refused.value)
    assert MAX_CHANGED_FILES == 2000  # the real bound


ATTRIBUTES = "hidden.py export-ignore\n/.gitattributes export-ignore\nversion.py export-subst\n"
SUBST = '_BUILD = "$Format:%H$"\n'


def test_the_trees_are_the_commits_whatever_their_gitattributes_export(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    # Hostile: git archive applies the tree's own .gitattributes - export-ignore left a file (and the
    # attributes) out of the gated tree, export-subst rewrote one: the gate examined another tree.
    git_repo.commit("base", {"a.py": "1\n"})
    git_repo.branch("pr")
    head = git_repo.commit(
        "pr", {"hidden.py": "import os\n", "version.py": SUBST, ".gitattributes": ATTRIBUTES, "a.py": "2\n"}
    )
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    assert (ws.head_dir / "hidden.py").read_text() == "import os\n"
    assert (ws.head_dir / ".gitattributes").read_text() == ATTRIBUTES
    assert (ws.head_dir / "version.py").read_text() == SUBST and head not in SUBST
    hidden = ws.file("hidden.py")
    assert hidden is not None and hidden.is_python


def test_python_files_git_is_told_are_binary_are_still_examined(git_repo: GitRepo, tmp_path: Path) -> None:
    # Hostile: ``*.py -diff`` in the PR's worktree .gitattributes made git call every .py file binary:
    # no changed lines, no "Python file" - every static tool skipped them.
    git_repo.commit("base", {"a.py": "x = 1\n"})
    git_repo.branch("pr")
    git_repo.commit("pr", {".gitattributes": "*.py -diff\n", "a.py": "x = 1\nimport os\nos.system('id')\n"})
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    changed = ws.file("a.py")
    assert changed is not None and changed.is_python and changed.lines == frozenset({2, 3})


def test_a_symlink_of_the_commit_stays_and_one_out_of_the_tree_stays_out(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    git_repo.commit("base", {"a.py": "1\n"})
    git_repo.branch("pr")
    os.symlink("a.py", git_repo.path / "inside.py")
    os.symlink("../../outside", git_repo.path / "outside")
    git_repo.commit("pr", {".gitattributes": "inside.py export-ignore\noutside export-ignore\n"})
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    assert os.readlink(ws.head_dir / "inside.py") == "a.py"
    assert not os.path.lexists(ws.head_dir / "outside")


def test_base_without_files(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit("empty root")
    git_repo.branch("pr")
    git_repo.commit("first files", {"a.py": "x = 1\n"})
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    assert [f.path for f in ws.changed] == ["a.py"]
    assert ws.base_dir.is_dir() and not any(ws.base_dir.iterdir())


def _tar(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, content in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def test_extract_tar_caps_unpacked_size_and_entries(tmp_path: Path) -> None:
    data = _tar({f"f{i}.txt": b"x" * 100 for i in range(10)})
    with pytest.raises(TreeBoundExceeded, match=r"^f9\.txt: the tree holds more than 999 bytes$"):
        extract_tar(data, tmp_path / "big", bounds=Bounds(bytes=999))
    with pytest.raises(TreeBoundExceeded, match=r"^f9\.txt: the tree holds more than 9 entries$"):
        extract_tar(data, tmp_path / "many", bounds=Bounds(entries=9))
    # Nothing is written before every member has been checked.
    assert not any((tmp_path / "big").iterdir()) and not any((tmp_path / "many").iterdir())
    extract_tar(data, tmp_path / "fits", bounds=Bounds(bytes=1000, entries=10))
    assert len(list((tmp_path / "fits").iterdir())) == 10


def test_names_that_are_not_utf8_are_listed_not_examined(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit("base", {"a.py": "x = 1\n"})
    git_repo.branch("pr")
    (git_repo.path / os.fsdecode(b"bad\xff.py")).write_text("y = 2\n")
    git_repo.commit("odd name", {"fine.py": "z = 3\n"})
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    assert [f.path for f in ws.changed] == ["fine.py"]
    assert ws.notices == (
        "1 changed file(s) with names that are not UTF-8 were not examined: 'bad\\udcff.py'",
    )


@pytest.mark.slow
def test_a_head_1100_directories_deep_is_refused_before_anything_is_written(
    deep_repo: GitRepo, tmp_path: Path
) -> None:
    with shallow_stack(), pytest.raises(TreeRefused) as caught:
        from_git(deep_repo.path, "main", "agent/deep", tmp_path / "ws")
    refused = caught.value
    assert refused.side == "head"
    assert (refused.cause.bound, refused.cause.limit) == ("depth", 100)
    assert DEEP_FILE.startswith(refused.cause.path)
    assert refused.head_sha == git(deep_repo.path, "rev-parse", "agent/deep").strip()
    assert str(refused).startswith("the head tree: d/d/d/")
    assert not (tmp_path / "ws" / "head" / "d").exists()


@pytest.mark.slow
def test_a_base_beyond_bounds_is_the_base_s(deep_repo: GitRepo, tmp_path: Path) -> None:
    deep_repo.branch("agent/later")
    deep_repo.commit("later", {"pkg/more.py": "y = 2\n"})
    with pytest.raises(TreeRefused) as caught:
        from_git(deep_repo.path, "agent/deep", "agent/later", tmp_path / "ws")
    assert caught.value.side == "base"


def _member(name: str, *, link: str = "") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        if link:
            info.type, info.linkname = tarfile.SYMTYPE, link
        tar.addfile(info, io.BytesIO(b""))
    return buf.getvalue()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        # Longer than any file system allows: refused by name, not by an OSError from extraction.
        (_member("n" * 300), r": a name longer than 255 bytes$"),
        (_member("/".join(["p" * 200] * 6)), r": a path longer than 1024 bytes$"),
        (_member("link", link="x/" * 600), r"^link: a link target longer than 1024 bytes$"),
    ],
)
def test_extract_tar_bounds_names_paths_and_link_targets(tmp_path: Path, data: bytes, message: str) -> None:
    with pytest.raises(TreeBoundExceeded, match=message):
        extract_tar(data, tmp_path / "out")
    assert not any((tmp_path / "out").iterdir())


def test_a_file_is_compared_with_its_blob_without_reading_it_whole(tmp_path: Path) -> None:
    # The hash git names a file by, read a chunk at a time (a tree's file may be gigabytes of zeros
    # its archive held in megabytes): the same as blob_sha of its bytes, across chunk boundaries.
    (tmp_path / "big").write_bytes(b"\0" * (3 * 2**20 + 7))
    (tmp_path / "empty").write_bytes(b"")
    entries = [
        workspace.TreeEntry("big", "100644", workspace.blob_sha(b"\0" * (3 * 2**20 + 7)), 3 * 2**20 + 7),
        workspace.TreeEntry("empty", "100644", workspace.blob_sha(b""), 0),
    ]
    assert workspace.tree_differences(tmp_path, entries) == ([], [])
