"""The change's executable lines (pure)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from checks.behaviour.changedlines import (
    MAX_SOURCE_BYTES,
    executable_changes,
    statement_lines,
    statements,
    total,
)
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
    assert statement_lines(SOURCE) == frozenset({2, 7, 9, 11, 14, 17})


def test_a_function_s_body_is_what_only_a_call_runs() -> None:
    # The def line, its decorator, defaults and a class body run on import; a body (a nested def's
    # line too) only when the function is called.
    source = (
        "import functools\n"  # 1
        "@functools.cache\n"  # 2
        "def f(x=print('d')):\n"  # 3
        "    y = x\n"  # 4
        "    def g():\n"  # 5
        "        return y\n"  # 6
        "    return g\n"  # 7
        "class C:\n"  # 8
        "    a = 1\n"  # 9
        "    async def m(self):\n"  # 10
        "        await self.n()\n"  # 11
    )
    found = statements(source)
    assert found is not None
    assert found[0] == frozenset({1, 3, 4, 5, 6, 7, 8, 9, 10, 11})
    assert found[1] == frozenset({4, 5, 6, 7, 11})


@pytest.mark.parametrize("source", ["def (:\n", "\x00", "x = " + "(" * 300 + ")" * 300 + "\n"])
def test_source_that_does_not_parse_has_no_lines(source: str) -> None:
    assert statement_lines(source) is None


def test_bytes_are_read_as_python_reads_a_module() -> None:
    # A BOM and a coding cookie are Python's to honour: the same lines as the decoded text.
    assert statement_lines(b"\xef\xbb\xbf" + SOURCE.encode()) == statement_lines(SOURCE)
    latin = "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n\n\ndef f():\n    return name\n"
    assert statement_lines(latin.encode("latin-1")) == frozenset({2, 5, 6})


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
    assert found.lines == {"pkg/mod.py": [9, 11]}
    assert found.bodies == {"pkg/mod.py": [9, 11]}  # both in f's body
    assert found.unread == {}
    assert total(found.lines) == 2


def test_code_named_like_a_test_counts(tmp_path: Path) -> None:
    # rt13: the implementation moved to durations/tests.py and re-exported from durations/parse.py;
    # by name alone its lines were left out ("changed lines run 2/2") and no mutant touched them.
    base, head = tmp_path / "base", tmp_path / "head"
    (base / "durations").mkdir(parents=True)
    (base / "durations/parse.py").write_text("def parse(text):\n    raise NotImplementedError\n")
    (head / "durations").mkdir(parents=True)
    (head / "durations/parse.py").write_text("from durations.tests import parse  # noqa: F401\n")
    (head / "durations/tests.py").write_text("def parse(text):\n    hours, _, rest = text.partition('h')\n"
                                             "    return int(hours) * 3600\n")  # fmt: skip
    (head / "durations/test_parse.py").write_text("def test_parse():\n    assert True\n")
    ws = Workspace(base, head, "a", "b", (
        ChangedFile("durations/parse.py", "modified", lines=frozenset({1})),
        ChangedFile("durations/tests.py", "added", lines=frozenset({1, 2, 3})),
        ChangedFile("durations/test_parse.py", "added", lines=frozenset({1, 2})),
    ))  # fmt: skip
    found = executable_changes(ws)
    assert found.lines == {"durations/parse.py": [1], "durations/tests.py": [1, 2, 3]}


# Base had a correct module; the change adds an untested function to it (lines 4-6).
ADDED = "def double(x):\n    return x * 2\n\n# new\ndef triple(x):\n    return x * 4\n"
ADDED_LINES = frozenset({4, 5, 6})


def _change(tmp_path: Path, path: str = "pkg/mod.py") -> Workspace:
    return Workspace(tmp_path, tmp_path, "a", "b", (ChangedFile(path, "modified", lines=ADDED_LINES),))


def test_a_file_with_a_bom_keeps_its_executable_lines(tmp_path: Path) -> None:
    # read_text + ast.parse of the string raised on the BOM: the file, and its lines, vanished.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/mod.py").write_bytes(b"\xef\xbb\xbf" + ADDED.encode())
    found = executable_changes(_change(tmp_path))
    assert (found.lines, found.unread) == ({"pkg/mod.py": [5, 6]}, {})


def test_a_latin_1_file_with_a_coding_cookie_keeps_its_executable_lines(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    text = "# -*- coding: latin-1 -*-\n# caf\xe9\n\n" + ADDED
    (tmp_path / "pkg/mod.py").write_bytes(text.encode("latin-1"))
    changed = ChangedFile("pkg/mod.py", "modified", lines=frozenset({7, 8, 9}))
    ws = Workspace(tmp_path, tmp_path, "a", "b", (changed,))
    found = executable_changes(ws)
    assert (found.lines, found.unread) == ({"pkg/mod.py": [8, 9]}, {})


def _oversized(path: Path) -> None:
    path.write_text(ADDED + "#" * MAX_SOURCE_BYTES + "\n")


def _symlink(path: Path) -> None:
    (path.parent / "elsewhere.txt").write_text(ADDED)
    path.symlink_to("elsewhere.txt")


def _undecodable(path: Path) -> None:
    # latin-1 in a string, no cookie: Python cannot import it (in a comment it could: not this case).
    path.write_bytes(ADDED.replace("x * 4", "'caf\xe9'").encode("latin-1"))


def _unparseable(path: Path) -> None:
    path.write_text(ADDED.replace("def triple(x):", "def triple(x:"))


def _folder(path: Path) -> None:
    path.mkdir()


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (_oversized, "over 2 MiB, not parsed"),
        (_symlink, "a symlink, not read"),
        (_undecodable, "does not decode (its coding cookie, or UTF-8)"),
        (_unparseable, "does not parse"),
        (_folder, "not a regular file"),
    ],
)
def test_a_file_whose_statements_cannot_be_worked_out_counts_every_changed_line(
    tmp_path: Path, make: Callable[[Path], None], why: str
) -> None:
    # Fail closed: these files were skipped, so the change's lines in them were never asked to run.
    (tmp_path / "pkg").mkdir()
    make(tmp_path / "pkg/mod.py")
    found = executable_changes(_change(tmp_path))
    assert found.lines == {"pkg/mod.py": [4, 5, 6]}
    assert found.unread == {"pkg/mod.py": why}
    assert found.notes() == [f"pkg/mod.py: {why}; every changed line counted"]
