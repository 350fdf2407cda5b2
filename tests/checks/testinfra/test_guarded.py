"""checks.testinfra.guarded: which paths are test infrastructure, and which of them a change touched."""

from __future__ import annotations

import inspect
import os
import shutil
import sys
from pathlib import Path

import pytest

from checks import workspace
from checks.testinfra.guarded import InfraChange, classify, infra_changes
from checks.workspace import Workspace, from_git
from tests.conftest import GitRepo

Files = dict[str, str | bytes | None]


def change(repo: GitRepo, tmp_path: Path, base: Files, head: Files) -> Workspace:
    """Commit ``base`` on main, ``head`` on a pr branch, and export the change."""
    repo.commit("base", {"README.md": "x\n", **base})
    repo.branch("pr")
    repo.commit("pr", head)
    return from_git(repo.path, "main", "pr", tmp_path / "ws")


def summary(changes: list[InfraChange]) -> list[tuple[str, str, str]]:
    return [(c.path, c.kind, c.status) for c in changes]


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("conftest.py", "conftest"),
        ("tests/unit/conftest.py", "conftest"),
        ("pytest.ini", "pytest-config"),
        ("sub/.pytest.ini", "pytest-config"),
        ("pytest.toml", "pytest-config"),
        (".pytest.toml", "pytest-config"),
        ("tox.ini", "tox"),
        ("tox.toml", "tox"),
        ("noxfile.py", "nox"),
        (".coveragerc", "coverage-config"),
        ("sitecustomize.py", "startup-hook"),
        ("src/usercustomize.py", "startup-hook"),
        ("evil.pth", "startup-hook"),
        ("lib/site-packages/x.pth", "startup-hook"),
        (".github/workflows/ci.yml", "ci"),
        (".github/CODEOWNERS", "ci"),
        (".github/patchgate.yml", "policy"),
        (".gitlab-ci.yml", "ci"),
        (".circleci/config.yml", "ci"),
        # Not by name alone: these count only when their test sections change.
        ("setup.cfg", None),
        ("pyproject.toml", None),
        ("hatch.toml", None),
        ("setup.py", None),
        ("Makefile", None),
        # Look-alikes that are not infrastructure.
        ("src/conftest_helpers.py", None),
        ("docs/pytest.ini.md", None),
        ("vendor/.github/workflows/ci.yml", None),
        (".github.yml", None),
        ("tests/test_conftest.py", None),
        ("pth.py", None),
    ],
)
def test_classify(path: str, kind: str | None) -> None:
    found = classify(path)
    assert (found[0] if found else None) == kind


def test_added_modified_and_deleted_infrastructure(git_repo: GitRepo, tmp_path: Path) -> None:
    ws = change(
        git_repo,
        tmp_path,
        {"tests/conftest.py": "A = 1\n", "tox.ini": "[tox]\n", ".github/workflows/ci.yml": "on: push\n"},
        {
            "tests/conftest.py": "A = 2\n",
            "tox.ini": None,
            ".github/patchgate.yml": "gates: {}\n",
            "src/site.pth": "import os\n",
            "src/app.py": "x = 1\n",
        },
    )
    assert summary(infra_changes(ws)) == [
        (".github/patchgate.yml", "policy", "added"),
        ("src/site.pth", "startup-hook", "added"),
        ("tests/conftest.py", "conftest", "modified"),
        ("tox.ini", "tox", "deleted"),
    ]


def test_unchanged_infrastructure_is_not_listed(git_repo: GitRepo, tmp_path: Path) -> None:
    ws = change(
        git_repo,
        tmp_path,
        {"conftest.py": "A = 1\n", ".github/workflows/ci.yml": "on: push\n", "sitecustomize.py": "\n"},
        {"src/app.py": "x = 1\n"},
    )
    assert infra_changes(ws) == []


def test_rename_is_the_old_path_deleted_and_the_new_one_added(git_repo: GitRepo, tmp_path: Path) -> None:
    body = "import pytest\n\n\n@pytest.fixture\ndef thing():\n    return 1\n" * 5
    ws = change(
        git_repo,
        tmp_path,
        {"tests/conftest.py": body, "helpers.py": "def f():\n    return 1\n" * 10},
        {
            "tests/conftest.py": None,
            "tests/unit/conftest.py": body,
            "helpers.py": None,
            "sitecustomize.py": "def f():\n    return 1\n" * 10,
        },
    )
    # git saw renames; the list names both ends of each that are infrastructure.
    assert {f.status for f in ws.changed} == {"renamed"}
    assert summary(infra_changes(ws)) == [
        ("sitecustomize.py", "startup-hook", "added"),
        ("tests/conftest.py", "conftest", "deleted"),
        ("tests/unit/conftest.py", "conftest", "added"),
    ]


