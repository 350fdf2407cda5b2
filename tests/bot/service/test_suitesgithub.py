"""Suites from a GitHub repository (``PATCHGATE_TEST_STORE=github:org/suites@ref``), end to end.

The real server process reads them through the fake GitHub: the installation
that covers the suites repository, the commit its ref names, and a tarball of
that commit, once per commit.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.bot.harness import Server, make_pull, wait_for
from tests.conftest import GitRepo
from tests.fakes.github_server import FakeGitHub

SUITES_INSTALLATION = 5151
TEST = "def test_ok():\n    assert True\n"


def _suites_repo(github: FakeGitHub, root: Path, name: str, *repos: str) -> str:
    repo = GitRepo(root / name)
    # The i-th repository gets i + 1 test files: each job's numbers say whose folder it read.
    files = {f"{r}/hidden/test_{n}.py": TEST for i, r in enumerate(repos) for n in range(i + 1)}
    sha = repo.commit("suites", files)
    github.add_repo(f"org/{name}", repo.path)
    return sha


def test_suites_come_from_the_repository_once_per_commit(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path
) -> None:
    sha = _suites_repo(github, tmp_path, "suites-a", "octo/sga", "octo/sgb")
    github.installations["org/suites-a"] = SUITES_INSTALLATION
    server = make_server(PATCHGATE_TEST_STORE="github:org/suites-a@main")
    server.pipeline = "tests.bot.pipelines:suites_gate"
    server.start()
    for count, name in enumerate(("sga", "sgb"), start=1):
        pull = make_pull(github, tmp_path, name)
        server.post("pull_request", pull.payload("opened"))
        run = wait_for(pull.completed, 60, f"the check run of {name}")
        summary = run["output"]["summary"]
        assert run["conclusion"] == "success", summary
        assert f"hidden {count}/{count}" in summary, summary
        # The footer names the suites' commit: the verdict can be reproduced with exactly them.
        assert f"suites {sha[:12]}" in summary
    calls = github.calls_to(None, "^/repos/org/suites-a/")
    # The ref is resolved for each job, the tree downloaded once: the second job reads the cache.
    assert [c.path for c in calls if c.method == "GET" and "/commits/" in c.path] == [
        "/repos/org/suites-a/commits/main"
    ] * 2
    assert [c.path for c in calls if "/tarball/" in c.path] == [f"/repos/org/suites-a/tarball/{sha}"]
    # The token travels in a header, never in a URL.
    assert all(c.headers.get("Authorization", "").startswith(("token ", "Bearer ")) for c in calls)
    assert not any("ghs_" in c.path or any("ghs_" in v for vs in c.query.values() for v in vs) for c in calls)
    assert github.problems == []


def test_a_suites_repository_the_app_cannot_read_is_neutral(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path
) -> None:
    _suites_repo(github, tmp_path, "suites-hidden", "octo/sgn")  # exists, but the App is not installed on it
    server = make_server(PATCHGATE_TEST_STORE="github:org/suites-hidden")
    server.pipeline = "tests.bot.pipelines:suites_gate"
    server.start()
    pull = make_pull(github, tmp_path, "sgn")
    server.post("pull_request", pull.payload("opened"))
    run = wait_for(pull.completed, 60, "the check run")
    summary = run["output"]["summary"]
    assert run["conclusion"] == "neutral", summary
    assert "suites repository org/suites-hidden: the App is not installed on it (404)" in summary
    assert github.calls_to("GET", "^/repos/org/suites-hidden/tarball/") == []


def test_a_ref_the_suites_repository_lacks_is_neutral(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path
) -> None:
    _suites_repo(github, tmp_path, "suites-ref", "octo/sgr")
    github.installations["org/suites-ref"] = SUITES_INSTALLATION
    server = make_server(PATCHGATE_TEST_STORE="github:org/suites-ref@v9")
    server.pipeline = "tests.bot.pipelines:suites_gate"
    server.start()
    pull = make_pull(github, tmp_path, "sgr")
    server.post("pull_request", pull.payload("opened"))
    run = wait_for(pull.completed, 60, "the check run")
    summary = run["output"]["summary"]
    assert run["conclusion"] == "neutral", summary
    assert "suites repository org/suites-ref: resolve v9 in org/suites-ref: GitHub answered 422" in summary
