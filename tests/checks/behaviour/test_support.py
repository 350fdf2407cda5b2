"""Which of base's modules are test support, run in the grader with the tests (pure)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from checks.behaviour.support import (
    SupportModule,
    defines_test_case,
    edited_support,
    find_support,
    imported,
    stage_support,
)
from checks.workspace import ChangedFile


def paths(found: tuple[SupportModule, ...]) -> dict[str, str]:
    return {m.name: m.path for m in found}


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(
    ("source", "defines"),
    [
        ("import unittest\n\nclass Case(unittest.TestCase):\n    pass\n", True),
        ("import unittest as ut\n\nclass Case(ut.IsolatedAsyncioTestCase):\n    pass\n", True),
        # Through a class of its own, under another name.
        ("from unittest import TestCase as TC\n\nclass A(TC):\n    pass\n\nclass B(A):\n    pass\n", True),
        ("from unittest.case import TestCase\n\nclass A(object, TestCase):\n    pass\n", True),
        ("from unittest.async_case import IsolatedAsyncioTestCase as C\n\nclass A(C):\n    pass\n", True),
        # Importing it is not defining one; nor is a TestCase of another library's, nor one in a function.
        ("from unittest import TestCase\n", False),
        ("from django.test import TestCase\n\nclass A(TestCase):\n    pass\n", False),
        ("import unittest\n\ndef f():\n    class A(unittest.TestCase):\n        pass\n", False),
        ("import unittest\n\nclass A(unittest.mock.Mock):\n    pass\n", False),
        ("x = 'TestCase'\n", False),
    ],
)
def test_a_module_defines_a_test_case_only_through_unittest(source: str, defines: bool) -> None:
    assert defines_test_case(ast.parse(source)) is defines


def test_imports_are_read_anywhere_with_their_parents_and_relative_ones_resolved() -> None:
    tree = ast.parse(
        "import a.b.c\nfrom d import e\n\ndef f():\n    import g\n\n"
        "from . import sibling\nfrom ..up import x\nfrom . import *\n"
    )
    assert set(imported(tree, "pkg.sub")) == {
        "a", "a.b", "a.b.c", "d", "d.e", "g", "pkg", "pkg.sub", "pkg.sub.sibling", "pkg.up", "pkg.up.x",
    }  # fmt: skip
    # Past the top package a relative import resolves to nothing.
    assert set(imported(ast.parse("from ... import x\n"), "pkg")) == set()


CASE = "import unittest\n\nfrom . import core\n\n\nclass PkgCase(unittest.TestCase):\n    pass\n"


def test_support_is_what_the_suite_imports_of_test_paths_and_test_case_modules(tmp_path: Path) -> None:
    base = write(tmp_path / "base", {
        "pkg/__init__.py": "",
        "pkg/core.py": "NOTE = 'TestCase is a word here, not a class'\n",
        "pkg/testing.py": CASE + "from .helpers_test import shared\n",
        "pkg/helpers_test.py": "shared = 1\n",  # a test path, reached through testing.py
        "pkg/test_tools.py": "def tool():\n    return 1\n",  # a test path the suite imports
        "pkg/test_unused.py": "",  # a test path nobody imports
        "pkg/other_case.py": CASE,  # a TestCase module nobody imports
        "other.py": "",
    })  # fmt: skip
    suite = write(tmp_path / "suite", {
        "test_a.py": "from pkg.testing import PkgCase\nimport pkg.core\n\n\nclass A(PkgCase):\n    pass\n",
        "helpers/util.py": "def f():\n    from pkg import test_tools\n",
    })  # fmt: skip
    found = paths(find_support(base, suite, {"pkg", "other"}))
    assert found == {
        "pkg.testing": "pkg/testing.py", "pkg.helpers_test": "pkg/helpers_test.py",
        "pkg.test_tools": "pkg/test_tools.py",
    }  # fmt: skip
    # The same tree under src/; a name the grader does not serve from the subject has none.
    src = write(tmp_path / "src-layout", {f"src/{rel}": "" for rel in ("pkg/__init__.py",)})
    write(src, {"src/pkg/testing.py": CASE})
    assert paths(find_support(src, suite, {"pkg"})) == {"pkg.testing": "src/pkg/testing.py"}
    assert find_support(base, suite, {"other"}) == ()
    # A suite that imports none of it has none.
    plain = write(tmp_path / "plain", {"test_b.py": "import pkg.core\n"})
    assert find_support(base, plain, {"pkg"}) == ()


def test_a_test_package_is_staged_as_a_package(tmp_path: Path) -> None:
    base = write(tmp_path / "base", {
        "pkg/__init__.py": "", "pkg/tests/__init__.py": "X = 1\n", "pkg/tests/helpers.py": "Y = 2\n",
    })  # fmt: skip
    suite = write(tmp_path / "suite", {"test_a.py": "from pkg.tests.helpers import Y\n"})
    found = find_support(base, suite, {"pkg"})
    assert paths(found) == {"pkg.tests": "pkg/tests/__init__.py", "pkg.tests.helpers": "pkg/tests/helpers.py"}
    assert stage_support(found, tmp_path / "staged") == tmp_path / "staged"
    staged = {m.name: m.staged for m in found}
    assert staged == {"pkg.tests": "pkg/tests/__init__.py", "pkg.tests.helpers": "pkg/tests/helpers.py"}
    assert stage_support((), tmp_path / "none") is None and not (tmp_path / "none").exists()
    assert (tmp_path / "staged/pkg/tests/helpers.py").read_text() == "Y = 2\n"
    assert not (tmp_path / "staged/pkg/__init__.py").exists()  # the package itself stays the subject's


def test_a_change_to_support_outside_the_test_paths_is_named(tmp_path: Path) -> None:
    found = [
        SupportModule("pkg.testing", "pkg/testing.py", b""),
        SupportModule("pkg.test_tools", "pkg/test_tools.py", b""),
    ]
    changed = [
        ChangedFile(path="pkg/testing.py", status="modified"),
        ChangedFile(path="pkg/test_tools.py", status="modified"),  # restored from base in head runs
        ChangedFile(path="pkg/core.py", status="modified"),
    ]
    (reason,) = edited_support(found, changed)
    assert "pkg/testing.py" in reason and "not tested" in reason


@pytest.mark.parametrize(
    "changed",
    [
        # A module made a package: the grader still imports base's pkg/testing.py as pkg.testing.
        ChangedFile(path="pkg/testing/__init__.py", status="renamed", old_path="pkg/testing.py"),
        # Moved under src/: the same module.
        ChangedFile(path="src/pkg/testing.py", status="renamed", old_path="pkg/testing.py"),
        # Added beside base's, where the subject's import finds it first.
        ChangedFile(path="pkg/testing/__init__.py", status="added"),
    ],
    ids=["made-a-package", "moved-under-src", "package-added-beside"],
)
def test_a_change_to_support_under_another_path_is_named_too(changed: ChangedFile) -> None:
    # What the tests run is base's module of that name: a change to the module, by any path, is untested.
    found = [SupportModule("pkg.testing", "pkg/testing.py", b"")]
    (reason,) = edited_support(found, [changed])
    assert "pkg.testing" in reason and "not tested" in reason
