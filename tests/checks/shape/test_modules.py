"""Module names of files in a tree, and which changed files the loads gate imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.shape.modules import DirTree, ModuleName, importable, module_name


@pytest.fixture
def tree(tmp_path: Path) -> DirTree:
    for rel in (
        "pkg/__init__.py",
        "pkg/mod.py",
        "pkg/sub/__init__.py",
        "pkg/sub/deep.py",
        "src/lib/__init__.py",
        "src/lib/core.py",
        "src/single.py",
        "top.py",
        "scripts/tool.py",
        "pkg/my-mod.py",
        "tests/test_a.py",
        "pkg/conftest.py",
        "setup.py",
        "pkg/__main__.py",
        "docs/conf.py",
        "pkg/testing/__init__.py",
        "pkg/testing/asserts.py",
        "testing/__init__.py",
        "testing/util.py",
        "app/__init__.py",
        "app/tests.py",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    return DirTree(tmp_path)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("pkg/mod.py", ModuleName("", "pkg.mod")),
        ("pkg/__init__.py", ModuleName("", "pkg")),
        ("pkg/sub/deep.py", ModuleName("", "pkg.sub.deep")),
        ("src/lib/core.py", ModuleName("src", "lib.core")),
        ("src/single.py", ModuleName("src", "single")),
        ("top.py", ModuleName("", "top")),
        ("scripts/tool.py", ModuleName("scripts", "tool")),
        ("pkg/my-mod.py", None),
        ("README.md", None),
    ],
)
def test_module_name(tree: DirTree, path: str, expected: ModuleName | None) -> None:
    assert module_name(tree, path) == expected


@pytest.mark.parametrize(
    ("path", "imported"),
    [
        ("pkg/mod.py", True),
        ("pkg/__init__.py", True),
        ("src/lib/core.py", True),
        ("src/single.py", True),
        ("top.py", True),
        # compiled only: scripts folders, tests, conftest, entry points, odd names
        ("scripts/tool.py", False),
        ("docs/conf.py", False),
        ("tests/test_a.py", False),
        ("pkg/conftest.py", False),
        ("setup.py", False),
        ("pkg/__main__.py", False),
        ("pkg/my-mod.py", False),
        # checks.testinfra.files decides what a test is: a package's testing/ is its code, a root
        # testing/ is tests.
        ("pkg/testing/asserts.py", True),
        ("testing/util.py", False),
        ("app/tests.py", False),
    ],
)
def test_importable(tree: DirTree, path: str, imported: bool) -> None:
    assert (importable(tree, path) is not None) == imported
