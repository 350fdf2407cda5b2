"""The repository's own tests as suites: what is staged, which tests the change rewrote, which it added."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.behaviour.errors import SuiteError
from checks.behaviour.repotests import MAX_SOURCE_BYTES, added, has_tests, rewritten, stage_tests

BASE_TEST = """\
import pytest


def test_plain():
    assert 1 + 1 == 2


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n


class TestGroup:
    def test_method(self):
        assert True

    def test_other(self):
        assert True
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


IDS = [
    "tests/test_a.py::test_plain",
    "tests/test_a.py::test_param[1]",
    "tests/test_a.py::test_param[2]",
    "tests/test_a.py::TestGroup::test_method",
    "tests/test_a.py::TestGroup::test_other",
]


@pytest.mark.parametrize(
    ("head_text", "expected"),
    [
        (BASE_TEST, {}),
        # A comment elsewhere in the file, a blank line: no test's definition changed.
        ("# a comment\n" + BASE_TEST + "\n", {}),
        (
            BASE_TEST.replace("1 + 1 == 2", "True"),
            {"tests/test_a.py::test_plain": "tests/test_a.py:4"},
        ),
        # The parameters are part of the test: every id under the function was rewritten.
        (
            BASE_TEST.replace("[1, 2]", "[1]"),
            {
                "tests/test_a.py::test_param[1]": "tests/test_a.py:8",
                "tests/test_a.py::test_param[2]": "tests/test_a.py:8",
            },
        ),
        (
            BASE_TEST.replace("    def test_method(self):\n        assert True\n\n", ""),
            {"tests/test_a.py::TestGroup::test_method": "deleted"},
        ),
        # A head file that does not parse shows no rewrite (the shape layer fails its syntax).
        ("def test_plain(:\n", {}),
    ],
)
def test_rewritten_names_each_test_whose_definition_the_change_edited(
    tmp_path: Path, head_text: str, expected: dict[str, str]
) -> None:
    base = write(tmp_path / "base", {"tests/test_a.py": BASE_TEST})
    head = write(tmp_path / "head", {"tests/test_a.py": head_text})
    assert rewritten(IDS, base, head) == expected


def test_a_file_the_change_removed_or_replaced_by_a_symlink_rewrote_its_tests(tmp_path: Path) -> None:
    base = write(tmp_path / "base", {"tests/test_a.py": BASE_TEST})
    head = tmp_path / "head"
    (head / "tests").mkdir(parents=True)
    assert rewritten(IDS[:1], base, head) == {IDS[0]: "deleted"}
    # A symlink to base's very file is no test file of head's: it is never read through.
    (head / "tests" / "test_a.py").symlink_to(base / "tests" / "test_a.py")
    assert rewritten(IDS[:1], base, head) == {IDS[0]: "deleted"}


def test_an_id_base_never_defined_is_not_the_changes(tmp_path: Path) -> None:
    base = write(tmp_path / "base", {"tests/test_a.py": BASE_TEST})
    head = write(tmp_path / "head", {"tests/test_a.py": "x = 1\n"})
    # Inherited and generated tests have no definition of their own in the file.
    assert (
        rewritten(["tests/test_a.py::TestChild::test_method", "tests/missing.py::test_x"], base, head) == {}
    )


def test_added_is_what_head_defines_and_base_does_not() -> None:
    assert added(
        ["a.py::test_x", "a.py::T::test_y"],
        ["a.py::test_x", "b.py::test_z", "a.py::T::test_w", "b.py::test_z"],
    ) == (
        "b.py::test_z",
        "a.py::T::test_w",
    )


