# ruff: noqa: E501 - configuration files read best as the text they are
"""The suite's own pytest configuration: what of it reaches pytest, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.behaviour.errors import SuiteError
from checks.behaviour.pytestconfig import read_options
from checks.behaviour.suites import load_suite

Files = dict[str, str]


def make(root: Path, files: Files) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_suite_s_options_reach_pytest_as_overrides_and_paths(tmp_path: Path) -> None:
    make(tmp_path, {"tox.ini": "[pytest]\npython_classes = Check\nmarkers =\n    slow: slow\naddopts = -p evil\n"
                               "testpaths = a b\npythonpath = lib\n", "a/test_x.py": "def test_x():\n    pass\n",
                    "b/test_y.py": "def test_y():\n    pass\n"})  # fmt: skip
    options = read_options(tmp_path)
    assert options.overrides("/grader/suite") == [
        "python_files=test_*.py *_test.py", "python_classes=Check", "python_functions=test",
        "markers=\nslow: slow", "pythonpath=/grader/suite/lib",
    ]  # fmt: skip
    assert options.paths("/grader/suite") == [
        "/grader/suite/a",
        "/grader/suite/b",
    ]  # addopts never reaches pytest


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"pytest.ini": "[pytest]\ntestpaths = ../elsewhere\n"}, "testpaths entry '../elsewhere' is outside"),
        ({"setup.cfg": "[tool:pytest]\npythonpath = /usr/lib\n"}, "pythonpath entry '/usr/lib' is outside"),
        ({"tox.ini": "[pytest\n"}, "tox.ini in the suite folder does not parse"),
    ],
)
def test_a_suite_configuration_reaching_outside_its_folder_is_refused(
    tmp_path: Path, files: Files, message: str
) -> None:
    make(tmp_path, {**files, "test_a.py": "def test_a():\n    pass\n"})
    with pytest.raises(SuiteError, match=message):
        load_suite(tmp_path, "hidden")


def test_testpaths_the_folder_does_not_hold_are_left_out_as_pytest_leaves_them(tmp_path: Path) -> None:
    # pytest globs testpaths (a missing one matches nothing); handed to it as arguments, a missing one
    # ended every run with exit status 4 (the repository suite's src/ or docs/ are never staged).
    (tmp_path / "tests").mkdir()
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = tests src docs\n")
    assert read_options(tmp_path).testpaths == ("tests",)
