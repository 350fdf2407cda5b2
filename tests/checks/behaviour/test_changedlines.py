"""The change's executable lines (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.behaviour.changedlines import executable_changes, statement_lines, total
from checks.workspace import ChangedFile, Workspace

SOURCE = '''"""Module docstring."""
import os

# a comment


def f(x):
    """Docstring."""
    y = (x +
         1)
    return y


class C:
    """Class docstring."""

    attr = 1
'''


def test_statement_lines_are_where_statements_start() -> None:
    assert statement_lines(SOURCE) == {2, 7, 9, 11, 14, 17}


@pytest.mark.parametrize("source", ["def (:\n", "\x00", "x = " + "(" * 300 + ")" * 300 + "\n"])
def test_source_that_does_not_parse_has_no_lines(source: str) -> None:
    assert statement_lines(source) == frozenset()


def test_executable_changes_leave_out_tests_comments_and_continuations(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/mod.py").write_text(SOURCE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_mod.py").write_text("def test_f():\n    assert True\n")
    (tmp_path / "notes.txt").write_text("x\n")
    ws = Workspace(tmp_path, tmp_path, "a", "b", (
        ChangedFile("pkg/mod.py", "modified", lines=frozenset({1, 4, 8, 9, 10, 11})),
        ChangedFile("tests/test_mod.py", "added", lines=frozenset({1, 2})),
        ChangedFile("notes.txt", "added", lines=frozenset({1})),
        ChangedFile("gone.py", "deleted"),
    ))  # fmt: skip
    found = executable_changes(ws)
    assert found == {"pkg/mod.py": [9, 11]}
    assert total(found) == 2
