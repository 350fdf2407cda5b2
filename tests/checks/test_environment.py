"""Which image head runs in: built for what the change adds and the policy allows; its failures sorted."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.environment import INSTALL_FAILED, head_environment
from checks.policy import DependencyPolicy
from sandbox.depfiles import Requirement
from sandbox.errors import ImageBuildError
from sandbox.headimage import InstallFailed
from tests.checks.shape.conftest import make_ws

BASE: dict[str, str | bytes | None] = {
    "pkg/__init__.py": "",
    "requirements.txt": "attrs==23.1\nrequests>=2\n",
}


class Builds:
    """The build, recorded: what it was asked, and what it answers."""

    def __init__(self, answer: str | Exception = "patchgate-env:head-1") -> None:
        self.answer = answer
        self.asked: list[tuple[str, Path]] = []

    def __call__(self, image: str, tree: Path) -> str:
        self.asked.append((image, tree))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize(
    "head",
    [
        {"pkg/__init__.py": "VALUE = 1\n"},  # no dependency file touched
        {"requirements.txt": "attrs==23.1\n"},  # one removed: base's environment has all head needs
        {"requirements.txt": "requests>=2\nattrs==23.1\n"},  # the same set, reordered
        # Direct references are never installed (the dependencies gate refuses them).
        {"requirements.txt": "attrs==23.1\nrequests>=2\nevil @ https://example.com/e.whl\n"},
        {"requirements.txt": "attrs==23.1\nrequests>=2\n--extra-index-url https://evil.example/simple\n"},
    ],
)
def test_nothing_to_install_builds_nothing(tmp_path: Path, head: dict[str, str | bytes | None]) -> None:
    build = Builds()
    env = head_environment(make_ws(tmp_path, BASE, head), DependencyPolicy(), "base-env", build=build)
    assert (env.image, env.failed, build.asked) == ("", None, [])


def test_an_added_or_changed_requirement_is_installed_in_heads_own_image(tmp_path: Path) -> None:
    build = Builds()
    ws = make_ws(tmp_path, BASE, {"requirements.txt": "attrs==23.2\nrequests>=2\nsmall-dep==1.0\n"})
    env = head_environment(ws, DependencyPolicy(), "base-env", build=build)
    assert build.asked == [("base-env", ws.head_dir)]
    assert env.image == "patchgate-env:head-1"
    assert env.installed == ("attrs==23.2", "small-dep==1.0")
    assert env.failed is None
    assert "head runs with the change's dependencies installed" in env.notices[0]


@pytest.mark.parametrize(
    ("policy", "why"),
    [
        (DependencyPolicy(allow_changes=False), "allows no dependency changes"),
        (DependencyPolicy(allow=["attrs", "Small_Dep"]), "dependencies.allow"),
    ],
)
def test_what_the_policy_refuses_is_never_installed(
    tmp_path: Path, policy: DependencyPolicy, why: str
) -> None:
    build = Builds()
    ws = make_ws(tmp_path, BASE, {"requirements.txt": "attrs==23.1\nrequests>=2\nsmall-dep==1.0\nother==2\n"})
    env = head_environment(ws, policy, "base-env", build=build)
    if "allow" in why and "changes" not in why:
        assert "other" in env.notices[0]
    assert build.asked == []
    assert env.image == ""
    assert why in env.notices[0]
    assert "head runs in the environment built from base's" in env.notices[0]


def test_an_allow_list_holding_every_new_project_lets_the_build_run(tmp_path: Path) -> None:
    build = Builds()
    ws = make_ws(tmp_path, BASE, {"requirements.txt": "attrs==23.1\nrequests>=2\nsmall.dep==1.0\n"})
    env = head_environment(ws, DependencyPolicy(allow=["Small_Dep"]), "base-env", build=build)
    assert env.image == "patchgate-env:head-1"


def test_an_install_that_fails_is_the_changes_finding_on_the_requirement_pip_named(tmp_path: Path) -> None:
    said = "requirement 'No_Such==9' (from requirements.txt) could not be installed: fine==1 installed"
    error = InstallFailed(said, "pip said", Requirement("No_Such==9", "requirements.txt"))
    ws = make_ws(tmp_path, BASE, {"requirements.txt": "attrs==23.1\nrequests>=2\nfine==1\nNo_Such==9\n"})
    env = head_environment(ws, DependencyPolicy(), "base-env", build=Builds(error))
    assert env.image == ""
    assert env.failed is not None
    assert (env.failed.rule, env.failed.severity, env.failed.path) == (
        INSTALL_FAILED,
        "error",
        "requirements.txt",
    )
    assert env.failed.start_line == 4
    assert "No_Such==9" in env.failed.message
    assert "behaviour not run" in env.notices[0]


def test_an_index_outage_is_raised_for_the_pipeline_to_call_neutral(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, BASE, {"requirements.txt": "attrs==23.1\nrequests>=2\nfine==1\n"})
    with pytest.raises(ImageBuildError):
        head_environment(ws, DependencyPolicy(), "base-env", build=Builds(ImageBuildError("index down")))


def _include_chain(length: int) -> dict[str, str | bytes | None]:
    files: dict[str, str | bytes | None] = {"requirements.txt": "attrs==23.1\nrequests>=2\n-r reqs/r1.txt\n"}
    files.update({f"reqs/r{i}.txt": f"-r r{i + 1}.txt\n" for i in range(1, length)})
    files[f"reqs/r{length}.txt"] = "small-dep==1.0\n"
    return files


@pytest.mark.parametrize(
    "head",
    [
        # Before any layer runs: a file the change writes must not stop the gate with an exception.
        {"pyproject.toml": 'project = "not a table"\n'},
        {"pyproject.toml": '[project]\ndependencies = "requests"\noptional-dependencies = 1\n'},
        {"setup.cfg": "[options]\ninstall_requires = %(x)s\n"},
        _include_chain(1500),  # requirement files including each other past the recursion limit
    ],
)
def test_dependency_files_the_change_writes_never_raise(
    tmp_path: Path, head: dict[str, str | bytes | None]
) -> None:
    build = Builds()
    head_environment(make_ws(tmp_path, BASE, head), DependencyPolicy(), "base-env", build=build)