@pytest.mark.parametrize(
    ("base", "head", "expected"),
    [
        # Only packaging metadata changed: not test configuration.
        (
            "[metadata]\nname = a\n[tool:pytest]\naddopts = -q\n",
            "[metadata]\nname = b\n[tool:pytest]\naddopts = -q\n",
            None,
        ),
        (
            "[metadata]\nname = a\n[tool:pytest]\naddopts = -q\n",
            "[metadata]\nname = a\n[tool:pytest]\naddopts = -q -x\n",
            ("pytest-config", "modified"),
        ),
        # A plugin option is named as such (the pytest section changed too).
        (
            "[metadata]\nname = a\n[tool:pytest]\naddopts = -q\n",
            "[metadata]\nname = a\n[tool:pytest]\naddopts = -q -p no:randomly\n",
            ("pytest-plugin", "modified"),
        ),
        (
            "[metadata]\nname = a\n",
            "[metadata]\nname = a\n[tool:pytest]\nxfail_strict = false\n",
            ("pytest-config", "modified"),
        ),
        # pytest rejects a bare [pytest] section in setup.cfg, which still changes the run.
        (
            "[metadata]\nname = a\n",
            "[metadata]\nname = a\n[pytest]\naddopts = -x\n",
            ("pytest-config", "modified"),
        ),
        (
            "[coverage:run]\nbranch = true\n",
            "[coverage:run]\nbranch = false\n",
            ("coverage-config", "modified"),
        ),
        (None, "[tool:pytest]\naddopts = -q\n", ("pytest-config", "added")),
        (None, "[metadata]\nname = a\n", None),
        # An empty section still makes pytest read its options from this file.
        (None, "[tool:pytest]\n", ("pytest-config", "added")),
        ("[tool:pytest]\naddopts = -q\n", None, ("pytest-config", "deleted")),
        ("[metadata]\nname = a\n", None, None),
        # Unreadable on one side: unknown, so it counts.
        ("[tool:pytest]\naddopts = -q\n", "[tool:pytest\naddopts = -q\n", ("pytest-config", "modified")),
    ],
)
def test_setup_cfg_counts_only_when_its_test_sections_change(
    git_repo: GitRepo, tmp_path: Path, base: str | None, head: str | None, expected: tuple[str, str] | None
) -> None:
    ws = change(git_repo, tmp_path, {"setup.cfg": base} if base else {}, {"setup.cfg": head, "x.py": "\n"})
    found = [(c.kind, c.status) for c in infra_changes(ws)]
    assert found == ([expected] if expected else [])


@pytest.mark.parametrize(
    ("base", "head", "expected"),
    [
        (
            '[project]\nname = "a"\ndependencies = []\n[tool.pytest.ini_options]\naddopts = "-q"\n',
            '[project]\nname = "a"\ndependencies = ["x"]\n[tool.pytest.ini_options]\naddopts = "-q"\n',
            None,
        ),
        (
            '[project]\nname = "a"\n[tool.pytest.ini_options]\naddopts = "-q"\n',
            '[project]\nname = "a"\n[tool.pytest.ini_options]\naddopts = "-q --deselect tests/test_x.py"\n',
            ("pytest-config", "modified"),
        ),
        # pytest 9's native table.
        (
            '[project]\nname = "a"\n',
            '[project]\nname = "a"\n[tool.pytest]\nxfail_strict = false\n',
            ("pytest-config", "modified"),
        ),
        # Reformatting the same table is not a change.
        (
            '[tool.pytest.ini_options]\naddopts = "-q"\n',
            '[tool.pytest.ini_options]\naddopts   =   "-q"  # same\n',
            None,
        ),
        ("[tool.ruff]\nline-length = 100\n", "[tool.ruff]\nline-length = 120\n", None),
        (
            "[tool.coverage.run]\nbranch = true\n",
            "[tool.coverage.run]\nbranch = false\n",
            ("coverage-config", "modified"),
        ),
        (None, '[tool.pytest.ini_options]\naddopts = "-q"\n', ("pytest-config", "added")),
        (None, "[tool.pytest.ini_options]\n", ("pytest-config", "added")),
        (None, '[project]\nname = "a"\n', None),
        ('[tool.pytest.ini_options]\naddopts = "-q"\n', None, ("pytest-config", "deleted")),
        ('[project]\nname = "a"\n', '[project\nname = "a"\n', ("pytest-config", "modified")),
        ('[project]\nname = "a"\n', b'[project]\nname = "\xff"\n', ("pytest-config", "modified")),
    ],
)
def test_pyproject_counts_only_when_its_test_tables_change(
    git_repo: GitRepo,
    tmp_path: Path,
    base: str | None,
    head: str | bytes | None,
    expected: tuple[str, str] | None,
) -> None:
    before: Files = {"pyproject.toml": base} if base else {}
    ws = change(git_repo, tmp_path, before, {"pyproject.toml": head, "x.py": "\n"})
    found = [(c.kind, c.status) for c in infra_changes(ws)]
    assert found == ([expected] if expected else [])


