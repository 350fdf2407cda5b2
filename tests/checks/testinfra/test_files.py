"""The one rule for test files, on a table of paths every layer used to decide differently."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from checks.testinfra.files import PYTEST_PYTHON_FILES, is_test_module, is_test_path, pytest_collects

# path, is_test_path, is_test_module, pytest_collects
PATHS: list[tuple[str, bool, bool, bool]] = [
    ("tests/test_a.py", True, True, True),
    ("tests/helpers.py", True, True, False),
    ("tests/data/expected.json", True, False, False),
    ("tests/test_x.pyc", True, False, False),
    ("pkg/tests/unit/util.py", True, True, False),
    ("pkg/test/util.py", True, True, False),
    ("test/unit.py", True, True, False),
    ("test_module.py", True, True, True),
    ("src/pkg/test_x.py", True, True, True),
    ("src/pkg/x_test.py", True, True, True),
    ("app/tests.py", True, True, False),
    ("app/view_tests.py", True, True, False),
    # A root conftest.py: testinfra said no, the other three said yes.
    ("conftest.py", True, True, False),
    ("pkg/conftest.py", True, True, False),
    # A root testing/ folder (pytest's own layout): only the loads gate said yes.
    ("testing/x.py", True, True, False),
    ("testing/test_x.py", True, True, True),
    # ...but deeper, a library's public test helpers (numpy.testing) are its code.
    ("pkg/testing/x.py", False, False, False),
    ("src/pkg/testing/utils.py", False, False, False),
    # Test data named like a test: the judge must not see expected values.
    ("test_data.json", True, False, False),
    ("pkg/module.py", False, False, False),
    ("src/pkg/x.py", False, False, False),
    ("pkg/testing.py", False, False, False),
    ("src/testing.py", False, False, False),
    ("pkg/testing_tools.py", False, False, False),
    ("pkg/contest.py", False, False, False),
    ("attestation.py", False, False, False),
    ("docs/tests.md", False, False, False),
    ("latest_test_results.txt", False, False, False),
    ("latest/x.py", False, False, False),
    ("mytests/x.py", False, False, False),
    ("pkg/test.py", False, False, False),
    ("pkg/mytest.py", False, False, False),
    ("pkg/contest_test.pyi", False, False, False),
]


@pytest.mark.parametrize(("path", "path_rule", "module_rule", "collected"), PATHS, ids=[p[0] for p in PATHS])
def test_test_files(path: str, path_rule: bool, module_rule: bool, collected: bool) -> None:
    assert is_test_path(path) is path_rule
    assert is_test_module(path) is module_rule
    assert pytest_collects(path) is collected


def test_the_variants_nest() -> None:
    # Every module pytest collects is a test module, and every test module is a test path.
    for path, *_ in PATHS:
        assert not pytest_collects(path) or is_test_module(path)
        assert not is_test_module(path) or is_test_path(path)


def test_collected_names_match_patchgates_pytest_configuration(tmp_path: Path) -> None:
    # The behaviour layer writes its own pytest.ini; what it collects must be what this module says.
    from checks.behaviour.plan import write_harness
    from checks.policy import Behaviour

    ini = configparser.ConfigParser(interpolation=None)
    ini.read_string((write_harness(tmp_path / "harness", Behaviour()) / "pytest.ini").read_text())
    assert tuple(ini["pytest"]["python_files"].split()) == PYTEST_PYTHON_FILES
