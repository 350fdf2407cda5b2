"""PR trees from GitHub tarballs."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from bot.github.app import GitHubApp
from bot.github.client import Installation
from bot.github.trees import fetch_workspace, unpack_github_tarball
from bot.settings import Settings
from checks import workspace
from checks.workspace import TreeRefused, Workspace, WorkspaceError, from_trees
from sandbox.trees import TreeBoundExceeded
from tests.bot.harness import INSTALLATION
from tests.conftest import DEEP_FILE, GitRepo, shallow_stack
from tests.fakes.github_server import FakeGitHub


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


# -- the commit's tree, not the tarball's (git archive applies the PR's .gitattributes) ---------------

ATTRIBUTES = (
    "hidden.py export-ignore\n"  # left out of any archive: never examined, yet merged
    "/.gitattributes export-ignore\n"  # and the file that says so, too
    "version.py export-subst\n"  # rewritten in any archive: other code than the commit's
)
EVIL = "import os\n\n\ndef run(cmd):\n    os.system(cmd)\n"
SUBST = '_BUILD = "$Format:%H$"\n'


def fetch(client: Installation, repository: str, base: str, head: str, dest: Path) -> Workspace:
    return asyncio.run(
        fetch_workspace(
            client, base_repo=repository, base_sha=base, head_repo=repository, head_sha=head, dest=dest
        )
    )


def attributed_pull(github: FakeGitHub, tmp_path: Path) -> tuple[str, str, str]:
    repo = GitRepo(tmp_path / "attributed")
    base = repo.commit("base", {"app.py": "x = 1\n", "gone.py": "y = 2\n"})
    head = repo.commit(
        "head", {"app.py": "x = 2\n", "hidden.py": EVIL, "version.py": SUBST, ".gitattributes": ATTRIBUTES}
    )
    github.add_repo("octo/attributed", repo.path)
    return "octo/attributed", base, head


def test_a_head_tree_is_the_commit_s_whatever_its_gitattributes_export(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    repository, base, head = attributed_pull(github, tmp_path)
    ws = fetch(client, repository, base, head, tmp_path / "ws")
    # Hostile: without the check the tarball lacked hidden.py and .gitattributes and held version.py
    # with the commit's sha in it - the gate would have examined and run another tree.
    assert (ws.head_dir / "hidden.py").read_text() == EVIL
    assert (ws.head_dir / ".gitattributes").read_text() == ATTRIBUTES
    assert (ws.head_dir / "version.py").read_text() == SUBST
    assert {f.path for f in ws.changed} >= {"hidden.py", "version.py", ".gitattributes", "app.py"}
    hidden = ws.file("hidden.py")
    assert hidden is not None and hidden.lines == frozenset({1, 2, 3, 4, 5})
    # Only what the tarball got wrong was read blob by blob.
    read = {sha for repo, sha in github.blobs_read if repo == repository}
    assert len(read) == 3


def test_a_tree_github_lists_in_part_is_refused(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    repository, base, head = attributed_pull(github, tmp_path)
    github.truncate_trees.add(repository)
    try:
        with pytest.raises(TreeRefused) as refused:
            fetch(client, repository, base, head, tmp_path / "ws")
    finally:
        github.truncate_trees.discard(repository)
    assert refused.value.side == "base" and refused.value.cause.bound == "entries"


def test_links_that_leave_the_tree_only_through_each_other_are_left_out(tmp_path: Path) -> None:
    # Hostile: a -> . passed the check, b -> a/../.. too (each resolved before anything was
    # extracted); tarfile's data filter then resolved b through a, outside the tree, and raised - an
    # error of the gate's, retried and reported neutral. The member is the archive's: left out.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        top = tarfile.TarInfo("octo-r-1234567")
        top.type, top.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(top)
        readme = tarfile.TarInfo("octo-r-1234567/README.md")
        readme.size = 3
        tar.addfile(readme, io.BytesIO(b"hi\n"))
        for name, link in (("a", "."), ("b", "a/../..")):
            info = tarfile.TarInfo(f"octo-r-1234567/{name}")
            info.type, info.linkname = tarfile.SYMTYPE, link
            tar.addfile(info)
    unpack_github_tarball(buf.getvalue(), tmp_path / "head")
    assert sorted(p.name for p in (tmp_path / "head").iterdir()) == ["README.md", "a"]


def test_a_head_over_the_tarball_cap_is_refused_as_the_head_s_not_infrastructure(
    github: FakeGitHub, settings: Settings, tmp_path: Path
) -> None:
    # Hostile: a tree within every bound but over the download cap raised GitHubError - retried as
    # infrastructure, then neutral, which GitHub counts as passing a required check.
    repo = GitRepo(tmp_path / "big")
    base = repo.commit("base", {"a.py": "x = 1\n"})
    head = repo.commit("head", {"blob.bin": os.urandom(64 * 1024)})
    github.add_repo("octo/big", repo.path)
    client = GitHubApp(settings.model_copy(update={"max_tarball_bytes": 16 * 1024})).installation(
        INSTALLATION
    )
    with pytest.raises(TreeRefused) as refused:
        fetch(client, "octo/big", base, head, tmp_path / "ws")
    assert (refused.value.side, refused.value.cause.bound) == ("head", "bytes")


def test_an_archive_unlike_its_commit_in_too_many_files_is_refused(
    github: FakeGitHub, client: Installation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Hostile: each file export-ignore left out was read back as a blob, a request each: 600 of them
    # spent the installation's quota and the rate limit ended the run neutral (other PRs' too).
    monkeypatch.setattr(workspace, "MAX_REWRITTEN", 3)
    repo = GitRepo(tmp_path / "fanout")
    base = repo.commit("base", {"a.py": "x = 1\n"})
    head = repo.commit(
        "head", {".gitattributes": "*.txt export-ignore\n", **{f"f{i}.txt": f"{i}\n" for i in range(4)}}
    )
    github.add_repo("octo/fanout", repo.path)
    before = len(github.blobs_read)
    with pytest.raises(TreeRefused) as refused:
        fetch(client, "octo/fanout", base, head, tmp_path / "ws")
    assert (refused.value.side, refused.value.cause.bound) == ("head", "export")
    assert len(github.blobs_read) == before  # refused before a single blob was read
    # And `patchgate run` refuses the same tree, as the App does.
    with pytest.raises(TreeRefused):
        workspace.from_git(repo.path, base, head, tmp_path / "local")