def test_nested_pyproject_is_examined_too(git_repo: GitRepo, tmp_path: Path) -> None:
    ws = change(
        git_repo,
        tmp_path,
        {"sub/pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-q"\n'},
        {"sub/pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-q -k not slow"\n'},
    )
    assert summary(infra_changes(ws)) == [("sub/pyproject.toml", "pytest-config", "modified")]


def test_a_link_to_changed_code_is_a_changed_conftest(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.write({"tests/real_conftest.py": "A = 1\n"})
    os.symlink("real_conftest.py", git_repo.path / "tests" / "conftest.py")
    ws = change(git_repo, tmp_path, {}, {"tests/real_conftest.py": "A = 2\n"})
    assert summary(infra_changes(ws)) == [("tests/conftest.py", "conftest", "modified")]


def test_changes_past_the_changed_file_cap_are_refused_not_hidden(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The behaviour layer restores what this lists; a diff past the cap is refused whole, so no
    # conftest hides behind it.
    monkeypatch.setattr(workspace, "MAX_CHANGED_FILES", 1)
    with pytest.raises(workspace.TreeRefused):
        change(git_repo, tmp_path, {}, {"a.py": "x = 1\n", "zz/conftest.py": "import os\n"})


def test_restoring_every_change_leaves_nothing_to_restore(git_repo: GitRepo, tmp_path: Path) -> None:
    ws = change(
        git_repo,
        tmp_path,
        {
            "tests/conftest.py": "A = 1\n",
            "setup.cfg": "[tool:pytest]\naddopts = -q\n",
            ".github/workflows/ci.yml": "on: push\n",
            "pyproject.toml": "[tool.pytest]\nx = 1\n",
        },
        {
            "tests/conftest.py": None,
            "tests/sub/conftest.py": "A = 1\n",
            "setup.cfg": "[tool:pytest]\naddopts = -x\n",
            ".github/workflows/ci.yml": None,
            "pyproject.toml": "[tool.pytest]\nx = 2\n",
            "usercustomize.py": "import os\n",
        },
    )
    changes = infra_changes(ws)
    assert len(changes) == 6
    # What the behaviour layer does with the list: undo each change against the base tree.
    for c in changes:
        target = ws.head_dir / c.path
        if c.status == "added":
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ws.base_dir / c.path, target)
    assert infra_changes(ws) == []


def test_missing_trees_mean_nothing_changed(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "base", tmp_path / "head", "a", "b", ())
    assert infra_changes(ws) == []


def test_a_very_deep_tree_does_not_exhaust_the_recursion_limit(tmp_path: Path) -> None:
    # A tree deeper than the recursion limit allows (os.walk recurses on 3.11). The limit is
    # lowered instead of the tree made 1,000 deep, so pytest's recursive cleanup can still
    # delete it afterwards.
    depth = 90  # within the trees' depth bound (100), deeper than the lowered recursion limit
    (tmp_path / "base").mkdir()
    deep = tmp_path.joinpath("head", *["d"] * depth)
    deep.mkdir(parents=True)
    (deep / "conftest.py").write_text("import os\n")
    ws = Workspace(tmp_path / "base", tmp_path / "head", "a", "b", ())
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + depth // 3)
    try:
        with pytest.raises(RecursionError):
            list(os.walk(tmp_path / "head"))  # the recursion this guards against
        changes = infra_changes(ws)
    finally:
        sys.setrecursionlimit(limit)
    assert summary(changes) == [("d/" * depth + "conftest.py", "conftest", "added")]


def test_runner_configuration_counts_by_its_test_parts(git_repo: GitRepo, tmp_path: Path) -> None:
    make = "build:\n\tpython -m build\n\ntest:\n\tpytest tests/\n"
    ws = change(
        git_repo,
        tmp_path,
        {
            "Makefile": make,
            "hatch.toml": "[envs.default]\n",
            "setup.py": "setup(name='a')\n",
            "pytest.ini": "[pytest]\naddopts = -q\n",
        },
        {
            "Makefile": make.replace("pytest tests/", "pytest tests/ -k 'not parse'"),
            "hatch.toml": '[envs.default.scripts]\ntest = "pytest -x"\n',
            "setup.py": "setup(name='a', entry_points={'pytest11': ['h = pkg.h']})\n",
            "pytest.ini": "[pytest]\naddopts = -q -p pkg.h\n",
            "noxfile.py": "import nox\n",
        },
    )
    assert summary(infra_changes(ws)) == [
        ("Makefile", "make", "modified"),
        ("hatch.toml", "hatch", "modified"),
        ("noxfile.py", "nox", "added"),
        ("pytest.ini", "pytest-plugin", "modified"),
        ("setup.py", "pytest-plugin", "modified"),
    ]
    reasons = {c.path: c.reason for c in infra_changes(ws)}
    # A file counted by name keeps its own reason after the plugin it loads.
    assert reasons["pytest.ini"] == "loads pytest plugins `-p pkg.h` (addopts); pytest.ini configures pytest"


def test_runner_configuration_outside_its_test_parts_is_not_listed(git_repo: GitRepo, tmp_path: Path) -> None:
    make = "build:\n\tpython -m build\n\ntest:\n\tpytest tests/\n"
    ws = change(
        git_repo,
        tmp_path,
        {"Makefile": make, "setup.py": "setup(name='a', version='1')\n"},
        {
            "Makefile": make.replace("python -m build", "python -m build --sdist"),
            "setup.py": "setup(name='a', version='2')\n",
        },
    )
    assert infra_changes(ws) == []
