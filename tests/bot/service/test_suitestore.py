"""The test store's sources: a directory, a git repository (real git), cached by commit."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from bot.service.suitestore import KEEP_COMMITS, PRUNE_AFTER_S, SuiteSource, SuiteStore, parse_source, prune
from checks.behaviour.suites import Suites
from tests.conftest import GitRepo

TEST = "def test_ok():\n    assert True\n"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("github:org/suites", SuiteSource("github", "org/suites", "HEAD")),
        ("github:org/suites@v2", SuiteSource("github", "org/suites", "v2")),
        ("git+https://git.example/org/suites.git", SuiteSource("git", "https://git.example/org/suites.git")),
        (
            "git+https://git.example/org/s.git@main",
            SuiteSource("git", "https://git.example/org/s.git", "main"),
        ),
        # user@host is not a ref: the ref follows the last "@" after the last "/".
        ("git+ssh://git@git.example/org/s.git", SuiteSource("git", "ssh://git@git.example/org/s.git")),
        (".state/suites", SuiteSource("dir", ".state/suites")),
    ],
)
def test_parse_source(spec: str, expected: SuiteSource) -> None:
    assert parse_source(spec) == expected


@pytest.mark.parametrize("spec", ["github:org", "github:org/a/b", "github:../x"])
def test_parse_source_refuses_a_bad_github_name(spec: str) -> None:
    with pytest.raises(ValueError, match="github:OWNER/REPO"):
        parse_source(spec)


def test_a_local_git_repository_is_a_git_source(git_repo: GitRepo) -> None:
    git_repo.commit("suites", {"octo/app/hidden/test_a.py": TEST})
    assert parse_source(f"{git_repo.path}@main") == SuiteSource("git", str(git_repo.path.resolve()), "main")


def _resolve(spec: str | Path, cache: Path, repository: str = "octo/app") -> Suites:
    return asyncio.run(SuiteStore(spec, cache).suites(repository))


def test_a_directory_records_no_commit(tmp_path: Path) -> None:
    (tmp_path / "store" / "octo" / "app" / "held-out").mkdir(parents=True)
    suites = _resolve(tmp_path / "store", tmp_path / "cache")
    assert suites == Suites(None, (tmp_path / "store" / "octo" / "app" / "held-out").resolve(), None)


def test_git_suites_are_recorded_and_cached_by_commit(git_repo: GitRepo, tmp_path: Path) -> None:
    first = git_repo.commit(
        "suites", {"octo/app/hidden/test_a.py": TEST, "octo/other/hidden/test_b.py": TEST}
    )
    spec, cache = f"git+file://{git_repo.path}@main", tmp_path / "cache"
    suites = _resolve(spec, cache)
    assert suites.commit == first and suites.error is None and suites.held_out is None
    assert suites.hidden is not None and sorted(p.name for p in suites.hidden.iterdir()) == ["test_a.py"]
    # An unchanged commit is read from the cache, not unpacked again.
    (suites.hidden / "marker").write_text("")
    again = _resolve(spec, cache)
    assert again == suites and (again.hidden is not None and (again.hidden / "marker").exists())
    # A new commit on the ref is fetched.
    second = git_repo.commit("more", {"octo/app/hidden/test_c.py": TEST})
    newer = _resolve(spec, cache)
    assert newer.commit == second and newer.hidden is not None
    assert sorted(p.name for p in newer.hidden.iterdir()) == ["test_a.py", "test_c.py"]
    # A pinned commit (a report's suites_commit) is fetched as it is, though the branch moved on.
    pinned = _resolve(f"git+file://{git_repo.path}@{first}", tmp_path / "fresh")
    assert pinned.commit == first and pinned.hidden is not None
    assert sorted(p.name for p in pinned.hidden.iterdir()) == ["test_a.py"]


def test_commits_no_job_used_for_a_day_are_pruned_when_another_is_unpacked(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    spec, cache = f"git+file://{git_repo.path}@main", tmp_path / "cache"
    old = []
    for n in range(KEEP_COMMITS + 2):
        git_repo.commit(f"suites {n}", {f"octo/app/hidden/test_{n}.py": TEST})
        suites = _resolve(spec, cache)
        assert suites.hidden is not None
        old.append(suites.hidden.parents[2])
    day = time.time() - PRUNE_AFTER_S - 60
    for folder in old[:-1]:
        os.utime(folder, (day, day))
    # Used again today: kept whatever its age said.
    git_repo.commit("back", {"octo/app/hidden/test_0.py": TEST})  # a new commit: triggers the prune
    os.utime(old[1], None)
    newest = _resolve(spec, cache)
    assert newest.hidden is not None
    left = {p for p in cache.iterdir() if p.name != "git"}
    # The new commit and the two used today stay; the three unused for a day are gone.
    assert newest.hidden.parents[2] in left and old[-1] in left and old[1] in left
    assert len(left) == KEEP_COMMITS
    assert (cache / "git" / "HEAD").is_file()  # the mirror is not a commit


def test_a_folder_in_use_is_never_pruned(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    folders = [cache / f"c{n}" for n in range(KEEP_COMMITS + 2)]
    day = time.time() - PRUNE_AFTER_S - 60
    for age, folder in enumerate(folders):  # c0 the most recently used
        folder.mkdir(parents=True)
        os.utime(folder, (day - age, day - age))
    # Recently used folders stay, however many there are.
    assert prune(cache, keep=folders[-1], now=day + 60) == []
    # The job's own folder stays, however old; of the others, the newest few stay.
    assert prune(cache, keep=folders[-1]) == [folders[KEEP_COMMITS]]
    assert sorted(p.name for p in cache.iterdir()) == [f.name for f in folders if f != folders[KEEP_COMMITS]]


@pytest.mark.parametrize("ref", ["nope", None])
def test_an_unreadable_git_source_is_an_error_not_an_exception(
    git_repo: GitRepo, tmp_path: Path, ref: str | None
) -> None:
    git_repo.commit("suites", {"octo/app/hidden/test_a.py": TEST})
    spec = f"git+file://{git_repo.path}@{ref}" if ref else f"git+file://{tmp_path}/missing.git"
    suites = _resolve(spec, tmp_path / "cache")
    assert suites.hidden is None and suites.commit is None
    assert suites.error is not None and suites.error.startswith("suites repository:")