def test_staging_keeps_test_files_and_root_pytest_settings_and_nothing_else(tmp_path: Path) -> None:
    tree = write(
        tmp_path / "tree",
        {
            "pkg/__init__.py": "VALUE = 1\n",
            "pkg/core.py": "",
            "conftest.py": "",
            "tests/__init__.py": "",
            "tests/test_core.py": "def test_x():\n    pass\n",
            "tests/data/sample.json": "{}",
            "tests/helpers.py": "",
            "pyproject.toml": "[tool.pytest.ini_options]\n",
            "setup.cfg": "",
            "README.md": "",
            ".git/config": "",
        },
    )
    (tree / "tests" / "test_link.py").symlink_to(tree / "pkg" / "core.py")
    (tree / "tests" / "outside").symlink_to("/etc", target_is_directory=True)
    staged = stage_tests(tree, tmp_path / "suite")
    found = sorted(p.relative_to(staged.root).as_posix() for p in staged.root.rglob("*") if p.is_file())
    assert found == [
        "conftest.py",
        "pyproject.toml",
        "setup.cfg",
        "tests/__init__.py",
        "tests/data/sample.json",
        "tests/helpers.py",
        "tests/test_core.py",
    ]
    assert not any(p.is_symlink() for p in staged.root.rglob("*"))


def test_has_tests_needs_a_test_module_not_just_a_conftest(tmp_path: Path) -> None:
    assert not has_tests(write(tmp_path / "a", {"conftest.py": "", "pkg/x.py": ""}))
    assert has_tests(write(tmp_path / "b", {"tests/test_x.py": ""}))


def test_staging_past_its_bounds_is_a_suite_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("checks.behaviour.repotests.MAX_FILES", 3)
    tree = write(tmp_path / "tree", {f"tests/test_{n}.py": "" for n in range(5)})
    with pytest.raises(SuiteError, match="too large"):
        stage_tests(tree, tmp_path / "suite")


@pytest.mark.parametrize(
    "head_text",
    [
        # A comment, a blank line, another layout inside the test: the test pytest runs is base's.
        BASE_TEST.replace(
            "    assert 1 + 1 == 2\n", "    # the change was here\n\n    assert (1 + 1\n            == 2)\n"
        ),
        # A docstring given or changed: it is no part of what the test asserts.
        BASE_TEST.replace("def test_plain():\n", 'def test_plain():\n    """Adds."""\n'),
        # A dead twin above it: Python binds the name to the later definition, base's, unchanged.
        BASE_TEST.replace("def test_plain():", "def test_plain():\n    pass\n\n\ndef test_plain():"),
        # The file padded past what the reader reads (a comment, valid Python): nothing to show a maintainer.
        BASE_TEST + "#" * (MAX_SOURCE_BYTES + 1) + "\n",
    ],
)
def test_an_edit_that_leaves_the_test_as_it_runs_is_no_rewrite(tmp_path: Path, head_text: str) -> None:
    # A failing test "rewritten" asks a maintainer instead of failing: only a real edit of it may.
    base = write(tmp_path / "base", {"tests/test_a.py": BASE_TEST})
    head = write(tmp_path / "head", {"tests/test_a.py": head_text})
    assert rewritten(IDS[:1], base, head) == {}


def test_the_later_of_two_definitions_is_the_test(tmp_path: Path) -> None:
    base = write(tmp_path / "base", {"tests/test_a.py": BASE_TEST})
    head = write(
        tmp_path / "head", {"tests/test_a.py": BASE_TEST + "\n\ndef test_plain():\n    assert True\n"}
    )
    assert rewritten(IDS[:1], base, head) == {IDS[0]: "tests/test_a.py:21"}


def test_a_parameter_id_holding_colons_is_still_its_functions(tmp_path: Path) -> None:
    base = write(tmp_path / "base", {"tests/test_a.py": BASE_TEST})
    head = write(tmp_path / "head", {"tests/test_a.py": BASE_TEST.replace("[1, 2]", "['a::b']")})
    assert rewritten(["tests/test_a.py::test_param[a::b]"], base, head) == {
        "tests/test_a.py::test_param[a::b]": "tests/test_a.py:8"
    }
