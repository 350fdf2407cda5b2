"""What counts as a test file: the one rule every layer asks (hygiene, loads, the judge's view, suites).

A path belongs to the tests when a folder on it is a test folder, or its
name says so. The rule is on paths alone (no file is read), so every caller
can apply it to a base path, a head path, or a name in a suite directory.

| path                      | test path | test module | pytest collects |
| ------------------------- | --------- | ----------- | --------------- |
| tests/helpers.py          | yes       | yes         | no              |
| tests/data/expected.json  | yes       | no          | no              |
| pkg/test/util.py          | yes       | yes         | no              |
| testing/x.py (root only)  | yes       | yes         | no              |
| pkg/testing/x.py          | no        | no          | no              |
| test_data.json            | yes       | no          | no              |
| src/pkg/test_x.py         | yes       | yes         | yes             |
| pkg/x_test.py             | yes       | yes         | yes             |
| app/tests.py, x_tests.py  | yes       | yes         | no              |
| conftest.py (anywhere)    | yes       | yes         | no              |

The full table is tests/checks/test_testfiles.py.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import PurePosixPath

# Folders whose whole content is tests, wherever they are (stdlib's Lib/test, Django's app/tests/).
TEST_FOLDERS = frozenset({"tests", "test"})
# Only as the repository's first folder (pytest's and pluggy's layout): deeper down,
# `pkg/testing/` is usually a library's public test helpers (numpy.testing, sqlalchemy.testing).
ROOT_TEST_FOLDERS = frozenset({"testing"})
# Module names pytest collects, and Django's (pytest-django's usual `python_files`).
_TEST_MODULE_NAMES = ("test_*.py", "*_test.py", "tests.py", "*_tests.py")
# What patchgate's own pytest configuration collects from a suite (checks/behaviour/plan.py, `python_files`).
PYTEST_PYTHON_FILES = ("test_*.py", "*_test.py")


def is_test_path(path: str) -> bool:
    """Return True for any file of a repository's tests: test modules, conftest.py, and their data.

    The judge never sees these files, and the hygiene rules read only them for tests.
    """
    p = PurePosixPath(path)
    folders = p.parts[:-1]
    if any(part in TEST_FOLDERS for part in folders):
        return True
    if folders and folders[0] in ROOT_TEST_FOLDERS:
        return True
    name = p.name
    # A non-Python file named like a test module (test_data.json) holds what a test reads.
    return name == "conftest.py" or name.startswith("test_") or _named_test_module(name)


def is_test_module(path: str) -> bool:
    """Return True for Python files that belong to the tests (a test path ending in ``.py``)."""
    return path.endswith(".py") and is_test_path(path)


def pytest_collects(path: str) -> bool:
    """Return True when patchgate's pytest configuration collects ``path`` (its name) as a test module.

    The behaviour layer's suites are collected with ``python_files`` set to
    :data:`PYTEST_PYTHON_FILES`, so a conftest.py or a helper module in a
    suite is imported by pytest but holds no tests of its own.
    """
    name = PurePosixPath(path).name
    return any(fnmatchcase(name, pattern) for pattern in PYTEST_PYTHON_FILES)


def _named_test_module(name: str) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in _TEST_MODULE_NAMES)
