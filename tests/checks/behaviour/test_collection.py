# ruff: noqa: E501 - suites read best as the source they are
"""The static list of a suite's tests agrees with pytest's own collection (``--collect-only``), shape by shape."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from checks.behaviour.pytestconfig import read_options
from checks.behaviour.suites import load_suite

Files = dict[str, str]

SHAPES: list[tuple[str, Files]] = [
    ("TestCase classes of any name, runTest, helpers", {
        "test_parse.py": "import unittest\n\n\nclass ParserTest(unittest.TestCase):\n    def test_a(self):\n        pass\n\n"
                         "    def helper(self):\n        pass\n\n    def testB(self):\n        pass\n\n\n"
                         "class Only(unittest.TestCase):\n    def runTest(self):\n        pass\n\n\n"
                         "class NotATest:\n    def test_x(self):\n        pass\n",
    }),
    ("mixins from the package's __init__ and a base in a helper module", {
        "tests/__init__.py": "class CacheMixin:\n    def test_from_mixin(self):\n        pass\n",
        "tests/helpers.py": "from unittest import TestCase\n\n\nclass Base(TestCase):\n    def test_from_base(self):\n        pass\n",
        "tests/test_cache.py": "import unittest\n\nfrom . import CacheMixin\nfrom .helpers import Base\n\n\n"
                               "class LRUTest(unittest.TestCase, CacheMixin):\n    def test_own(self):\n        pass\n\n\n"
                               "class Derived(Base):\n    def test_more(self):\n        pass\n",
    }),
    ("__test__ both ways, nested classes, inherited pytest methods", {
        "test_flags.py": "class TestOff:\n    __test__ = False\n\n    def test_x(self):\n        pass\n\n\n"
                         "class Anything:\n    __test__ = True\n\n    def test_y(self):\n        pass\n\n\n"
                         "class TestOuter:\n    def test_a(self):\n        pass\n\n    class TestInner:\n        def test_b(self):\n            pass\n\n\n"
                         "class TestChild(TestOuter):\n    def test_c(self):\n        pass\n",
    }),
    ("the suite's own python_files, python_classes and python_functions", {
        "pytest.ini": "[pytest]\npython_files = check_*.py\npython_classes = Check Suite*\npython_functions = check_ should_*\n",
        "check_things.py": "def check_one():\n    pass\n\n\ndef should_two():\n    pass\n\n\ndef test_not():\n    pass\n\n\n"
                           "class CheckA:\n    def check_m(self):\n        pass\n\n\nclass SuiteB:\n    def should_n(self):\n        pass\n",
        "test_ignored.py": "def test_x():\n    pass\n",
    }),
    ("a conftest's collect_ignore and the suite's testpaths in pyproject.toml", {
        "pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = ['tests']\n",
        "tests/conftest.py": "X = 1\n",
        "conftest.py": "collect_ignore = ['tests/test_skipped.py']\n",
        "tests/test_kept.py": "def test_a():\n    pass\n",
        "tests/test_skipped.py": "def test_b():\n    pass\n",
        "other/test_elsewhere.py": "def test_c():\n    pass\n",
    }),
]  # fmt: skip


def make(root: Path, files: Files) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def collected(root: Path) -> set[str]:
    """What pytest itself collects there, run as patchgate runs it: the folder (or its testpaths) as rootdir."""
    options = read_options(root)
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
            "--rootdir", str(root), *options.paths(str(root))]  # fmt: skip
    found = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
    return {line.split("[")[0] for line in found.stdout.splitlines() if "::" in line}


@pytest.mark.slow
@pytest.mark.parametrize("files", [s[1] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_the_static_list_agrees_with_pytest(tmp_path: Path, files: Files) -> None:
    make(tmp_path, files)
    assert set(load_suite(tmp_path, "hidden").functions) == collected(tmp_path)


def test_a_suite_of_test_case_classes_named_otherwise_has_tests(tmp_path: Path) -> None:
    make(tmp_path, dict(SHAPES[0][1]))
    suite = load_suite(tmp_path, "hidden")
    assert suite.functions == ("test_parse.py::ParserTest::test_a", "test_parse.py::ParserTest::testB",
                               "test_parse.py::Only::runTest")  # fmt: skip


def _lattice(levels: int) -> str:
    """Classes each deriving from both of the level below: 2**levels paths from the top to the bottom."""
    lines = ["class T0:\n    pass\n", "class U0:\n    pass\n"]
    for k in range(1, levels + 1):
        lines += [
            f"class T{k}(T{k - 1}, U{k - 1}):\n    pass\n",
            f"class U{k}(T{k - 1}, U{k - 1}):\n    pass\n",
        ]
    lines.append(f"class TestTop(T{levels}, U{levels}):\n    def test_a(self):\n        pass\n")
    return "\n".join(lines)


def _functions_within(root: Path, seconds: float) -> list[str]:
    """The suite's functions as load_suite lists them, read in a process killed after ``seconds``."""
    code = (
        "import sys; from pathlib import Path; from checks.behaviour.suites import load_suite; "
        "print('\\n'.join(load_suite(Path(sys.argv[1]), 'own').functions))"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True,
                              timeout=seconds, check=True)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"load_suite still reading after {seconds:g} s")
    return done.stdout.split()


def test_reading_a_class_lattice_takes_time_in_its_size_not_in_its_paths(tmp_path: Path) -> None:
    # The change's own test files are read on the host: 2 KB of valid Python must not hang it.
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_lattice.py").write_text(_lattice(60))
    assert _functions_within(tmp_path, 20) == ["tests/test_lattice.py::TestTop::test_a"]


def test_a_long_chain_of_bases_is_read_without_recursion(tmp_path: Path) -> None:
    # 5000 classes, each deriving from the one before: deeper than the stack, and n**2 steps walked
    # whole for each class. The classes a test class derives from are read 64 deep.
    chain = ["def test_plain():\n    pass\n", "class C0:\n    def test_base(self):\n        pass\n"]
    chain += [f"class C{k}(C{k - 1}):\n    pass\n" for k in range(1, 5000)]
    chain += ["class TestEnd(C4999):\n    pass\n", "class TestNear(C40):\n    pass\n"]
    (tmp_path / "test_chain.py").write_text("\n".join(chain))
    assert _functions_within(tmp_path, 20) == [
        "test_chain.py::test_plain",
        "test_chain.py::TestNear::test_base",
    ]
