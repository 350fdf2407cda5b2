"""Shared fixtures and the test tiers.

With PATCHGATE_REQUIRE_REAL=1 (CI) a skipped test is a failed test. Tests that
need a real component are marked (``docker``, ``postgres``, ``redis``,
``server``), and those taking more than about a second ``slow``: by hand, or
here from the fixtures they use. With PATCHGATE_FAST=1 (``bash scripts/test.sh
--fast``, which deselects every marked test) a test that reaches for Docker
anyway fails: its mark is missing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import NoReturn

import pluggy
import pytest

REQUIRE_REAL = os.environ.get("PATCHGATE_REQUIRE_REAL") == "1"
FAST = os.environ.get("PATCHGATE_FAST") == "1"

# The fixtures that bring up a real component, by the mark a test using them gets.
# (Fixture closures are transitive: a fixture built on one of these counts too.)
MARK_BY_FIXTURE = {
    "base_image": "docker",
    "shape_image": "docker",
    "behaviour_image": "docker",
    "postgres_url": "postgres",
    "redis_url": "redis",
    "server": "server",
    "make_server": "server",
    # tests/checks/shape/test_probe.py: one real probe run over a tree, seconds before the first test
    "loads_result": "slow",
    # Debian's cmark-gfm and chromium (tests/checks/render/test_gfm.py, tests/bot/web/*browser*), which
    # the full test command installs
    "cmark_gfm": "slow",
    "chromium": "slow",
}
# Nothing listens on the discard port: a subprocess that reaches for Docker under --fast fails.
FAST_DOCKER_HOST = "tcp://127.0.0.1:9"

# A test command started in the background by a shell without job control (`bash .ci/run &`) inherits
# SIGINT ignored, and so would every process a test starts: the tests that stop a child with Ctrl-C's
# signal (`patchgate setup`, an interrupted sandbox run) would wait for ever. Python's own handler
# again here; a child then starts with the default disposition and raises KeyboardInterrupt as usual.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by the real components its fixtures bring up (before -m deselects)."""
    for item in items:
        for name in MARK_BY_FIXTURE.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(MARK_BY_FIXTURE[name])


def _docker_in_fast_mode(*args: object, **kwargs: object) -> NoReturn:
    pytest.fail(
        "this test reaches for Docker under PATCHGATE_FAST=1 (bash scripts/test.sh --fast): "
        "mark it @pytest.mark.docker, or use a fixture that does",
        pytrace=True,
    )


@pytest.fixture(autouse=True, scope="session")
def _no_docker_when_fast() -> Iterator[None]:
    """Under --fast, make Docker unreachable and loud: an unmarked Docker test fails, never skips."""
    if not FAST:
        yield
        return
    import docker

    patch = pytest.MonkeyPatch()
    patch.setenv("DOCKER_HOST", FAST_DOCKER_HOST)
    # pytest.fail raises a BaseException: no `except Exception` in the code under test hides it.
    patch.setattr(docker, "from_env", _docker_in_fast_mode)
    patch.setattr(docker.DockerClient, "from_env", _docker_in_fast_mode)
    yield
    patch.undo()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_REAL and report.skipped and not hasattr(report, "wasxfail"):
        # Real-component tests must run in CI: a skip there hides a broken set-up.
        report.outcome = "failed"
        report.longrepr = f"skipped under PATCHGATE_REQUIRE_REAL=1: {report.longrepr}"


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` and return its stdout."""
    result = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True)
    return result.stdout


class GitRepo:
    """A real temporary git repository for tests: write files, commit, branch."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "-q", "-b", "main")
        git(path, "config", "user.email", "test@example.com")
        git(path, "config", "user.name", "test")
        git(path, "config", "commit.gpgsign", "false")

    def write(self, files: Mapping[str, str | bytes | None]) -> None:
        """Write (str/bytes) or delete (None) files relative to the repository."""
        for rel, content in files.items():
            target = self.path / rel
            if content is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)

    def commit(self, message: str = "change", files: Mapping[str, str | bytes | None] | None = None) -> str:
        """Write ``files``, commit everything, and return the new sha."""
        if files:
            self.write(files)
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "--allow-empty", "-m", message)
        return git(self.path, "rev-parse", "HEAD").strip()

    def branch(self, name: str, start: str = "HEAD") -> None:
        git(self.path, "checkout", "-q", "-B", name, start)


# Far more stack than iterative code needs, far less than recursing 1,100 levels deep.
HEADROOM = 150


@contextmanager
def shallow_stack() -> Iterator[None]:
    """Lower the recursion limit to the current depth plus HEADROOM: recursive code fails at once."""
    depth = 0
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + HEADROOM)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def nest(root: Path, depth: int, leaf: str = "deep.py") -> str:
    """Make ``leaf`` under ``depth`` directories named ``d`` in ``root``; return its relative path.

    Built a level at a time: Path.mkdir(parents=True) itself recurses once per level.
    A test that builds one removes it with sandbox.trees.remove, or pytest's own
    clean-up of old temporary folders (shutil.rmtree) would recurse past the limit.
    """
    folder = root
    root.mkdir(parents=True, exist_ok=True)
    for _ in range(depth):
        folder = folder / "d"
        folder.mkdir()
    (folder / leaf).write_text("x = 1\n")
    return "d/" * depth + leaf


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def deep_repo(git_repo: GitRepo) -> GitRepo:
    """A repository whose branch agent/deep adds a file 1,100 directories deep (``DEEP_FILE``).

    The work tree's copy is removed once committed (without recursion): pytest's own
    clean-up of old temporary folders would recurse past the limit on it.
    """
    from sandbox.trees import remove

    git_repo.commit("base", {"pkg/__init__.py": "", "pkg/calc.py": "def add(a, b):\n    return a + b\n"})
    git_repo.branch("agent/deep")
    assert nest(git_repo.path, 1_100) == DEEP_FILE
    git_repo.commit("deep")
    remove(git_repo.path / "d")
    return git_repo


DEEP_FILE = "d/" * 1_100 + "deep.py"


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[str], GitRepo]:
    def make(name: str) -> GitRepo:
        return GitRepo(tmp_path / name)

    return make


def page_tool(name: str) -> str:
    """Return the path of a Debian tool the page tests need (cmark-gfm, chromium), or skip.

    Tests using it are marked ``slow`` (MARK_BY_FIXTURE): the full test command installs the
    tools and runs them with PATCHGATE_REQUIRE_REAL=1, where a skip fails.
    """
    import shutil

    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (bash scripts/test.sh installs it)")
    return found
