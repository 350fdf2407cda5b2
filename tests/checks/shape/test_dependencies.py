"""The dependencies gate on real git changes: added, changed, removed, refused, and the policy's say."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from checks.policy import Policy
from checks.policyfile import load_policy
from checks.report import Finding
from checks.runner import LayerContext
from checks.shape import run_shape
from checks.shape.dependencies import gate
from checks.workspace import Workspace, from_git
from tests.checks.shape.conftest import make_ws
from tests.conftest import GitRepo
from tests.fakes.runners import NoRunner

PYPROJECT = '[project]\nname = "demo"\nversion = "0"\ndependencies = ["click>=8"]\n'
BASE: dict[str, str | bytes | None] = {
    "pkg/__init__.py": "",
    "requirements.txt": "requests>=2.0\nattrs==23.1\n",
    "pyproject.toml": PYPROJECT,
}


def findings(ws: Workspace, policy: Policy | None = None) -> list[Finding]:
    ctx = LayerContext(ws, policy or Policy(), NoRunner("the dependencies gate"), "unused-image")
    result = gate.run(ctx)
    assert result.tool.status == "ok", result.tool.detail
    return list(result.findings)


def rules(found: list[Finding]) -> list[tuple[str, str]]:
    return [(f.rule, f.severity) for f in found]


def test_an_unchanged_dependency_set_has_no_findings(tmp_path: Path) -> None:
    ws = make_ws(
        tmp_path, BASE, {"pkg/__init__.py": "X = 1\n", "requirements.txt": "requests>=2.0\nattrs==23.1\n"}
    )
    assert findings(ws) == []


def test_added_changed_and_removed_dependencies_are_findings_at_their_line(tmp_path: Path) -> None:
    head = {"requirements.txt": "requests>=2.31\nhumanize==4.9.0\n"}
    found = findings(make_ws(tmp_path, BASE, head))
    assert rules(found) == [
        ("dependency-changed", "warning"), ("dependency-added", "warning"), ("dependency-removed", "info"),
    ]  # fmt: skip
    changed, added, removed = found
    assert (
        changed.message == "dependency-changed: `requests>=2.0` -> `requests>=2.31` (from requirements.txt)"
    )
    assert (added.path, added.start_line) == ("requirements.txt", 2)
    assert "humanize==4.9.0" in added.message
    assert "attrs==23.1" in removed.message
    # Warnings and information block nothing: the shape layer passes.
    ctx = LayerContext(make_ws(tmp_path / "again", BASE, head), Policy(), NoRunner("x"), "unused-image")
    assert run_shape(ctx, gates=["dependencies"]).status == "passed"


def test_a_name_is_compared_as_pep_503_normalizes_it(tmp_path: Path) -> None:
    head = {"requirements.txt": "Requests>=2.0\nATTRS==23.1\n"}
    assert rules(findings(make_ws(tmp_path, BASE, head))) == [
        ("dependency-changed", "warning"), ("dependency-changed", "warning"),
    ]  # fmt: skip
    same = {"requirements.txt": "requests>=2.0\nattrs==23.1\n", "pyproject.toml": PYPROJECT}
    assert findings(make_ws(tmp_path / "same", BASE, same)) == []


@pytest.mark.parametrize(
    "line",
    [
        "evil @ https://example.com/evil-1.0.tar.gz",
        "git+https://example.com/evil.git#egg=evil",
        "https://example.com/evil-1.0-py3-none-any.whl",
        "-e ./vendor/evil",
        "./vendor/evil",
        "evil @ file:///tmp/evil",
        # Not named in the issue: a package source of the change's (dependency confusion), any spelling.
        "--extra-index-url https://evil.example/simple",
        "--index-url=https://evil.example/simple",
        "-f https://evil.example/wheels",
        "--trusted-host evil.example",
    ],
)
def test_a_url_vcs_or_local_requirement_the_change_adds_is_refused(tmp_path: Path, line: str) -> None:
    ws = make_ws(tmp_path, BASE, {"requirements.txt": f"requests>=2.0\nattrs==23.1\n{line}\n"})
    found = findings(ws)
    assert rules(found) == [("dependency-refused", "error")]
    assert found[0].start_line == 3
    ctx = LayerContext(ws, Policy(), NoRunner("x"), "unused-image")
    shape = run_shape(ctx, gates=["dependencies"])
    assert shape.status == "failed"


def test_a_direct_requirement_in_pyproject_is_refused_even_when_the_policy_allows_its_name(
    tmp_path: Path,
) -> None:
    head = {"pyproject.toml": PYPROJECT.replace('"click>=8"', '"click>=8", "evil @ git+https://x/e"')}
    policy = load_policy("dependencies: {allow: [evil]}")
    assert rules(findings(make_ws(tmp_path, BASE, head), policy)) == [("dependency-refused", "error")]


def test_one_base_already_asks_for_is_the_maintainers_and_not_refused(tmp_path: Path) -> None:
    base = {**BASE, "requirements.txt": "requests>=2.0\nattrs==23.1\n-e ./vendor/lib\n"}
    head = {"pkg/__init__.py": "X = 2\n"}
    assert findings(make_ws(tmp_path, base, head)) == []


def test_the_policy_can_forbid_changes_or_allow_only_some_projects(tmp_path: Path) -> None:
    head = {"requirements.txt": "requests>=2.31\nattrs==23.1\nhumanize==4.9.0\n"}
    frozen = findings(
        make_ws(tmp_path / "a", BASE, head), load_policy("dependencies: {allow_changes: false}")
    )
    assert rules(frozen) == [("dependency-changed", "error"), ("dependency-added", "error")]
    assert all("allows no dependency changes" in f.message for f in frozen)
    listed = findings(make_ws(tmp_path / "b", BASE, head), load_policy("dependencies: {allow: [Requests]}"))
    assert rules(listed) == [("dependency-changed", "warning"), ("dependency-added", "error")]
    assert "not on the policy's dependencies.allow list" in listed[1].message


def test_the_gate_can_be_switched_off(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, BASE, {"requirements.txt": "evil @ https://example.com/e.whl\n"})
    ctx = LayerContext(
        ws, load_policy("gates: {dependencies: {enabled: false}}"), NoRunner("x"), "unused-image"
    )
    shape = run_shape(ctx, gates=["dependencies"])
    assert [(t.tool, t.status) for t in shape.tools] == [("dependencies", "skipped")]


def test_the_message_is_bounded_and_cannot_break_out_of_its_code_span(tmp_path: Path) -> None:
    head = {"requirements.txt": "requests>=2.0\nattrs==23.1\n" + "x" * 5000 + "`](https://phish)>=1\n"}
    (found,) = findings(make_ws(tmp_path, BASE, head))
    assert len(found.message) < 300
    assert found.message.count("`") == 2


# -- hostile: the head tree is the PR's ----------------------------------------------------------


def _symlinked(root: Path, link: str, target: Path) -> Workspace:
    repo = GitRepo(root / "repo")
    repo.commit("base", BASE)
    repo.branch("pr")
    (repo.path / link).unlink(missing_ok=True)
    (repo.path / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, repo.path / link)
    repo.commit("head")
    return from_git(repo.path, "main", "pr", root / "ws")


@pytest.mark.parametrize("link", ["requirements.txt", "requirements-dev.txt", "requirements/extra.txt"])
def test_a_dependency_file_that_is_a_symlink_to_a_host_file_is_never_read(tmp_path: Path, link: str) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("sk-live-host-secret==1.0\n")
    # The export already leaves out a link out of the tree (checks.workspace); depfiles would not follow it
    # either (tests/sandbox/test_depfiles.py).
    found = findings(_symlinked(tmp_path, link, secret))
    assert not any("host-secret" in f.message for f in found)
    # requirements.txt itself is gone at head (not read): base's two are removed, nothing is added.
    assert all(f.rule == "dependency-removed" for f in found)


def test_a_requirements_folder_that_is_a_symlink_out_of_the_tree_is_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("sk-live-folder-secret==1.0\n")
    found = findings(_symlinked(tmp_path, "requirements", outside))
    assert not any("folder-secret" in f.message for f in found)


def test_an_include_climbing_out_of_the_tree_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "climb-secret.txt"
    secret.write_text("sk-live-climb-secret==1.0\n")
    depth = len((tmp_path / "ws" / "head").parts)
    climb = "../" * (depth + 2) + str(secret).lstrip("/")
    head = {"requirements.txt": f"requests>=2.0\nattrs==23.1\n-r {climb}\n-r sub/../../{secret.name}\n"}
    found = findings(make_ws(tmp_path, BASE, head))
    assert not any("climb-secret" in f.message for f in found)
